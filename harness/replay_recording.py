"""A watch stream as a real kube-apiserver sent it, kept to be sent again.

What a replay (:mod:`harness.replay`) serves must be what the gateway meets
in a cluster, so nothing in it is made up: the recorder opens the watch the
gateway's informer opens (``sendInitialEvents``, bookmarks allowed), and keeps
every line as it arrived, byte for byte: the initial ADDED events, the bookmark
that ends them, then the events of the writers' changes and the server's own
bookmarks. A recording is a directory of two JSON-lines files.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import httpx
import msgspec

from harness.controlplane import HYPERVISORS

__all__ = ["INITIAL_EVENTS_END", "WATCH", "Line", "Recording", "record_stream"]

#: The annotation on the bookmark that ends a stream's initial events.
INITIAL_EVENTS_END = "k8s.io/initial-events-end"
#: The query the gateway's informer starts with (gateway.sources.kubernetes.informer).
WATCH = {
    "watch": "true",
    "allowWatchBookmarks": "true",
    "sendInitialEvents": "true",
    "resourceVersionMatch": "NotOlderThan",
}
_VERSION = b'"resourceVersion":"'
#: Seconds a starting API server is given to serve the watch.
STARTING = 300.0
#: After the writes: seconds of quiet that end a recording, and the most it waits.
QUIET = 2.0
DRAIN = 60.0


class _Metadata(msgspec.Struct):
    name: str | None = None
    resourceVersion: str = ""
    annotations: dict[str, str] | None = None


class _Object(msgspec.Struct):
    metadata: _Metadata = msgspec.field(default_factory=_Metadata)


class _Event(msgspec.Struct):
    type: str
    object: _Object


_EVENT = msgspec.json.Decoder(_Event)


@dataclasses.dataclass(frozen=True, slots=True)
class Line:
    """One watch event as sent, split around its object's resourceVersion.

    A replay gives every event a version of its own (the recording may be
    sent many times over, and versions must only grow), so the line is kept
    as the bytes before and after the version, joined again around a new one.
    """

    type: str
    name: str | None
    version: int
    before: bytes
    after: bytes

    @classmethod
    def of(cls, raw: bytes) -> Line:
        event = _EVENT.decode(raw)
        metadata = event.object.metadata
        marker = _VERSION + metadata.resourceVersion.encode() + b'"'
        at = raw.index(marker) + len(_VERSION)
        end = at + len(metadata.resourceVersion)
        return cls(event.type, metadata.name, int(metadata.resourceVersion), raw[:at], raw[end:])

    def at(self, version: int) -> bytes:
        """The line, carrying ``version``."""
        return b"%s%d%s" % (self.before, version, self.after)

    @property
    def ends_initial_events(self) -> bool:
        return self.type == "BOOKMARK" and INITIAL_EVENTS_END.encode() in self.before


@dataclasses.dataclass(frozen=True)
class Recording:
    """A recorded stream: ``initial`` (the ADDED events, then the bookmark ending them)
    and ``changes`` (every line after it)."""

    initial: list[bytes]
    changes: list[Line]

    @property
    def version(self) -> int:
        """The resourceVersion of the initial state (its end bookmark's)."""
        return Line.of(self.initial[-1]).version

    @staticmethod
    def changes_in(directory: Path) -> list[Line]:
        """The recorded changes alone (all a benchmark needs to know of what is replayed)."""
        return [Line.of(raw) for raw in _lines(directory / "changes.jsonl")]

    @classmethod
    def load(cls, directory: Path) -> Recording:
        initial = list(_lines(directory / "initial.jsonl"))
        changes = cls.changes_in(directory)
        if not initial or not Line.of(initial[-1]).ends_initial_events:
            raise ValueError(f"{directory}: the initial state does not end with its bookmark")
        if not changes:
            raise ValueError(f"{directory}: no changes were recorded")
        return cls(initial, changes)


def _lines(path: Path) -> Iterator[bytes]:
    with path.open("rb") as file:
        for raw in file:
            if raw.strip():
                yield raw.rstrip(b"\n")


async def record_stream(
    http: httpx.AsyncClient, directory: Path, ready: Callable[[], Awaitable[float]]
) -> dict[str, int]:
    """Record the watch into ``directory`` (it exists): the initial state, then each line after.

    ``ready`` is awaited once the initial state is in (the writers may start
    then), and says when to stop: the monotonic time after which no line is
    kept. Returns how many lines of each part were kept.
    """
    counts = {"initial": 0, "changes": 0}
    async with _watch(http) as response:
        lines = _split(response.aiter_bytes())
        with (directory / "initial.jsonl").open("wb") as file:
            async for raw in lines:
                file.write(raw + b"\n")
                counts["initial"] += 1
                if Line.of(raw).ends_initial_events:
                    break
        stop = await ready()
        with (directory / "changes.jsonl").open("wb") as file, contextlib.suppress(TimeoutError):
            # The loop's clock is time.monotonic. A busy API server delivers late: the
            # writes before ``stop`` are in once the stream has been quiet for a while.
            async with asyncio.timeout_at(stop + DRAIN) as limit:
                async for raw in lines:
                    file.write(raw + b"\n")
                    counts["changes"] += 1
                    limit.reschedule(min(stop + DRAIN, max(time.monotonic(), stop) + QUIET))
    return counts


@contextlib.asynccontextmanager
async def _watch(http: httpx.AsyncClient) -> AsyncIterator[httpx.Response]:
    """The watch, once the API server streams it: a server just started answers 429
    until its watch cache holds the collection (a minute at 20,000 hosts)."""
    deadline = time.monotonic() + STARTING
    while True:
        async with http.stream("GET", HYPERVISORS, params=WATCH, timeout=None) as response:
            if response.status_code != 429 or time.monotonic() > deadline:
                response.raise_for_status()
                yield response
                return
        await asyncio.sleep(float(response.headers.get("Retry-After") or 1))


async def _split(chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """The stream's JSON lines, as bytes, however its chunks cut them."""
    pending = b""
    async for chunk in chunks:
        pending += chunk
        *complete, pending = pending.split(b"\n")
        for raw in complete:
            if raw.strip():
                yield raw
