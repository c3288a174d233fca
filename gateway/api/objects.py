"""GraphQL types that refer to one another: hypervisors, their bookings, consumers.

A booking leads to its hypervisor and consumer, a hypervisor to its bookings, a
consumer to every hypervisor it is booked on; the links are resolved in the
request's snapshot, so one answer never mixes two versions of the fleet.
"""

import dataclasses
from collections.abc import Iterable
from typing import Annotated

import strawberry
from strawberry.types import Info

from gateway.api.context import Context
from gateway.api.eligibility import Eligibility, catalog_flavor, eligibility
from gateway.api.enums import CapacityView
from gateway.api.evictions import Eviction, evictions_of_host
from gateway.api.hosttypes import DomainCapabilities, HostCapabilities, UpdateStatus
from gateway.api.nodes import Node, global_id
from gateway.api.scalars import (
    Aggregate,
    Condition,
    Instance,
    KeyValue,
    NumaCell,
    OperatingSystem,
    OvercommitRatio,
    PlacementProvider,
    Quantity,
    ResourceAmount,
    ResourceCapacity,
    Trait,
    amounts,
    pairs,
    recognizes,
)
from gateway.domain import records as domain

__all__ = [
    "Booking",
    "Consumer",
    "ConsumerBooking",
    "ConsumerRecord",
    "Hypervisor",
    "consumer_view",
]


def _hypervisor(info: Info[Context, None], name: str) -> domain.Hypervisor:
    record = info.context.host(name)
    assert record is not None, "a booking's hypervisor is in the booking's snapshot"
    return record


@strawberry.type(description="A consumer's booking on one hypervisor (spec.bookings[].consumer).")
class ConsumerBooking:
    is_type_of = recognizes(domain.ConsumerBooking)
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
    is_type_of = recognizes(domain.ReservationBooking)
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
    bookings = context.consumers().get(uuid.lower())
    return ConsumerRecord(uuid.lower(), bookings) if bookings else None


def _first(values: Iterable[str | None]) -> str | None:
    return next((v for v in values if v), None)


def _consumer_id(self: None, root: strawberry.Parent[ConsumerRecord]) -> strawberry.ID:
    """Its global id; ``self`` is unused (the shape a shortcut Lookup calls)."""
    return global_id("Consumer", root.uuid)


@strawberry.type(
    description=(
        "A Placement consumer (usually an instance) across hypervisors. During a live "
        "migration it is booked on two hosts; each booking is a real claim on its host, so "
        "no single size is given: read the bookings."
    )
)
class Consumer(Node):
    is_type_of = recognizes(ConsumerRecord)
    uuid: str = strawberry.field(description="Placement consumer UUID (lower case).")
    id: strawberry.ID = strawberry.field(
        resolver=_consumer_id,
        description="Global id (Node): Consumer and the UUID.",
    )

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


def _hypervisor_id(self: None, root: strawberry.Parent[domain.Hypervisor]) -> strawberry.ID:
    """Its global id; ``self`` is unused (the shape a shortcut Lookup calls)."""
    return global_id("Hypervisor", root.name)


@strawberry.type(
    description=(
        "A KVM hypervisor (Kubernetes object kvm.cloud.sap/v1 Hypervisor; its name is the "
        "Node name): identity, scheduling state, bookings and computed free capacity."
    )
)
class Hypervisor(Node):
    is_type_of = recognizes(domain.Hypervisor)
    name: str = strawberry.field(description="Object name (= Kubernetes Node name).")
    id: strawberry.ID = strawberry.field(
        resolver=_hypervisor_id,
        description="Global id (Node): Hypervisor and the object name.",
    )

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
            "is not the same as having none): its reserved, booked and free figures are null "
            "and its best known figure (available) comes from libvirt's allocation."
        )
    )
    has_status: bool = strawberry.field(
        description="False for a new object the node agent has not reported on yet."
    )
    num_instances: int | None = strawberry.field(description="status.numInstances.")
    overcommitted: bool | None = strawberry.field(
        description="Some resource has available < 0 (the best known figure). False only when "
        "every resource with a known capacity has a known figure; null when unknown."
    )
    warnings: list[str] = strawberry.field(
        description="Problems found in the object (bad quantities, duplicate consumers, ...)."
    )
    evicted: bool | None = strawberry.field(
        description=(
            "status.evicted: no instances are left on the host while it is in maintenance; "
            "null when the status does not say."
        )
    )
    taint: str | None = strawberry.field(
        description=(
            "The Tainted condition's message, as the Taint column of kubectl get hv shows it; "
            "null without that condition."
        )
    )
    tainted: bool | None = strawberry.field(
        description=(
            "The Tainted condition is True: the object was changed by hand (kubectl), so the "
            "operator's view may be overridden. Null without that condition."
        )
    )
    target_version: str | None = strawberry.field(
        description="spec.version: the operating system version the host is to run."
    )
    skip_tests: bool | None = strawberry.field(description="spec.skipTests.")
    spec_hash: str | None = strawberry.field(
        description="status.specHash: the hash of the spec the operator last acted on."
    )
    capabilities: HostCapabilities | None = strawberry.field(
        description="status.capabilities as libvirt discovered them; null when not reported."
    )
    domain_capabilities: DomainCapabilities | None = strawberry.field(
        description="status.domainCapabilities; null when not reported."
    )
    update_status: UpdateStatus | None = strawberry.field(
        description="status.updateStatus; null when not reported."
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
        return list(root.instances)  # type: ignore[arg-type]

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

    @strawberry.field(
        description="The operator's evictions of this host (kvm.cloud.sap/v1 Eviction), by "
        "name: mostly none, one while it is emptied, more when an old one is kept. Null, "
        "with an error of code EVICTIONS_UNAVAILABLE, when evictions cannot be read (a "
        "cluster without the Eviction CRD)."
    )
    def evictions(
        self, root: strawberry.Parent[domain.Hypervisor], info: Info[Context, None]
    ) -> list[Eviction] | None:
        return evictions_of_host(info.context, root.name)  # type: ignore[return-value]

    @strawberry.field(description="This hypervisor as a Placement resource provider.")
    def placement(self, root: strawberry.Parent[domain.Hypervisor]) -> PlacementProvider:
        return root  # type: ignore[return-value]

    @strawberry.field(
        description="Whether the scheduler would place instances of a catalog flavor here, every "
        "rule that excludes the host, and how many more fit (unknown flavors fail with "
        "UNKNOWN_FLAVOR)."
    )
    def eligibility(
        self,
        root: strawberry.Parent[domain.Hypervisor],
        info: Info[Context, None],
        flavor: Annotated[str, strawberry.argument(description="A flavor of the catalog.")],
        project: Annotated[
            str | None,
            strawberry.argument(
                description="The project that would boot it (admits hosts whose "
                "spec.allowedProjects lists it)."
            ),
        ] = None,
        view: Annotated[
            CapacityView,
            strawberry.argument(description="The figure slots divide (default AVAILABLE)."),
        ] = CapacityView.AVAILABLE,
    ) -> Eligibility:
        found = catalog_flavor(info.context.catalog, flavor)
        return eligibility(root, found, project, view)
