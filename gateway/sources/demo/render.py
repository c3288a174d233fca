"""A planned demo host written out as the Hypervisor object the operator and its agent keep.

Spec and status as they would be on a cluster: labels copied from the Node,
traits and aggregates as Nova applies them, ``spec.bookings`` where the rollout
has reached the host, and the agent's figures in the spellings its versions use.
Pinned hosts report their dedicated cores as ``PCPU`` and their shared ones as
``cpu``, as Nova's ``cpu_dedicated_set`` and ``cpu_shared_set`` split them.
"""

from __future__ import annotations

from typing import Any

from gateway.domain.records import (
    BUILDING_BLOCK_LABEL,
    REGION_LABEL,
    WORKER_GROUP_LABEL,
    ZONE_LABEL,
)
from gateway.sources.demo.hardware import GiB
from gateway.sources.demo.plan import REGIONS, Fleet, Host

__all__ = ["HANA_TRAIT", "render"]

#: Required by the HANA flavors; the HANA aggregate isolates its hosts with it.
HANA_TRAIT = "CUSTOM_HANA_EXCLUSIVE_HOST"
_BASE_TRAITS = ("COMPUTE_NET_ATTACH_INTERFACE", "COMPUTE_VOLUME_MULTI_ATTACH")
_OS_VERSION, _OS_UPDATE = "1877.4", "1877.5"


def render(fleet: Fleet, host: Host) -> dict[str, Any]:
    labels = {
        "kubernetes.io/hostname": host.name,
        ZONE_LABEL: host.zone,
        REGION_LABEL: host.region,
        BUILDING_BLOCK_LABEL: host.bb,
        WORKER_GROUP_LABEL: f"hv-{host.bb}",
    }
    obj: dict[str, Any] = {
        "apiVersion": "kvm.cloud.sap/v1",
        "kind": "Hypervisor",
        "metadata": {"name": host.name, "labels": labels},
        "spec": _spec(fleet, host),
    }
    if host.role != "new":
        obj["status"] = _status(fleet, host)
    return obj


def _aggregates(fleet: Fleet, host: Host) -> list[dict[str, Any]]:
    """The zone's and the building block's, and those that steer flavors to special hosts."""
    restricted = {"filter_tenant_id": ",".join(host.allowed)} if host.allowed else {}
    names: list[tuple[str, dict[str, str]]] = [
        (host.zone, {"availability_zone": host.zone}),
        (host.bb, restricted),
    ]
    if host.hardware.hana:
        # Nova's isolated aggregate: only flavors requiring the trait may land here.
        names.append(("hana_exclusive", {f"trait:{HANA_TRAIT}": "required"}))
    if host.dedicated:
        # Matched by the pinned flavors' aggregate_instance_extra_specs:pinned.
        names.append(("pinned_cpus", {"pinned": "true"}))
    return [{"name": n, "uuid": fleet.aggregate_uuid(n), "metadata": m} for n, m in names]


def _traits(host: Host) -> list[str]:
    traits = [HANA_TRAIT] if host.hardware.hana else []
    if host.role == "maintenance":
        traits.append("COMPUTE_STATUS_DISABLED")
    return traits


def _spec(fleet: Fleet, host: Host) -> dict[str, Any]:
    hw = host.hardware
    aggregates = _aggregates(fleet, host)
    spec: dict[str, Any] = {
        "aggregates": [a["name"] for a in aggregates],
        "allowedProjects": list(host.allowed),
        "createCertManagerCertificate": False,
        "customTraits": [f"CUSTOM_NUMA_{hw.cores // hw.cells}C_{hw.memory_gib // hw.cells}G"],
        "evacuateOnReboot": True,
        "groups": [{"aggregate": a} for a in aggregates]
        + [{"trait": {"name": t}} for t in _traits(host)],
        "highAvailability": True,
        "installCertificate": True,
        "lifecycleEnabled": True,
        "overcommit": {"cpu": host.cpu_ratio, "memory": 1.0},
        "reboot": False,
        "skipTests": False,
        "version": _OS_UPDATE if host.updating else _OS_VERSION,
    }
    if host.maintenance:
        spec["maintenance"] = host.maintenance
        if host.maintenance == "manual":
            spec["maintenanceReason"] = f"DIMM errors on cell 1, hardware ticket {host.bb}-7731"
    if host.tracked:
        spec["bookings"] = _bookings(host)
    return spec


def _bookings(host: Host) -> list[dict[str, Any]]:
    cpu, gib = host.reserved
    # Some hosts' bookings were written in MEMORY_MB terms, as Placement counts.
    mebibytes = host.bb.endswith(("3", "7"))
    reserved = {"cpu": cpu, "memory": f"{gib * 1024}Mi" if mebibytes else f"{gib}Gi"}
    bookings: list[dict[str, Any]] = [
        {"reservation": {"name": "nova-reserved", "resources": reserved}}
    ]
    for c in host.consumers:
        if not c.booked:
            continue
        body: dict[str, Any] = {
            "uuid": c.uuid,
            "resources": c.flavor.resources(mebibytes),
            "consumerType": c.type,
            "projectID": c.project,
            "userID": c.user,
        }
        if c.generation is not None:
            body["consumerGeneration"] = c.generation
        bookings.append({"consumer": body})
    return bookings


def _memory(fleet: Fleet, host: Host) -> tuple[int, str | int]:
    """The host's memory in bytes, written the way some agent version writes it."""
    style = fleet.rng.randrange(4)
    if style == 0:
        return host.hardware.memory_gib * GiB, f"{host.hardware.memory_gib}Gi"
    if style == 1:
        return host.memory, f"{host.memory // 1024}Ki"
    return host.memory, str(host.memory) if style == 2 else host.memory


def _status(fleet: Fleet, host: Host) -> dict[str, Any]:
    hw = host.hardware
    memory, memory_text = _memory(fleet, host)
    domains = [c for c in host.consumers if c.domain]
    first = fleet.instance_number
    fleet.instance_number += len(domains)
    instances = [
        {"id": c.uuid, "name": f"instance-{first + i:08x}", "active": c.active}
        for i, c in enumerate(domains)
    ]
    if host.role == "normal" and fleet.rng.random() < 0.05:
        # A domain Placement knows nothing about (created outside Nova, or leaked).
        instances.append({"id": fleet.uuid(), "name": "instance-orphan", "active": False})
    overhead = fleet.rng.randrange(16, 96) * 2**20
    cores = {"cpu": host.shared} | ({"PCPU": host.dedicated} if host.dedicated else {})
    effective = cores | {"cpu": int(host.shared * host.cpu_ratio)}
    allocated = {name: 0 for name in cores}
    for c in domains:
        allocated[c.flavor.resource] += c.flavor.vcpus
    allocated_memory = sum(c.flavor.gib * GiB + overhead for c in domains)
    onboarded = host.role != "onboarding"
    status: dict[str, Any] = {
        "capacity": _texts(cores) | {"memory": memory_text},
        "allocation": _texts(allocated) | {"memory": str(allocated_memory)},
        "cells": _cells(
            host,
            cores | {"memory": memory},
            effective | {"memory": memory},
            allocated | {"memory": allocated_memory},
        ),
        "instances": instances,
        "numInstances": len(instances),
        "internalIp": f"10.{46 + list(REGIONS).index(host.region)}.{int(host.bb[2:]) % 256}."
        f"{int(host.name[4:7])}",
        "traits": [*_BASE_TRAITS, *hw.traits, *_traits(host)],
        "aggregates": _aggregates(fleet, host) if onboarded else [],
        "conditions": _conditions(fleet, host),
        "hypervisorVersion": "9.2.0",
        "libVirtVersion": "10.10.0" if host.bb[-1] != "2" else "10.5.0",
        "capabilities": {"cpuArch": "x86_64", "cpus": hw.cores, "memory": memory_text},
        "domainCapabilities": {
            "arch": "x86_64",
            "hypervisorType": "kvm",
            "supportedDevices": ["video", "video/virtio", "hostdev/pci"],
            "supportedCpuModes": ["host-passthrough", "host-passthrough/migratable"],
            "supportedFeatures": ["sev"],
        },
        "updateStatus": {"inProgress": host.updating, "installed": _OS_VERSION, "retry": 3},
        "operatingSystem": {
            "prettyVersion": "Garden Linux 1877.4",
            "version": "1877.4",
            "kernelName": "Linux",
            "kernelRelease": "6.12.47-cloud-amd64",
            "hardwareVendor": hw.vendor,
            "hardwareModel": hw.model,
            "hardwareSerial": f"J{fleet.rng.getrandbits(32):08X}",
        },
    }
    if host.role != "oldagent":
        status["effectiveCapacity"] = _texts(effective) | {"memory": memory_text}
    if onboarded:
        status["hypervisorId"] = fleet.uuid()
        status["serviceId"] = fleet.uuid()
    if host.maintenance:
        # The operator reports eviction while it empties a host for maintenance.
        status["evicted"] = not host.consumers
    return status


def _texts(amounts: dict[str, int]) -> dict[str, str]:
    return {name: str(amount) for name, amount in amounts.items()}


def _cells(
    host: Host, capacity: dict[str, int], effective: dict[str, int], allocated: dict[str, int]
) -> list[dict[str, Any]]:
    n = host.hardware.cells
    cells = [
        {
            "cellID": i,
            "capacity": _part(capacity, n, i),
            "effectiveCapacity": _part(effective, n, i),
            "allocation": _part(allocated, n, i),
        }
        for i in range(n)
    ]
    # The agent does not promise an order.
    return cells[::-1] if host.bb.endswith("5") else cells


def _part(totals: dict[str, int], cells: int, cell: int) -> dict[str, str]:
    """One cell's part of a host's totals; the first cell takes the remainders."""
    return {
        name: str(total // cells + (total % cells if cell == 0 else 0))
        for name, total in totals.items()
    }


def _conditions(fleet: Fleet, host: Host) -> list[dict[str, Any]]:
    day = 1 + fleet.rng.randrange(28)
    since = f"2026-{1 + fleet.rng.randrange(10):02d}-{day:02d}T{fleet.rng.randrange(24):02d}:14:07Z"
    ready = ("True", "Ready", "Hypervisor is ready")
    onboarding = ("False", "Succeeded", "Onboarding completed")
    libvirt = ("True", "Connected", "Connected to libvirt")
    # A host stays Ready while the operator empties it (its compute service is
    # disabled all the same: DISABLED to the scheduler); once empty, it is down.
    if host.role == "maintenance" and not host.consumers:
        ready = ("False", "Maintenance", "Hypervisor is in maintenance")
    elif host.role == "notready":
        ready = ("False", "LibVirtConnectionFailed", "Cannot reach libvirt on the host")
        libvirt = (
            "False",
            "ConnectionFailed",
            "dial unix /run/libvirt/libvirt-sock: connect refused",
        )
    elif host.role == "onboarding":
        ready = ("False", "Onboarding", "Onboarding in progress")
        onboarding = ("True", "Testing", "Running smoke tests")
    # What the operator writes: the message is what kubectl get hv shows as Taint.
    tainted = ("True", "Kubectl", "⚠️") if host.tainted else ("False", "NoKubectl", "🟢")
    return [
        {
            "type": kind,
            "status": s,
            "reason": reason,
            "message": message,
            "lastTransitionTime": since,
        }
        for kind, (s, reason, message) in (
            ("Ready", ready),
            ("Onboarding", onboarding),
            ("LibVirtConnection", libvirt),
            ("Tainted", tainted),
        )
    ]
