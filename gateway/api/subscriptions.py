"""GraphQL subscriptions: live changes of hypervisors, consumers, fleet totals and
evictions."""

import asyncio
import dataclasses
from collections.abc import AsyncGenerator, Callable
from enum import Enum
from typing import Annotated, TypeVar

import strawberry
from strawberry.types import Info

from gateway.api.arguments import UUID
from gateway.api.context import Context
from gateway.api.enums import FleetGrouping
from gateway.api.evictions import Eviction, EvictionFilter, available, compile_eviction_filter
from gateway.api.filters import HypervisorFilter, Predicate, compile_filter
from gateway.api.memos import Totals
from gateway.api.objects import Consumer, ConsumerRecord, Hypervisor
from gateway.api.recent import Recent
from gateway.api.totals import FleetGroup, fleet_groups
from gateway.domain import fleet
from gateway.domain import records as domain
from gateway.domain.flavors import Catalog
from gateway.store.feed import ChangeFeed, Commit
from gateway.store.snapshot import Change, Snapshot
from gateway.store.snapshot import ChangeType as StoreChangeType
from gateway.store.views import Views

__all__ = ["BROADCAST", "Subscription"]

#: The subscription fields whose events are the same for every subscriber of one
#: operation from the moment it subscribes: each payload names the store generation
#: its change made (``generation``). Their subscribers may share one run of the
#: operation (gateway.http.broadcast).
BROADCAST = frozenset({"hypervisorChanged"})

T = TypeVar("T")


@strawberry.enum(description="What happened to a hypervisor or an eviction.")
class ChangeType(Enum):
    ADDED = strawberry.enum_value("ADDED", description="It appeared (or now matches the filter).")
    MODIFIED = strawberry.enum_value("MODIFIED", description="Its spec or status changed.")
    DELETED = strawberry.enum_value(
        "DELETED", description="It is gone (or no longer matches); its last state is given."
    )


@strawberry.type(description="A change to one hypervisor.")
class HypervisorChange:
    type: ChangeType = strawberry.field(description="ADDED, MODIFIED or DELETED.")
    hypervisor: Hypervisor = strawberry.field(
        description="The new state; for DELETED, the last state before it went away."
    )
    #: The fleet the change's links are followed in: the one its record is part of.
    snapshot: strawberry.Private[Snapshot]
    #: The store generation the change made (its commit's), for a deletion too.
    generation: strawberry.Private[int]


@strawberry.type(description="A change to one of the operator's evictions.")
class EvictionChange:
    type: ChangeType = strawberry.field(description="ADDED, MODIFIED or DELETED.")
    eviction: Eviction = strawberry.field(
        description="The new state; for DELETED, the last state before it went away."
    )


@strawberry.type(description="Live updates. Subscribe over WebSocket on /graphql.")
class Subscription:
    @strawberry.subscription(
        description="Every change to a hypervisor matching the filter, in order. A host that "
        "stops matching is reported DELETED, one that starts matching ADDED. A subscriber "
        "that falls too far behind is ended with an error and should subscribe again."
    )
    async def hypervisor_changed(
        self,
        info: Info[Context, None],
        filter: Annotated[
            HypervisorFilter | None, strawberry.argument(description="Hosts to watch.")
        ] = None,
    ) -> AsyncGenerator[HypervisorChange, None]:
        matches = compile_filter(filter, info.context.catalog)
        with info.context.feed.changes(on_lag=info.context.cut_off) as changes:
            async for commit in changes:
                for change in commit.changes:
                    if (kind := _change_type(change, matches)) is not None:
                        yield _view(info.context.answers.payloads, change, kind, commit)

    @strawberry.subscription(
        description="The consumer now, then again whenever one of its bookings changes; "
        "null once it is booked nowhere."
    )
    async def consumer_changed(
        self,
        info: Info[Context, None],
        uuid: Annotated[UUID, strawberry.argument(description="Consumer UUID (any case).")],
    ) -> AsyncGenerator[Consumer | None, None]:
        wanted = uuid.lower()
        # Listening before the first read: a change made while it is sent comes next.
        with info.context.feed.changes(on_lag=info.context.cut_off) as changes:
            yield await _consumer(info.context.views, info.context.store.snapshot, wanted)  # type: ignore[misc]
            async for commit in changes:
                if any(_books(change, wanted) for change in commit.changes):
                    yield await _consumer(info.context.views, commit.after, wanted)  # type: ignore[misc]

    @strawberry.subscription(
        description="Every change to an eviction matching the filter, in order, as "
        "hypervisorChanged reports hosts. If evictions become unavailable meanwhile (the "
        "Eviction CRD removed), each one is reported DELETED. Fails with code "
        "EVICTIONS_UNAVAILABLE when evictions cannot be read at the start."
    )
    async def eviction_changed(
        self,
        info: Info[Context, None],
        filter: Annotated[
            EvictionFilter | None, strawberry.argument(description="Evictions to watch.")
        ] = None,
    ) -> AsyncGenerator[EvictionChange, None]:
        context = info.context
        available(context)
        matches = compile_eviction_filter(filter)
        # Evictions change rarely and are watched by few: a listener per subscriber.
        feed = ChangeFeed(context.store.evictions)
        feed.start()
        try:
            with feed.changes(on_lag=context.cut_off) as commits:
                async for commit in commits:
                    for change in commit.changes:
                        kind = _seen_as(change.type, change.previous, change.eviction, matches)
                        if kind is not None:
                            yield EvictionChange(type=kind, eviction=change.eviction)  # type: ignore[arg-type]
        finally:
            feed.stop()

    @strawberry.subscription(
        description="fleetCapacity now, then the newest totals whenever they change, at most "
        "one message per coalescing interval (default 1 s): a slow reader always gets the "
        "latest totals, never a backlog."
    )
    async def fleet_capacity_changed(
        self,
        info: Info[Context, None],
        filter: Annotated[
            HypervisorFilter | None, strawberry.argument(description="Hosts to total.")
        ] = None,
        group_by: Annotated[
            FleetGrouping, strawberry.argument(description="Grouping (default NONE).")
        ] = FleetGrouping.NONE,
    ) -> AsyncGenerator[list[FleetGroup], None]:
        previous = None
        async for snapshot in info.context.feed.snapshots(info.context.coalesce_interval):
            context = info.context
            groups = await shared_groups(
                context.views, context.answers.totals, snapshot, filter, group_by, context.catalog
            )
            signature = [(g.key, g.resources) for g in groups]
            if signature != previous:
                previous = signature
                yield groups  # type: ignore[misc]


async def shared_groups(
    views: Views,
    totals: Totals,
    snapshot: Snapshot,
    where: HypervisorFilter | None,
    group_by: FleetGrouping,
    catalog: Catalog,
) -> list[fleet.FleetGroup]:
    """fleet_groups, computed once per snapshot, filter and grouping for every subscriber
    (kept in ``totals``).

    A change wakes every fleetCapacityChanged subscriber at once; a dashboard's
    hundred viewers ask for the same totals. Kept sums are read on the event
    loop; a pass over the fleet (the first count of a grouping's ledger, a
    filter's hosts) runs in a worker thread, once, the others awaiting it: on
    the loop, the first event's count at 20,000 hosts held every answer for
    half a second. A filter is an input object: its repr names every field it
    was given.
    """
    key = (repr(where), group_by)
    found = totals.get(snapshot, key)
    if found is None:
        if where is None and views.keeps(snapshot, fleet.tally(group_by)):
            found = asyncio.get_running_loop().create_future()
            found.set_result(fleet_groups(views, snapshot, None, group_by))
        else:
            found = asyncio.ensure_future(
                asyncio.to_thread(fleet_groups, views, snapshot, where, group_by, None, catalog)
            )
        totals.put(snapshot, key, found)
    return await asyncio.shield(found)  # one subscriber leaving does not cancel the others'


def _view(
    payloads: Recent[HypervisorChange],
    change: Change,
    kind: ChangeType,
    commit: Commit[Snapshot, Change],
) -> HypervisorChange:
    """Each change's message payload, one per kind, for all its subscribers: filed under
    the record it shows and its snapshot, not the change, which holds the record it
    replaced too."""
    record, snapshot = change.hypervisor, commit.holding(change)
    view = payloads.get((record, snapshot), kind)
    if view is None:
        view = HypervisorChange(
            type=kind,
            hypervisor=record,  # type: ignore[arg-type]
            snapshot=snapshot,
            generation=commit.after.generation,
        )
        payloads.put((record, snapshot), view, kind)
    return view


@dataclasses.dataclass(frozen=True, slots=True)
class _ConsumerEvent(ConsumerRecord):
    """A consumer as a message shows it, with the fleet its links are followed in."""

    snapshot: Snapshot


async def _consumer(views: Views, snapshot: Snapshot, uuid: str) -> _ConsumerEvent | None:
    """The consumer in ``snapshot``; its first index of the consumers (a pass over
    every booking) in a worker thread, as a query's is."""
    if not views.indexes_consumers(snapshot):
        await asyncio.to_thread(views.consumers, snapshot)
    bookings = views.consumers(snapshot).get(uuid)
    return _ConsumerEvent(uuid, bookings, snapshot) if bookings else None


def _books(change: Change, uuid: str) -> bool:
    """Whether the host ``change`` is about booked ``uuid`` before or after it."""
    states = (change.hypervisor, change.previous)
    return any(h is not None and domain.has_consumer(h, uuid) for h in states)


def _change_type(change: Change, matches: Predicate) -> ChangeType | None:
    """What ``change`` is to a subscriber of the hosts ``matches`` selects; None: nothing."""
    return _seen_as(change.type, change.previous, change.hypervisor, matches)


def _seen_as(
    kind: StoreChangeType, previous: T | None, current: T, matches: Callable[[T], bool]
) -> ChangeType | None:
    """What a change of a record (a host, an eviction) is to a subscriber of those
    ``matches`` selects: one that stops matching is DELETED, one that starts ADDED."""
    before = previous is not None and matches(previous)
    after = kind is not StoreChangeType.DELETED and matches(current)
    if before and not after:
        return ChangeType.DELETED
    if after and not before:
        return ChangeType.ADDED
    return ChangeType.MODIFIED if before else None
