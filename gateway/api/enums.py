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

from gateway.domain import eligibility, evictions, fleet
from gateway.domain import records as domain

__all__ = [
    "CapacityBasis",
    "CapacityView",
    "EvictionState",
    "ExclusionReason",
    "FleetGrouping",
    "MembershipSource",
]


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

ExclusionReason = eligibility.Reason
_expose(
    ExclusionReason,
    "ExclusionReason",
    "Why the scheduler would not place a flavor on a host, in the order the rules are "
    "checked; a host failing several is counted under the first.",
    {
        "NOT_READY": "Its Ready condition is not True (or it has no status): the compute "
        "service is down.",
        "DISABLED": "spec.maintenance is set or the host is evicted (the operator disables "
        "the compute service), or it has the trait COMPUTE_STATUS_DISABLED, which Nova forbids "
        "on every request.",
        "PROJECT_RESTRICTED": "spec.allowedProjects does not list the project asked for (with "
        "no project given, a restricted host is free for nobody in general).",
        "MISSING_TRAIT": "The flavor requires a trait (trait:NAME=required) the host lacks.",
        "FORBIDDEN_TRAIT": "The flavor forbids a trait (trait:NAME=forbidden) the host has.",
        "ISOLATED_AGGREGATE": "An aggregate of the host takes only flavors requiring a trait "
        "(metadata trait:NAME=required) that this flavor does not require.",
        "AGGREGATE_MISMATCH": "An aggregate_instance_extra_specs:KEY of the flavor is not "
        "matched by the metadata of the host's aggregates.",
    },
)

EvictionState = evictions.EvictionState
_expose(
    EvictionState,
    "EvictionState",
    "Where an eviction stands: the reason of the operator's Evicting condition, as the State "
    "column of kubectl get evictions shows it.",
    {
        "PENDING": "The operator has not started it yet (no Evicting condition).",
        "RUNNING": "Instances are being moved off the host.",
        "FAILED": "The operator gave up: instances are left on the host (outstandingInstances) "
        "and someone has to look. The operator's own alerts fire on these.",
        "SUCCEEDED": "The host is empty.",
    },
)
