"""The Kubernetes source: a cluster's Hypervisors, and the operator's evictions beside them."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from gateway.sources.kubernetes.evictions import EvictionInformer
from gateway.sources.kubernetes.informer import HypervisorInformer
from gateway.store.store import Store

__all__ = ["ClusterSource"]

log = logging.getLogger(__name__)


class ClusterSource:
    """A :class:`~gateway.store.source.Source`: two informers, one for each resource.

    Its status is the Hypervisors' alone, so the gateway's readiness never waits
    on evictions: a cluster without them (an older operator) is served as fully
    as one with them. The eviction informer runs beside, into ``store.evictions``,
    and is stopped with the source.
    """

    def __init__(self, hypervisors: HypervisorInformer, evictions: EvictionInformer) -> None:
        self.hypervisors = hypervisors
        self.evictions = evictions
        self.status = hypervisors.status

    async def run(self, store: Store) -> None:
        evictions = asyncio.create_task(self.evictions.run(store.evictions), name="evictions")
        evictions.add_done_callback(_report_exit)
        try:
            await self.hypervisors.run(store)
        finally:
            evictions.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await evictions


def _report_exit(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("the eviction informer stopped", exc_info=task.exception())
