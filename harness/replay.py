"""A recorded watch stream, served again at a chosen rate: a load generator, not an API server.

A real kube-apiserver on two shared cores writes 30-40 objects a second, so it
cannot show what a gateway absorbs at the rates of a large region. This server
plays the stream a real one sent (:mod:`harness.replay_recording`) to the
gateway's informer, over the same protocol, as fast as asked. It serves only
what the informer asks for, and nothing in the test suite stands in for a real
API server with it.

What the informer relies on, kept:

* The first watch (``sendInitialEvents=true``) gets the recorded initial state,
  ADDED events and then the bookmark that ends them, as one chunked response of
  JSON lines; the same response goes on as the watch.
* Every change after it carries a resourceVersion of its own, one more than the
  last: the recording is looped to reach any number of changes, and versions
  must only grow, or a resume would skip or repeat changes. Change ``k`` of the
  feed is the recording's line ``k mod n`` at the initial state's version plus
  ``k + 1``, so a watch resumed from any version it was given continues at the
  change after it, however long ago that was: ``410 Gone`` is never needed.
* The server ends a watch after its ``timeoutSeconds``, as the API server does.
* ``evictions`` answer 404, as a cluster without the Eviction CRD does: the
  gateway serves its Hypervisors all the same. So does a LIST, which the
  informer makes only when a server refuses to stream.

Changes are sent on a clock, not after a sleep per change: ``play`` schedules
change ``k`` at ``start + k / rate``, and each watch sends every change that is
due as soon as it can, so a late send is caught up on, not carried forward.
Each change's first send time is kept, so that what the gateway serves is timed
from the moment it left here. ``POST /replay/play`` and ``GET /replay/sent`` are
the benchmark's controls; ``GET /replay/position`` says where the feed stands.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import math
import time
import urllib.parse
from pathlib import Path
from typing import Any

from harness.controlplane import HYPERVISORS
from harness.replay_recording import Recording

__all__ = ["Feed", "ReplayServer", "main"]

NOT_FOUND = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "the server could not find the requested resource",
    "reason": "NotFound",
    "details": {},
    "code": 404,
}


@dataclasses.dataclass
class Feed:
    """The changes in order, and the clock that says how many are due."""

    recording: Recording
    #: Changes scheduled so far, and the last play: its start, rate and first change.
    scheduled: int = 0
    start: float = 0.0
    rate: float = 0.0
    first: int = 0
    #: Each change's first send (monotonic seconds), by change number.
    sent: dict[int, float] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        self.changed = asyncio.Event()

    def version(self, k: int) -> int:
        """The resourceVersion change ``k`` carries."""
        return self.recording.version + k + 1

    def line(self, k: int) -> bytes:
        changes = self.recording.changes
        return changes[k % len(changes)].at(self.version(k))

    def play(self, rate: float, start: float, seconds: float) -> list[Any]:
        """Schedule ``rate * seconds`` more changes from ``start``; their name and version."""
        count = math.floor(rate * seconds)
        self.first, self.start, self.rate = self.scheduled, start, rate
        self.scheduled += count
        self.changed.set()
        self.changed = asyncio.Event()
        changes = self.recording.changes
        return [
            [changes[k % len(changes)].name, self.version(k)]
            for k in range(self.first, self.scheduled)
        ]

    def due(self, now: float) -> int:
        """How many changes are due at ``now``."""
        if now < self.start or self.rate <= 0:
            return self.first
        return min(self.scheduled, self.first + math.floor((now - self.start) * self.rate) + 1)

    def next_due(self, k: int) -> float:
        """When change ``k`` is due (``inf`` if it is not scheduled yet)."""
        if k >= self.scheduled:
            return math.inf
        return self.start + (k - self.first) / self.rate


class ReplayServer:
    """Serves ``recording`` on loopback ``port`` (HTTP/1.1, keep-alive)."""

    def __init__(self, recording: Recording, port: int) -> None:
        self.feed = Feed(recording)
        self.port = port
        self._initial = b"".join(_chunk(line) for line in recording.initial[:-1])

    async def serve(self, seconds: float) -> None:
        """Serve for ``seconds`` at most (every process this project starts ends by itself)."""
        server = await asyncio.start_server(self._connection, "127.0.0.1", self.port)
        async with server:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(seconds):
                    await server.serve_forever()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while request := await _request(reader):
                method, target, body = request
                url = urllib.parse.urlsplit(target)
                query = dict(urllib.parse.parse_qsl(url.query))
                if url.path == HYPERVISORS and query.get("watch") == "true":
                    await self._watch(writer, query)
                elif url.path.startswith("/replay/"):
                    _respond(writer, 200, self._control(method, url.path, query, body))
                elif url.path == "/healthz":
                    _respond(writer, 200, {"ok": True})
                else:  # evictions, and any LIST: the informer streams its Hypervisors
                    _respond(writer, 404, NOT_FOUND)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    def _control(self, method: str, path: str, query: dict[str, str], body: bytes) -> Any:
        feed = self.feed
        if method == "POST" and path == "/replay/play":
            asked = json.loads(body)
            return feed.play(float(asked["rate"]), float(asked["start"]), float(asked["seconds"]))
        if path == "/replay/sent":
            first, count = int(query["first"]), int(query["count"])
            return [feed.sent.get(k) for k in range(first, first + count)]
        if path == "/replay/position":
            version = feed.version(feed.scheduled - 1)
            return {"scheduled": feed.scheduled, "sent": len(feed.sent), "version": version}
        return {"error": f"no control {method} {path}"}

    async def _watch(self, writer: asyncio.StreamWriter, query: dict[str, str]) -> None:
        """One watch: the initial state if asked for, then the feed from its position on,
        until its ``timeoutSeconds``."""
        feed = self.feed
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        if query.get("sendInitialEvents") == "true":
            writer.write(self._initial)
            writer.write(_chunk(feed.recording.initial[-1]))  # the state is at its version
            k = 0
        else:
            k = max(0, int(query.get("resourceVersion") or 0) - feed.recording.version)
        ends = time.monotonic() + float(query.get("timeoutSeconds") or 1800)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout_at(ends):
                while True:
                    k = await self._send_due(writer, k)
        writer.write(b"0\r\n\r\n")

    async def _send_due(self, writer: asyncio.StreamWriter, k: int) -> int:
        """Send every change due from ``k`` on, then wait for the next; returns the next ``k``."""
        feed = self.feed
        due = feed.due(time.monotonic())
        if due > k:
            writer.write(b"".join(_chunk(feed.line(i)) for i in range(k, due)))
            now = time.monotonic()
            for i in range(k, due):
                feed.sent.setdefault(i, now)
            await writer.drain()
            return due
        wait = feed.next_due(k) - time.monotonic()
        changed = feed.changed
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(None if math.isinf(wait) else max(0.0, wait)):
                await changed.wait()
        return k


def _chunk(line: bytes) -> bytes:
    """One event as one chunk of a chunked response, its line ended."""
    return b"%x\r\n%s\n\r\n" % (len(line) + 1, line)


async def _request(reader: asyncio.StreamReader) -> tuple[str, str, bytes] | None:
    """The next request on a connection (method, target, body), or None at its end."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None
    request_line, *fields = head.decode("latin-1").split("\r\n")
    method, target, _ = request_line.split(" ", 2)
    headers = {k.strip().lower(): v.strip() for k, _, v in (f.partition(":") for f in fields if f)}
    body = await reader.readexactly(int(headers.get("content-length") or 0))
    return method, target, body


def _respond(writer: asyncio.StreamWriter, status: int, body: Any) -> None:
    data = json.dumps(body).encode()
    reason = "OK" if status == 200 else "Not Found"
    writer.write(
        b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
        % (status, reason.encode(), len(data), data)
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m harness.replay", description=__doc__)
    parser.add_argument("recording", type=Path, help="a directory harness.replay_recording wrote")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--seconds", type=float, default=3600, help="serve this long at most")
    args = parser.parse_args(argv)
    server = ReplayServer(Recording.load(args.recording), args.port)
    asyncio.run(server.serve(args.seconds))


if __name__ == "__main__":
    main()
