"""The fleet in memory: snapshots, the store that swaps them, its views, the change feed.

It builds on :mod:`gateway.domain` only. Sources write into it through the
:class:`Source` protocol defined here, so the app that runs one, and the API
that shows its :class:`SyncStatus`, need not import the sources.
"""

from __future__ import annotations

from gateway.store.collector import collector_paused
from gateway.store.evictions import EvictionSnapshot, EvictionStore
from gateway.store.feed import ChangeFeed, Feed
from gateway.store.snapshot import Change, ChangeType, Snapshot
from gateway.store.source import Source, SyncStatus
from gateway.store.store import Batch, Store
from gateway.store.views import Views

__all__ = [
    "Batch",
    "Change",
    "ChangeFeed",
    "ChangeType",
    "EvictionSnapshot",
    "EvictionStore",
    "Feed",
    "Snapshot",
    "Source",
    "Store",
    "SyncStatus",
    "Views",
    "collector_paused",
]
