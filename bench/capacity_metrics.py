"""``python -m bench.capacity_metrics``: what a ``/metrics/capacity`` scrape costs.

In one process, without an API server: a store loaded with the demo generator's
fleet and the demo flavor catalog, then the capacity exposition rendered

- cold: the first scrape of a fresh gateway (every host's lines, every group's
  totals and slots computed);
- after one watch event: one host's object applied with a new allocation,
  then a scrape (that host's lines and its group's totals computed again), the
  case a scrape meets under churn;
- after a status round: every object written again with a new resourceVersion
  and the same figures, as node agents do every minute (every record is new,
  its lines and its group's are not formatted again);
- unchanged: a second scrape of the same snapshot.

Each is the time to have the text ready in pieces (``CapacityExposition.chunks``),
which the endpoint sends one MiB at a time; "one body" is what joining them into
one string, as :meth:`render` does, would cost on top.

The reference, measured in the same run, is decoding the fleet's LIST body
(``json.loads``, the cyclic collector paused), the least a client reading the
API server pays for the same figures before computing anything. The target: a
scrape after one event, and after a status round, under 100 ms at 20,000 hosts.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from collections.abc import Callable

from bench.stats import Summary, sample
from gateway.domain.flavors import load_catalog
from gateway.http.capacity_metrics import CapacityExposition
from gateway.sources.demo.source import generate
from gateway.store.collector import collector_paused
from gateway.store.store import Store

TARGET = 0.1


def _once(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def measure(size: int, runs: int) -> dict[str, float]:
    """Seconds: the LIST decode, and the cold, after-one-event and unchanged scrapes."""
    objects = generate(size, seed=0)
    for i, obj in enumerate(objects):
        obj["metadata"]["resourceVersion"] = str(i + 1)
    body = json.dumps({"items": objects})
    store = Store()
    with collector_paused():
        store.replace(objects)
    exposition = CapacityExposition(store, load_catalog(None))
    cold = _once(exposition.chunks)
    obj = copy.deepcopy(objects[size // 2])
    version = 2 * size

    def after_event() -> float:
        nonlocal version
        version += 1
        obj["metadata"]["resourceVersion"] = str(version)
        obj["status"]["allocation"]["cpu"] = version % 8  # new figures: its group is recomputed
        store.upsert(obj)
        return _once(exposition.chunks)

    event = Summary([after_event() for _ in range(runs)])
    for obj in objects:
        obj["metadata"]["resourceVersion"] = str(int(obj["metadata"]["resourceVersion"]) + size)
    with collector_paused():
        store.replace(objects)
    rewritten = _once(exposition.chunks)
    with collector_paused():  # as the gateway decodes a LIST: no collections meanwhile
        decode = sample(lambda: json.loads(body), max(3, runs // 10)).median
    return {
        "list_decode": decode,
        "cold": cold,
        "event_median": event.median,
        "event_p99": event.p99,
        "status_round": rewritten,
        "unchanged": sample(exposition.chunks, runs).median,
        "join": sample(exposition.render, max(3, runs // 10)).median,
        "bytes": len(exposition.render()),
        "samples": sum(1 for line in exposition.render().splitlines() if not line.startswith(b"#")),
    }


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.capacity_metrics", description=__doc__)
    parser.add_argument("--sizes", default="1000,5000,20000", help="comma-separated fleet sizes")
    parser.add_argument("--runs", type=int, default=30, help="scrapes after one event, per size")
    args = parser.parse_args()
    print(
        "| Hosts | samples | LIST decode | cold scrape | after one event, median / p99 "
        "| after a status round | unchanged | one body |"
    )
    print("|---|---|---|---|---|---|---|---|")
    slow = False
    for size in (int(s) for s in args.sizes.split(",")):
        m = measure(size, args.runs)
        slow |= size >= 20000 and max(m["event_p99"], m["status_round"]) > TARGET
        print(
            f"| {size:,} | {m['samples']:,.0f} | {m['list_decode'] * 1e3:.0f} ms "
            f"| {m['cold'] * 1e3:.0f} ms | {m['event_median'] * 1e3:.1f} / "
            f"{m['event_p99'] * 1e3:.1f} ms | {m['status_round'] * 1e3:.0f} ms "
            f"| {m['unchanged'] * 1e6:.1f} us | {m['join'] * 1e3:.0f} ms |",
            flush=True,
        )
    return 1 if slow else 0


if __name__ == "__main__":
    sys.exit(main())
