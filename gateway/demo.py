"""A deterministic synthetic fleet (``--demo``), also used to load real API servers.

:func:`generate` returns complete Hypervisor objects, valid against the operator's
CRD, that look like a real region: several zones, homogeneous building blocks,
general-purpose and HANA hardware, overcommit, ``nova-reserved`` reservations and
thousands of consumers. It also plants the awkward cases a user must be able to
find: hosts without status (new), without ``spec.bookings`` (not tracked), in
maintenance, not Ready, over-subscribed, live migrations (one UUID on two hosts,
or a MIGRATION consumer on the source), allocation and instances that drift from
the bookings, and one consumer booked twice on the same host (a parse warning).

The same ``(size, seed, bookings_per_host)`` always gives the same fleet, and the
generator is cheap enough for benchmark fleets (20,000 hosts, 40 bookings each).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
from typing import Any

from gateway.bulk import collector_paused
from gateway.domain import BUILDING_BLOCK_LABEL, REGION_LABEL, WORKER_GROUP_LABEL, ZONE_LABEL
from gateway.source import SyncStatus
from gateway.store import Store

__all__ = ["DemoSource", "generate"]

log = logging.getLogger(__name__)

GiB = 2**30
REGIONS = {"qa-de-1": "abcd", "qa-de-2": "ab", "qa-nl-1": "abc"}


@dataclasses.dataclass(frozen=True, slots=True)
class _Hardware:
    vendor: str
    model: str
    cores: int
    memory_gib: int
    cells: int
    hana: bool
    traits: tuple[str, ...]


_HARDWARE = (
    _Hardware("Lenovo", "ThinkSystem SR650", 64, 512, 2, False, ("HW_CPU_X86_AVX2",)),
    _Hardware("Dell Inc.", "PowerEdge R750", 96, 1024, 2, False, ("HW_CPU_X86_AVX512F",)),
    _Hardware("Lenovo", "ThinkSystem SR650 V3", 128, 1536, 2, False, ("HW_CPU_X86_AVX512F",)),
    _Hardware("Dell Inc.", "PowerEdge R760", 192, 2048, 2, False, ("HW_CPU_X86_AMX_TILE",)),
    _Hardware("Lenovo", "ThinkSystem SR950", 224, 3072, 4, True, ("HW_CPU_X86_AVX512F",)),
    _Hardware("Lenovo", "ThinkSystem SR950 V3", 256, 4096, 4, True, ("HW_CPU_X86_AMX_TILE",)),
)
#: The UUID variant digit (RFC 9562) for each random hex digit, two bits kept.
_VARIANT = dict(zip("0123456789abcdef", "89ab" * 4, strict=True))
_MAINTENANCE = ("manual", "manual", "auto", "ha", "termination")
_BASE_TRAITS = ("COMPUTE_NET_ATTACH_INTERFACE", "COMPUTE_VOLUME_MULTI_ATTACH")


@dataclasses.dataclass(frozen=True, slots=True)
class _Flavor:
    """A Nova flavor, with its booking amounts formatted once rather than per booking."""

    vcpus: int
    gib: int

    @property
    def cpu(self) -> str:
        return _TEXT[self.vcpus]

    def memory(self, mebibytes: bool) -> str:
        return _MIB[self.gib] if mebibytes else _GIB[self.gib]


def _flavors(*popularity: tuple[int, int, int]) -> tuple[_Flavor, ...]:
    """Flavors repeated by popularity, so that one random index picks one."""
    return tuple(_Flavor(vcpus, gib) for vcpus, gib, times in popularity for _ in range(times))


_GENERAL = _flavors(
    (2, 4, 6), (2, 8, 5), (4, 8, 5), (4, 16, 5), (8, 16, 3), (8, 32, 4), (16, 64, 2),
    (16, 128, 1), (32, 128, 1), (32, 256, 1),
)  # fmt: skip
_HANA = _flavors((2, 32, 2), (4, 64, 3), (8, 128, 3), (16, 256, 2), (32, 512, 2), (64, 1024, 1))
_OVERBOOKING = _Flavor(16, 64)
_AMOUNTS = {f.vcpus for f in (*_GENERAL, *_HANA)} | {f.gib for f in (*_GENERAL, *_HANA)}
_TEXT = {n: str(n) for n in _AMOUNTS}
_GIB = {n: f"{n}Gi" for n in _AMOUNTS}
_MIB = {n: f"{n * 1024}Mi" for n in _AMOUNTS}


@dataclasses.dataclass(slots=True)
class _Consumer:
    """One consumer on one host: its booking (if ``booked``) and its libvirt domain."""

    uuid: str
    flavor: _Flavor
    project: str
    user: str
    generation: int | None
    type: str = "INSTANCE"
    booked: bool = True
    #: Whether libvirt knows the domain, and whether it runs.
    domain: bool = True
    active: bool = True


@dataclasses.dataclass(slots=True)
class _Host:
    """One host as planned, before it is written out as an object."""

    name: str
    region: str
    zone: str
    bb: str
    hardware: _Hardware
    role: str
    #: Whether spec.bookings exists (a new host may already carry its reservation).
    tracked: bool
    maintenance: str | None
    memory: int
    cpu_ratio: float
    consumers: list[_Consumer]
    reserved: tuple[int, int]


class _Fleet:
    """Random choices for one fleet; every draw comes from one seeded generator."""

    def __init__(self, size: int, seed: int, bookings_per_host: int | None) -> None:
        self.rng = random.Random(seed)
        self.size = size
        self.bookings_per_host = bookings_per_host
        self.aggregate_uuids: dict[str, str] = {}
        self.projects = [self.hex32() for _ in range(40 + size // 4)]
        self.users = {
            p: [self.hex32() for _ in range(1 + self.rng.randrange(4))] for p in self.projects
        }
        self.hana_projects = self.projects[:3]
        self.instance_number = 0x1000

    def hex32(self) -> str:
        return f"{self.rng.getrandbits(128):032x}"

    def uuid(self) -> str:
        h = f"{self.rng.getrandbits(128):032x}"
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{_VARIANT[h[16]]}{h[17:20]}-{h[20:]}"

    def aggregate_uuid(self, name: str) -> str:
        if name not in self.aggregate_uuids:
            self.aggregate_uuids[name] = self.uuid()
        return self.aggregate_uuids[name]

    def hosts(self) -> list[_Host]:
        """Lay out building blocks over the zones, then give each host a role."""
        roles = self.roles()
        zones = [(region, f"{region}{z}") for region, letters in REGIONS.items() for z in letters]
        hosts: list[_Host] = []
        bb_number = 40
        while len(hosts) < self.size:
            region, zone = zones[bb_number % len(zones)]
            hardware = self.rng.choice(_HARDWARE)
            ratio = 1.0 if hardware.hana else self.rng.choice((2.0, 2.0, 3.0, 4.0, 1.5))
            bb = f"bb{bb_number:03d}"
            for node in range(min(self.rng.choice((8, 12, 16, 24, 32)), self.size - len(hosts))):
                role = roles[len(hosts)]
                maintenance = self.rng.choice(_MAINTENANCE) if role == "maintenance" else None
                tracked = role not in ("untracked", "onboarding", "new") or (
                    role == "new" and self.rng.random() < 0.5
                )
                unused = self.rng.randrange(2, 12) * GiB + self.rng.randrange(2**20) * 1024
                hosts.append(
                    _Host(
                        name=f"node{node + 1:03d}-{bb}",
                        region=region,
                        zone=zone,
                        bb=bb,
                        hardware=hardware,
                        role=role,
                        tracked=tracked,
                        maintenance=maintenance,
                        memory=hardware.memory_gib * GiB - unused,
                        cpu_ratio=ratio,
                        consumers=[],
                        reserved=(self.rng.choice((2, 4, 4, 8)), self.rng.choice((8, 16, 16, 32))),
                    )
                )
            bb_number += 1
        for host in hosts:
            self.book(host)
        self.migrate(hosts)
        return hosts

    def roles(self) -> list[str]:
        """One role per host position; a fixed share of each, so every fleet has some."""
        shares = {"new": 0.02, "onboarding": 0.01, "maintenance": 0.03, "notready": 0.02}
        shares |= {"oversubscribed": 0.02, "untracked": 0.12, "oldagent": 0.05}
        roles: list[str] = []
        for role, share in shares.items():
            roles += [role] * (max(1, round(self.size * share)) if self.size >= 20 else 0)
        roles += ["normal"] * max(0, self.size - len(roles))
        roles = roles[: self.size]
        self.rng.shuffle(roles)
        return roles

    def book(self, host: _Host) -> None:
        """Fill the host with consumers up to a target (a utilization, or a count)."""
        if host.role in ("new", "onboarding"):
            return
        flavors = _HANA if host.hardware.hana else _GENERAL
        projects = self.hana_projects if host.hardware.hana else self.projects
        cpu = int((host.hardware.cores - host.reserved[0]) * host.cpu_ratio)
        gib = (host.memory // GiB) - host.reserved[1]
        rand = self.rng.random
        if self.bookings_per_host is None:
            # Hosts in maintenance are being emptied.
            utilization = 0.15 * rand() if host.maintenance else 0.3 + 0.62 * rand()
            cpu_left, gib_left, count = int(cpu * utilization), int(gib * utilization), 10**9
        else:
            cpu_left, gib_left = cpu, gib
            count = self.rng.randint(self.bookings_per_host // 2, self.bookings_per_host * 3 // 2)
        misses, picks = 0, len(flavors)
        smallest = min(flavors, key=lambda f: (f.vcpus, f.gib))
        while len(host.consumers) < count and misses < 4:
            flavor = flavors[int(rand() * picks)]
            if flavor.vcpus > cpu_left or flavor.gib > gib_left:
                if self.bookings_per_host is None:
                    misses += 1
                    continue
                flavor = smallest
            cpu_left -= flavor.vcpus
            gib_left -= flavor.gib
            cpu -= flavor.vcpus
            host.consumers.append(self.consumer(flavor, projects))
        if host.role == "oversubscribed":
            while cpu >= 0:
                cpu -= _OVERBOOKING.vcpus
                host.consumers.append(self.consumer(_OVERBOOKING, projects))

    def consumer(self, flavor: _Flavor, projects: list[str]) -> _Consumer:
        rand = self.rng.random
        project = projects[int(rand() * len(projects))]
        users = self.users[project]
        r = rand()
        # One draw decides the rare cases: just created (no generation yet), no
        # domain yet (booked, not running), shut off.
        generation = None if r < 0.02 else 1 + int(r * 12)
        user = users[int(rand() * len(users))]
        return _Consumer(
            self.uuid(), flavor, project, user, generation, "INSTANCE", True, r > 0.01, r > 0.06
        )

    def migrate(self, hosts: list[_Host]) -> None:
        """A few live migrations: half keep one UUID on both hosts, half use MIGRATION."""
        candidates = [h for h in hosts if h.role in ("normal", "oldagent") and h.consumers]
        if len(candidates) < 2:
            return
        for n in range(max(2, self.size // 40)):
            source, target = self.rng.sample(candidates, 2)
            moving = self.rng.choice(source.consumers)
            if moving.type != "INSTANCE" or not moving.booked:
                continue
            arriving = dataclasses.replace(moving, active=False, domain=True)
            target.consumers.append(arriving)
            if n % 2:
                # Nova books the source side under a migration UUID; the domain
                # still runs on the source under the instance UUID.
                moving.booked = False
                migration = dataclasses.replace(
                    moving, uuid=self.uuid(), type="MIGRATION", booked=True, domain=False
                )
                source.consumers.append(migration)
        # The same consumer booked twice on one host: nothing prevents it.
        twice = self.rng.choice(candidates)
        first = next(c for c in twice.consumers if c.booked)
        twice.consumers.append(dataclasses.replace(first, domain=False))


def generate(
    size: int = 200, seed: int = 0, bookings_per_host: int | None = None
) -> list[dict[str, Any]]:
    """A fleet of ``size`` Hypervisor objects, the same for the same arguments.

    Hosts are filled to a random utilization, or, with ``bookings_per_host``, to
    about that many consumer bookings each (benchmark fleets). Objects carry no
    ``uid`` or ``resourceVersion``: the cluster assigns those.
    """
    if size < 0:
        raise ValueError(f"a fleet cannot have {size} hypervisors")
    with collector_paused():
        fleet = _Fleet(size, seed, bookings_per_host)
        return [_render(fleet, host) for host in fleet.hosts()]


def _render(fleet: _Fleet, host: _Host) -> dict[str, Any]:
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


def _aggregates(fleet: _Fleet, host: _Host) -> list[dict[str, Any]]:
    names: list[tuple[str, dict[str, str]]] = [
        (host.zone, {"availability_zone": host.zone}),
        (host.bb, {}),
    ]
    if host.hardware.hana:
        names.append(("hana_exclusive", {"filter_tenant_id": ",".join(fleet.hana_projects)}))
    return [{"name": n, "uuid": fleet.aggregate_uuid(n), "metadata": m} for n, m in names]


def _traits(host: _Host) -> list[str]:
    traits = ["CUSTOM_HANA_EXCLUSIVE_HOST"] if host.hardware.hana else []
    if host.role == "maintenance":
        traits.append("COMPUTE_STATUS_DISABLED")
    return traits


def _spec(fleet: _Fleet, host: _Host) -> dict[str, Any]:
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
    }
    if host.maintenance:
        spec["maintenance"] = host.maintenance
        if host.maintenance == "manual":
            spec["maintenanceReason"] = f"DIMM errors on cell 1, hardware ticket {host.bb}-7731"
    if host.tracked:
        spec["bookings"] = _bookings(host)
    return spec


def _bookings(host: _Host) -> list[dict[str, Any]]:
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


def _memory(fleet: _Fleet, host: _Host) -> tuple[int, str | int]:
    """The host's memory in bytes, written the way some agent version writes it."""
    style = fleet.rng.randrange(4)
    if style == 0:
        return host.hardware.memory_gib * GiB, f"{host.hardware.memory_gib}Gi"
    if style == 1:
        return host.memory, f"{host.memory // 1024}Ki"
    return host.memory, str(host.memory) if style == 2 else host.memory


def _status(fleet: _Fleet, host: _Host) -> dict[str, Any]:
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
    return status


def _cells(host: _Host, memory: int, cpu: int, allocated: int) -> list[dict[str, Any]]:
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


def _conditions(fleet: _Fleet, host: _Host) -> list[dict[str, Any]]:
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
        )
    ]


class DemoSource:
    """Serves one generated fleet; it never changes, so there is nothing to watch."""

    def __init__(
        self, size: int = 200, seed: int = 0, bookings_per_host: int | None = None
    ) -> None:
        self.size = size
        self.seed = seed
        self.bookings_per_host = bookings_per_host
        self.status = SyncStatus(source="demo")

    async def run(self, store: Store) -> None:
        objects = await asyncio.to_thread(generate, self.size, self.seed, self.bookings_per_host)
        await store.replace_async(objects)
        self.status.parse_failures = len(store.rejected)
        store.mark_ready()
        self.status.synced = True
        self.status.confirm()
        log.info("demo fleet loaded: %d hypervisors (seed %d)", len(objects), self.seed)
        await asyncio.Event().wait()
