"""Whether the scheduler would place a catalog flavor on one hypervisor
(``Hypervisor.eligibility``), and the lookup of a flavor by name that every
flavor argument shares.

The rules are :mod:`gateway.domain.eligibility`'s; the slots those of
:mod:`gateway.domain.slots`.
"""

from __future__ import annotations

import strawberry
from graphql import GraphQLError

from gateway.api.enums import CapacityBasis, CapacityView, ExclusionReason
from gateway.api.scalars import Count
from gateway.domain import flavors
from gateway.domain import slots as counted
from gateway.domain.eligibility import host_facts, reasons
from gateway.domain.records import Hypervisor

__all__ = ["Eligibility", "catalog_flavor", "eligibility"]

UNKNOWN_FLAVOR = {"code": "UNKNOWN_FLAVOR"}


@strawberry.type(
    description="Whether the scheduler would place instances of a flavor on this hypervisor, "
    "why not, and how many more fit."
)
class Eligibility:
    flavor: str = strawberry.field(description="The catalog flavor judged.")
    project: str | None = strawberry.field(
        description="The project asked for; null: none (hosts restricted to projects are "
        "then not eligible)."
    )
    view: CapacityView = strawberry.field(description="The view the slots were counted in.")
    eligible: bool = strawberry.field(
        description="No rule excludes the host: the scheduler could use it for the flavor."
    )
    reasons: list[ExclusionReason] = strawberry.field(
        description="Every rule that excludes the host, in the order they are checked; "
        "empty when eligible."
    )
    slots: Count | None = strawberry.field(
        description="Instances of the flavor that still fit here: 0 when not eligible, null "
        "when a figure it needs is unknown (or the flavor cannot be judged, Flavor.judged)."
    )
    basis: CapacityBasis | None = strawberry.field(
        description="The view the figures came from; null when unknown or not eligible."
    )


def catalog_flavor(catalog: flavors.Catalog, name: str) -> flavors.Flavor:
    """The catalog's flavor ``name``; an unknown one fails with UNKNOWN_FLAVOR."""
    found = catalog.get(name)
    if found is not None:
        return found
    if not catalog.flavors:
        message = f"unknown flavor {name!r}: no flavor catalog is loaded (serve --flavors FILE)"
    else:
        message = (
            f"unknown flavor {name!r}: Query.flavors lists the {len(catalog.flavors)} known ones"
        )
    raise GraphQLError(message, extensions=UNKNOWN_FLAVOR)


def eligibility(
    hypervisor: Hypervisor, flavor: flavors.Flavor, project: str | None, view: CapacityView
) -> Eligibility:
    found = counted.host_slots(hypervisor, flavor.demand, view, project)
    failed = list(reasons(host_facts(hypervisor), flavor.demand, project))
    return Eligibility(
        flavor=flavor.name,
        project=project,
        view=view,
        eligible=not failed,
        reasons=failed,
        slots=None if found.slots is None else Count(found.slots),
        basis=found.basis,
    )
