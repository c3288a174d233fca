"""The domain model: immutable records parsed from Hypervisor objects.

One :class:`Hypervisor` is built per object version (see :mod:`gateway.domain.parse`) and
never changes afterwards; every derived figure (:class:`ResourceCapacity`) is
computed once, at parse time, so that queries only read attributes.

Records are msgspec Structs, frozen and outside the cyclic collector (they hold
no cycles): a fleet is a hundred records per host, and as frozen dataclasses
their construction was a sixth of parsing one, each carried a collector header
(16 bytes), and the collection before the fleet is frozen (gateway.store.collector)
walked every one of them (0.4 s of a 5,000-host start, to find nothing).

The module-level helpers at the end mirror the operator's library helpers for
tooling that imports this package.
"""

from __future__ import annotations

import array
import itertools
import operator
from collections.abc import Callable, Iterable, Iterator, Mapping
from decimal import Decimal
from enum import Enum

import msgspec

from gateway.domain.quantity import CONTEXT

__all__ = [
    "BUILDING_BLOCK_LABEL",
    "GROUP",
    "PLURAL",
    "REGION_LABEL",
    "VERSION",
    "WORKER_GROUP_LABEL",
    "ZONE_LABEL",
    "Aggregate",
    "Amounts",
    "Basis",
    "Capabilities",
    "Cell",
    "Condition",
    "ConsumerBooking",
    "DomainCapabilities",
    "Drift",
    "Hypervisor",
    "Instance",
    "Instances",
    "Origin",
    "Record",
    "ReservationBooking",
    "ResourceCapacity",
    "Trait",
    "UpdateStatus",
    "View",
    "add_amounts",
    "consumer",
    "consumers",
    "figure_of",
    "has_consumer",
    "reservation",
    "reservations",
    "sum_resources",
]

#: The Kubernetes resource these records are read from: kvm.cloud.sap/v1 hypervisors.
GROUP, VERSION, PLURAL = "kvm.cloud.sap", "v1", "hypervisors"

ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"
BUILDING_BLOCK_LABEL = "kubernetes.metal.cloud.sap/bb"
WORKER_GROUP_LABEL = "worker.garden.sapcloud.io/group"

#: Resource name -> exact amount in base units (cores, bytes, opaque units).
#: Records holding a map hash without it: a dict cannot be hashed, and a frozen
#: record that hashes one raises TypeError in a set.
Amounts = Mapping[str, Decimal]


class Record(msgspec.Struct, frozen=True, gc=False):
    """An immutable record: equal when its fields are, hashable, never in a cycle."""


class Origin(Enum):
    """Where a trait or aggregate membership was declared."""

    SPEC_GROUPS = "spec.groups"
    SPEC = "spec"
    STATUS = "status"


class Basis(Enum):
    """The view a best known figure came from (domain brief, section 4)."""

    #: Placement's view: capacity - booked, for a host whose bookings are tracked.
    BOOKINGS = "BOOKINGS"
    #: libvirt's view: capacity - allocated, for a host whose bookings are not tracked.
    ALLOCATION = "ALLOCATION"


class View(Enum):
    """Which figure a question about free capacity judges: fits, slots, overcommitted.

    Cortex's filter asks libvirt's view, Placement the bookings view; a mixed fleet
    needs the best known figure, each host on its own basis.
    """

    AVAILABLE = "AVAILABLE"
    BOOKINGS = "BOOKINGS"
    ALLOCATION = "ALLOCATION"


class Trait(Record, frozen=True):
    name: str
    source: Origin


class Aggregate(Record, frozen=True):
    name: str
    uuid: str | None
    metadata: Mapping[str, str]
    source: Origin

    def __hash__(self) -> int:
        return hash((self.name, self.uuid, self.source))


class ConsumerBooking(Record, frozen=True):
    """A Placement consumer's claim on one hypervisor (``spec.bookings[].consumer``)."""

    uuid: str
    resources: Amounts
    consumer_generation: int | None
    consumer_type: str | None
    project_id: str | None
    user_id: str | None
    hypervisor: str

    def __hash__(self) -> int:
        return hash((self.uuid, self.consumer_generation, self.hypervisor))


class ReservationBooking(Record, frozen=True):
    """Capacity held back from scheduling (``spec.bookings[].reservation``)."""

    name: str
    resources: Amounts
    hypervisor: str

    def __hash__(self) -> int:
        return hash((self.name, self.hypervisor))


Booking = ConsumerBooking | ReservationBooking


class Condition(Record, frozen=True):
    type: str
    status: str
    reason: str | None
    message: str | None
    last_transition_time: str | None


class Instance(Record, frozen=True):
    id: str
    name: str
    active: bool


class Instances(Record, frozen=True):
    """status.instances, packed: every id end to end in one string, every name in another.

    A host runs dozens of domains, and a record and two strings apiece were some
    150 bytes each beyond their text: 5.6 KiB of a demo host's 15.6 (39 domains).
    Packed, an instance costs its text and 8 bytes. Iterating makes the
    :class:`Instance` records, for the few readers that ask (the GraphQL field, drift).
    """

    ids: str
    names: str
    #: Where each id ends, then where each name ends: an array of C unsigned ints as
    #: bytes (hashable, as a record's fields are; read back only by this process).
    ends: bytes
    #: Positions of the domains that are not running (mostly none: the empty set).
    inactive: frozenset[int]

    @classmethod
    def pack(cls, ids: list[str], names: list[str], inactive: Iterable[int]) -> Instances:
        """The instances with these ids and names (as many), those at ``inactive`` not
        running."""
        if not ids:
            return NO_INSTANCES
        ends = array.array("I", itertools.accumulate(map(len, ids)))
        ends.extend(itertools.accumulate(map(len, names)))
        return cls("".join(ids), "".join(names), ends.tobytes(), frozenset(inactive) or _ALL_ACTIVE)

    def __len__(self) -> int:
        return len(self.ends) // (2 * _END_SIZE)

    def __iter__(self) -> Iterator[Instance]:
        ends = array.array("I", self.ends)
        count, ids, names, inactive = len(self), self.ids, self.names, self.inactive
        id_start = name_start = 0
        for index in range(count):
            id_end, name_end = ends[index], ends[count + index]
            active = index not in inactive
            yield Instance(ids[id_start:id_end], names[name_start:name_end], active)
            id_start, name_start = id_end, name_end


_END_SIZE = array.array("I").itemsize
_ALL_ACTIVE: frozenset[int] = frozenset()
NO_INSTANCES = Instances("", "", b"", _ALL_ACTIVE)


class Cell(Record, frozen=True):
    cell_id: int
    capacity: Amounts
    effective_capacity: Amounts
    allocation: Amounts

    def __hash__(self) -> int:
        return hash(self.cell_id)


class ResourceCapacity(Record, frozen=True):
    """Both views of one resource on one hypervisor (domain brief, section 4).

    ``None`` means unknown, never zero: a host without status has no physical figure,
    so neither capacity nor free can be known, while booked and reserved still are;
    a host whose bookings are not tracked has no booked, reserved or free figure at
    all, and its best known figure (``available``) comes from libvirt's allocation.
    """

    name: str
    physical: Decimal | None
    overcommit_ratio: Decimal
    reserved: Decimal | None
    capacity: Decimal | None
    booked: Decimal | None
    free: Decimal | None
    allocated: Decimal | None
    unallocated: Decimal | None
    effective_capacity: Decimal | None
    #: free if bookings are tracked, else unallocated.
    available: Decimal | None
    #: The view ``available`` came from; None whenever ``available`` is unknown.
    basis: Basis | None
    #: booked if bookings are tracked, else allocated: the usage ``available`` leaves out.
    used: Decimal | None
    #: Placement's own free room and max_unit for a request, in base units and in its
    #: arithmetic (gateway.domain.capacity.placement_bounds): what a fit or a slot judged
    #: on bookings is judged against. Unknown where physical, reserved or booked is.
    placement_free: Decimal | None
    placement_max: Decimal | None

    @property
    def utilization(self) -> Decimal | None:
        """used / capacity; unknown when either is unknown or capacity is zero."""
        if not self.capacity or self.used is None:
            return None
        return CONTEXT.divide(self.used, self.capacity)

    @property
    def overcommitted(self) -> bool | None:
        """True when the best known figure is negative (available < 0)."""
        return None if self.available is None else self.available < 0

    def figure(self, view: View) -> Decimal | None:
        """The free figure ``view`` judges: available, free or unallocated."""
        return figure_of(view)(self)


Figure = Callable[[ResourceCapacity], Decimal | None]

_FIGURES: dict[View, Figure] = {
    View.AVAILABLE: operator.attrgetter("available"),
    View.BOOKINGS: operator.attrgetter("free"),
    View.ALLOCATION: operator.attrgetter("unallocated"),
}


def figure_of(view: View) -> Figure:
    """The reader of the figure ``view`` judges, to look up once for many hosts."""
    return _FIGURES[view]


class Capabilities(Record, frozen=True):
    """status.capabilities: the host as libvirt discovered it (not what is scheduled)."""

    cpu_arch: str | None
    cpus: Decimal | None
    memory: Decimal | None


class DomainCapabilities(Record, frozen=True):
    """status.domainCapabilities: what a guest domain on this host may use."""

    arch: str | None
    hypervisor_type: str | None
    supported_devices: tuple[str, ...]
    supported_cpu_modes: tuple[str, ...]
    supported_features: tuple[str, ...]


class UpdateStatus(Record, frozen=True):
    """status.updateStatus: the operating system update the operator runs on the host."""

    in_progress: bool | None
    installed: str | None
    retry: int | None


class Drift(Record, frozen=True):
    """Bookings (what Placement believes) against instances (what libvirt runs)."""

    booked_not_running: tuple[ConsumerBooking, ...]
    running_not_booked: tuple[Instance, ...]


class Hypervisor(Record, frozen=True, eq=False, gc=True, weakref=True):
    """One parsed Hypervisor object at one resourceVersion.

    Referred to weakly by the answers made of it (gateway.api.reuse): kept with
    them, a record replaced long ago would stay in memory no budget counts.
    msgspec allows weak references only to records the collector tracks.
    """

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
    instances: Instances
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
    #: How its parts were spelled (gateway.domain.spellings): a version spelling one the
    #: same takes what was read of it from this record. 8 bytes a part.
    spellings: bytes

    @property
    def consumers(self) -> tuple[ConsumerBooking, ...]:
        return consumers(self)

    @property
    def reservations(self) -> tuple[ReservationBooking, ...]:
        return reservations(self)

    @property
    def overcommitted(self) -> bool | None:
        """:meth:`overcommitted_in` the best known figure."""
        return self.overcommitted_in(View.AVAILABLE)

    def overcommitted_in(self, view: View) -> bool | None:
        """True when a resource's figure in ``view`` is negative; None when unknown.

        Judged over the resources whose capacity is known (a key no status carries,
        such as DISK_GB, cannot be judged at all): False only when every one of their
        figures is known, so that "not overcommitted" never includes a host whose
        figures nobody knows.
        """
        figure = figure_of(view)
        figures = [figure(r) for r in self.resources.values() if r.capacity is not None]
        if any(f is not None and f < 0 for f in figures):
            return True
        return None if not figures or None in figures else False


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
