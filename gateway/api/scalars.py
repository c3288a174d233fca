"""GraphQL object types for the parts of a hypervisor: amounts, capacity figures,
memberships, conditions, instances, NUMA cells and the Placement view.

Like every GraphQL type here, they are thin views: resolvers return domain records
(:mod:`gateway.domain.records`) and the fields read their precomputed attributes. The types
that refer to one another (hypervisors, bookings, consumers) are in
:mod:`gateway.api.objects`.
"""

from collections.abc import Mapping
from decimal import Decimal
from typing import Any, NewType

import strawberry

from gateway.api.enums import CapacityBasis, MembershipSource
from gateway.domain import capacity
from gateway.domain import records as domain

Quantity = NewType("Quantity", Decimal)
#: Instances or hosts counted, beyond 32 bits (the Count scalar).
Count = NewType("Count", int)

QUANTITY_DESCRIPTION = (
    "An exact decimal amount, as a JSON string of plain digits: cpu in cores, memory in "
    "bytes, other resources in the unit they are booked in. No exponent, no unit suffix, "
    'no float rounding: "476", "13.5", "-4", "4207948148736". As an input, Kubernetes '
    'quantity notation ("16Gi", "1500m", "4") is accepted as well.'
)


def recognizes(record: type) -> Any:
    """An ``is_type_of`` that recognizes the domain record a type is a view of."""
    return classmethod(lambda cls, obj, info: isinstance(obj, record))


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

    source: MembershipSource = strawberry.field(
        description="spec.groups, spec.customTraits or status.traits."
    )


@strawberry.type(description="A host aggregate a hypervisor belongs to.")
class Aggregate:
    name: str = strawberry.field(description="Aggregate name.")
    uuid: str | None = strawberry.field(description="Aggregate UUID; null for spec.aggregates.")

    source: MembershipSource = strawberry.field(
        description="spec.groups, spec.aggregates or status.aggregates."
    )

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
        "One resource on one hypervisor, in two views. capacity = floor((physical - reserved) x "
        "overcommitRatio) when the host's bookings (spec.bookings) are tracked, floor(physical x "
        "overcommitRatio) when not. Placement's view: free = capacity - booked. libvirt's view: "
        "unallocated = capacity - allocated. The best known figure, available, is free for a "
        "tracked host and unallocated otherwise, and basis says which. Unknown figures are "
        "null, never 0: reserved, booked and free of a host whose bookings are not tracked, "
        "and whatever depends on an unknown physical capacity."
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
    reserved: Quantity | None = strawberry.field(
        description="Sum of reservation bookings; null when bookings are not tracked."
    )
    capacity: Quantity | None = strawberry.field(
        description="Schedulable capacity: floor((physical - reserved) x overcommitRatio); "
        "floor(physical x overcommitRatio) when bookings are not tracked (reservations unknown)."
    )
    booked: Quantity | None = strawberry.field(
        description="Sum of consumer bookings (Placement usage); excludes reservations. Null "
        "when bookings are not tracked."
    )
    free: Quantity | None = strawberry.field(
        description="Placement's view: capacity - booked. Negative when over-subscribed; never "
        "clamped. Null when bookings are not tracked or capacity is unknown."
    )
    allocated: Quantity | None = strawberry.field(
        description="status.allocation: actual usage reported by libvirt."
    )
    unallocated: Quantity | None = strawberry.field(
        description="libvirt's view: capacity - allocated. Negative when over capacity."
    )
    effective_capacity: Quantity | None = strawberry.field(
        description="status.effectiveCapacity as the agent reports it (no reservations)."
    )
    available: Quantity | None = strawberry.field(
        description="The best known free figure: free when bookings are tracked, else "
        "unallocated. Negative when over-subscribed; null when unknown."
    )
    used: Quantity | None = strawberry.field(
        description="What available leaves out: booked when bookings are tracked, else allocated."
    )

    basis: CapacityBasis | None = strawberry.field(
        description="The view available came from; null when available is unknown."
    )

    @strawberry.field(description="used / capacity as a ratio (1.0 = full); null if unknown.")
    def utilization(self, root: strawberry.Parent[domain.ResourceCapacity]) -> float | None:
        value = root.utilization
        return None if value is None else float(value)

    @strawberry.field(description="True when available < 0; null when available is unknown.")
    def overcommitted(self, root: strawberry.Parent[domain.ResourceCapacity]) -> bool | None:
        return root.overcommitted


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
    reserved: Quantity | None = strawberry.field(
        description="Reserved by reservation bookings; null when bookings are not tracked."
    )
    min_unit: Quantity = strawberry.field(description="Smallest allocation (1).")
    max_unit: Quantity = strawberry.field(description="Largest allocation (= total).")
    step_size: Quantity = strawberry.field(description="Allocation granularity (1).")
    allocation_ratio: Quantity = strawberry.field(description="Overcommit ratio.")
    used: Quantity | None = strawberry.field(
        description="Sum of consumer allocations; null when bookings are not tracked."
    )
    capacity: Quantity = strawberry.field(
        description="floor((total - reserved) x ratio); floor(total x ratio) when reservations "
        "are unknown."
    )
    free: Quantity | None = strawberry.field(description="capacity - used; null when unknown.")


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

    @strawberry.field(
        description="Usage per resource class: consumer allocations only; null when the "
        "host's bookings are not tracked (unknown, not zero)."
    )
    def usages(self, root: strawberry.Parent[domain.Hypervisor]) -> list[ResourceAmount] | None:
        usages = capacity.placement_usages(root)
        return None if usages is None else amounts(usages)


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
