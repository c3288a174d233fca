"""``python -m bench.churn``: the churn phases on their own, at one or more sizes."""

from __future__ import annotations

import dataclasses
import functools
import sys
import tempfile
from pathlib import Path

from bench.churn import Load, churn, markdown
from bench.options import fleet_parser, sizes
from harness.processes import stop_on_terminate


def main() -> int:
    stop_on_terminate()
    parser = fleet_parser("python -m bench.churn", __doc__, "1000,5000", bookings=False)
    parser.add_argument("--rates", default="10,100", help="comma-separated changes per second")
    parser.add_argument("--seconds", type=float, default=30, help="seconds per phase")
    parser.add_argument(
        "--subscribers",
        default="100,20",
        help="fleetCapacityChanged and hypervisorChanged subscribers (default 100,20)",
    )
    parser.add_argument("--writers", type=int, default=2, help="writer processes (default 2)")
    parser.add_argument(
        "--in-flight", type=int, default=8, help="writes in flight per writer at most (default 8)"
    )
    parser.add_argument("--logs", type=Path, help="keep the gateway's logs here")
    args = parser.parse_args()
    totals, hosts = (int(n) for n in args.subscribers.split(","))
    readers = dataclasses.replace(
        Load(), totals=totals, hosts=hosts, writers=args.writers, in_flight=args.in_flight
    )
    rates = [float(r) for r in args.rates.split(",")]
    log = functools.partial(print, file=sys.stderr, flush=True)
    runs = []
    with tempfile.TemporaryDirectory(prefix="hgw-churn-") as tmp:
        logs = args.logs or Path(tmp)
        logs.mkdir(parents=True, exist_ok=True)
        for size in sizes(args.sizes):
            runs.append(churn(size, rates, args.seconds, logs, log, readers))
            print(markdown(runs), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
