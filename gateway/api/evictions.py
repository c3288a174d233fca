"""The operator's evictions in GraphQL: the ``Eviction`` type, its filter, and the
error every eviction field answers when evictions cannot be read.

Evictions come from a store of their own (gateway.store.evictions): the request
pins one snapshot of it (``info.context.evictions``), as it pins one of the fleet.
On a cluster without the Eviction CRD (an older operator) they are unavailable,
which is not the same as none: the fields that list them fail with the code
``EVICTIONS_UNAVAILABLE`` (and are nullable, so that the rest of an answer, the
hosts above all, is still given).
"""

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

import strawberry
from graphql import GraphQLError
from strawberry.types import Info

from gateway.api.codes import Code
from gateway.api.context import Context
from gateway.api.enums import EvictionState
from gateway.api.inputs import built_once
from gateway.api.scalars import Condition, Quantity
from gateway.domain import evictions as domain
from gateway.store.evictions import EvictionSnapshot

if TYPE_CHECKING:
    from gateway.api.objects import Hypervisor

__all__ = [
    "EVICTIONS_UNAVAILABLE",
    "Eviction",
    "EvictionFilter",
    "available",
    "compile_eviction_filter",
    "evictions_of_host",
    "matching_evictions",
]

EVICTIONS_UNAVAILABLE = {"code": Code.EVICTIONS_UNAVAILABLE.value}


def available(context: Context) -> EvictionSnapshot:
    """The request's evictions; an error with code EVICTIONS_UNAVAILABLE, saying why, when
    they cannot be read."""
    snapshot = context.evictions
    if snapshot.unavailable is not None:
        raise GraphQLError(
            f"evictions are unavailable: {snapshot.unavailable}", extensions=EVICTIONS_UNAVAILABLE
        )
    return snapshot


@strawberry.type(
    description=(
        "An eviction the operator runs or ran (kvm.cloud.sap/v1 Eviction): a host being "
        "emptied of its instances, typically before a maintenance, and how far that has got."
    )
)
class Eviction:
    name: str = strawberry.field(description="Object name.")
    reason: str | None = strawberry.field(description="spec.reason: why the host is emptied.")
    state: EvictionState = strawberry.field(
        description="Where it stands: the Evicting condition's reason; PENDING before the "
        "operator has set one."
    )
    outstanding_ram: Quantity | None = strawberry.field(
        description="Memory of the instances still on the host, in bytes (status."
        "outstandingRamMb is in MiB); null before the operator has written a status."
    )
    outstanding_instances: list[str] = strawberry.field(
        description="The instances still on the host (status.outstandingInstances)."
    )
    hypervisor_service_id: str | None = strawberry.field(
        description="status.hypervisorServiceId: the host's Nova compute service."
    )
    warnings: list[str] = strawberry.field(
        description="Problems found in the object (a wrong type, an unknown state, ...)."
    )

    @strawberry.field(
        description="spec.hypervisor: the name of the host being emptied; null only for an "
        "object that names none (which the CRD refuses)."
    )
    def hypervisor_name(self, root: strawberry.Parent[domain.Eviction]) -> str | None:
        return root.hypervisor

    @strawberry.field(description="The host being emptied; null when it is not in the fleet.")
    def hypervisor(
        self, root: strawberry.Parent[domain.Eviction], info: Info[Context, None]
    ) -> Annotated["Hypervisor", strawberry.lazy("gateway.api.objects")] | None:
        if root.hypervisor is None:
            return None
        return info.context.host(root.hypervisor)  # type: ignore[return-value]

    @strawberry.field(
        description="Status conditions: Evicting, MigratingInstance, PreflightChecksSucceeded, "
        "HypervisorDisabled, HypervisorReEnabled, HaEnabled."
    )
    def conditions(self, root: strawberry.Parent[domain.Eviction]) -> list[Condition]:
        return root.conditions  # type: ignore[return-value]

    @strawberry.field(description="metadata.creationTimestamp (RFC 3339).")
    def created_at(self, root: strawberry.Parent[domain.Eviction]) -> str | None:
        return root.created


@built_once
@strawberry.input(description="Conditions an eviction must meet; all given ones must hold.")
class EvictionFilter:
    hypervisor: str | None = strawberry.field(
        default=None, description="Emptying this host (spec.hypervisor)."
    )
    state: EvictionState | None = strawberry.field(default=None, description="In this state.")


def compile_eviction_filter(where: EvictionFilter | None) -> Callable[[domain.Eviction], bool]:
    """Whether an eviction meets ``where`` (every eviction, without one)."""
    host = None if where is None else where.hypervisor
    state = None if where is None else where.state

    def matches(eviction: domain.Eviction) -> bool:
        return (host is None or eviction.hypervisor == host) and (
            state is None or eviction.state is state
        )

    return matches


def matching_evictions(context: Context, where: EvictionFilter | None) -> list[domain.Eviction]:
    """The request's evictions that meet ``where``, by name."""
    snapshot = available(context)
    if where is not None and where.hypervisor is not None:
        candidates = snapshot.by_hypervisor.get(where.hypervisor, ())
    else:
        candidates = snapshot.ordered
    matches = compile_eviction_filter(where)
    return [e for e in candidates if matches(e)]


def evictions_of_host(context: Context, name: str) -> list[domain.Eviction]:
    """The evictions of one host, by name (mostly none, or one)."""
    return list(available(context).by_hypervisor.get(name, ()))
