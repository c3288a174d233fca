"""``python -m bench.apply``: what one watch event costs the store, as the fleet grows.

In one process, without an API server: a store loaded with the demo generator's
fleet, then one host's object applied again and again with a new
resourceVersion, as the informer applies a MODIFIED event (``Store.upsert``:
parse, new snapshot, listeners). The reference, measured in the same run, is
parsing that object alone: the ratio is what the store adds to the parse, and
it must not grow with the fleet.
"""

from __future__ import annotations

import copy
import json
import sys
import time

from bench.options import fleet_parser, sizes
from bench.stats import Summary
from gateway.domain.parse import parse_hypervisor
from gateway.sources.demo.source import generate
from gateway.store.collector import collector_paused
from gateway.store.store import Store


def measure(size: int, bookings: int, events: int) -> tuple[Summary, Summary]:
    """Per-event seconds: parsing the object alone, and applying it to the loaded store."""
    # Decoded from JSON, as the informer gets them: records then lie over the heap
    # as in a gateway, which is what copying references to all of them pays for.
    objects = json.loads(json.dumps(generate(size, seed=0, bookings_per_host=bookings)))
    for i, obj in enumerate(objects):
        obj["metadata"]["resourceVersion"] = str(i + 1)
    store = Store()
    with collector_paused():
        store.replace(objects)
    obj = copy.deepcopy(objects[size // 2])
    del objects
    parse, apply = [], []
    for i in range(events):
        obj["metadata"]["resourceVersion"] = str(size + 1 + i)
        started = time.perf_counter()
        parse_hypervisor(obj)
        parsed = time.perf_counter()
        store.upsert(obj)
        apply.append(time.perf_counter() - parsed)
        parse.append(parsed - started)
    return Summary(parse), Summary(apply)


def main() -> int:
    parser = fleet_parser("python -m bench.apply", __doc__, "1000,5000,20000")
    parser.add_argument("--events", type=int, default=500, help="events applied per size")
    args = parser.parse_args()
    print("| Hosts | parse alone, median | apply, median / p99 | apply / parse |")
    print("|---|---|---|---|")
    for size in sizes(args.sizes):
        parse, apply = measure(size, args.bookings, args.events)
        print(
            f"| {size:,} | {parse.median * 1e6:.0f} us | {apply.median * 1e6:.0f} / "
            f"{apply.p99 * 1e6:.0f} us | {apply.median / parse.median:.2f} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
