"""The fleet as plain records: quantities, capacity, bookings, and parsing objects.

Python over the standard library, and msgspec's Structs for the records (built in
C, and outside the cyclic collector); it imports nothing else of the gateway, and
no web, Kubernetes or GraphQL library.
"""

from __future__ import annotations

from gateway.domain.flavors import NO_CATALOG, Catalog, load_catalog
from gateway.domain.fleet import Grouping
from gateway.domain.parse import ParseError, parse_hypervisor
from gateway.domain.quantity import CONTEXT, QuantityError, format_quantity, parse_quantity
from gateway.domain.records import (
    BUILDING_BLOCK_LABEL,
    GROUP,
    PLURAL,
    REGION_LABEL,
    VERSION,
    WORKER_GROUP_LABEL,
    ZONE_LABEL,
    Amounts,
    ConsumerBooking,
    Hypervisor,
    ResourceCapacity,
)
from gateway.domain.selector import SelectorError, parse_selector

__all__ = [
    "BUILDING_BLOCK_LABEL",
    "CONTEXT",
    "GROUP",
    "NO_CATALOG",
    "PLURAL",
    "REGION_LABEL",
    "VERSION",
    "WORKER_GROUP_LABEL",
    "ZONE_LABEL",
    "Amounts",
    "Catalog",
    "ConsumerBooking",
    "Grouping",
    "Hypervisor",
    "ParseError",
    "QuantityError",
    "ResourceCapacity",
    "SelectorError",
    "format_quantity",
    "load_catalog",
    "parse_hypervisor",
    "parse_quantity",
    "parse_selector",
]
