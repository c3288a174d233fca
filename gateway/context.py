"""What every resolver sees: one snapshot, taken once per request."""

from __future__ import annotations

import dataclasses

from gateway.source import SyncStatus
from gateway.store import Snapshot, Store

__all__ = ["Context"]


@dataclasses.dataclass(frozen=True, slots=True)
class Context:
    """Per-request context. ``snapshot`` is fixed for the whole request, so one
    response never mixes two versions of the fleet."""

    store: Store
    snapshot: Snapshot
    status: SyncStatus
