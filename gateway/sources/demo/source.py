"""A deterministic synthetic fleet (``--demo``), also used to load real API servers.

:func:`generate` returns complete Hypervisor objects, valid against the operator's
CRD, that look like a real region: several zones, homogeneous building blocks,
general-purpose and HANA hardware, overcommit, ``nova-reserved`` reservations and
thousands of consumers. It also plants the awkward cases a user must be able to
find: hosts without status (new), in maintenance (some evicted), not Ready,
nearly full, over-subscribed, tainted, in an OS update, live migrations (one UUID
on two hosts, or a MIGRATION consumer on the source), allocation and instances
that drift from the bookings, and one consumer booked twice on the same host (a
parse warning).

It looks like a rollout of ``spec.bookings`` in progress: a share ``tracked`` of
every kind of host carries bookings, the rest only the status a released
operator writes (real clusters today: ``tracked=0``).

The same ``(size, seed, bookings_per_host, tracked)`` always gives the same fleet,
and the generator is cheap enough for benchmark fleets (20,000 hosts, 40 bookings
each).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from gateway.domain.records import (
    BUILDING_BLOCK_LABEL,
    REGION_LABEL,
    WORKER_GROUP_LABEL,
    ZONE_LABEL,
)
from gateway.sources.demo.churn import Churn
from gateway.sources.demo.plan import REGIONS, TRACKED, Fleet, GiB, Host, check_tracked
from gateway.store.collector import collector_paused
from gateway.store.source import SyncStatus
from gateway.store.store import Store

__all__ = ["DemoSource", "generate"]

log = logging.getLogger(__name__)

_BASE_TRAITS = ("COMPUTE_NET_ATTACH_INTERFACE", "COMPUTE_VOLUME_MULTI_ATTACH")
_OS_VERSION, _OS_UPDATE = "1877.4", "1877.5"


def generate(
    size: int = 200,
    seed: int = 0,
    bookings_per_host: int | None = None,
    tracked: float = TRACKED,
) -> list[dict[str, Any]]:
    """A fleet of ``size`` Hypervisor objects, the same for the same arguments.

    Hosts are filled to a random utilization, or, with ``bookings_per_host``, to
    about that many consumer bookings each (benchmark fleets). A share
    ``tracked`` (0 to 1) of the hosts carries ``spec.bookings``. Objects carry no
    ``uid`` or ``resourceVersion``: the cluster assigns those.
    """
    if size < 0:
        raise ValueError(f"a fleet cannot have {size} hypervisors")
    with collector_paused():
        fleet = Fleet(size, seed, bookings_per_host, tracked)
        return [_render(fleet, host) for host in fleet.hosts()]


def _render(fleet: Fleet, host: Host) -> dict[str, Any]:
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
    names: list[tuple[str, dict[str, str]]] = [
        (host.zone, {"availability_zone": host.zone}),
        (host.bb, {}),
    ]
    if host.hardware.hana:
        names.append(("hana_exclusive", {"filter_tenant_id": ",".join(fleet.hana_projects)}))
    return [{"name": n, "uuid": fleet.aggregate_uuid(n), "metadata": m} for n, m in names]


def _traits(host: Host) -> list[str]:
    traits = ["CUSTOM_HANA_EXCLUSIVE_HOST"] if host.hardware.hana else []
    if host.role == "maintenance":
        traits.append("COMPUTE_STATUS_DISABLED")
    return traits


def _spec(fleet: Fleet, host: Host) -> dict[str, Any]:
    hw = host.hardware
    aggregates = _aggregates(fleet, host)
    spec: dict[str, Any] = {
        "aggregates": [a["name"] for a in aggregates],
        "allowedProjects": list(fleet.hana_projects) if hw.hana else [],
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
            "resources": {"cpu": c.flavor.cpu, "memory": c.flavor.memory(mebibytes)},
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
    cpu_effective = int(hw.cores * host.cpu_ratio)
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
    allocated_cpu = sum(c.flavor.vcpus for c in domains)
    allocated_memory = sum(c.flavor.gib * GiB + overhead for c in domains)
    onboarded = host.role != "onboarding"
    status: dict[str, Any] = {
        "capacity": {"cpu": str(hw.cores), "memory": memory_text},
        "allocation": {"cpu": str(allocated_cpu), "memory": str(allocated_memory)},
        "cells": _cells(host, memory, allocated_cpu, allocated_memory),
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
        status["effectiveCapacity"] = {"cpu": str(cpu_effective), "memory": memory_text}
    if onboarded:
        status["hypervisorId"] = fleet.uuid()
        status["serviceId"] = fleet.uuid()
    if host.maintenance:
        # The operator reports eviction while it empties a host for maintenance.
        status["evicted"] = not host.consumers
    return status


def _cells(host: Host, memory: int, cpu: int, allocated: int) -> list[dict[str, Any]]:
    n = host.hardware.cells
    cells = []
    for i in range(n):
        cores = _share(host.hardware.cores, n, i)
        cell_memory = str(_share(memory, n, i))
        cells.append(
            {
                "cellID": i,
                "capacity": {"cpu": str(cores), "memory": cell_memory},
                "effectiveCapacity": {
                    "cpu": str(int(cores * host.cpu_ratio)),
                    "memory": cell_memory,
                },
                "allocation": {
                    "cpu": str(_share(cpu, n, i)),
                    "memory": str(_share(allocated, n, i)),
                },
            }
        )
    # The agent does not promise an order.
    return cells[::-1] if host.bb.endswith("5") else cells


def _share(total: int, cells: int, cell: int) -> int:
    """One cell's part of a host total; the first cell takes the remainder."""
    return total // cells + (total % cells if cell == 0 else 0)


def _conditions(fleet: Fleet, host: Host) -> list[dict[str, Any]]:
    day = 1 + fleet.rng.randrange(28)
    since = f"2026-{1 + fleet.rng.randrange(10):02d}-{day:02d}T{fleet.rng.randrange(24):02d}:14:07Z"
    ready = ("True", "Ready", "Hypervisor is ready")
    onboarding = ("False", "Succeeded", "Onboarding completed")
    libvirt = ("True", "Connected", "Connected to libvirt")
    if host.role == "maintenance":
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


class DemoSource:
    """Serves one generated fleet, changed every ``churn`` seconds if that is set.

    The fleet is always current, so the source confirms it every ``confirm_every``
    seconds (or at each change): a demo deployment's sync age stays small.
    """

    def __init__(
        self,
        size: int = 200,
        seed: int = 0,
        bookings_per_host: int | None = None,
        churn: float = 0.0,
        confirm_every: float = 10.0,
        tracked: float = TRACKED,
    ) -> None:
        if churn < 0:
            raise ValueError(f"the churn interval must not be negative, got {churn}")
        check_tracked(tracked)
        self.size = size
        self.seed = seed
        self.bookings_per_host = bookings_per_host
        self.tracked = tracked
        self.churn = churn
        self.confirm_every = confirm_every
        self.status = SyncStatus(source="demo")

    async def run(self, store: Store) -> None:
        # Paused until the store has settled the fleet, as the informer's first list is:
        # between generating and parsing, collections over the raw objects took 8-11 s
        # of a 20,000-host start.
        with collector_paused():
            objects = await asyncio.to_thread(
                generate, self.size, self.seed, self.bookings_per_host, self.tracked
            )
            await store.replace_async(objects)
        self.status.parse_failures = len(store.rejected)
        store.mark_ready()
        self.status.synced = True
        self.status.confirm()
        log.info("demo fleet loaded: %d hypervisors (seed %d)", len(objects), self.seed)
        churn = Churn(store, objects, self.seed) if self.churn else None
        del objects
        while True:
            await asyncio.sleep(self.churn or self.confirm_every)
            changed = churn.step() if churn is not None else None
            self.status.confirm(event=changed is not None)
