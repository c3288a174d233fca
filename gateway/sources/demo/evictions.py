"""The demo's evictions: the operator emptying the hosts in maintenance.

Each host in maintenance has an Eviction, as the operator records it: done
(Succeeded) where the host is empty, and where instances are left, running or,
for every second such host, failed on one of them (the state the operator's own
alerts watch). The outstanding RAM and instances are the host's own, so that
what an eviction says is still there is what the host runs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gateway.domain.quantity import parse_quantity

__all__ = ["evictions"]

_MIB = 2**20
_REASONS = {
    "manual": "hardware repair requested by the operator",
    "auto": "kernel update",
    "ha": "host lost its HA partner",
    "termination": "host decommissioned",
}


def evictions(objects: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """An Eviction object for every host in maintenance among ``objects``, by name."""
    hosts = sorted(
        (o for o in objects if o["spec"].get("maintenance")), key=lambda o: o["metadata"]["name"]
    )
    made = []
    left = 0
    for host in hosts:
        instances = host.get("status", {}).get("instances", [])
        if instances:
            left += 1
        state = "Succeeded" if not instances else "Failed" if left % 2 == 0 else "Running"
        made.append(_eviction(host, state, instances))
    return made


def _eviction(host: dict[str, Any], state: str, instances: list[dict[str, Any]]) -> dict[str, Any]:
    name = host["metadata"]["name"]
    status = host.get("status", {})
    memory = status.get("allocation", {}).get("memory", 0)
    condition = {
        "type": "Evicting",
        "status": "True" if state == "Running" else "False",
        "reason": state,
        "message": _message(state, instances),
        "lastTransitionTime": "2026-12-01T06:00:00Z",
    }
    return {
        "apiVersion": "kvm.cloud.sap/v1",
        "kind": "Eviction",
        "metadata": {"name": f"{name}-maintenance", "creationTimestamp": "2026-12-01T05:30:00Z"},
        "spec": {"hypervisor": name, "reason": _REASONS[host["spec"]["maintenance"]]},
        "status": {
            "hypervisorServiceId": status.get("serviceId", ""),
            "outstandingRamMb": int(parse_quantity(memory)) // _MIB if instances else 0,
            "outstandingInstances": [i["id"] for i in instances],
            "conditions": [condition],
        },
    }


def _message(state: str, instances: list[dict[str, Any]]) -> str:
    if state == "Succeeded":
        return "all instances migrated away"
    if state == "Failed":
        return f"live migration of {instances[0]['id']} failed: no valid host found"
    return f"migrating {len(instances)} instances"
