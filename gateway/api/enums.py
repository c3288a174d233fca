"""The domain's enums as GraphQL sees them: the same classes, described here.

The domain never imports strawberry, so its members cannot be
``strawberry.enum_value(...)``, and ``strawberry.enum()`` describes only the
type: the values' descriptions go on the definition it makes. Resolvers then
return the domain's members as they are, with no mapping either way.

Modules of this layer annotate with these names, which makes them import this
module, and so register the enums, before strawberry resolves their annotations.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum

import strawberry
from strawberry.types.enum import has_enum_definition

from gateway.domain import fleet
from gateway.domain import records as domain

__all__ = ["CapacityBasis", "CapacityView", "FleetGrouping", "MembershipSource"]


def _expose(cls: type[Enum], name: str, description: str, values: Mapping[str, str]) -> None:
    """Register a domain enum with strawberry, with a description for each value."""
    strawberry.enum(cls, name=name, description=description)
    if not has_enum_definition(cls):
        raise TypeError(f"strawberry did not register {cls.__name__}")
    members = cls.__strawberry_definition__.values
    if {m.name for m in members} != set(values):
        raise TypeError(f"{cls.__name__}: describe exactly {[m.name for m in members]}")
    for member in members:
        member.description = values[member.name]


FleetGrouping = fleet.Grouping
_expose(
    FleetGrouping,
    "FleetGrouping",
    "How to group fleet totals.",
    {
        "NONE": "One total for all selected hosts.",
        "ZONE": "By topology.kubernetes.io/zone.",
        "REGION": "By topology.kubernetes.io/region.",
        "AGGREGATE": "By aggregate name; a host counts in each of its aggregates.",
        "BUILDING_BLOCK": "By kubernetes.metal.cloud.sap/bb.",
    },
)

MembershipSource = domain.Origin
_expose(
    MembershipSource,
    "MembershipSource",
    "Where a trait or aggregate membership is declared.",
    {
        "SPEC_GROUPS": "spec.groups (typed groups).",
        "SPEC": "spec.customTraits or spec.aggregates (plain names).",
        "STATUS": "status.traits or status.aggregates, as applied in OpenStack.",
    },
)

CapacityBasis = domain.Basis
_expose(
    CapacityBasis,
    "CapacityBasis",
    "The view a best known figure (available) came from.",
    {
        "BOOKINGS": "Placement's view: free = capacity - booked (the host's bookings are tracked).",
        "ALLOCATION": "libvirt's view: unallocated = capacity - allocated (bookings not tracked).",
    },
)

CapacityView = domain.View
_expose(
    CapacityView,
    "CapacityView",
    "Which free figure a question judges (fitting, slots, overcommitment).",
    {
        "AVAILABLE": "The best known figure: each host on its own basis (free if its bookings "
        "are tracked, else unallocated).",
        "BOOKINGS": "Placement's view (free); a host whose bookings are not tracked is unknown.",
        "ALLOCATION": "libvirt's view (unallocated), as Cortex's filter judges.",
    },
)
