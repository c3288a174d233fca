"""What every resolver sees: the store, the source's status, one snapshot, the flavors."""

from __future__ import annotations

import asyncio

from starlette.websockets import WebSocket

from gateway.budget import Budget
from gateway.domain import Hypervisor
from gateway.feed import Feed
from gateway.flavors import NO_CATALOG, Catalog
from gateway.reads import Reads
from gateway.source import SyncStatus
from gateway.store import Snapshot, Store

__all__ = ["Context"]


class Context:
    """Per-request (or per-WebSocket) context.

    An HTTP request pins one snapshot for its whole execution, so one response never
    mixes two versions of the fleet. A WebSocket connection lives for hours: its
    context follows the store, and each subscription message is executed against
    the snapshot current when it is sent.
    """

    __slots__ = (
        "_hosts_read",
        "_read_fleet",
        "_snapshot",
        "budget",
        "catalog",
        "coalesce_interval",
        "connection",
        "connection_params",
        "feed",
        "max_page_size",
        "status",
        "store",
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
        connection: WebSocket | None = None,
        catalog: Catalog = NO_CATALOG,
    ) -> None:
        self.store = store
        #: The flavor catalog slots can be asked for by name (empty: none loaded).
        self.catalog = catalog
        self.status = status
        self.feed = feed
        self.coalesce_interval = coalesce_interval
        self.max_page_size = max_page_size
        self._snapshot = store.snapshot if pinned else None
        #: The WebSocket of a subscription connection, to cut off a reader too slow to keep up.
        self.connection = connection
        #: The payload of a WebSocket's connection_init (credentials live there).
        self.connection_params: object = None
        #: What the operation may still spend (see gateway.budget); None: no limit.
        self.budget: Budget | None = None
        self._read_fleet = False
        self._hosts_read: dict[str, Hypervisor | None] = {}

    @property
    def snapshot(self) -> Snapshot:
        """The fleet, for a resolver: its answer now depends on every host."""
        self._read_fleet = True
        return self.pinned

    @property
    def pinned(self) -> Snapshot:
        """The snapshot, for the transport (cache keys, cost): recorded as no read."""
        return self._snapshot or self.store.snapshot

    def host(self, name: str) -> Hypervisor | None:
        """One hypervisor by name, for a resolver: its answer depends on this host only."""
        record = self._hosts_read[name] = self.pinned.by_name.get(name)
        return record

    def reads(self) -> Reads:
        """What the resolvers read so far, for the cache (gateway.reads)."""
        if self._read_fleet:
            return Reads(self.pinned.generation)
        return Reads(None, tuple(self._hosts_read.items()))

    def for_operation(self) -> Context:
        """A context pinned to the current snapshot, for one query.

        A WebSocket connection's context is shared by its operations and follows the
        store; one query's answer must come from one snapshot and spend its own budget.
        """
        context = Context(
            self.store,
            self.status,
            self.feed,
            coalesce_interval=self.coalesce_interval,
            max_page_size=self.max_page_size,
        )
        context.connection_params = self.connection_params
        return context

    def cut_off(self) -> None:
        """Close the connection of a subscriber that fell too far behind (1013: try again)."""
        if self.connection is not None:
            connection = self.connection
            self.connection = None
            reason = "too slow to keep up with changes; reconnect to resume"
            _background.add(task := asyncio.create_task(connection.close(1013, reason)))
            task.add_done_callback(_background.discard)


_background: set[asyncio.Task[None]] = set()
