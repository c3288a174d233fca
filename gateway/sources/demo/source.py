"""A deterministic synthetic fleet (``--demo``), also used to load real API servers.

:func:`generate` returns complete Hypervisor objects, valid against the operator's
CRD, that look like a real region: several zones, homogeneous building blocks,
general-purpose hardware, HANA hosts in an aggregate isolated by their trait,
building blocks of pinned cores (``PCPU``) and one kept for a few projects,
overcommit, ``nova-reserved`` reservations and thousands of consumers. It also
plants the awkward cases a user must be able to find: hosts without status (new),
in maintenance (some evicted), not Ready, nearly full, over-subscribed, tainted,
in an OS update, live migrations (one UUID on two hosts, or a MIGRATION consumer
on the source), allocation and instances that drift from the bookings, and one
consumer booked twice on the same host (a parse warning).

It looks like a rollout of ``spec.bookings`` in progress: a share ``tracked`` of
every kind of host carries bookings, the rest only the status a released
operator writes (real clusters today: ``tracked=0``).

The same ``(size, seed, bookings_per_host, tracked)`` always gives the same fleet,
and the generator is cheap enough for benchmark fleets (20,000 hosts, 40 bookings
each).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from gateway.sources.demo.churn import Churn
from gateway.sources.demo.evictions import evictions
from gateway.sources.demo.pace import Pace
from gateway.sources.demo.plan import TRACKED, Fleet, check_tracked
from gateway.sources.demo.render import render
from gateway.store.collector import collector_paused
from gateway.store.source import SyncStatus
from gateway.store.store import Store

__all__ = ["DemoSource", "Generated", "generate", "generate_fleet"]

log = logging.getLogger(__name__)

#: Seconds between two reports of the churn's achieved rate in the log.
REPORT_EVERY = 60.0


@dataclasses.dataclass(frozen=True, slots=True)
class Generated:
    """A generated fleet, and what the objects of its untracked hosts do not say."""

    objects: list[dict[str, Any]]
    #: The size of each libvirt domain on an untracked host, by instance UUID: the
    #: churn changes such a host's allocation by it, as its agent would report.
    domains: dict[str, dict[str, str]]


def generate(
    size: int = 200,
    seed: int = 0,
    bookings_per_host: int | None = None,
    tracked: float = TRACKED,
) -> list[dict[str, Any]]:
    """A fleet of ``size`` Hypervisor objects, the same for the same arguments.

    Hosts are filled to a random utilization, or, with ``bookings_per_host``, to
    about that many consumer bookings each (benchmark fleets). A share
    ``tracked`` (0 to 1) of the hosts carries ``spec.bookings``. Objects carry no
    ``uid`` or ``resourceVersion``: the cluster assigns those.
    """
    return generate_fleet(size, seed, bookings_per_host, tracked).objects


def generate_fleet(
    size: int, seed: int, bookings_per_host: int | None, tracked: float
) -> Generated:
    """:func:`generate`'s objects, with the sizes of the untracked hosts' domains."""
    if size < 0:
        raise ValueError(f"a fleet cannot have {size} hypervisors")
    with collector_paused():
        fleet = Fleet(size, seed, bookings_per_host, tracked)
        hosts = fleet.hosts()
        objects = [render(fleet, host) for host in hosts]
    domains = {
        c.uuid: c.flavor.resources(False)
        for host in hosts
        if not host.tracked
        for c in host.consumers
        if c.domain
    }
    return Generated(objects, domains)


class DemoSource:
    """Serves one generated fleet, changed every ``churn`` seconds if that is set.

    The fleet is always current, so the source confirms it every ``confirm_every``
    seconds (or at each change): a demo deployment's sync age stays small.
    Changes keep to ``clock`` (:class:`~gateway.sources.demo.pace.Pace`), waiting
    with ``sleep``; the rate achieved is logged every minute.
    """

    def __init__(
        self,
        size: int = 200,
        seed: int = 0,
        bookings_per_host: int | None = None,
        churn: float = 0.0,
        confirm_every: float = 10.0,
        tracked: float = TRACKED,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if churn < 0:
            raise ValueError(f"the churn interval must not be negative, got {churn}")
        check_tracked(tracked)
        self.size = size
        self.seed = seed
        self.bookings_per_host = bookings_per_host
        self.tracked = tracked
        self.churn = churn
        self.confirm_every = confirm_every
        self.status = SyncStatus(source="demo")
        self._clock = clock
        self._sleep = sleep

    async def run(self, store: Store) -> None:
        # Paused until the store has settled the fleet, as the informer's first list is:
        # between generating and parsing, collections over the raw objects took 8-11 s
        # of a 20,000-host start.
        with collector_paused():
            fleet = await asyncio.to_thread(
                generate_fleet, self.size, self.seed, self.bookings_per_host, self.tracked
            )
            for version, obj in enumerate(fleet.objects, 1):  # as the API server's create would
                obj["metadata"]["resourceVersion"] = str(version)
            await store.replace_async(fleet.objects)
            store.evictions.replace(evictions(fleet.objects))
        self.status.parse_failures = len(store.rejected)
        store.mark_ready()
        self.status.synced = True
        self.status.confirm()
        log.info("demo fleet loaded: %d hypervisors (seed %d)", len(fleet.objects), self.seed)
        churn = (
            Churn(store, fleet.objects, self.seed, fleet.domains, len(fleet.objects))
            if self.churn
            else None
        )
        del fleet
        pace = Pace(self.churn or self.confirm_every, self._clock)
        reported = 0.0
        while True:
            await self._sleep(pace.wait())
            for _ in range(pace.due()):
                changed = churn.step() if churn is not None else None
                self.status.confirm(event=changed is not None)
            if churn is not None and self._clock() - pace.start >= reported + REPORT_EVERY:
                reported += REPORT_EVERY
                log.info(
                    "demo churn: %.1f changes/s asked, %.1f achieved (%d steps too late skipped)",
                    1 / self.churn,
                    pace.achieved(),
                    pace.skipped,
                )
