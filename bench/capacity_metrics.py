"""``python -m bench.capacity_metrics``: what a ``/metrics/capacity`` scrape costs.

In one process, without an API server: a store loaded with the demo generator's
fleet and the demo flavor catalog, and the capacity exposition kept rendered as
the app keeps it (:class:`~gateway.http.capacity_metrics.CapacityExposition`):

- priming: the whole fleet rendered after the first load, in slices, as the app
  does before it calls itself ready (not a scrape: /readyz waits for it);
- cold: the first scrape after that, when the gateway is ready (the text put
  together from every group's lines);
- after one watch event: one host's object applied with a new allocation,
  then a scrape at once (that host's lines and its group's totals and slots
  computed by the scrape itself), the case a scrape meets under churn;
- after a status round: every object written again with a new resourceVersion
  and the same figures, as node agents do every minute, one watch event each,
  a sixtieth of the fleet per second of the renderer's (it catches up with each
  second's events, as it does in the app once a second), then a scrape at once,
  which compares what the last second changed;
- after a relist: the same round in one LIST (a watch that expired), then a
  scrape at once, which compares every record: the worst case, rare;
- unchanged: a second scrape of the same snapshot.

Each is the time to have the text ready in pieces (``current()``), which the
endpoint sends one MiB at a time; "one body" is what joining them into one
string, as ``render()`` does, would cost on top. "Held" is the growth of the
process's resident memory from the loaded store to the primed exposition.

The reference, measured in the same run, is decoding the fleet's LIST body
(``json.loads``, the cyclic collector paused), the least a client reading the
API server pays for the same figures before computing anything. The target:
cold, after one event and after a status round under 100 ms at 20,000 hosts.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench.options import fleet_parser, sizes
from bench.stats import Summary, sample
from gateway.domain.flavors import load_catalog
from gateway.http.capacity_metrics import CapacityExposition
from gateway.sources.demo.source import generate
from gateway.store.collector import collector_paused
from gateway.store.store import Store

TARGET = 0.1
#: A status round is spread over a minute: the renderer sees a sixtieth of it per pass.
ROUND_SECONDS = 60


async def _timed(call: Callable[[], Awaitable[object]]) -> float:
    started = time.perf_counter()
    await call()
    return time.perf_counter() - started


def _resident() -> int:
    """Resident bytes of this process (0 where /proc is not there)."""
    statm = Path("/proc/self/statm")
    return int(statm.read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") if statm.exists() else 0


def _rewritten(objects: list[dict[str, Any]], size: int) -> None:
    for obj in objects:
        obj["metadata"]["resourceVersion"] = str(int(obj["metadata"]["resourceVersion"]) + size)


async def _measure(size: int, runs: int) -> dict[str, float]:
    objects = generate(size, seed=0)
    for i, obj in enumerate(objects):
        obj["metadata"]["resourceVersion"] = str(i + 1)
    body = json.dumps({"items": objects})
    store = Store()
    exposition = CapacityExposition(store, load_catalog(None))
    with collector_paused():
        store.replace(objects)
    store.mark_ready()
    before = _resident()
    started = time.perf_counter()
    await exposition.rendered()  # the first rendering, slice by slice
    prime = time.perf_counter() - started
    held = _resident() - before
    cold = await _timed(exposition.current)
    obj = copy.deepcopy(objects[size // 2])
    version = 3 * size

    async def after_event() -> float:
        nonlocal version
        version += 1
        obj["metadata"]["resourceVersion"] = str(version)
        obj["status"]["allocation"]["cpu"] = version % 8  # new figures: its group is recomputed
        store.upsert(obj)
        return await _timed(exposition.current)

    event = Summary([await after_event() for _ in range(runs)])
    _rewritten(objects, size)
    per_second = max(1, size // ROUND_SECONDS)
    for start in range(0, size, per_second):
        if start:
            await exposition.rendered()  # the renderer's pass over the last second's events
        for rewritten in objects[start : start + per_second]:
            store.upsert(rewritten)
    status_round = await _timed(exposition.current)
    _rewritten(objects, size)
    with collector_paused():
        store.replace(objects)
    relist = await _timed(exposition.current)
    with collector_paused():  # as the gateway decodes a LIST: no collections meanwhile
        decode = sample(lambda: json.loads(body), max(3, runs // 10)).median
    text = exposition.render()
    return {
        "list_decode": decode,
        "prime": prime,
        "cold": cold,
        "event_median": event.median,
        "event_p99": event.p99,
        "status_round": status_round,
        "relist": relist,
        "unchanged": sample(exposition.chunks, runs).median,
        "join": sample(exposition.render, max(3, runs // 10)).median,
        "held": held,
        "bytes": len(text),
        "samples": sum(1 for line in text.splitlines() if not line.startswith(b"#")),
    }


def measure(size: int, runs: int) -> dict[str, float]:
    """Seconds (and bytes, samples): the LIST decode, priming, and each scrape above."""
    return asyncio.run(_measure(size, runs))


def main() -> int:
    parser = fleet_parser(
        "python -m bench.capacity_metrics", __doc__, "1000,5000,20000", bookings=False
    )
    parser.add_argument("--runs", type=int, default=30, help="scrapes after one event, per size")
    args = parser.parse_args()
    print(
        "| Hosts | samples | text | held | LIST decode | priming | cold scrape "
        "| after one event, median / p99 | after a status round | after a relist "
        "| unchanged | one body | slowest of the three : LIST decode |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    slow = False
    for size in sizes(args.sizes):
        m = measure(size, args.runs)
        slowest = max(m["cold"], m["event_p99"], m["status_round"])
        slow |= size >= 20000 and slowest > TARGET
        print(
            f"| {size:,} | {m['samples']:,.0f} | {m['bytes'] / 1e6:.1f} MB "
            f"| {m['held'] / 1e6:.0f} MB | {m['list_decode'] * 1e3:.0f} ms "
            f"| {m['prime'] * 1e3:.0f} ms | {m['cold'] * 1e3:.1f} ms "
            f"| {m['event_median'] * 1e3:.1f} / {m['event_p99'] * 1e3:.1f} ms "
            f"| {m['status_round'] * 1e3:.1f} ms | {m['relist'] * 1e3:.0f} ms "
            f"| {m['unchanged'] * 1e6:.1f} us | {m['join'] * 1e3:.0f} ms "
            f"| 1 : {m['list_decode'] / slowest:.0f} |",
            flush=True,
        )
    return 1 if slow else 0


if __name__ == "__main__":
    sys.exit(main())
