"""The domain model: immutable records parsed from Hypervisor objects.

One :class:`Hypervisor` is built per object version (see :mod:`gateway.parse`) and
never changes afterwards; every derived figure (:class:`ResourceCapacity`) is
computed once, at parse time, so that queries only read attributes.

The module-level helpers at the end mirror the operator's library helpers for
tooling that imports this package.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from decimal import Decimal
from enum import Enum

from gateway.quantity import CONTEXT

__all__ = [
    "BUILDING_BLOCK_LABEL",
    "REGION_LABEL",
    "WORKER_GROUP_LABEL",
    "ZONE_LABEL",
    "Aggregate",
    "Amounts",
    "Capabilities",
    "Cell",
    "Condition",
    "ConsumerBooking",
    "DomainCapabilities",
    "Drift",
    "Hypervisor",
    "Instance",
    "ReservationBooking",
    "ResourceCapacity",
    "Source",
    "Trait",
    "UpdateStatus",
    "add_amounts",
    "consumer",
    "consumers",
    "has_consumer",
    "reservation",
    "reservations",
    "sum_resources",
]

ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"
BUILDING_BLOCK_LABEL = "kubernetes.metal.cloud.sap/bb"
WORKER_GROUP_LABEL = "worker.garden.sapcloud.io/group"

#: Resource name -> exact amount in base units (cores, bytes, opaque units).
#: Record fields holding a map are declared ``field(hash=False)``: a dict cannot be
#: hashed, and a frozen record that hashes one raises TypeError in a set.
Amounts = Mapping[str, Decimal]


class Source(Enum):
    """Where a trait or aggregate membership was declared."""

    SPEC_GROUPS = "spec.groups"
    SPEC = "spec"
    STATUS = "status"


@dataclasses.dataclass(frozen=True, slots=True)
class Trait:
    name: str
    source: Source


@dataclasses.dataclass(frozen=True, slots=True)
class Aggregate:
    name: str
    uuid: str | None
    metadata: Mapping[str, str] = dataclasses.field(hash=False)
    source: Source


@dataclasses.dataclass(frozen=True, slots=True)
class ConsumerBooking:
    """A Placement consumer's claim on one hypervisor (``spec.bookings[].consumer``)."""

    uuid: str
    resources: Amounts = dataclasses.field(hash=False)
    consumer_generation: int | None
    consumer_type: str | None
    project_id: str | None
    user_id: str | None
    hypervisor: str


@dataclasses.dataclass(frozen=True, slots=True)
class ReservationBooking:
    """Capacity held back from scheduling (``spec.bookings[].reservation``)."""

    name: str
    resources: Amounts = dataclasses.field(hash=False)
    hypervisor: str


Booking = ConsumerBooking | ReservationBooking


@dataclasses.dataclass(frozen=True, slots=True)
class Condition:
    type: str
    status: str
    reason: str | None
    message: str | None
    last_transition_time: str | None


@dataclasses.dataclass(frozen=True, slots=True)
class Instance:
    id: str
    name: str
    active: bool


@dataclasses.dataclass(frozen=True, slots=True)
class Cell:
    cell_id: int
    capacity: Amounts = dataclasses.field(hash=False)
    effective_capacity: Amounts = dataclasses.field(hash=False)
    allocation: Amounts = dataclasses.field(hash=False)


@dataclasses.dataclass(frozen=True, slots=True)
class ResourceCapacity:
    """Placement's view of one resource on one hypervisor (domain brief, section 4).

    ``None`` means unknown, never zero: a host without status has no physical figure,
    so neither capacity nor free can be known, while booked and reserved still are.
    """

    name: str
    physical: Decimal | None
    overcommit_ratio: Decimal
    reserved: Decimal
    capacity: Decimal | None
    booked: Decimal
    free: Decimal | None
    allocated: Decimal | None
    unallocated: Decimal | None
    effective_capacity: Decimal | None

    @property
    def utilization(self) -> Decimal | None:
        """booked / capacity; unknown when capacity is unknown or zero."""
        if not self.capacity:
            return None
        return CONTEXT.divide(self.booked, self.capacity)

    @property
    def overcommitted(self) -> bool | None:
        """True when more is booked than the capacity admits (free < 0)."""
        return None if self.free is None else self.free < 0


@dataclasses.dataclass(frozen=True, slots=True)
class Capabilities:
    """status.capabilities: the host as libvirt discovered it (not what is scheduled)."""

    cpu_arch: str | None
    cpus: Decimal | None
    memory: Decimal | None


@dataclasses.dataclass(frozen=True, slots=True)
class DomainCapabilities:
    """status.domainCapabilities: what a guest domain on this host may use."""

    arch: str | None
    hypervisor_type: str | None
    supported_devices: tuple[str, ...]
    supported_cpu_modes: tuple[str, ...]
    supported_features: tuple[str, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class UpdateStatus:
    """status.updateStatus: the operating system update the operator runs on the host."""

    in_progress: bool | None
    installed: str | None
    retry: int | None


@dataclasses.dataclass(frozen=True, slots=True)
class Drift:
    """Bookings (what Placement believes) against instances (what libvirt runs)."""

    booked_not_running: tuple[ConsumerBooking, ...]
    running_not_booked: tuple[Instance, ...]


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class Hypervisor:
    """One parsed Hypervisor object at one resourceVersion."""

    name: str
    uid: str | None
    resource_version: str | None
    generation: int | None
    created: str | None
    labels: Mapping[str, str]
    zone: str | None
    region: str | None
    building_block: str | None
    worker_group: str | None
    # spec
    maintenance: str | None
    maintenance_reason: str | None
    lifecycle_enabled: bool | None
    high_availability: bool | None
    allowed_projects: tuple[str, ...]
    traits: tuple[Trait, ...]
    aggregates: tuple[Aggregate, ...]
    overcommit: Amounts
    bookings_tracked: bool
    bookings: tuple[Booking, ...]
    # status
    has_status: bool
    ready: bool
    ready_reason: str | None
    conditions: tuple[Condition, ...]
    capacity: Amounts
    effective_capacity: Amounts
    allocation: Amounts
    cells: tuple[Cell, ...]
    instances: tuple[Instance, ...]
    num_instances: int | None
    hypervisor_id: str | None
    service_id: str | None
    internal_ip: str | None
    hypervisor_version: str | None
    libvirt_version: str | None
    operating_system: Mapping[str, str]
    # derived
    resources: Mapping[str, ResourceCapacity]
    drift: Drift | None
    warnings: tuple[str, ...]
    # fields of the released CRD shown since issue 15
    evicted: bool | None
    capabilities: Capabilities | None
    domain_capabilities: DomainCapabilities | None
    update_status: UpdateStatus | None
    #: The Tainted condition's message, as ``kubectl get hv`` shows it.
    taint: str | None
    #: The Tainted condition's status: the object was edited by hand (kubectl).
    tainted: bool | None
    target_version: str | None
    skip_tests: bool | None
    spec_hash: str | None

    @property
    def consumers(self) -> tuple[ConsumerBooking, ...]:
        return consumers(self)

    @property
    def reservations(self) -> tuple[ReservationBooking, ...]:
        return reservations(self)

    @property
    def overcommitted(self) -> bool:
        """True when any resource has negative free capacity."""
        return any(r.overcommitted for r in self.resources.values())


# Library helpers, as the operator's API package offers them.


def consumers(hypervisor: Hypervisor) -> tuple[ConsumerBooking, ...]:
    """All consumer bookings of ``hypervisor``, in spec order."""
    return tuple(b for b in hypervisor.bookings if isinstance(b, ConsumerBooking))


def consumer(hypervisor: Hypervisor, uuid: str) -> ConsumerBooking | None:
    """The first consumer booking with ``uuid`` (case-insensitive), or None."""
    wanted = uuid.lower()
    return next((c for c in consumers(hypervisor) if c.uuid == wanted), None)


def has_consumer(hypervisor: Hypervisor, uuid: str) -> bool:
    """Whether ``uuid`` holds a booking on ``hypervisor``."""
    return consumer(hypervisor, uuid) is not None


def reservations(hypervisor: Hypervisor) -> tuple[ReservationBooking, ...]:
    """All reservation bookings of ``hypervisor``, in spec order."""
    return tuple(b for b in hypervisor.bookings if isinstance(b, ReservationBooking))


def reservation(hypervisor: Hypervisor, name: str) -> ReservationBooking | None:
    """The first reservation named ``name``, or None."""
    return next((r for r in reservations(hypervisor) if r.name == name), None)


def sum_resources(hypervisor: Hypervisor) -> dict[str, Decimal]:
    """Consumers AND reservations added together, like the operator's helper.

    This is not Placement usage (which excludes reservations): capacity math keeps
    the two apart, see :class:`ResourceCapacity`.
    """
    return add_amounts(b.resources for b in hypervisor.bookings)


def add_amounts(amounts: Iterable[Amounts]) -> dict[str, Decimal]:
    """Add resource maps key by key, exactly."""
    total: dict[str, Decimal] = {}
    for resources in amounts:
        for name, amount in resources.items():
            total[name] = CONTEXT.add(total.get(name, Decimal(0)), amount)
    return total
