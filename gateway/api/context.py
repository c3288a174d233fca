"""What every resolver sees: the store, the source's status, one snapshot, the flavors."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

from gateway.api.budget import Budget
from gateway.api.memos import Answers
from gateway.domain.flavors import NO_CATALOG, Catalog
from gateway.domain.ledger import Ledger, Tally
from gateway.domain.records import Hypervisor
from gateway.store.consumers import Consumers
from gateway.store.evictions import EvictionSnapshot
from gateway.store.feed import Feed
from gateway.store.ordered import Ordered
from gateway.store.reads import Reads
from gateway.store.snapshot import Snapshot
from gateway.store.source import SyncStatus
from gateway.store.store import Store
from gateway.store.views import Views, ledger_key

__all__ = ["Context"]


class Context:
    """Per-request (or per-WebSocket) context.

    An HTTP request pins one snapshot for its whole execution, so one response never
    mixes two versions of the fleet. A WebSocket connection lives for hours: its
    context follows the store, and each subscription message is executed against
    the snapshot current when it is sent.
    """

    __slots__ = (
        "_evictions",
        "_hosts_read",
        "_read_fleet",
        "_snapshot",
        "_views_read",
        "answers",
        "budget",
        "catalog",
        "coalesce_interval",
        "connection",
        "connection_params",
        "feed",
        "max_page_size",
        "memo",
        "on_lag",
        "status",
        "store",
        "warnings",
    )

    def __init__(
        self,
        store: Store,
        status: SyncStatus,
        feed: Feed,
        *,
        pinned: bool = True,
        coalesce_interval: float = 1.0,
        max_page_size: int = 10_000,
        connection: object = None,
        on_lag: Callable[[], None] | None = None,
        catalog: Catalog = NO_CATALOG,
    ) -> None:
        self.store = store
        #: What answers keep for the next ones (gateway.api.memos).
        self.answers = Answers.of(store.memos)
        #: The flavor catalog slots can be asked for by name (empty: none loaded).
        self.catalog = catalog
        self.status = status
        self.feed = feed
        self.coalesce_interval = coalesce_interval
        self.max_page_size = max_page_size
        self._snapshot = store.snapshot if pinned else None
        self._evictions = store.evictions.snapshot if pinned else None
        #: The transport's handle of a subscription connection; the API never looks inside.
        self.connection = connection
        #: Ends the connection of a subscriber too slow to keep up; the transport sets it.
        self.on_lag = on_lag
        #: The payload of a WebSocket's connection_init (credentials live there).
        self.connection_params: object = None
        #: What the operation may still spend (see gateway.api.budget); None: no limit.
        self.budget: Budget | None = None
        self._read_fleet = False
        self._hosts_read: dict[str, Hypervisor | None] = {}
        self._views_read: dict[Hashable, object] = {}
        #: What the answer's ``extensions.warnings`` say (gateway.api.warnings).
        self.warnings: list[dict[str, str]] = []
        #: What one operation works out once for all the fields that need it (a drain
        #: plan asked by every flavor's slots): gone with the operation.
        self.memo: dict[Hashable, Any] = {}

    @property
    def snapshot(self) -> Snapshot:
        """The fleet, for a resolver: its answer now depends on every host."""
        self._read_fleet = True
        return self.pinned

    @property
    def pinned(self) -> Snapshot:
        """The snapshot, for the transport (cache keys, cost): recorded as no read."""
        # Not `or`: an empty fleet's snapshot is falsy, and it is pinned all the same.
        return self.store.snapshot if self._snapshot is None else self._snapshot

    @property
    def views(self) -> Views:
        """What the store keeps of its snapshots' fleets (gateway.store.views)."""
        return self.store.views

    @property
    def evictions(self) -> EvictionSnapshot:
        """The operator's evictions, pinned (or followed) as the fleet is."""
        return self.store.evictions.snapshot if self._evictions is None else self._evictions

    def ledger(self, tally: Tally) -> Ledger:
        """The sums ``tally`` keeps over the fleet, for a resolver: a read of these sums,
        not of every host (the answer lives while they are the same, gateway.store.reads).

        Kept by the store once counted; the first count is a pass over every host,
        which an operation running on the event loop hands to a worker thread.
        """
        snapshot, views = self.pinned, self.views
        if not views.keeps(snapshot, tally) and self.budget is not None:
            self.budget.scan()
        found = self._views_read[ledger_key(tally)] = views.ledger(snapshot, tally)
        return found

    def consumers(self, *, ordered: bool = False) -> Consumers:
        """The fleet's consumers, for a resolver (a read of the fleet); ``ordered`` for
        one that lists them in UUID order.

        Kept by the store once indexed; the first index (and the first order of
        the UUIDs) is a pass over every booking, handed to a worker thread as
        :meth:`ledger`'s first count is.
        """
        snapshot, views = self.snapshot, self.views
        if not views.indexes_consumers(snapshot, ordered=ordered) and self.budget is not None:
            self.budget.scan()
        return views.consumers(snapshot)

    def host(self, name: str) -> Hypervisor | None:
        """One hypervisor by name, for a resolver: its answer depends on this host only."""
        record = self._hosts_read[name] = self.pinned.by_name.get(name)
        return record

    def paged(self, hosts: Sequence[Hypervisor], page: Iterable[Hypervisor]) -> None:
        """Record a page of ``hosts`` read, for a resolver: ``page``, its records.

        ``hosts`` in name order as the store keeps them (the fleet's order, a
        filter's selection: an :class:`Ordered` view) hold no more than which hosts
        are there: the answer depends on that view and on the page's records. Any
        other list (sorted by a figure) depends on every host in it.
        """
        if not isinstance(hosts, Ordered):
            self._read_fleet = True
            return
        key, value = hosts.view
        self._views_read[key] = value
        for record in page:
            self._hosts_read[record.name] = record

    def warn(self, code: str, message: str) -> None:
        """Add a warning to the answer, once however often it is met."""
        warning = {"code": str(code), "message": message}
        if warning not in self.warnings:
            self.warnings.append(warning)

    def reads(self) -> Reads:
        """What the resolvers read so far, for the cache (gateway.store.reads)."""
        if self._read_fleet:
            return Reads(self.pinned.generation)
        return Reads.narrow(self._hosts_read.items(), tuple(self._views_read.items()), self.views)

    def for_operation(self) -> Context:
        """A context pinned to the current snapshot, for one query.

        A WebSocket connection's context is shared by its operations and follows the
        store; one query's answer must come from one snapshot and spend its own budget.
        """
        return self.pinned_to(self.store.snapshot)

    def pinned_to(self, snapshot: Snapshot) -> Context:
        """A context like this one that reads ``snapshot``: for one query, or one
        subscription event, whose links are followed in the fleet its payload is from."""
        context = Context(
            self.store,
            self.status,
            self.feed,
            coalesce_interval=self.coalesce_interval,
            max_page_size=self.max_page_size,
            catalog=self.catalog,
        )
        context._snapshot = snapshot
        context.connection_params = self.connection_params
        return context

    def detached(self, on_lag: Callable[[], None]) -> Context:
        """A context like this one that follows the store, of no connection: for a
        subscription run once for the subscribers of many (gateway.http.broadcast)."""
        return Context(
            self.store,
            self.status,
            self.feed,
            pinned=False,
            coalesce_interval=self.coalesce_interval,
            max_page_size=self.max_page_size,
            on_lag=on_lag,
            catalog=self.catalog,
        )

    def cut_off(self) -> None:
        """End a subscriber that fell too far behind, once; how is the transport's business."""
        if self.on_lag is not None:
            on_lag, self.on_lag = self.on_lag, None
            on_lag()
