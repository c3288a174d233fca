"""A generated fleet twice over: as Hypervisor objects, and as what Placement holds for them.

Every host is drawn in Placement's units first (whole cores, MiB of bookings,
physical bytes of memory) and only then spelled as an object, in the many ways a
quantity may be written (domain brief, section 3). So what Placement is loaded
with never passes through the gateway's parser: the two sides meet only in the
answers compared. The draw is seeded; which hosts carry which feature (untracked,
maintenance, PCPU, isolated aggregates) follows the host's index, so every feature
is present whatever the amounts come out as.
"""

from __future__ import annotations

import dataclasses
import random
import uuid
from collections.abc import Callable
from typing import Any

from harness.placement import Inventory
from tests.objects import consumer, hypervisor, reservation

MiB = 2**20
SEED = 20261203
HOSTS = 40
DISABLED = "COMPUTE_STATUS_DISABLED"
HANA = "CUSTOM_HANA_EXCLUSIVE_HOST"
GPU = "CUSTOM_GPU"
#: The node agent's traits, and the operator's custom ones, drawn per host.
STATUS_TRAITS = ("HW_CPU_X86_AVX2", "HW_CPU_X86_AVX512F", "COMPUTE_VOLUME_MULTI_ATTACH")
CUSTOM_TRAITS = ("CUSTOM_SSD", "CUSTOM_SLOW_DISK")
GROUP_TRAIT = "CUSTOM_NVME"


@dataclasses.dataclass(frozen=True)
class Aggregate:
    name: str
    uuid: str
    metadata: dict[str, str]

    def to_group(self) -> dict[str, Any]:
        return {"aggregate": {"name": self.name, "uuid": self.uuid, "metadata": self.metadata}}


#: Nova's host aggregates; hana and gpu isolate their hosts (``trait:NAME=required``).
AGGREGATES = {
    a.name: a
    for a in (
        Aggregate("az-a", "0a0a0a0a-0000-4000-8000-000000000001", {"availability_zone": "az-a"}),
        Aggregate("bb101", "0a0a0a0a-0000-4000-8000-000000000002", {"building_block": "bb101"}),
        Aggregate("hana", "0a0a0a0a-0000-4000-8000-000000000003", {f"trait:{HANA}": "required"}),
        Aggregate("gpu", "0a0a0a0a-0000-4000-8000-000000000004", {f"trait:{GPU}": "required"}),
    )
}


@dataclasses.dataclass(frozen=True)
class Provider:
    """A tracked host as Placement holds it (untracked hosts are not in Placement)."""

    name: str
    uuid: str
    inventories: dict[str, Inventory]
    traits: frozenset[str]
    aggregates: frozenset[str]


@dataclasses.dataclass
class Consumer:
    """One consumer's allocations over every host it is booked on, summed per host."""

    project: str
    user: str
    allocations: dict[str, dict[str, int]] = dataclasses.field(default_factory=dict)

    @property
    def home(self) -> str:
        """The provider it was first booked on."""
        return next(iter(self.allocations))

    def add(self, provider: str, resources: dict[str, int]) -> None:
        held = self.allocations.setdefault(provider, {})
        for rc, amount in resources.items():
            held[rc] = held.get(rc, 0) + amount


@dataclasses.dataclass
class Fleet:
    objects: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    providers: list[Provider] = dataclasses.field(default_factory=list)
    consumers: dict[str, Consumer] = dataclasses.field(default_factory=dict)


def generate(seed: int = SEED, hosts: int = HOSTS) -> Fleet:
    rng = random.Random(seed)
    fleet = Fleet()
    for index in range(hosts):
        _Host(rng, index).add_to(fleet)
    _migrate(rng, fleet)
    _add_edge_host(fleet)
    return fleet


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _cores(rng: random.Random, n: int) -> int | str:
    return rng.choice((n, str(n), f"{n * 1000}m"))


def _mebibytes(rng: random.Random, mib: int) -> int | str:
    spellings: list[int | str] = [f"{mib}Mi", mib * MiB, str(mib * MiB), f"{mib * 1024}Ki"]
    if mib % 1024 == 0:
        spellings.append(f"{mib // 1024}Gi")
    return rng.choice(spellings)


def _memory(rng: random.Random, index: int) -> tuple[str, int]:
    """Physical memory, as spelled and in bytes; most of it not a whole number of MiB."""
    if index == 0:
        return "4227289164Ki", 4227289164 * 1024
    kind = index % 4
    if kind == 0:
        gib = rng.choice((128, 256, 512))
        return f"{gib}Gi", gib * 2**30
    if kind == 1:
        kib = rng.choice((256, 512, 1024)) * 2**20 - rng.randrange(1, 1024)
        return f"{kib}Ki", kib * 1024
    if kind == 2:
        gigabytes = rng.choice((200, 500, 750))
        return f"{gigabytes}G", gigabytes * 10**9
    gib = rng.choice((384, 768))
    return str(gib * 2**30), gib * 2**30


def _booking(
    rng: random.Random, consumer_uuid: str, project: str, amounts: dict[str, int]
) -> dict[str, Any]:
    """A consumer's booking of Placement amounts, spelled in the gateway's keys."""
    return consumer(
        consumer_uuid,
        _spelled(rng, amounts),
        projectID=project,
        userID="u1",
        consumerType="INSTANCE",
        consumerGeneration=1,
    )


def _spelled(rng: random.Random, amounts: dict[str, int]) -> dict[str, Any]:
    spell: dict[str, tuple[str, Callable[[random.Random, int], int | str]]] = {
        "VCPU": ("cpu", _cores),
        "MEMORY_MB": ("memory", _mebibytes),
        "PCPU": ("PCPU", lambda rng, n: rng.choice((n, str(n)))),
    }
    return {spell[rc][0]: spell[rc][1](rng, n) for rc, n in amounts.items() if n}


def _ready() -> list[dict[str, str]]:
    since = "2026-11-01T00:00:00Z"
    return [{"type": "Ready", "status": "True", "reason": "Ok", "lastTransitionTime": since}]


class _Host:
    """One host's draw; :meth:`add_to` writes it as an object and, if tracked, a provider."""

    def __init__(self, rng: random.Random, index: int) -> None:
        self.rng = rng
        self.index = index
        self.name = f"node-{index:03d}"
        self.uuid = _uuid(rng)
        self.tracked = index % 8 != 7
        self.disabled = index % 6 == 4
        self.cores = rng.choice((16, 32, 48, 64, 128))
        self.memory, memory_bytes = _memory(rng, index)
        self.pcpus = rng.choice((8, 16, 32)) if index % 3 == 0 else 0
        self.ratios = {"cpu": rng.choice((1.0, 1.25, 1.5, 2.0, 4.0))}
        self.ratios["memory"] = rng.choice((1.0, 1.0, 1.5))
        self.inventories = {
            "VCPU": Inventory(self.cores, rng.choice((0, 2, 4)), self.ratios["cpu"]),
            "MEMORY_MB": Inventory(
                memory_bytes // MiB, rng.choice((0, 2048, 8192)), self.ratios["memory"]
            ),
        }
        if self.pcpus:
            self.inventories["PCPU"] = Inventory(self.pcpus)
        self.status_traits = {t for t in STATUS_TRAITS if rng.random() < 0.5}
        self.custom_traits = {t for t in CUSTOM_TRAITS if rng.random() < 0.4}
        self.custom_traits |= {HANA} if index % 10 in (3, 8) and index % 20 != 13 else set()
        self.custom_traits |= {GPU} if index % 11 == 5 else set()
        self.group_trait = rng.random() < 0.3
        names = [n for n in ("az-a", "bb101") if rng.random() < 0.5]
        names += ["hana"] if index % 10 == 3 else []
        names += ["gpu"] if index % 11 == 5 else []
        self.aggregates = [AGGREGATES[n] for n in names]

    def add_to(self, fleet: Fleet) -> None:
        groups = [a.to_group() for a in self.aggregates]
        groups += [{"trait": {"name": GROUP_TRAIT}}] if self.group_trait else []
        spec: dict[str, Any] = {
            # a ratio of 1.0 is written out on odd hosts, left out (the default) on even ones
            "overcommit": {k: r for k, r in self.ratios.items() if r != 1.0 or self.index % 2},
            "customTraits": sorted(self.custom_traits),
            "groups": groups,
        }
        if self.disabled:
            spec["maintenance"] = self.rng.choice(("manual", "auto", "ha", "termination"))
        if self.tracked:
            spec["bookings"] = self._reservations() + self._consumers(fleet)
            fleet.providers.append(self._provider())
        fleet.objects.append(hypervisor(self.name, spec=spec, status=self._status()))

    def _provider(self) -> Provider:
        traits = self.status_traits | self.custom_traits
        traits |= {GROUP_TRAIT} if self.group_trait else set()
        traits |= {DISABLED} if self.disabled else set()
        aggregates = frozenset(a.uuid for a in self.aggregates)
        return Provider(self.name, self.uuid, self.inventories, frozenset(traits), aggregates)

    def _status(self) -> dict[str, Any]:
        capacity = {"cpu": _cores(self.rng, self.cores), "memory": self.memory}
        if self.pcpus:
            capacity["PCPU"] = self.rng.choice((self.pcpus, str(self.pcpus)))
        return {
            "capacity": capacity,
            "hypervisorId": self.uuid,
            "traits": sorted(self.status_traits),
            "conditions": _ready(),
            "numInstances": 0,
        }

    def _reservations(self) -> list[dict[str, Any]]:
        """Nova's reserved_host_*: one entry, or one per resource on odd hosts."""
        reserved = {rc: i.reserved for rc, i in self.inventories.items() if i.reserved}
        if not reserved:
            return []
        if self.index % 2:
            return [
                reservation(f"reserved-{rc}", _spelled(self.rng, {rc: n}))
                for rc, n in reserved.items()
            ]
        return [reservation("nova-reserved", _spelled(self.rng, reserved))]

    def _consumers(self, fleet: Fleet) -> list[dict[str, Any]]:
        bookings = []
        for _ in range(self.rng.randint(0, 10)):
            consumer_uuid, project = _uuid(self.rng), self.rng.choice(("p1", "p2", "p3"))
            amounts = self._instance()
            fleet.consumers[consumer_uuid] = Consumer(project, "u1")
            fleet.consumers[consumer_uuid].add(self.uuid, amounts)
            bookings.append(_booking(self.rng, consumer_uuid, project, amounts))
        if bookings and self.index % 13 == 5:
            # the same consumer booked twice on one host: both count (domain brief, section 5)
            twice = bookings[0]["consumer"]
            amounts = {"VCPU": 1, "MEMORY_MB": 1024}
            fleet.consumers[twice["uuid"]].add(self.uuid, amounts)
            bookings.append(_booking(self.rng, twice["uuid"], twice["projectID"], amounts))
        return bookings

    def _instance(self) -> dict[str, int]:
        cpu = "PCPU" if self.pcpus and self.rng.random() < 0.4 else "VCPU"
        memory = self.rng.choice((1024, 2048, 4096, 8192, 12345, 16384, 32768))
        return {cpu: self.rng.choice((1, 2, 4, 8)), "MEMORY_MB": memory}


def _add_edge_host(fleet: Fleet) -> None:
    """A host where flooring memory in bytes and in MiB part ways.

    Physical memory is 256 GiB and 1023 KiB; Placement truncates it to 262144 MiB.
    With a ratio of 1.5 Placement allocates against floor(262144 x 1.5) = 393216 MiB,
    and one consumer holds 131073 MiB (128 GiB and 1 MiB): 262143 MiB are free, one
    short of 256 GiB, and 63 instances of 4 GiB fit (64 x 4096 = 262144). In bytes,
    floor((2^38 + 1047552) x 1.5) - 131073 x 2^20 is 262144 MiB and 522752 bytes:
    a 256 GiB instance and 64 of 4 GiB would fit, but Placement places neither.
    """
    inventories = {
        "VCPU": Inventory(256, allocation_ratio=4.0),
        "MEMORY_MB": Inventory(262144, allocation_ratio=1.5),
    }
    consumers = {"0e0e0e0e-0000-4000-8000-0000000000c1": {"VCPU": 2, "MEMORY_MB": 131073}}
    add_host(fleet, "node-edge", f"{2**28 + 1023}Ki", inventories, consumers)


def add_host(
    fleet: Fleet,
    name: str,
    memory: str,
    inventories: dict[str, Inventory],
    consumers: dict[str, dict[str, int]],
) -> None:
    """A hand-made tracked host of VCPU and MEMORY_MB, with no reservation, trait or aggregate.

    ``memory`` is the physical memory as status.capacity spells it; ``consumers``
    their amounts in Placement's units, by consumer UUID.
    """
    provider = str(uuid.uuid5(uuid.NAMESPACE_DNS, name))
    fleet.providers.append(Provider(name, provider, inventories, frozenset(), frozenset()))
    bookings = []
    for consumer_uuid, amounts in consumers.items():
        fleet.consumers[consumer_uuid] = Consumer("p1", "u1", {provider: amounts})
        spelled = {"cpu": amounts["VCPU"], "memory": f"{amounts['MEMORY_MB']}Mi"}
        bookings.append(consumer(consumer_uuid, spelled, projectID="p1"))
    ratios = {"cpu": inventories["VCPU"].allocation_ratio}
    ratios["memory"] = inventories["MEMORY_MB"].allocation_ratio
    status = {
        "capacity": {"cpu": inventories["VCPU"].total, "memory": memory},
        "hypervisorId": provider,
        "conditions": _ready(),
        "numInstances": 0,
    }
    spec = {"overcommit": ratios, "bookings": bookings}
    fleet.objects.append(hypervisor(name, spec=spec, status=status))


def _migrate(rng: random.Random, fleet: Fleet) -> None:
    """Book a few consumers on a second host too, as during a live migration."""
    objects = {o["metadata"]["name"]: o for o in fleet.objects}
    movable = sorted(
        c for c, held in fleet.consumers.items() if "PCPU" not in held.allocations[held.home]
    )
    for consumer_uuid in rng.sample(movable, 3):
        held = fleet.consumers[consumer_uuid]
        target = rng.choice([p for p in fleet.providers if p.uuid != held.home])
        amounts = dict(held.allocations[held.home])
        held.add(target.uuid, amounts)
        objects[target.name]["spec"]["bookings"].append(
            _booking(rng, consumer_uuid, held.project, amounts)
        )
