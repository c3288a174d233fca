"""What every source of Hypervisor (and Eviction) objects provides (demo, files, Kubernetes)."""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from typing import Protocol

from gateway.store.store import Store

__all__ = ["Source", "SyncStatus"]


@dataclasses.dataclass(slots=True)
class SyncStatus:
    """How current the store is, as the source sees it (``Query.syncStatus``)."""

    source: str
    synced: bool = False
    error: str | None = None
    last_event_at: float | None = None
    confirmed_at: float | None = None
    relists: int = 0
    watch_restarts: int = 0
    parse_failures: int = 0
    #: Watch events received, by type (ADDED, MODIFIED, DELETED, BOOKMARK).
    events: Counter[str] = dataclasses.field(default_factory=Counter)

    def confirm(self, event: bool = True) -> None:
        """The cache was just shown to be current (an event, a bookmark, a reload)."""
        now = time.time()
        self.confirmed_at = now
        if event:
            self.last_event_at = now

    def seconds_since_confirmed(self) -> float | None:
        return None if self.confirmed_at is None else max(0.0, time.time() - self.confirmed_at)


class Source(Protocol):
    """Feeds a :class:`Store` until cancelled.

    ``run`` loads a complete first view, calls ``store.mark_ready()``, then keeps the
    store current. It must never raise for bad data or a failing backend: it reports
    trouble through :attr:`status` and its log, and keeps trying.

    A source that knows the operator's evictions writes them into ``store.evictions``
    (:meth:`~gateway.store.evictions.EvictionStore.replace` with the Eviction objects,
    for a complete set); until one does, evictions are unavailable, never "none".
    """

    status: SyncStatus

    async def run(self, store: Store) -> None: ...
