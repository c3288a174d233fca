"""Capacity series for Prometheus, served at ``/metrics/capacity``, kept rendered.

What the series say is :mod:`gateway.http.capacity_text`; this module keeps their
text current, so that a scrape costs little more than sending it.

At 20,000 hosts there are some 385,000 samples (53 MB), far too many to format at
every scrape, and a node agent rewrites every host's status each minute, so a
record is new at nearly every scrape while its figures mostly are not. A host's
lines are therefore formatted again only when its figures or labels changed, a
group's totals and slots only when one of its members' did, and the list of
the text's pieces only when a group's lines changed. Only the hosts the
store's changes named since the last look are read, their records compared
with what was kept: a look costs what changed, not the fleet.

That work is done ahead of scrapes: :meth:`CapacityExposition.run` does it
whenever the store changes (a second later, so that a group whose hosts change
often is counted once per second, not once per change), in slices that leave
the event loop free between them (:data:`UPKEEP`). A scrape does whatever is
left for the current snapshot, in the same slices, so its text is always that
snapshot's. The text of one rendering is compressed once, for the first scrape
that asks, and tagged, so that a scraper holding it gets 304
(:func:`capacity_route`).

Only while something scrapes, though. Kept current for nobody, the series cost
a third of a core at 20,000 hosts and 333 changes a second (a group's slots
per flavor, carried per changed host) and memory (65-75 MiB of the gateway's
460 MiB resident in bench.ceiling's replay at 20,000 hosts); left as they
were, they would keep alive every record the store has replaced since. So the
first scrape renders the fleet (seconds at 20,000 hosts: the gateway answers
queries meanwhile, as the slices leave the loop free), and once no scrape has
come for ``warm_for`` seconds the rendering is dropped, and the next scrape
renders the fleet afresh, as the first one did. The fleet is not rendered at
the start for a scraper that may never come: at 20,000 hosts that was 6 s of
rendering after every start and that memory, kept current for five minutes
whether or not anything scraped.
"""

from __future__ import annotations

import asyncio
import bisect
import itertools
import math
import time
from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from gateway.domain.flavors import Catalog
from gateway.domain.records import Hypervisor
from gateway.http.auth import AllowAll, Authorizer, bearer_token, refusal
from gateway.http.capacity_text import (
    CONTENT_TYPE,
    FAMILIES,
    HEADERS,
    GroupLines,
    GroupSums,
    HostLines,
    group_lines,
    host_lines,
    same_figures,
)
from gateway.http.compression import KeptCompression, choose
from gateway.http.conditional import NOT_MODIFIED, cache_headers, etag, matches
from gateway.store.collector import settle
from gateway.store.snapshot import Change, Snapshot
from gateway.store.store import Store

__all__ = [
    "CONTENT_TYPE",
    "FAMILIES",
    "PROMPT",
    "UPKEEP",
    "CapacityExposition",
    "Pace",
    "capacity_route",
    "pieces",
]

#: Seconds without a scrape after which the series are no longer kept current: a few
#: of Prometheus's scrape intervals (15 s to a minute).
WARM_FOR = 300.0


class Pace(NamedTuple):
    """How rendering shares the event loop: slices of ``slice_seconds``, each followed
    by ``pause_seconds`` on a timer (0: the next slice is queued at once)."""

    slice_seconds: float
    pause_seconds: float


#: For a scrape that waits, and the first rendering: slices back to back.
PROMPT = Pace(0.002, 0.0)
#: For the changes rendered ahead of scrapes, which nobody waits for: short slices,
#: each after a timer. A slice that yields at once is queued again ahead of what
#: arrives meanwhile (the loop reads its sockets after running what is queued), so
#: a request that came during one slice waited for the next too, and a second's
#: changes were one burst of back-to-back slices: at 20,000 hosts and 333 changes a
#: second, some 9 ms each second, in which a request waited 2-4 ms. After a timer,
#: what arrived runs first, and a request waits for what is left of one slice.
UPKEEP = Pace(0.0005, 0.001)


class CapacityExposition:
    """The text of ``/metrics/capacity`` for the store's current snapshot.

    All methods run on the event loop's thread (or, without a loop, on one thread):
    the work is cut into slices (``prompt`` for a scrape and the first rendering,
    ``upkeep`` for the changes after), each one consistent on its own, so a scrape
    and :meth:`run` may share it.
    """

    def __init__(
        self,
        store: Store,
        catalog: Catalog,
        *,
        prompt: Pace = PROMPT,
        upkeep: Pace = UPKEEP,
        warm_for: float = WARM_FOR,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.store = store
        self.catalog = catalog
        self.prompt = prompt
        self.upkeep = upkeep
        self.warm_for = warm_for
        self._clock = clock
        # When the series were last asked for: never yet (see run).
        self._asked = -math.inf
        self._forget()
        store.listen(self._changed)

    def _forget(self) -> None:
        """Nothing rendered: the next look renders the whole fleet."""
        self._primed = False
        self._hosts: dict[str, HostLines] = {}
        # The hosts changed since the last look took them (None: every host), and the
        # generation of the snapshot being rendered with the hosts left to read for it.
        self._changes: set[str] | None = None
        self._rendering: tuple[int, set[str]] = (-1, set())
        self._members: dict[tuple[str, str], dict[str, HostLines]] = {}
        self._groups: dict[tuple[str, str], GroupLines] = {}
        self._sums: dict[tuple[str, str], GroupSums] = {}
        # Per group whose members changed since its lines were made: the records its
        # sums counted that left, and the ones that came (by name) that they did not.
        self._moves: dict[tuple[str, str], tuple[list[Hypervisor], dict[str, Hypervisor]]] = {}
        # The text's pieces, and how many regroupings it was put together after: the
        # text changes only with a group's lines, not with every snapshot (a status
        # round rewrites every record, and mostly no figure).
        self._regrouped = 0
        self._chunks: tuple[int, tuple[bytes, ...]] = (-1, ())

    def chunks(self) -> tuple[bytes, ...]:
        """The exposition of the current snapshot, in pieces (the same until it changes),
        made at once, whatever that costs.

        Pieces, not one string: at 20,000 hosts the text is over 50 MB, and joining
        it anew after every change would cost more than everything else a scrape
        does; :func:`pieces` coalesces them as they are sent.
        """
        self._asked = self._clock()
        snapshot = self.store.snapshot
        self._advance(snapshot, math.inf)
        return self._assembled()

    async def current(self) -> tuple[bytes, ...]:
        """:meth:`chunks`, made a slice at a time, leaving the loop to others between them:
        the text of the snapshot current when it was asked for."""
        self._asked = self._clock()
        await self.rendered()
        return self._assembled()

    def render(self) -> bytes:
        """The exposition of the current snapshot in one piece."""
        return b"".join(self.chunks())

    @property
    def primed(self) -> bool:
        """Whether the series have been rendered for a ready store, so that a scrape
        costs no more than the changes since."""
        return self._primed

    async def run(self, coalesce_seconds: float = 1.0) -> None:
        """Render every change ahead of scrapes while they come, until cancelled."""
        changed = asyncio.Event()
        unlisten = self.store.listen(lambda snapshot, changes: changed.set())
        try:
            while True:
                if self._clock() - self._asked > self.warm_for:
                    if self._changes is not None:  # something is rendered, or begun
                        self._forget()  # no scraper: not kept current, nor holding records
                else:
                    await self.rendered(self.upkeep if self._primed else self.prompt)
                await changed.wait()
                changed.clear()
                if self._primed:
                    await asyncio.sleep(coalesce_seconds)
        finally:
            unlisten()

    async def rendered(self, pace: Pace | None = None) -> Snapshot:
        """The current snapshot, once its hosts and groups are rendered, slice by slice
        at ``pace`` (``prompt`` by default; the text is put together only when a
        scrape asks for it).

        The snapshot is the one current when called: the store moves on meanwhile,
        and chasing it would never end under churn.
        """
        pace = pace or self.prompt
        snapshot = self.store.snapshot
        while True:
            if self._advance(snapshot, self._clock() + pace.slice_seconds):
                return snapshot
            await asyncio.sleep(pace.pause_seconds)  # between slices, the loop serves others

    def _changed(self, snapshot: Snapshot, changes: list[Change]) -> None:
        """Note the hosts a change named (the store tells it before anyone can read the
        snapshot it made), unless every host is to be read anyway."""
        if self._changes is not None:
            self._changes.update(change.hypervisor.name for change in changes)
            if len(self._changes) > len(snapshot):  # more than reading every host
                self._changes = None

    def _advance(self, snapshot: Snapshot, deadline: float) -> bool:
        """Render ``snapshot`` until ``deadline``: the hosts changed up to it, then the
        groups they left or joined. Whether all of it is rendered."""
        generation, names = self._rendering
        if generation != snapshot.generation:
            # The hosts changed since the last look, with those left of a snapshot
            # whose rendering a newer one overtakes: each is read as this one has it.
            changed = self._changes
            self._changes = set()
            names |= (self._hosts.keys() | snapshot.by_name.keys()) if changed is None else changed
            self._rendering = (snapshot.generation, names)
        records = snapshot.by_name
        while names:
            name = names.pop()
            self._refresh(name, records.get(name))
            if self._clock() >= deadline:
                return False
        while self._moves:
            self._regroup(next(iter(self._moves)))
            if self._clock() >= deadline:
                return False
        if not self._primed and self.store.ready:
            self._primed = True
            # Out of the collector's reach, as the store's own records are; only what
            # was made since the last settle is walked (the gateway answers queries by
            # now: a whole-heap collection was 72 ms at 5,000 hosts, this 8 ms).
            settle(thorough=False)
        return True

    def _assembled(self) -> tuple[bytes, ...]:
        assembled, chunks = self._chunks
        if assembled != self._regrouped:
            groups = [self._groups[key] for key in sorted(self._groups)]
            pieces: list[bytes] = []
            for family in FAMILIES:
                pieces.append(HEADERS[family])
                for group in groups:
                    pieces.extend(group.lines[family])
            chunks = tuple(pieces)
            self._chunks = (self._regrouped, chunks)
        return chunks

    def _regroup(self, key: tuple[str, str]) -> None:
        self._regrouped += 1
        left, came = self._moves.pop(key)
        members = self._members.get(key)
        if not members:  # its last host left, perhaps before the group was ever rendered
            self._members.pop(key, None)
            self._groups.pop(key, None)
            self._sums.pop(key, None)
            return
        hosts = [members[name] for name in sorted(members)]
        sums = self._sums.get(key)
        if sums is None or len(left) + len(came) > len(members):
            sums = GroupSums.of(self.catalog, (host.record for host in hosts))
        else:
            sums = sums.apply(left, list(came.values()))
        self._sums[key] = sums
        self._groups[key] = group_lines(key, hosts, sums, self.catalog)

    def _refresh(self, name: str, record: Hypervisor | None) -> None:
        host = self._hosts.get(name)
        if record is None:
            if host is not None:
                self._move(name, host, None)
        elif host is None or not same_figures(host.record, record):
            self._move(name, host, host_lines(record))
        elif host.record is not record:
            # The same lines and the same part of the sums, the record the store
            # holds: the one it replaced would otherwise be kept alive here.
            kept = HostLines(record, host.group, host.lines)
            self._hosts[name] = self._members[host.group][name] = kept

    def _move(self, name: str, old: HostLines | None, new: HostLines | None) -> None:
        if old is not None:
            left, came = self._moves.setdefault(old.group, ([], {}))
            if came.pop(name, None) is None:  # counted in the group's sums
                left.append(old.record)
            del self._members[old.group][name]
            del self._hosts[name]
        if new is not None:
            self._moves.setdefault(new.group, ([], {}))[1][name] = new.record
            self._members.setdefault(new.group, {})[name] = new
            self._hosts[name] = new


def pieces(chunks: Sequence[bytes], size: int = 2**20) -> Iterator[bytes]:
    """``chunks`` joined into pieces of about ``size`` bytes, to send one at a time.

    The cuts are found over the running lengths rather than chunk by chunk: at
    5,000 hosts the text is 30,000 chunks, a Python loop over which took 11 ms.
    """
    ends = list(itertools.accumulate(map(len, chunks)))
    start = 0
    while start < len(chunks):
        # The first chunk that reaches ``size`` past the piece's start ends the piece.
        reach = (ends[start - 1] if start else 0) + size
        stop = min(bisect.bisect_left(ends, reach, lo=start) + 1, len(chunks))
        yield b"".join(chunks[start:stop])
        start = stop


def capacity_route(exposition: CapacityExposition, guard: Authorizer) -> Route:
    """``/metrics/capacity``: the per-host figures the GraphQL API guards, so under the
    same check (``/metrics``, the gateway's own health, stays open).

    Compressed when the scraper asks (Prometheus does, gzip), and tagged per
    encoding: a scraper that sends the tag back (``If-None-Match``) while the
    rendering is the same gets 304, as a GET of ``/graphql`` does.
    """
    kept = KeptCompression()
    private = not isinstance(guard, AllowAll)
    vary = "Accept-Encoding, Authorization" if private else "Accept-Encoding"

    async def capacity_metrics(request: Request) -> Response:
        verdict = await guard.check(bearer_token(request.headers.get("authorization")))
        refused = refusal(verdict)
        if refused is not None:
            return PlainTextResponse(
                refused.message + "\n", refused.status, headers=refused.headers
            )
        chunks = await exposition.current()
        encoding = choose(request.headers.get("accept-encoding"))
        tag = kept.tag(chunks)
        headers = {
            **dict(cache_headers("GET", private, vary)),
            "content-type": CONTENT_TYPE,
            "etag": etag(tag, encoding),
        }
        if matches(request.headers.get("if-none-match"), tag):
            return Response(status_code=NOT_MODIFIED, headers=headers)
        if encoding is None:
            return StreamingResponse(pieces(chunks), headers=headers)
        body = await kept.of(chunks, encoding)
        return Response(body, headers={**headers, "content-encoding": encoding})

    return Route("/metrics/capacity", capacity_metrics)
