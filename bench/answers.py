"""``python -m bench.answers``: what answering each churn query costs, in one process.

The churn and ceiling benchmarks read a query kind's p99 against a bare app's
over the same window, on a machine that runs the load too: a change of a tenth
of a millisecond in an answer's cost is lost in their spread. Here each of
bench.churn's query kinds (the zone totals, a 100-host page, a canFit filter, a
host lookup) is sent as a POST through the gateway's whole ASGI app (its
middleware, the response cache as ``serve`` builds it, the execution), with no
server, socket or other load:

- **after a change it read**: the capacity of the first host the answer shows
  (the first in name order; canFit's first host that fits) moved, just before
  (``Store.upsert``, not timed): the answer is made again;
- **after a change elsewhere**: the allocation of the last host in name order
  moved, as a node agent's status patch does: the cache answers while what the
  answer read is the same (gateway.store.reads), the share of such hits shown;
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
from typing import Any, NamedTuple

from bench.bare_app import app as bare_app
from bench.churn.phase import QUERIES
from bench.options import fleet_parser, sizes
from bench.stats import Summary
from gateway.api.context import Context
from gateway.api.schema import schema
from gateway.cli import build_cache
from gateway.http.app import create_app
from gateway.settings import Settings
from gateway.sources.demo.source import generate
from gateway.store.collector import collector_paused
from gateway.store.feed import Feed
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


class Figures(NamedTuple):
    """One kind's seconds to answer, and the share of the cache's answers after a
    change elsewhere."""

    read: Summary
    elsewhere: Summary
    unchanged: Summary
    kept: float


async def measure(size: int, bookings: int, runs: int) -> dict[str, Figures]:
    """Per kind, and for the bare app ("bare"): seconds to answer after a change the
    answer read, after one elsewhere, and unchanged."""
    objects = json.loads(json.dumps(generate(size, seed=0, bookings_per_host=bookings)))
    store = Store()
    with collector_paused():
        store.replace(objects)
    store.mark_ready()
    by_name = {o["metadata"]["name"]: o for o in objects}
    last = max(n for n, o in by_name.items() if "allocation" in o.get("status", {}))
    elsewhere = _Patched(by_name[last], "allocation")
    read = {kind: _Patched(by_name[_first_shown(kind, store)], "capacity") for kind in QUERIES}
    del objects, by_name
    cache = build_cache(Settings())
    assert cache is not None
    app = create_app(_Loaded(), store, cache=cache)
    figures: dict[str, Figures] = {}
    async with app.router.lifespan_context(app):
        for kind, body in bodies(store).items():
            await _timed(app, body)  # its document parsed, validated and kept
            times: tuple[list[float], list[float], list[float]] = ([], [], [])
            hits = 0
            for run in range(runs):
                store.upsert(read[kind].moved(f"{kind}-{run}", run))
                times[0].append(await _timed(app, body))
                store.upsert(elsewhere.moved(f"{kind}-{run}", run))
                before = cache.stats.hits
                times[1].append(await _timed(app, body))
                hits += cache.stats.hits - before
                times[2].append(await _timed(app, body))
            made, kept, same = map(Summary, times)
            figures[kind] = Figures(made, kept, same, hits / runs)
    body = bodies(store)["host"]
    bare = Summary([await _timed(bare_app, body) for _ in range(runs)])
    figures["bare"] = Figures(bare, bare, bare, 0)
    return figures


def _first_shown(kind: str, store: Store) -> str:
    """The first host the answer of ``kind`` shows (or sums, for the zones): the first
    in name order, for canFit the first that fits."""
    if kind != "fit":
        return store.snapshot.ordered[0].name
    query = QUERIES["fit"].replace("totalCount", "nodes { name }")
    context = Context(store, _Loaded.status, Feed(store))
    result = schema.execute_sync(query, context_value=context)
    assert result.data is not None, result.errors
    return str(result.data["hypervisors"]["nodes"][0]["name"])


class _Patched:
    """A host's status patches: its cpu ``part`` (capacity or allocation) moved by one
    every other time."""

    def __init__(self, obj: dict[str, Any], part: str) -> None:
        self.obj = copy.deepcopy(obj)
        self.amounts = self.obj["status"][part]
        self.base = int(self.amounts["cpu"])
        self.part = part

    def moved(self, version: str, run: int) -> dict[str, Any]:
        self.obj["metadata"]["resourceVersion"] = f"bench-{self.part}-{version}"
        self.amounts["cpu"] = str(self.base + run % 2)
        return self.obj


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
    print(
        "| Hosts | query | after a change it read, median / p99 | : bare "
        "| after a change elsewhere, median (cache's) | unchanged, median | : bare |"
    )
    print("|---|---|---|---|---|---|---|")
    for size in sizes(args.sizes):
        figures = asyncio.run(measure(size, args.bookings, args.runs))
        floor = figures["bare"].read.median
        print(f"| {size:,} | bare Starlette | {floor * 1e6:.0f} us | 1 | | | |")
        for kind in QUERIES:
            print(_row(size, kind, figures[kind], floor), flush=True)
    return 0


def _row(size: int, kind: str, figures: Figures, floor: float) -> str:
    """One kind's line of the table, its medians also as multiples of the bare app's."""
    read, elsewhere, unchanged = figures.read, figures.elsewhere, figures.unchanged
    return (
        f"| {size:,} | {kind} | {read.median * 1e6:.0f} / {read.p99 * 1e6:.0f} us"
        f" | {read.median / floor:.1f}x | {elsewhere.median * 1e6:.0f} us ({figures.kept:.0%})"
        f" | {unchanged.median * 1e6:.0f} us | {unchanged.median / floor:.1f}x |"
    )


if __name__ == "__main__":
    sys.exit(main())
