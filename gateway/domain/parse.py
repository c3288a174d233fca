"""Parse a Hypervisor object (a JSON-like mapping) into a :class:`Hypervisor` record.

Parsing is forgiving by design: the cluster is the source of truth and may hold
objects that an older or newer operator wrote, or that passed the schema with
nonsense in them. Anything wrong inside an object becomes a warning on that
object, and a bad amount is left out of every sum; only an object without a name
cannot be represented, and raises :class:`ParseError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any, NamedTuple

from gateway.domain import capacity
from gateway.domain.bookings import booking_totals, parse_bookings
from gateway.domain.hostfacts import capabilities, domain_capabilities, update_status
from gateway.domain.lenient import Reader, shared_string
from gateway.domain.memo import by_spelling
from gateway.domain.records import (
    BUILDING_BLOCK_LABEL,
    REGION_LABEL,
    WORKER_GROUP_LABEL,
    ZONE_LABEL,
    Aggregate,
    Booking,
    Cell,
    Condition,
    ConsumerBooking,
    Drift,
    Hypervisor,
    Instances,
    Origin,
    Trait,
)
from gateway.domain.spellings import Parts, is_list

__all__ = ["PARTS", "ParseError", "opened", "parse_conditions", "parse_hypervisor"]


class ParseError(ValueError):
    """An object that cannot be represented at all (not a mapping, or no name)."""


def opened(obj: Any) -> tuple[Reader, Mapping[str, Any], str]:
    """A lenient reader of ``obj``, its metadata and its name: what every kind of object
    must have to be represented at all (else :class:`ParseError`)."""
    if not isinstance(obj, Mapping):
        raise ParseError(f"expected an object, got {type(obj).__name__}")
    p = Reader()
    meta = p.mapping(obj.get("metadata"), "metadata")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise ParseError("metadata.name is missing")
    return p, meta, name


def parse_hypervisor(obj: Any, previous: Hypervisor | None = None) -> Hypervisor:
    """Build the immutable record for one object version. Raises :class:`ParseError`.

    ``previous``: the record of the version before, both decoded from JSON. The parts
    spelled as there are taken as they are (gateway.domain.spellings): at a status
    patch a host a minute (333 a second in a region of 20,000), everything but the
    allocation and the instance count.
    """
    p, meta, name = opened(obj)
    spec = p.mapping(obj.get("spec"), "spec")
    has_status = isinstance(obj.get("status"), Mapping)
    status = p.mapping(obj.get("status"), "status")
    spelled = PARTS.read({"metadata": meta, "spec": spec, "status": status}, p.warnings, previous)
    labels = spelled.read("labels", partial(p.string_map, path="metadata.labels"))

    # Absent means "not tracked"; so does a value that is not a list of bookings.
    bookings_tracked = is_list(spec.get("bookings"))
    same_bookings = spelled.kept("bookings")
    if same_bookings is not None:
        bookings = same_bookings.bookings
    else:
        (value,) = spelled.values("bookings")
        bookings = parse_bookings(p, value, name)
    overcommit = spelled.read("overcommit", partial(p.ratios, path="spec.overcommit"))
    physical = spelled.read("capacity", partial(p.amounts, path="status.capacity"))
    effective = spelled.read(
        "effective_capacity", partial(p.amounts, path="status.effectiveCapacity")
    )
    allocation = spelled.read("allocation", partial(p.amounts, path="status.allocation"))
    conditions = spelled.read("conditions", partial(parse_conditions, p))
    same_instances = spelled.kept("instances")
    running_ids: list[str] | None = None
    if same_instances is not None:
        instances = same_instances.instances
    else:
        (value,) = spelled.values("instances")
        running = _instances(p, value)
        instances, running_ids = Instances.pack(*running), running.ids
    ready = next((c for c in conditions if c.type == "Ready"), None)
    taint = next((c for c in conditions if c.type == "Tainted"), None)
    same_memberships = spelled.kept("memberships")
    if same_memberships is not None:
        traits, aggregates = same_memberships.traits, same_memberships.aggregates
    else:
        traits, aggregates = _memberships(p, spelled.values("memberships"))
    cells = spelled.read("cells", partial(_cells, p))
    operating_system = spelled.read("operating_system", partial(_operating_system, p))
    host_capabilities = spelled.read("capabilities", partial(capabilities, p))
    host_domain = spelled.read("domain_capabilities", partial(domain_capabilities, p))
    host_update = spelled.read("update_status", partial(update_status, p))

    before = same_bookings.resources if same_bookings is not None else None
    reserved, booked = booking_totals(bookings, before, physical, allocation)
    resources = capacity.compute_resources(
        tracked=bookings_tracked,
        physical=physical,
        overcommit=overcommit,
        reserved=reserved,
        booked=booked,
        allocated=allocation,
        effective=effective,
    )
    tracked = bookings_tracked and has_status
    drift = None
    if tracked:
        if same_bookings is not None and same_instances is not None:
            drift = same_bookings.drift  # the same bookings against the same instances
        if drift is None:
            drift = _drift(bookings, running_ids, instances)
    return Hypervisor(
        name=name,
        uid=p.string(meta.get("uid"), "metadata.uid"),
        resource_version=p.string(meta.get("resourceVersion"), "metadata.resourceVersion"),
        generation=p.integer(meta.get("generation"), "metadata.generation"),
        created=p.string(meta.get("creationTimestamp"), "metadata.creationTimestamp"),
        labels=labels,
        zone=labels.get(ZONE_LABEL),
        region=labels.get(REGION_LABEL),
        building_block=labels.get(BUILDING_BLOCK_LABEL),
        worker_group=labels.get(WORKER_GROUP_LABEL),
        maintenance=p.string(spec.get("maintenance"), "spec.maintenance") or None,
        maintenance_reason=p.string(spec.get("maintenanceReason"), "spec.maintenanceReason"),
        lifecycle_enabled=p.boolean(spec.get("lifecycleEnabled"), "spec.lifecycleEnabled"),
        high_availability=p.boolean(spec.get("highAvailability"), "spec.highAvailability"),
        allowed_projects=p.strings(spec.get("allowedProjects"), "spec.allowedProjects"),
        traits=traits,
        aggregates=aggregates,
        overcommit=overcommit,
        bookings_tracked=bookings_tracked,
        bookings=bookings,
        has_status=has_status,
        ready=ready is not None and ready.status == "True",
        ready_reason=ready.reason if ready else None,
        conditions=conditions,
        capacity=physical,
        effective_capacity=effective,
        allocation=allocation,
        cells=cells,
        instances=instances,
        num_instances=p.integer(status.get("numInstances"), "status.numInstances"),
        hypervisor_id=p.string(status.get("hypervisorId"), "status.hypervisorId"),
        service_id=p.string(status.get("serviceId"), "status.serviceId"),
        internal_ip=p.string(status.get("internalIp"), "status.internalIp"),
        hypervisor_version=p.shared(status.get("hypervisorVersion"), "status.hypervisorVersion"),
        libvirt_version=p.shared(status.get("libVirtVersion"), "status.libVirtVersion"),
        operating_system=operating_system,
        resources=resources,
        drift=drift,
        evicted=p.boolean(status.get("evicted"), "status.evicted"),
        capabilities=host_capabilities,
        domain_capabilities=host_domain,
        update_status=host_update,
        taint=taint.message if taint else None,
        tainted={"True": True, "False": False}.get(taint.status) if taint else None,
        target_version=p.string(spec.get("version"), "spec.version"),
        skip_tests=p.boolean(spec.get("skipTests"), "spec.skipTests"),
        spec_hash=p.string(status.get("specHash"), "status.specHash"),
        spellings=spelled.packed(),
        warnings=tuple(p.warnings),
    )


#: The parts of a Hypervisor read as wholes, each taken from the record of the version
#: before where spelled as there (gateway.domain.spellings): by the record's field it
#: makes, its places. Their digests are the record's ``spellings``, in this order; a
#: stream's decoder leaves their places JSON (gateway.sources.kubernetes.decoding).
PARTS = Parts(
    {
        "labels": ("metadata.labels",),
        "bookings": ("spec.bookings",),
        "overcommit": ("spec.overcommit",),
        "capacity": ("status.capacity",),
        "effective_capacity": ("status.effectiveCapacity",),
        "allocation": ("status.allocation",),
        "conditions": ("status.conditions",),
        "instances": ("status.instances",),
        # Traits and aggregates, read together (_memberships), in this order.
        "memberships": (
            "spec.groups",
            "spec.customTraits",
            "spec.aggregates",
            "status.traits",
            "status.aggregates",
        ),
        "cells": ("status.cells",),
        "operating_system": ("status.operatingSystem",),
        "capabilities": ("status.capabilities",),
        "domain_capabilities": ("status.domainCapabilities",),
        "update_status": ("status.updateStatus",),
    }
)


@by_spelling
def _memberships(
    p: Reader, places: tuple[Any, ...]
) -> tuple[tuple[Trait, ...], tuple[Aggregate, ...]]:
    """Traits and aggregates from all five places, each tagged with its source.

    The hosts of a building block share them: parsed once (a quarter of a
    host's parse without bookings), and their records are shared too.
    """
    groups, custom_traits, spec_aggregates, status_traits, status_aggregates = places
    traits: list[Trait] = []
    aggregates: list[Aggregate | None] = []
    for i, entry in enumerate(p.items(groups, "spec.groups")):
        path = f"spec.groups[{i}]"
        entry = p.mapping(entry, path)
        kinds = [k for k in ("trait", "aggregate") if entry.get(k) is not None]
        if len(kinds) != 1:
            p.warn(path, "must set exactly one of trait or aggregate; group ignored")
        elif kinds[0] == "trait":
            name = p.shared(
                p.mapping(entry["trait"], f"{path}.trait").get("name"), f"{path}.trait.name"
            )
            if name:
                traits.append(Trait(name, Origin.SPEC_GROUPS))
        else:
            aggregates.append(
                _aggregate(p, entry["aggregate"], Origin.SPEC_GROUPS, f"{path}.aggregate")
            )
    traits += [
        Trait(shared_string(n), Origin.SPEC) for n in p.strings(custom_traits, "spec.customTraits")
    ]
    traits += [
        Trait(shared_string(n), Origin.STATUS) for n in p.strings(status_traits, "status.traits")
    ]
    aggregates += [
        Aggregate(shared_string(n), None, {}, Origin.SPEC)
        for n in p.strings(spec_aggregates, "spec.aggregates")
    ]
    aggregates += [
        _aggregate(p, body, Origin.STATUS, f"status.aggregates[{i}]")
        for i, body in enumerate(p.items(status_aggregates, "status.aggregates"))
    ]
    return tuple(traits), tuple(a for a in aggregates if a is not None)


def _aggregate(p: Reader, value: Any, source: Origin, path: str) -> Aggregate | None:
    body = p.mapping(value, path)
    name = p.shared(body.get("name"), f"{path}.name")
    if not name:
        p.warn(path, "aggregate has no name; ignored")
        return None
    return Aggregate(
        name=name,
        uuid=p.shared(body.get("uuid"), f"{path}.uuid"),
        metadata=p.string_map(body.get("metadata"), f"{path}.metadata"),
        source=source,
    )


def parse_conditions(p: Reader, value: Any) -> tuple[Condition, ...]:
    """status.conditions, as every kvm.cloud.sap resource writes them (metav1.Condition)."""
    conditions = []
    for i, entry in enumerate(p.items(value, "status.conditions")):
        path = f"status.conditions[{i}]"
        body = p.mapping(entry, path)
        kind, status = body.get("type"), body.get("status")
        if not isinstance(kind, str) or not isinstance(status, str):
            p.warn(path, "condition without type or status; ignored")
            continue
        conditions.append(
            Condition(
                type=shared_string(kind),
                status=shared_string(status),
                reason=p.shared(body.get("reason"), f"{path}.reason"),
                message=p.shared(body.get("message"), f"{path}.message"),
                last_transition_time=p.shared(
                    body.get("lastTransitionTime"), f"{path}.lastTransitionTime"
                ),
            )
        )
    return tuple(conditions)


class _Running(NamedTuple):
    """status.instances in columns: ids (lower case), names, positions not active."""

    ids: list[str]
    names: list[str]
    inactive: list[int]


def _instances(p: Reader, value: Any) -> _Running:
    running = _Running([], [], [])
    for i, entry in enumerate(p.items(value, "status.instances")):
        # As hot as the bookings' loop: paths are spelled out only for a warning.
        body = entry if type(entry) is dict else p.mapping(entry, f"status.instances[{i}]")
        ident, name, active = body.get("id"), body.get("name"), body.get("active")
        if type(ident) is not str or not ident:
            p.warn(f"status.instances[{i}]", "instance without id; ignored")
            continue
        if name is not None and type(name) is not str:
            name = p.string(name, f"status.instances[{i}].name")
        if type(active) is not bool:
            active = bool(p.boolean(active, f"status.instances[{i}].active"))
        if not active:
            running.inactive.append(len(running.ids))
        running.ids.append(ident.lower())
        running.names.append(name or "")
    return running


def _operating_system(p: Reader, value: Any) -> Mapping[str, str]:
    """status.operatingSystem as strings; its one list (gardenLinuxFeatures) comma-joined."""
    path = "status.operatingSystem"
    facts = {
        key: ", ".join(p.strings(item, f"{path}.{key}")) if isinstance(item, list) else item
        for key, item in p.mapping(value, path).items()
    }
    return p.string_map(facts, path)


def _cells(p: Reader, value: Any) -> tuple[Cell, ...]:
    cells = []
    for i, entry in enumerate(p.items(value, "status.cells")):
        path = f"status.cells[{i}]"
        body = p.mapping(entry, path)
        cell_id = p.integer(body.get("cellID"), f"{path}.cellID")
        if cell_id is None:
            p.warn(path, "cell without cellID; ignored")
            continue
        cells.append(
            Cell(
                cell_id=cell_id,
                capacity=p.amounts(body.get("capacity"), f"{path}.capacity"),
                effective_capacity=p.amounts(
                    body.get("effectiveCapacity"), f"{path}.effectiveCapacity"
                ),
                allocation=p.amounts(body.get("allocation"), f"{path}.allocation"),
            )
        )
    # The agent does not guarantee an order; consumers of the API want one.
    return tuple(sorted(cells, key=lambda c: c.cell_id))


def _drift(
    bookings: tuple[Booking, ...], running_ids: list[str] | None, instances: Instances
) -> Drift:
    """``running_ids``: the instances' ids, where they were just read (else from ``instances``)."""
    booked = {b.uuid for b in bookings if isinstance(b, ConsumerBooking)}
    seen = set(running_ids if running_ids is not None else (i.id for i in instances))
    return Drift(
        booked_not_running=tuple(
            b for b in bookings if isinstance(b, ConsumerBooking) and b.uuid not in seen
        ),
        # Instance records made only when some instance is not booked (mostly none is).
        running_not_booked=()
        if seen <= booked
        else tuple(i for i in instances if i.id not in booked),
    )
