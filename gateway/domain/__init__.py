"""The fleet as plain records: quantities, capacity, bookings, and parsing objects.

Pure Python over the standard library; it imports nothing else of the gateway,
and no web, Kubernetes or GraphQL library.
"""

from __future__ import annotations

from gateway.domain.quantity import CONTEXT, QuantityError
from gateway.domain.records import Hypervisor, ResourceCapacity

__all__ = ["CONTEXT", "Hypervisor", "QuantityError", "ResourceCapacity"]
