"""The operator's Eviction objects: a host being emptied, and how far that has got.

The operator records each eviction it runs as an ``Eviction`` (kvm.cloud.sap/v1,
cluster-scoped, in its released CRD): ``spec.hypervisor`` names the host,
``spec.reason`` says why, and the status counts what is still on the host
(``outstandingRamMb``, ``outstandingInstances``) beside the conditions of each
step. Where it stands is the ``Evicting`` condition's reason (the State column
of ``kubectl get evictions``); an eviction the operator has not picked up yet
has no such condition.

Read as leniently as a Hypervisor (:mod:`gateway.domain.parse`): anything wrong
becomes a warning on the record; only an object without a name raises.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from enum import Enum
from typing import Any

from gateway.domain.lenient import Reader
from gateway.domain.parse import opened, parse_conditions
from gateway.domain.records import Condition, Record

__all__ = ["EVICTING", "PLURAL", "Eviction", "EvictionState", "parse_eviction"]

#: The resource, beside the Hypervisors in kvm.cloud.sap/v1.
PLURAL = "evictions"
#: The condition whose reason is the eviction's state.
EVICTING = "Evicting"
#: The operator counts memory in MiB (Nova's memory_mb); the gateway in bytes.
_MIB = 2**20


class EvictionState(Enum):
    """Where an eviction stands: the reason of its Evicting condition."""

    PENDING = "PENDING"
    RUNNING = "RUNNING"
    FAILED = "FAILED"
    SUCCEEDED = "SUCCEEDED"


_STATES = {
    "Running": EvictionState.RUNNING,
    "Failed": EvictionState.FAILED,
    "Succeeded": EvictionState.SUCCEEDED,
}


class Eviction(Record, frozen=True):
    """One parsed Eviction object at one resourceVersion (equal to another when every
    field is: a reload that changed nothing is no change)."""

    name: str
    uid: str | None
    resource_version: str | None
    created: str | None
    #: spec.hypervisor: the name of the host being emptied (its Hypervisor's name).
    hypervisor: str | None
    reason: str | None
    state: EvictionState
    #: status.outstandingRamMb in bytes; None before the operator wrote a status.
    outstanding_ram: Decimal | None
    outstanding_instances: tuple[str, ...]
    hypervisor_service_id: str | None
    conditions: tuple[Condition, ...]
    warnings: tuple[str, ...]


def parse_eviction(obj: Any) -> Eviction:
    """Build the immutable record for one object version. Raises :class:`ParseError`."""
    p, meta, name = opened(obj)
    spec = p.mapping(obj.get("spec"), "spec")
    status = obj.get("status")
    body = p.mapping(status, "status")
    conditions = parse_conditions(p, body.get("conditions"))
    hypervisor = p.string(spec.get("hypervisor"), "spec.hypervisor") or None
    if hypervisor is None:
        p.warn("spec.hypervisor", "no host named: the eviction belongs to none")
    return Eviction(
        name=name,
        uid=p.string(meta.get("uid"), "metadata.uid"),
        resource_version=p.string(meta.get("resourceVersion"), "metadata.resourceVersion"),
        created=p.string(meta.get("creationTimestamp"), "metadata.creationTimestamp"),
        hypervisor=hypervisor,
        reason=p.string(spec.get("reason"), "spec.reason"),
        state=_state(p, conditions),
        outstanding_ram=_outstanding_ram(
            p, body.get("outstandingRamMb"), isinstance(status, Mapping)
        ),
        outstanding_instances=p.strings(
            body.get("outstandingInstances"), "status.outstandingInstances"
        ),
        hypervisor_service_id=p.string(
            body.get("hypervisorServiceId"), "status.hypervisorServiceId"
        ),
        conditions=conditions,
        warnings=tuple(p.warnings),
    )


def _state(p: Reader, conditions: tuple[Condition, ...]) -> EvictionState:
    evicting = next((c for c in conditions if c.type == EVICTING), None)
    if evicting is None:
        return EvictionState.PENDING
    state = _STATES.get(evicting.reason or "")
    if state is None:
        p.warn(
            f"status.conditions[{EVICTING}].reason",
            f"{evicting.reason!r} is not Running, Failed or Succeeded; read as pending",
        )
        return EvictionState.PENDING
    return state


def _outstanding_ram(p: Reader, value: Any, has_status: bool) -> Decimal | None:
    """status.outstandingRamMb in bytes. The CRD defaults it to 0 in a written status,
    so only an object without one leaves it unknown."""
    if value is None:
        return Decimal(0) if has_status else None
    mib = p.integer(value, "status.outstandingRamMb")
    if mib is None:
        return None
    if mib < 0:
        p.warn("status.outstandingRamMb", f"negative amount {mib}; unknown")
        return None
    return Decimal(mib * _MIB)
