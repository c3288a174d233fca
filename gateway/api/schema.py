"""The GraphQL schema: the ``Query`` root and the schema object.

Every resolver reads the request's snapshot through its context (the whole of it,
``info.context.snapshot``, or less, which the context records: hosts by name, a
page of a list the store keeps, a ledger) and the precomputed records in it; none
of them talks to Kubernetes or the file system.
"""

import datetime
from collections.abc import Iterator, Sequence
from decimal import Decimal
from typing import Annotated, Any

import strawberry
from graphql import DocumentNode, GraphQLError, parse, validate
from strawberry.extensions import SchemaExtension
from strawberry.schema.config import StrawberryConfig
from strawberry.types import ExecutionContext, Info

from gateway.api.arguments import SCALARS, UUID
from gateway.api.catalog import Asked, DrainArg, Flavor, SlotGroup, flavor_slots
from gateway.api.context import Context
from gateway.api.documents import Documents
from gateway.api.drain import DrainPlan, drain_plan
from gateway.api.enums import CapacityView, FleetGrouping
from gateway.api.evictions import Eviction, EvictionFilter, available, matching_evictions
from gateway.api.executor import Executor
from gateway.api.filters import (
    HypervisorFilter,
    HypervisorOrder,
    ResourceRequest,
    apply_filter,
    fitting,
    ordered,
    position,
    position_key,
)
from gateway.api.inputs import built_once
from gateway.api.nodes import Node, parse_global_id
from gateway.api.objects import Consumer, ConsumerRecord, Hypervisor, consumer_view
from gateway.api.pagination import Connection, Cursor, Position, paginate
from gateway.api.reuse import mark_reusable
from gateway.api.scalars import PlacementProvider
from gateway.api.shortcuts import shortcut_resolvers
from gateway.api.subscriptions import Subscription
from gateway.api.totals import FleetGroup, fleet_groups
from gateway.api.warnings import warn_unknown_resources
from gateway.store.ordered import Mapped
from gateway.store.source import SyncStatus as SyncStatusRecord

__all__ = ["LIVE_FIELDS", "build_schema", "schema", "sdl"]

#: Fields answered from the source's live status, or from the evictions (whose changes
#: the fleet's generation does not count), not from the store snapshot: answers that
#: read them are never taken from the response cache.
LIVE_FIELDS = frozenset({"syncStatus", "evictions", "eviction"})


FilterArg = Annotated[
    HypervisorFilter | None, strawberry.argument(description="Conditions (default: all hosts).")
]
FirstArg = Annotated[
    int | None,
    strawberry.argument(
        description="Page size, 0 to the server's page size limit (10000 unless configured; "
        "outside that range, the nearest of the two, with a warning PAGE_SIZE_CLAMPED). "
        "Default: all remaining, up to that limit; pageInfo.hasNextPage tells whether more "
        "follow."
    ),
]
AfterArg = Annotated[
    Cursor | None,
    strawberry.argument(
        description="Start after this cursor (an endCursor); past the end, the page is empty."
    ),
]


@strawberry.type(description="How current the gateway's view of the fleet is.")
class SyncStatus:
    source: str = strawberry.field(description="kubernetes, file or demo.")
    synced: bool = strawberry.field(description="A complete view has been loaded and is kept.")
    error: str | None = strawberry.field(description="The source's current problem, if any.")
    relists: int = strawberry.field(description="Full relists since start.")
    watch_restarts: int = strawberry.field(description="Watch connections restarted since start.")

    @strawberry.field(description="Store generation: grows with every change to the fleet.")
    def generation(self, info: Info[Context, None]) -> str:
        return str(info.context.snapshot.generation)

    @strawberry.field(description="The latest resourceVersion the cache is known to be at.")
    def resource_version(self, info: Info[Context, None]) -> str | None:
        return info.context.store.resource_version

    @strawberry.field(description="Hypervisors in the store.")
    def hypervisors(self, info: Info[Context, None]) -> int:
        return len(info.context.snapshot)

    @strawberry.field(description="Objects that could not be represented, with the reason.")
    def rejected(self, info: Info[Context, None]) -> list[str]:
        return [f"{name}: {reason}" for name, reason in sorted(info.context.store.rejected.items())]

    @strawberry.field(
        description="Whether the operator's evictions can be read. False on a cluster without "
        "the Eviction CRD (an older operator), or before they are first listed: the eviction "
        "fields then fail with code EVICTIONS_UNAVAILABLE, while hypervisors are served as "
        "ever. Checked again from time to time: installing the CRD makes them available."
    )
    def evictions_available(self, info: Info[Context, None]) -> bool:
        return info.context.evictions.unavailable is None

    @strawberry.field(description="Why evictions are unavailable; null when they are available.")
    def evictions_message(self, info: Info[Context, None]) -> str | None:
        return info.context.evictions.unavailable

    @strawberry.field(description="Time of the last change event (RFC 3339), if any.")
    def last_event_at(self, root: strawberry.Parent[SyncStatusRecord]) -> str | None:
        return _timestamp(root.last_event_at)

    @strawberry.field(
        description="Seconds since the cache last confirmed it is current (an event, bookmark "
        "or reload)."
    )
    def seconds_since_confirmed(self, root: strawberry.Parent[SyncStatusRecord]) -> float | None:
        return root.seconds_since_confirmed()


_ZERO = Decimal(0)


def _position(uuid: str) -> Position:
    return Position(0, _ZERO, uuid)


def _timestamp(epoch: float | None) -> str | None:
    if epoch is None:
        return None
    return datetime.datetime.fromtimestamp(epoch, datetime.UTC).isoformat().replace("+00:00", "Z")


@built_once
@strawberry.input(description="Conditions a consumer must meet; all given ones must hold.")
class ConsumerFilter:
    project_id: str | None = strawberry.field(default=None, description="OpenStack project.")
    user_id: str | None = strawberry.field(default=None, description="OpenStack user.")
    consumer_type: str | None = strawberry.field(default=None, description="INSTANCE, MIGRATION...")
    migrating: bool | None = strawberry.field(
        default=None, description="Booked on more than one hypervisor."
    )
    hypervisor: str | None = strawberry.field(default=None, description="Booked on this host.")


def _consumer_matches(record: ConsumerRecord, where: ConsumerFilter) -> bool:
    bookings = record.bookings
    if where.project_id is not None and not any(b.project_id == where.project_id for b in bookings):
        return False
    if where.user_id is not None and not any(b.user_id == where.user_id for b in bookings):
        return False
    if where.consumer_type is not None and not any(
        b.consumer_type == where.consumer_type for b in bookings
    ):
        return False
    if where.hypervisor is not None and not any(b.hypervisor == where.hypervisor for b in bookings):
        return False
    if where.migrating is not None:
        return (len({b.hypervisor for b in bookings}) > 1) is where.migrating
    return True


@strawberry.type(description="Questions about hypervisors, bookings, consumers and capacity.")
class Query:
    @strawberry.field(description="One hypervisor by name, or null.")
    def hypervisor(
        self,
        info: Info[Context, None],
        name: Annotated[str, strawberry.argument(description="Object name.")],
    ) -> Hypervisor | None:
        return info.context.host(name)  # type: ignore[return-value]

    @strawberry.field(description="Hypervisors matching a filter, ordered and paged.")
    def hypervisors(
        self,
        info: Info[Context, None],
        filter: FilterArg = None,
        order_by: Annotated[
            HypervisorOrder | None, strawberry.argument(description="Ordering (default: name).")
        ] = None,
        first: FirstArg = None,
        after: AfterArg = None,
    ) -> Connection[Hypervisor]:
        context = info.context
        warn_unknown_resources(context, [*fitting(filter), order_by.resource if order_by else None])
        hosts, keys = ordered(
            apply_filter(context.views, context.pinned, filter, context.catalog, context.budget),
            order_by,
        )
        connection = paginate(
            hosts,
            keys,
            first,
            after,
            position,
            position_key(order_by),
            info.context.max_page_size,
            info.context.warn,
        )
        context.paged(hosts, connection.nodes)  # what the answer read of the fleet
        return connection

    @strawberry.field(description="A consumer by UUID across all hypervisors, or null.")
    def consumer(
        self,
        info: Info[Context, None],
        uuid: Annotated[UUID, strawberry.argument(description="Consumer UUID (any case).")],
    ) -> Consumer | None:
        return consumer_view(info.context, uuid)  # type: ignore[return-value]

    @strawberry.field(description="Consumers matching a filter, ordered by UUID and paged.")
    def consumers(
        self,
        info: Info[Context, None],
        filter: Annotated[
            ConsumerFilter | None, strawberry.argument(description="Conditions (default: all).")
        ] = None,
        first: FirstArg = None,
        after: AfterArg = None,
    ) -> Connection[Consumer]:
        consumers = info.context.consumers(ordered=True)
        records: Sequence[ConsumerRecord]
        keys: Sequence[Position]
        if filter is None:  # a page of the UUIDs in order: only its consumers are read
            uuids = consumers.uuids
            records = Mapped(uuids, lambda uuid: ConsumerRecord(uuid, consumers[uuid]))
            keys = Mapped(uuids, _position)
        else:
            matching = (ConsumerRecord(*item) for item in consumers.each())
            records = [r for r in matching if _consumer_matches(r, filter)]
            keys = [_position(r.uuid) for r in records]
        return paginate(
            records,
            keys,
            first,
            after,
            Position._make,
            tuple,
            info.context.max_page_size,
            info.context.warn,
        )

    @strawberry.field(
        description="Capacity totals for the fleet (or the hosts a filter selects), optionally "
        "grouped. Only known figures are summed; unknownCapacityHosts says how many are missing."
    )
    def fleet_capacity(
        self,
        info: Info[Context, None],
        filter: FilterArg = None,
        group_by: Annotated[
            FleetGrouping, strawberry.argument(description="Grouping (default NONE).")
        ] = FleetGrouping.NONE,
    ) -> list[FleetGroup]:
        context = info.context
        warn_unknown_resources(context, fitting(filter))
        # The fleet's totals are read from a ledger (context.ledger records which);
        # a filter's hosts are summed, a read of the fleet.
        snapshot = context.pinned if filter is None else context.snapshot
        return fleet_groups(  # type: ignore[return-value]
            context.views, snapshot, filter, group_by, context.ledger, context.catalog
        )

    @strawberry.field(
        description="How many more instances of one size the scheduler could place, per group: "
        "per host the smallest floor(free figure / requested amount) over the requested "
        "resources, counted only on the hosts Nova would use (ready, not disabled, open to the "
        "project, with the flavor's traits and aggregates; SlotGroup.excluded says how many "
        "were left out and why). Give exactly one of request (explicit amounts: only readiness, "
        "disabling and the project apply) and flavor (a catalog name, as Nova requests it). "
        "For every catalog flavor at once, ask flavors { name slots(groupBy: ...) { ... } }."
    )
    def slots(
        self,
        info: Info[Context, None],
        request: Annotated[
            list[ResourceRequest] | None,
            strawberry.argument(description="What one instance requests (each resource once)."),
        ] = None,
        flavor: Annotated[
            str | None,
            strawberry.argument(
                description="A flavor of the catalog; unknown names fail (UNKNOWN_FLAVOR)."
            ),
        ] = None,
        filter: FilterArg = None,
        group_by: Annotated[
            FleetGrouping, strawberry.argument(description="Grouping (default NONE).")
        ] = FleetGrouping.NONE,
        view: Annotated[
            CapacityView,
            strawberry.argument(
                description="The figure slots divide: AVAILABLE (default), BOOKINGS or "
                "ALLOCATION. Independent of filter.view."
            ),
        ] = CapacityView.AVAILABLE,
        project: Annotated[
            str | None,
            strawberry.argument(
                description="The OpenStack project that would boot the instances: hosts whose "
                "spec.allowedProjects lists it are eligible; without it, restricted hosts "
                "are not (PROJECT_RESTRICTED)."
            ),
        ] = None,
        drain: DrainArg = None,
    ) -> list[SlotGroup]:
        asked = Asked(filter, group_by, view, project, drain)
        return flavor_slots(info, request, flavor, asked)  # type: ignore[return-value]

    @strawberry.field(
        description="If these hosts were drained (one host, a building block, a rack...): "
        "where each of their consumers would go in its zone, what could not be placed and "
        "why, and the fleet afterwards. Give hosts, a filter, or both (BAD_DRAIN without "
        "either); unknown host names fail with UNKNOWN_HYPERVISOR. Read-only: nothing moves."
    )
    def drain_plan(
        self,
        info: Info[Context, None],
        hosts: Annotated[
            list[str] | None, strawberry.argument(description="Hosts to drain, by name.")
        ] = None,
        filter: Annotated[
            HypervisorFilter | None,
            strawberry.argument(description="Drain the hosts it selects too."),
        ] = None,
        view: Annotated[
            CapacityView,
            strawberry.argument(
                description="The figure room is judged in: AVAILABLE (default: each host on "
                "its own basis), BOOKINGS or ALLOCATION."
            ),
        ] = CapacityView.AVAILABLE,
    ) -> DrainPlan:
        return drain_plan(info, hosts, filter, view)  # type: ignore[return-value]

    @strawberry.field(
        description="The flavor catalog (serve --flavors FILE; the demo ships one), in file "
        "order; empty when none is loaded."
    )
    def flavors(self, info: Info[Context, None]) -> list[Flavor]:
        return list(info.context.catalog.flavors)  # type: ignore[arg-type]

    @strawberry.field(
        description="The operator's evictions (kvm.cloud.sap/v1 Eviction) matching a filter, by "
        "name. Null, with an error of code EVICTIONS_UNAVAILABLE, when evictions cannot be "
        "read (syncStatus.evictionsAvailable)."
    )
    def evictions(
        self,
        info: Info[Context, None],
        filter: Annotated[
            EvictionFilter | None, strawberry.argument(description="Conditions (default: all).")
        ] = None,
    ) -> list[Eviction] | None:
        return matching_evictions(info.context, filter)  # type: ignore[return-value]

    @strawberry.field(
        description="One eviction by name, or null; an error of code EVICTIONS_UNAVAILABLE "
        "when evictions cannot be read."
    )
    def eviction(
        self,
        info: Info[Context, None],
        name: Annotated[str, strawberry.argument(description="Object name.")],
    ) -> Eviction | None:
        return available(info.context).by_name.get(name)  # type: ignore[return-value]

    @strawberry.field(description="The Placement view of the hypervisor with this provider UUID.")
    def placement_provider(
        self,
        info: Info[Context, None],
        uuid: Annotated[UUID, strawberry.argument(description="Resource provider UUID.")],
    ) -> PlacementProvider | None:
        wanted = uuid.lower()
        for h in info.context.snapshot.ordered:
            if h.hypervisor_id is not None and h.hypervisor_id.lower() == wanted:
                return h  # type: ignore[return-value]
        return None

    @strawberry.field(
        description="The object with this global id (Node.id), or null: a hypervisor, a "
        "consumer or a flavor, for clients that refetch by id (Relay)."
    )
    def node(
        self,
        info: Info[Context, None],
        id: Annotated[strawberry.ID, strawberry.argument(description="A Node.id.")],
    ) -> Node | None:
        named = parse_global_id(id)
        if named is None:
            return None
        kind, key = named
        context = info.context
        if kind == "Hypervisor":
            return context.host(key)  # type: ignore[return-value]
        if kind == "Consumer":
            return consumer_view(context, key)  # type: ignore[return-value]
        return context.catalog.get(key)  # type: ignore[return-value]

    @strawberry.field(description="How current the gateway's cache is.")
    def sync_status(self, info: Info[Context, None]) -> SyncStatus:
        return info.context.status  # type: ignore[return-value]


#: Fields whose resolvers read their parent (and String arguments) only.
DIRECT_LOOKUPS = (
    ("FleetGroup", "resources"),
    ("FleetGroup", "resource"),
    ("FleetResource", "utilization"),
    *(
        ("Hypervisor", field)
        for field in (
            "id",
            "resource",
            "label",
            "labels",
            "traits",
            "aggregates",
            "conditions",
            "overcommit",
            "resources",
            "cells",
            "instances",
            "created_at",
            "operating_system",
            "consumers",
            "reservations",
        )
    ),
)
#: The memo (gateway.api.documents) that keeps subscriptions' documents, parsed and
#: validated, in the store's memos: subscribers of one text share one document, and
#: so the objects completed for it.
SUBSCRIPTION_DOCUMENTS = "subscription documents"
#: Types whose objects are store records (or a ledger's totals), immutable and shared
#: by every answer.
REUSABLE_TYPES = ("Hypervisor", "FleetGroup")


class _Checked:
    """A subscription's document, and its validation errors once validated."""

    __slots__ = ("document", "errors")

    def __init__(self, document: DocumentNode) -> None:
        self.document = document
        self.errors: list[GraphQLError] | None = None


class _KeptDocuments(SchemaExtension):
    """Strawberry's parse and validation of a document, kept in the app's memo of
    subscriptions' documents (bounded in bytes) when the context's store has one."""

    def on_parse(self) -> Iterator[None]:
        ec = self.execution_context
        memo = _documents(ec.context)
        if memo is not None and ec.query:
            query, options = ec.query, ec.parse_options
            checked = memo.get(query, len(query), lambda: _Checked(parse(query, **options)))
            ec.graphql_document = checked.document
        yield

    def on_validate(self) -> Iterator[None]:
        ec = self.execution_context
        memo = _documents(ec.context)
        if memo is not None and ec.query and ec.graphql_document is not None:
            document = ec.graphql_document
            checked = memo.get(ec.query, len(ec.query), lambda: _Checked(document))
            if checked.document is document:
                if checked.errors is None:
                    rules = ec.validation_rules
                    checked.errors = validate(ec.schema._schema, document, rules)
                ec.pre_execution_errors = checked.errors
        yield


def _documents(context: Any) -> Documents[str, _Checked] | None:
    memos = getattr(getattr(context, "store", None), "memos", None)
    found = memos.get(SUBSCRIPTION_DOCUMENTS) if memos is not None else None
    return found if isinstance(found, Documents) else None


class _Schema(strawberry.Schema):
    def process_errors(
        self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None
    ) -> None:
        """Nothing: each transport masks the errors it sends, and logs those that are the
        gateway's own bugs, once, under a request id (gateway.http.execution.mask).
        Strawberry's own logs every error with its traceback, a client's mistake too."""


def build_schema(*, shortcuts: bool = True) -> strawberry.Schema:
    """The schema. One instance serves both transports, whose limits are the
    gateway's own (gateway.http.operations, gateway.http.execution), not Strawberry extensions.

    Without ``shortcuts`` every field keeps Strawberry's own resolver: what the
    short-path executor's answers are checked against. With them, subscription events
    are executed by the same executor as queries: a hundred subscribers to the fleet's
    totals then share the completed groups a change did not touch. Strawberry parses
    and validates each subscription's document itself (after the gateway's own checks):
    cached, subscribers of one text share one document, and so the objects completed
    for it.
    """
    built = _Schema(
        query=Query,
        subscription=Subscription,
        config=StrawberryConfig(scalar_map=SCALARS),
        execution_context_class=Executor if shortcuts else None,
        extensions=[_KeptDocuments],
    )
    if shortcuts:
        shortcut_resolvers(built, DIRECT_LOOKUPS)
        mark_reusable(built._schema, *REUSABLE_TYPES)
    return built


schema = build_schema()


def sdl() -> str:
    """The schema in SDL, as committed in ``schema.graphql``."""
    return schema.as_str() + "\n"
