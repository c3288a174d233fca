"""``python -m bench.drain``: planning the drain of a building block, as the fleet grows.

In one process, without an API server: the demo generator's fleet parsed into a
store, then a drain plan for its largest building block of tracked hosts
(``gateway.domain.drain.plan_drain``: every consumer placed one by one). The
reference, measured in the same run, is one count of the fleet's capacity totals
over the same records (``fleet.fleet_capacity``, a pass over every host): the ratio
says how many such passes a drain costs, whatever the machine.
"""

from __future__ import annotations

import sys
import time
from collections import Counter

from bench.options import fleet_parser, sizes
from bench.stats import Summary
from gateway.domain import fleet
from gateway.domain.drain import plan_drain
from gateway.domain.records import Hypervisor
from gateway.sources.demo.source import generate
from gateway.store.collector import collector_paused
from gateway.store.store import Store


def measure(
    size: int, block: int, bookings: int, runs: int
) -> tuple[Summary, Summary, int, int, int]:
    """Seconds per plan and per fleet count, the hosts drained, consumers moved, left."""
    store = Store()
    with collector_paused():
        store.replace(generate(size, seed=0, bookings_per_host=bookings, tracked=1.0))
    hosts = list(store.snapshot.ordered)
    drained = _block(hosts, block)
    plans, counts = [], []
    plan = None
    for _ in range(runs):
        started = time.perf_counter()
        plan = plan_drain(hosts, drained)
        planned = time.perf_counter()
        fleet.fleet_capacity(hosts, fleet.Grouping.ZONE)
        counts.append(time.perf_counter() - planned)
        plans.append(planned - started)
    assert plan is not None
    return Summary(plans), Summary(counts), len(drained), len(plan.moves), len(plan.unplaced)


def _block(hosts: list[Hypervisor], size: int) -> list[str]:
    """``size`` hosts of whole building blocks, the largest first (the demo's are 8 to
    32 hosts: a 100-host drain is a few of them, as a rack row would be)."""
    blocks = Counter(h.building_block for h in hosts)
    order = sorted(blocks, key=lambda bb: (-blocks[bb], bb or ""))
    rank = {bb: i for i, bb in enumerate(order)}
    ranked = sorted(hosts, key=lambda h: (rank[h.building_block], h.name))
    return [h.name for h in ranked[:size]]


def main() -> int:
    parser = fleet_parser("python -m bench.drain", __doc__, "1000,5000")
    parser.add_argument("--block", type=int, default=100, help="hosts drained (default 100)")
    parser.add_argument("--runs", type=int, default=5, help="plans per size (default 5)")
    args = parser.parse_args()
    print(
        "| Hosts | drained | moved / unplaced | plan, median | fleet count, median | plan / count |"
    )
    print("|---|---|---|---|---|---|")
    for size in sizes(args.sizes):
        plan, count, drained, moved, left = measure(size, args.block, args.bookings, args.runs)
        print(
            f"| {size:,} | {drained} | {moved:,} / {left:,} | {plan.median * 1e3:.0f} ms "
            f"| {count.median * 1e3:.0f} ms | {plan.median / count.median:.1f}x |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
