"""``python -m bench.answers``: what answering each churn query costs, in one process.

The churn and ceiling benchmarks read a query kind's p99 against a bare app's
over the same window, on a machine that runs the load too: a change of a tenth
of a millisecond in an answer's cost is lost in their spread. Here each of
bench.churn's query kinds (the zone totals, a 100-host page, a canFit filter, a
host lookup) is sent as a POST through the gateway's whole ASGI app (its
middleware, the response cache as ``serve`` builds it, the execution), with no
server, socket or other load:

- **after a change**: a status patch of another host (its cpu allocation moved)
  applied to the store just before (``Store.upsert``, not timed): the cache
  misses, the answer is made again, as under churn;
- **unchanged**: the same query again: the response cache's answer.

The reference, measured in the same run, is the bare Starlette app of
bench.bare_app answering the same POST through the same driver: the ratio is
what the gateway adds to any ASGI app's request.
"""

from __future__ import annotations

import asyncio
import copy
import json
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from bench.bare_app import app as bare_app
from bench.churn.phase import QUERIES
from bench.options import fleet_parser, sizes
from bench.stats import Summary
from gateway.cli import build_cache
from gateway.http.app import create_app
from gateway.settings import Settings
from gateway.sources.demo.source import generate
from gateway.store.collector import collector_paused
from gateway.store.source import SyncStatus
from gateway.store.store import Store

App = Callable[[dict[str, Any], Any, Any], Awaitable[None]]


class _Loaded:
    """A source whose store was loaded before the app started: nothing to follow."""

    status = SyncStatus("bench", synced=True)

    async def run(self, store: Store) -> None:
        await asyncio.Event().wait()


async def post(app: App, body: bytes) -> int:
    """One POST /graphql through ``app``; its status."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/graphql",
        "raw_path": b"/graphql",
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"127.0.0.1"),
            (b"content-type", b"application/json"),
            (b"content-length", b"%d" % len(body)),
        ],
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 8000),
    }
    started: list[int] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            started.append(message["status"])

    await app(scope, receive, send)
    return started[0]


def bodies(store: Store) -> dict[str, bytes]:
    """The POST bodies of bench.churn's query kinds, the lookup for one of ``store``'s hosts."""
    host = store.snapshot.ordered[0].name
    return {
        kind: json.dumps(
            {"query": query, "variables": {"n": host} if "$n" in query else {}}
        ).encode()
        for kind, query in QUERIES.items()
    }


async def measure(size: int, bookings: int, runs: int) -> dict[str, tuple[Summary, Summary]]:
    """Per kind, and for the bare app ("bare"): seconds to answer after a change, and
    unchanged."""
    objects = json.loads(json.dumps(generate(size, seed=0, bookings_per_host=bookings)))
    store = Store()
    with collector_paused():
        store.replace(objects)
    store.mark_ready()
    patched = copy.deepcopy(
        next(o for o in reversed(objects) if "allocation" in o.get("status", {}))
    )
    allocated = patched["status"]["allocation"]
    del objects
    app = create_app(_Loaded(), store, cache=build_cache(Settings()))
    figures: dict[str, tuple[Summary, Summary]] = {}
    async with app.router.lifespan_context(app):
        for kind, body in bodies(store).items():
            await _timed(app, body)  # its document parsed, validated and kept
            changed, unchanged = [], []
            for run in range(runs):
                # A node agent's status patch: the host's allocation moved.
                patched["metadata"]["resourceVersion"] = f"bench-{kind}-{run}"
                allocated["cpu"] = str(run % 2)
                store.upsert(patched)
                changed.append(await _timed(app, body))
                unchanged.append(await _timed(app, body))
            figures[kind] = Summary(changed), Summary(unchanged)
    body = bodies(store)["host"]
    bare = [await _timed(bare_app, body) for _ in range(runs)]
    figures["bare"] = Summary(bare), Summary(bare)
    return figures


async def _timed(app: App, body: bytes) -> float:
    started = time.perf_counter()
    status = await post(app, body)
    elapsed = time.perf_counter() - started
    if status != 200:
        raise RuntimeError(f"answered {status}: {body!r}")
    return elapsed


def main() -> int:
    parser = fleet_parser("python -m bench.answers", __doc__, "1000,20000")
    parser.add_argument("--runs", type=int, default=300, help="answers timed per kind and size")
    args = parser.parse_args()
    print("| Hosts | query | after a change, median / p99 | : bare | unchanged, median | : bare |")
    print("|---|---|---|---|---|---|")
    for size in sizes(args.sizes):
        figures = asyncio.run(measure(size, args.bookings, args.runs))
        floor = figures["bare"][0].median
        print(f"| {size:,} | bare Starlette | {floor * 1e6:.0f} us | 1 | | |")
        for kind in QUERIES:
            print(_row(size, kind, *figures[kind], floor), flush=True)
    return 0


def _row(size: int, kind: str, changed: Summary, unchanged: Summary, floor: float) -> str:
    """One kind's line of the table, its medians also as multiples of the bare app's."""
    return (
        f"| {size:,} | {kind} | {changed.median * 1e6:.0f} / {changed.p99 * 1e6:.0f} us"
        f" | {changed.median / floor:.1f}x | {unchanged.median * 1e6:.0f} us"
        f" | {unchanged.median / floor:.1f}x |"
    )


if __name__ == "__main__":
    sys.exit(main())
