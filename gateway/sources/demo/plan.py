"""The demo fleet as planned: regions, building blocks, hosts and their consumers.

:class:`Fleet` makes every random choice of one synthetic fleet (sizes, fill,
which building blocks pin cores or are kept for a few projects, maintenance, live
migrations, the awkward cases, which hosts carry bookings) from seeded
generators, so the same arguments always plan the same fleet;
:mod:`gateway.sources.demo.render` writes each planned :class:`Host` out as a Hypervisor object.
"""

from __future__ import annotations

import dataclasses
import random

from gateway.sources.demo.hardware import (
    GENERAL,
    HANA,
    HARDWARE,
    OVERBOOKING,
    PINNED,
    Flavor,
    GiB,
    Hardware,
)

__all__ = ["EXAMPLE_CONSUMER", "REGIONS", "TRACKED", "Fleet", "Host", "check_tracked"]

#: The share of hosts that carry spec.bookings by default: a rollout in progress.
TRACKED = 0.6
#: The consumer the README's example looks up: the first live migration's, on two
#: tracked hosts, so that the documented query answers on the default demo.
EXAMPLE_CONSUMER = "6f1c2a9e-0b7d-4c35-9d6e-5a8f7e2b1c40"

REGIONS = {"qa-de-1": "abcd", "qa-de-2": "ab", "qa-nl-1": "abc"}


def check_tracked(share: float) -> None:
    """Raise ValueError unless ``share`` is a fraction of hosts: 0 to 1, not NaN."""
    if not 0 <= share <= 1:
        raise ValueError(f"the tracked share (--demo-tracked) must be from 0 to 1, got {share}")


#: The UUID variant digit (RFC 9562) for each random hex digit, two bits kept.
_VARIANT = dict(zip("0123456789abcdef", "89ab" * 4, strict=True))
_MAINTENANCE = ("manual", "manual", "auto", "ha", "termination")


@dataclasses.dataclass(slots=True)
class _Consumer:
    """One consumer on one host: its booking (if ``booked``) and its libvirt domain."""

    uuid: str
    flavor: Flavor
    project: str
    user: str
    generation: int | None
    type: str = "INSTANCE"
    booked: bool = True
    #: Whether libvirt knows the domain, and whether it runs.
    domain: bool = True
    active: bool = True


@dataclasses.dataclass(slots=True)
class Host:
    """One host as planned, before it is written out as an object."""

    name: str
    region: str
    zone: str
    bb: str
    hardware: Hardware
    role: str
    #: Whether spec.bookings exists (a new host may already carry its reservation).
    tracked: bool
    maintenance: str | None
    memory: int
    cpu_ratio: float
    consumers: list[_Consumer]
    reserved: tuple[int, int]
    #: Edited by hand with kubectl (the Tainted condition is True).
    tainted: bool = False
    #: An operating system update is running (status.updateStatus.inProgress).
    updating: bool = False
    #: Cores in Nova's cpu_dedicated_set, reported as PCPU; the rest (cpu_shared_set) as cpu.
    dedicated: int = 0
    #: spec.allowedProjects: empty when every project may use the host.
    allowed: tuple[str, ...] = ()

    @property
    def shared(self) -> int:
        return self.hardware.cores - self.dedicated

    @property
    def pool(self) -> tuple[bool, bool, tuple[str, ...]]:
        """HANA, pinned, and the projects allowed: hosts alike in these take the same instances."""
        return self.hardware.hana, self.dedicated > 0, self.allowed

    @property
    def flavors(self) -> tuple[Flavor, ...]:
        """The flavors planned here, repeated by popularity."""
        return HANA if self.hardware.hana else PINNED if self.dedicated else GENERAL


class Fleet:
    """Random choices for one fleet, from two generators seeded alike: one plans the
    fleet, the other only chooses which hosts the bookings rollout has reached."""

    def __init__(
        self, size: int, seed: int, bookings_per_host: int | None, tracked: float = TRACKED
    ) -> None:
        check_tracked(tracked)
        self.rng = random.Random(seed)
        # Its own generator: the same fleet is tracked more or less, not replanned.
        self.rollout = random.Random(f"rollout-{seed}")
        self.size = size
        self.bookings_per_host = bookings_per_host
        self.tracked = tracked
        self.aggregate_uuids: dict[str, str] = {}
        self.projects = [self.hex32() for _ in range(40 + size // 4)]
        self.users = {
            p: [self.hex32() for _ in range(1 + self.rng.randrange(4))] for p in self.projects
        }
        self.hana_projects = self.projects[:3]
        self.restricted_projects = tuple(self.projects[3:5])
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

    def hosts(self) -> list[Host]:
        """Lay out building blocks over the zones, then give each host a role."""
        roles = self.roles()
        zones = [(region, f"{region}{z}") for region, letters in REGIONS.items() for z in letters]
        hosts: list[Host] = []
        bb_number, general = 40, 0
        while len(hosts) < self.size:
            region, zone = zones[bb_number % len(zones)]
            hardware = self.rng.choice(HARDWARE)
            ratio = 1.0 if hardware.hana else self.rng.choice((2.0, 2.0, 3.0, 4.0, 1.5))
            bb = f"bb{bb_number:03d}"
            dedicated = 0
            allowed: tuple[str, ...] = ()
            if not hardware.hana:
                # Every fifth general-purpose building block pins three quarters of its
                # cores; one in eight of the others is reserved for a few projects.
                dedicated = hardware.cores * 3 // 4 if general % 5 == 1 else 0
                allowed = self.restricted_projects if not dedicated and general % 8 == 3 else ()
                general += 1
            for node in range(min(self.rng.choice((8, 12, 16, 24, 32)), self.size - len(hosts))):
                role = roles[len(hosts)]
                maintenance = self.rng.choice(_MAINTENANCE) if role == "maintenance" else None
                unused = self.rng.randrange(2, 12) * GiB + self.rng.randrange(2**20) * 1024
                hosts.append(
                    Host(
                        name=f"node{node + 1:03d}-{bb}",
                        region=region,
                        zone=zone,
                        bb=bb,
                        hardware=hardware,
                        role=role,
                        tracked=False,
                        maintenance=maintenance,
                        memory=hardware.memory_gib * GiB - unused,
                        cpu_ratio=ratio,
                        consumers=[],
                        reserved=(self.rng.choice((2, 4, 4, 8)), self.rng.choice((8, 16, 16, 32))),
                        dedicated=dedicated,
                        allowed=allowed,
                    )
                )
            bb_number += 1
        self.roll_out(hosts)
        for host in hosts:
            self.book(host)
        self.migrate(hosts)
        self.mark(hosts)
        return hosts

    def roll_out(self, hosts: list[Host]) -> None:
        """Track the chosen share of every role, so that each kind of host (full,
        over-subscribed, new, ...) is found both with bookings and without."""
        by_role: dict[str, list[Host]] = {}
        for host in hosts:
            by_role.setdefault(host.role, []).append(host)
        for group in by_role.values():
            self.rollout.shuffle(group)
            for host in group[: round(len(group) * self.tracked)]:
                host.tracked = True

    def mark(self, hosts: list[Host]) -> None:
        """A few hosts edited by hand (tainted) and a few in an OS update."""
        count = round(self.size * 0.03) if self.size >= 20 else 0
        reported = [h for h in hosts if h.role != "new"]
        for host in self.rng.sample(reported, min(count, len(reported))):
            host.tainted = True
        for host in self.rng.sample(reported, min(count, len(reported))):
            host.updating = True

    def roles(self) -> list[str]:
        """One role per host position; a fixed share of each, so every fleet has some."""
        shares = {"new": 0.02, "onboarding": 0.01, "maintenance": 0.03, "notready": 0.02}
        shares |= {"oversubscribed": 0.04, "full": 0.05, "oldagent": 0.05}
        roles: list[str] = []
        for role, share in shares.items():
            roles += [role] * (max(1, round(self.size * share)) if self.size >= 20 else 0)
        roles += ["normal"] * max(0, self.size - len(roles))
        roles = roles[: self.size]
        self.rng.shuffle(roles)
        return roles

    def book(self, host: Host) -> None:
        """Fill the host with consumers up to a target (a utilization, or a count)."""
        if host.role in ("new", "onboarding"):
            return
        flavors = host.flavors
        projects = list(host.allowed) or (
            self.hana_projects if host.hardware.hana else self.projects
        )
        # Nova's reserved_host_cpus comes out of the shared cores; PCPU is never overcommitted.
        cpu = int((host.shared - host.reserved[0]) * host.cpu_ratio)
        gib = (host.memory // GiB) - host.reserved[1]
        rand = self.rng.random
        if self.bookings_per_host is None:
            # Hosts in maintenance are being emptied; half of them are empty (evicted).
            if host.maintenance:
                utilization = 0.0 if rand() < 0.5 else 0.15 * rand()
            elif host.role == "full":
                utilization = 0.95 + 0.05 * rand()
            else:
                utilization = 0.3 + 0.62 * rand()
            count = 10**9
        else:
            utilization = 1.0
            count = self.rng.randint(self.bookings_per_host // 2, self.bookings_per_host * 3 // 2)
        left = {"cpu": int(cpu * utilization), "PCPU": int(host.dedicated * utilization)}
        gib_left = int(gib * utilization)
        misses, picks = 0, len(flavors)
        smallest = min(flavors, key=lambda f: (f.vcpus, f.gib))
        while len(host.consumers) < count and misses < 4:
            flavor = flavors[int(rand() * picks)]
            if flavor.vcpus > left[flavor.resource] or flavor.gib > gib_left:
                if self.bookings_per_host is None:
                    misses += 1
                    continue
                flavor = smallest
            left[flavor.resource] -= flavor.vcpus
            gib_left -= flavor.gib
            if not flavor.pinned:
                cpu -= flavor.vcpus
            host.consumers.append(self.consumer(flavor, projects))
        if host.role == "oversubscribed":
            # Beyond what the host admits with its reservation or without (the
            # capacity of an untracked host), and every one of them runs.
            while cpu >= -host.reserved[0] * host.cpu_ratio:
                cpu -= OVERBOOKING.vcpus
                extra = self.consumer(OVERBOOKING, projects)
                host.consumers.append(dataclasses.replace(extra, domain=True, active=True))

    def consumer(self, flavor: Flavor, projects: list[str]) -> _Consumer:
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

    def migrate(self, hosts: list[Host]) -> None:
        """A few live migrations: half keep one UUID on both hosts, half use MIGRATION."""
        candidates = [h for h in hosts if h.role in ("normal", "oldagent") and h.consumers]
        # Where bookings are tracked when there are such hosts: a consumer view shows them.
        tracked = [h for h in candidates if h.tracked]
        candidates = tracked if len(tracked) >= 2 else candidates
        if len(candidates) < 2:
            return
        planted = False
        # Nova moves an instance only to a host its flavor and project may use.
        pools: dict[tuple[bool, bool, tuple[str, ...]], list[Host]] = {}
        for host in candidates:
            pools.setdefault(host.pool, []).append(host)
        for n in range(max(2, self.size // 40)):
            pool = pools[self.rng.choice(candidates).pool]
            if len(pool) < 2:
                continue
            source, target = self.rng.sample(pool, 2)
            moving = self.rng.choice(source.consumers)
            if moving.type != "INSTANCE" or not moving.booked:
                continue
            if not planted and not n % 2:
                moving.uuid, planted = EXAMPLE_CONSUMER, True
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
        first = next((c for c in twice.consumers if c.booked and c.uuid != EXAMPLE_CONSUMER), None)
        if first is not None:  # a host whose few consumers all moved has none to double
            twice.consumers.append(dataclasses.replace(first, domain=False))
