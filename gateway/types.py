"""GraphQL object types: thin views over the domain records.

Resolvers return domain records (:mod:`gateway.domain`) directly; the fields here
read their precomputed attributes. Nothing in this module computes capacity or
talks to a source.
"""

import dataclasses
from collections.abc import Iterable, Mapping
from decimal import Decimal
from enum import Enum
from typing import Annotated, Any, NewType

import strawberry
from strawberry.types import Info

from gateway import capacity, domain
from gateway.context import Context

Quantity = NewType("Quantity", Decimal)

QUANTITY_DESCRIPTION = (
    "An exact decimal amount, as a JSON string of plain digits: cpu in cores, memory in "
    "bytes, other resources in the unit they are booked in. No exponent, no unit suffix, "
    'no float rounding: "476", "13.5", "-4", "4207948148736". As an input, Kubernetes '
    'quantity notation ("16Gi", "1500m", "4") is accepted as well.'
)


def _is(record: type) -> Any:
    """An ``is_type_of`` that recognizes the domain record a type is a view of."""
    return classmethod(lambda cls, obj, info: isinstance(obj, record))


@strawberry.enum(description="Where a trait or aggregate membership is declared.")
class MembershipSource(Enum):
    SPEC_GROUPS = strawberry.enum_value("spec.groups", description="spec.groups (typed groups).")
    SPEC = strawberry.enum_value(
        "spec", description="spec.customTraits or spec.aggregates (plain names)."
    )
    STATUS = strawberry.enum_value(
        "status", description="status.traits or status.aggregates, as applied in OpenStack."
    )


@strawberry.type(description="An amount of one resource.")
class ResourceAmount:
    name: str = strawberry.field(description="Resource key, e.g. cpu, memory, DISK_GB.")
    amount: Quantity = strawberry.field(description="Amount in base units.")


def amounts(values: Mapping[str, Decimal]) -> list[ResourceAmount]:
    return [ResourceAmount(name=k, amount=Quantity(v)) for k, v in sorted(values.items())]


@strawberry.type(description="A key/value pair (labels, aggregate metadata, OS facts).")
class KeyValue:
    key: str = strawberry.field(description="The key.")
    value: str = strawberry.field(description="The value.")


def pairs(values: Mapping[str, str]) -> list[KeyValue]:
    return [KeyValue(key=k, value=v) for k, v in sorted(values.items())]


@strawberry.type(description="A trait (capability) of a hypervisor.")
class Trait:
    name: str = strawberry.field(description="Trait name, e.g. CUSTOM_HANA_EXCLUSIVE_HOST.")

    @strawberry.field(description="spec.groups, spec.customTraits or status.traits.")
    def source(self, root: strawberry.Parent[domain.Trait]) -> MembershipSource:
        return MembershipSource(root.source.value)


@strawberry.type(description="A host aggregate a hypervisor belongs to.")
class Aggregate:
    name: str = strawberry.field(description="Aggregate name.")
    uuid: str | None = strawberry.field(description="Aggregate UUID; null for spec.aggregates.")

    @strawberry.field(description="spec.groups, spec.aggregates or status.aggregates.")
    def source(self, root: strawberry.Parent[domain.Aggregate]) -> MembershipSource:
        return MembershipSource(root.source.value)

    @strawberry.field(description="Aggregate metadata (spec.groups and status only).")
    def metadata(self, root: strawberry.Parent[domain.Aggregate]) -> list[KeyValue]:
        return pairs(root.metadata)


@strawberry.type(description="A status condition, as Kubernetes reports it.")
class Condition:
    type: str = strawberry.field(description="Ready, Onboarding, Tainted, LibVirtConnection, ...")
    status: str = strawberry.field(description='"True", "False" or "Unknown".')
    reason: str | None = strawberry.field(description="Machine-readable reason.")
    message: str | None = strawberry.field(description="Human-readable message.")
    last_transition_time: str | None = strawberry.field(description="RFC 3339 timestamp.")


@strawberry.type(description="A libvirt domain on the host (status.instances).")
class Instance:
    id: str = strawberry.field(description="Instance UUID (lower case).")
    name: str = strawberry.field(description="Domain name.")
    active: bool = strawberry.field(description="Whether the domain is running.")


@strawberry.type(description="A NUMA cell of the host (status.cells), ordered by cellId.")
class NumaCell:
    cell_id: int = strawberry.field(description="NUMA cell ID.")

    @strawberry.field(description="Physical capacity of the cell.")
    def capacity(self, root: strawberry.Parent[domain.Cell]) -> list[ResourceAmount]:
        return amounts(root.capacity)

    @strawberry.field(description="Capacity of the cell with overcommit, as the agent reports it.")
    def effective_capacity(self, root: strawberry.Parent[domain.Cell]) -> list[ResourceAmount]:
        return amounts(root.effective_capacity)

    @strawberry.field(description="Actual usage in the cell (libvirt).")
    def allocation(self, root: strawberry.Parent[domain.Cell]) -> list[ResourceAmount]:
        return amounts(root.allocation)


@strawberry.type(
    description=(
        "Placement's view of one resource on one hypervisor. capacity = floor((physical - "
        "reserved) x overcommitRatio); free = capacity - booked. Fields that depend on an "
        "unknown physical capacity are null, never 0."
    )
)
class ResourceCapacity:
    name: str = strawberry.field(description="Resource key: cpu, memory, DISK_GB, ...")
    physical: Quantity | None = strawberry.field(
        description="status.capacity: physical amount, no overcommit; null when unknown."
    )
    overcommit_ratio: Quantity = strawberry.field(
        description="spec.overcommit ratio for this resource (1 when not set)."
    )
    reserved: Quantity = strawberry.field(description="Sum of reservation bookings.")
    capacity: Quantity | None = strawberry.field(
        description="Schedulable capacity: floor((physical - reserved) x overcommitRatio)."
    )
    booked: Quantity = strawberry.field(
        description="Sum of consumer bookings (Placement usage); excludes reservations."
    )
    free: Quantity | None = strawberry.field(
        description="capacity - booked. Negative when over-subscribed; never clamped."
    )
    allocated: Quantity | None = strawberry.field(
        description="status.allocation: actual usage reported by libvirt."
    )
    unallocated: Quantity | None = strawberry.field(description="capacity - allocated.")
    effective_capacity: Quantity | None = strawberry.field(
        description="status.effectiveCapacity as the agent reports it (no reservations)."
    )

    @strawberry.field(description="booked / capacity as a ratio (1.0 = full); null if unknown.")
    def utilization(self, root: strawberry.Parent[domain.ResourceCapacity]) -> float | None:
        value = root.utilization
        return None if value is None else float(value)

    @strawberry.field(description="True when free < 0; null when capacity is unknown.")
    def overcommitted(self, root: strawberry.Parent[domain.ResourceCapacity]) -> bool | None:
        return root.overcommitted


def _hypervisor(info: Info[Context, None], name: str) -> domain.Hypervisor:
    return info.context.snapshot.by_name[name]


@strawberry.type(description="A consumer's booking on one hypervisor (spec.bookings[].consumer).")
class ConsumerBooking:
    is_type_of = _is(domain.ConsumerBooking)
    uuid: str = strawberry.field(description="Placement consumer UUID (lower case).")
    consumer_generation: int | None = strawberry.field(
        description="Placement consumer generation; null when the consumer was just created."
    )
    consumer_type: str | None = strawberry.field(description="INSTANCE, MIGRATION, ...")
    project_id: str | None = strawberry.field(description="OpenStack project owning it.")
    user_id: str | None = strawberry.field(description="OpenStack user owning it.")

    @strawberry.field(description="Amounts claimed on this hypervisor.")
    def resources(self, root: strawberry.Parent[domain.ConsumerBooking]) -> list[ResourceAmount]:
        return amounts(root.resources)

    @strawberry.field(description="The hypervisor this booking is on.")
    def hypervisor(
        self, root: strawberry.Parent[domain.ConsumerBooking], info: Info[Context, None]
    ) -> "Hypervisor":
        return _hypervisor(info, root.hypervisor)  # type: ignore[return-value]

    @strawberry.field(description="The consumer across all hypervisors it is booked on.")
    def consumer(
        self, root: strawberry.Parent[domain.ConsumerBooking], info: Info[Context, None]
    ) -> "Consumer":
        return consumer_view(info.context, root.uuid)  # type: ignore[return-value]


@strawberry.type(description="Capacity held back from scheduling (spec.bookings[].reservation).")
class ReservationBooking:
    is_type_of = _is(domain.ReservationBooking)
    name: str = strawberry.field(description="Reservation name, e.g. nova-reserved.")

    @strawberry.field(description="Amounts reserved on this hypervisor.")
    def resources(self, root: strawberry.Parent[domain.ReservationBooking]) -> list[ResourceAmount]:
        return amounts(root.resources)

    @strawberry.field(description="The hypervisor this reservation is on.")
    def hypervisor(
        self, root: strawberry.Parent[domain.ReservationBooking], info: Info[Context, None]
    ) -> "Hypervisor":
        return _hypervisor(info, root.hypervisor)  # type: ignore[return-value]


Booking = Annotated[
    ConsumerBooking | ReservationBooking,
    strawberry.union("Booking", description="One entry of spec.bookings."),
]


@dataclasses.dataclass(frozen=True, slots=True)
class ConsumerRecord:
    """A consumer with its bookings on every hypervisor, from one snapshot."""

    uuid: str
    bookings: tuple[domain.ConsumerBooking, ...]


def consumer_view(context: Context, uuid: str) -> ConsumerRecord | None:
    bookings = context.snapshot.by_consumer.get(uuid.lower())
    return ConsumerRecord(uuid.lower(), bookings) if bookings else None


def _first(values: Iterable[str | None]) -> str | None:
    return next((v for v in values if v), None)


@strawberry.type(
    description=(
        "A Placement consumer (usually an instance) across hypervisors. During a live "
        "migration it is booked on two hosts; each booking is a real claim on its host, so "
        "no single size is given: read the bookings."
    )
)
class Consumer:
    uuid: str = strawberry.field(description="Placement consumer UUID (lower case).")

    @strawberry.field(description="Its bookings, one per hypervisor (two or more when migrating).")
    def bookings(self, root: strawberry.Parent[ConsumerRecord]) -> list[ConsumerBooking]:
        return root.bookings  # type: ignore[return-value]

    @strawberry.field(description="Hypervisors it is booked on, by name.")
    def hypervisors(
        self, root: strawberry.Parent[ConsumerRecord], info: Info[Context, None]
    ) -> list["Hypervisor"]:
        names = dict.fromkeys(b.hypervisor for b in root.bookings)
        return [_hypervisor(info, n) for n in names]  # type: ignore[misc]

    @strawberry.field(description="True when booked on more than one hypervisor.")
    def migrating(self, root: strawberry.Parent[ConsumerRecord]) -> bool:
        return len({b.hypervisor for b in root.bookings}) > 1

    @strawberry.field(description="Consumer type of its first booking that has one.")
    def consumer_type(self, root: strawberry.Parent[ConsumerRecord]) -> str | None:
        return _first(b.consumer_type for b in root.bookings)

    @strawberry.field(description="Project of its first booking that has one.")
    def project_id(self, root: strawberry.Parent[ConsumerRecord]) -> str | None:
        return _first(b.project_id for b in root.bookings)

    @strawberry.field(description="User of its first booking that has one.")
    def user_id(self, root: strawberry.Parent[ConsumerRecord]) -> str | None:
        return _first(b.user_id for b in root.bookings)


@strawberry.type(
    description=(
        "Bookings (what Placement believes) against status.instances (what libvirt runs). "
        "Migrations and inactive domains make a little drift normal."
    )
)
class Drift:
    @strawberry.field(description="Consumers booked here that are not among status.instances.")
    def booked_not_running(self, root: strawberry.Parent[domain.Drift]) -> list[ConsumerBooking]:
        return root.booked_not_running  # type: ignore[return-value]

    @strawberry.field(description="Instances on the host that no consumer booking covers.")
    def running_not_booked(self, root: strawberry.Parent[domain.Drift]) -> list[Instance]:
        return root.running_not_booked  # type: ignore[return-value]


@strawberry.type(
    description=(
        "A Placement inventory record, in Placement units (VCPU, MEMORY_MB = bytes / 2^20 "
        "truncated, other classes as booked), as GET /resource_providers/{uuid}/inventories "
        "would show it."
    )
)
class PlacementInventory:
    resource_class: str = strawberry.field(description="VCPU, MEMORY_MB, DISK_GB, ...")
    total: Quantity = strawberry.field(description="Physical total.")
    reserved: Quantity = strawberry.field(description="Reserved by reservation bookings.")
    min_unit: Quantity = strawberry.field(description="Smallest allocation (1).")
    max_unit: Quantity = strawberry.field(description="Largest allocation (= total).")
    step_size: Quantity = strawberry.field(description="Allocation granularity (1).")
    allocation_ratio: Quantity = strawberry.field(description="Overcommit ratio.")
    used: Quantity = strawberry.field(description="Sum of consumer allocations.")
    capacity: Quantity = strawberry.field(description="floor((total - reserved) x ratio).")
    free: Quantity = strawberry.field(description="capacity - used.")


@strawberry.type(description="The hypervisor as a Placement resource provider.")
class PlacementProvider:
    @strawberry.field(description="Resource provider UUID (status.hypervisorId).")
    def uuid(self, root: strawberry.Parent[domain.Hypervisor]) -> str | None:
        return root.hypervisor_id

    @strawberry.field(description="Provider name (the hypervisor name).")
    def name(self, root: strawberry.Parent[domain.Hypervisor]) -> str:
        return root.name

    @strawberry.field(description="Inventories of the classes with a known physical total.")
    def inventories(self, root: strawberry.Parent[domain.Hypervisor]) -> list[PlacementInventory]:
        return capacity.placement_inventories(root)  # type: ignore[return-value]

    @strawberry.field(description="Usage per resource class: consumer allocations only.")
    def usages(self, root: strawberry.Parent[domain.Hypervisor]) -> list[ResourceAmount]:
        return amounts(capacity.placement_usages(root))


@strawberry.type(description="Operating system and hardware facts (status.operatingSystem).")
class OperatingSystem:
    @strawberry.field(description="e.g. Garden Linux 1877.3.")
    def pretty_version(self, root: strawberry.Parent[Mapping[str, str]]) -> str | None:
        return root.get("prettyVersion")

    @strawberry.field(description="Kernel release.")
    def kernel_release(self, root: strawberry.Parent[Mapping[str, str]]) -> str | None:
        return root.get("kernelRelease")

    @strawberry.field(description="Hardware model.")
    def hardware_model(self, root: strawberry.Parent[Mapping[str, str]]) -> str | None:
        return root.get("hardwareModel")

    @strawberry.field(description="Hardware vendor.")
    def hardware_vendor(self, root: strawberry.Parent[Mapping[str, str]]) -> str | None:
        return root.get("hardwareVendor")

    @strawberry.field(description="Every reported fact, by its status field name.")
    def facts(self, root: strawberry.Parent[Mapping[str, str]]) -> list[KeyValue]:
        return pairs(root)


@strawberry.type(description="One per-resource overcommit ratio (spec.overcommit).")
class OvercommitRatio:
    resource: str = strawberry.field(description="Resource key.")
    ratio: Quantity = strawberry.field(description="Ratio, >= 1.")


@strawberry.type(
    description=(
        "A KVM hypervisor (Kubernetes object kvm.cloud.sap/v1 Hypervisor; its name is the "
        "Node name): identity, scheduling state, bookings and computed free capacity."
    )
)
class Hypervisor:
    name: str = strawberry.field(description="Object name (= Kubernetes Node name).")
    uid: str | None = strawberry.field(description="Kubernetes object UID.")
    resource_version: str | None = strawberry.field(
        description="metadata.resourceVersion the figures were computed from."
    )
    generation: int | None = strawberry.field(description="metadata.generation (spec changes).")
    zone: str | None = strawberry.field(description="Label topology.kubernetes.io/zone.")
    region: str | None = strawberry.field(description="Label topology.kubernetes.io/region.")
    building_block: str | None = strawberry.field(
        description="Label kubernetes.metal.cloud.sap/bb."
    )
    worker_group: str | None = strawberry.field(
        description="Label worker.garden.sapcloud.io/group."
    )
    hypervisor_id: str | None = strawberry.field(
        description="Placement resource provider UUID (status.hypervisorId; after onboarding)."
    )
    service_id: str | None = strawberry.field(description="Nova service ID (status.serviceId).")
    internal_ip: str | None = strawberry.field(description="status.internalIp.")
    hypervisor_version: str | None = strawberry.field(description="status.hypervisorVersion.")
    libvirt_version: str | None = strawberry.field(description="status.libVirtVersion.")
    ready: bool = strawberry.field(description="The Ready condition is True.")
    ready_reason: str | None = strawberry.field(description="Reason of the Ready condition.")
    maintenance: str | None = strawberry.field(
        description="spec.maintenance: manual, auto, ha or termination; null when not set."
    )
    maintenance_reason: str | None = strawberry.field(description="spec.maintenanceReason.")
    lifecycle_enabled: bool | None = strawberry.field(description="spec.lifecycleEnabled.")
    high_availability: bool | None = strawberry.field(description="spec.highAvailability.")
    allowed_projects: list[str] = strawberry.field(
        description="spec.allowedProjects; empty means every project is allowed."
    )
    bookings_tracked: bool = strawberry.field(
        description=(
            "False when spec.bookings is absent: bookings are not tracked for this host (which "
            "is not the same as having none); it is then treated as empty."
        )
    )
    has_status: bool = strawberry.field(
        description="False for a new object the node agent has not reported on yet."
    )
    num_instances: int | None = strawberry.field(description="status.numInstances.")
    overcommitted: bool = strawberry.field(description="Some resource has free < 0.")
    warnings: list[str] = strawberry.field(
        description="Problems found in the object (bad quantities, duplicate consumers, ...)."
    )

    @strawberry.field(description="metadata.creationTimestamp (RFC 3339).")
    def created_at(self, root: strawberry.Parent[domain.Hypervisor]) -> str | None:
        return root.created

    @strawberry.field(description="All labels.")
    def labels(self, root: strawberry.Parent[domain.Hypervisor]) -> list[KeyValue]:
        return pairs(root.labels)

    @strawberry.field(description="The value of one label, or null.")
    def label(
        self,
        root: strawberry.Parent[domain.Hypervisor],
        key: Annotated[str, strawberry.argument(description="Label key.")],
    ) -> str | None:
        return root.labels.get(key)

    @strawberry.field(description="Traits from spec.groups, spec.customTraits and status.traits.")
    def traits(self, root: strawberry.Parent[domain.Hypervisor]) -> list[Trait]:
        return root.traits  # type: ignore[return-value]

    @strawberry.field(
        description="Aggregates from spec.groups, spec.aggregates and status.aggregates."
    )
    def aggregates(self, root: strawberry.Parent[domain.Hypervisor]) -> list[Aggregate]:
        return root.aggregates  # type: ignore[return-value]

    @strawberry.field(description="Status conditions.")
    def conditions(self, root: strawberry.Parent[domain.Hypervisor]) -> list[Condition]:
        return root.conditions  # type: ignore[return-value]

    @strawberry.field(description="spec.overcommit ratios (resources not listed use 1).")
    def overcommit(self, root: strawberry.Parent[domain.Hypervisor]) -> list[OvercommitRatio]:
        return [
            OvercommitRatio(resource=k, ratio=Quantity(v))
            for k, v in sorted(root.overcommit.items())
        ]

    @strawberry.field(description="spec.bookings in order: consumers and reservations.")
    def bookings(self, root: strawberry.Parent[domain.Hypervisor]) -> list[Booking]:
        return root.bookings  # type: ignore[return-value]

    @strawberry.field(description="Consumer bookings only.")
    def consumers(self, root: strawberry.Parent[domain.Hypervisor]) -> list[ConsumerBooking]:
        return root.consumers  # type: ignore[return-value]

    @strawberry.field(description="Reservation bookings only.")
    def reservations(self, root: strawberry.Parent[domain.Hypervisor]) -> list[ReservationBooking]:
        return root.reservations  # type: ignore[return-value]

    @strawberry.field(
        description="Capacity figures, one per resource seen in capacity, bookings or allocation."
    )
    def resources(self, root: strawberry.Parent[domain.Hypervisor]) -> list[ResourceCapacity]:
        return list(root.resources.values())  # type: ignore[arg-type]

    @strawberry.field(description="Capacity figures of one resource (cpu, memory, ...), or null.")
    def resource(
        self,
        root: strawberry.Parent[domain.Hypervisor],
        name: Annotated[str, strawberry.argument(description="Resource key, e.g. cpu.")],
    ) -> ResourceCapacity | None:
        return root.resources.get(name)  # type: ignore[return-value]

    @strawberry.field(description="NUMA cells, ordered by cellId.")
    def cells(self, root: strawberry.Parent[domain.Hypervisor]) -> list[NumaCell]:
        return root.cells  # type: ignore[return-value]

    @strawberry.field(description="libvirt domains on the host (status.instances).")
    def instances(self, root: strawberry.Parent[domain.Hypervisor]) -> list[Instance]:
        return root.instances  # type: ignore[return-value]

    @strawberry.field(
        description="Booked-vs-running drift; null unless bookings are tracked and status exists."
    )
    def drift(self, root: strawberry.Parent[domain.Hypervisor]) -> Drift | None:
        return root.drift  # type: ignore[return-value]

    @strawberry.field(description="status.operatingSystem; null when not reported.")
    def operating_system(
        self, root: strawberry.Parent[domain.Hypervisor]
    ) -> OperatingSystem | None:
        return root.operating_system or None  # type: ignore[return-value]

    @strawberry.field(description="This hypervisor as a Placement resource provider.")
    def placement(self, root: strawberry.Parent[domain.Hypervisor]) -> PlacementProvider:
        return root  # type: ignore[return-value]
