"""``python -m bench.ceiling``: the replica's ceiling at one or more fleet sizes."""

from __future__ import annotations

import dataclasses
import functools
import json
import shlex
import sys
import tempfile
from pathlib import Path

from bench.ceiling import Options, ceiling, markdown
from bench.churn import Load
from bench.options import fleet_parser, sizes
from harness.processes import stop_on_terminate


def main() -> int:
    stop_on_terminate()
    parser = fleet_parser("python -m bench.ceiling", __doc__, "20000", bookings=False)
    parser.add_argument("--rates", default="100,333,1000", help="changes per second asked")
    parser.add_argument("--seconds", type=float, default=20, help="seconds per phase")
    parser.add_argument("--max-rate", type=float, default=16_000, help="stop doubling here")
    parser.add_argument("--record-rate", type=float, default=40, help="writes/s while recording")
    parser.add_argument("--record-seconds", type=float, default=30)
    parser.add_argument(
        "--subscribers", default="100,20", help="fleetCapacityChanged and hypervisorChanged"
    )
    parser.add_argument(
        "--quiet", type=float, default=20, help="seconds of the readers alone first (0: none)"
    )
    parser.add_argument("--tail", type=float, default=5, help="seconds after each window")
    parser.add_argument("--cluster", type=Path, help="keep the loaded cluster here across runs")
    parser.add_argument(
        "--reuse", action="store_true", help="replay the recording left in --logs by a run before"
    )
    parser.add_argument("--output", type=Path, help="the report in Markdown, and .json beside")
    parser.add_argument("--logs", type=Path, help="keep the logs and recordings here")
    args = parser.parse_args()
    totals, hosts = (int(n) for n in args.subscribers.split(","))
    readers = dataclasses.replace(Load(), totals=totals, hosts=hosts, tail=args.tail)
    log = functools.partial(print, file=sys.stderr, flush=True)
    runs = []
    report = ""
    with tempfile.TemporaryDirectory(prefix="hgw-ceiling-") as tmp:
        logs = args.logs or Path(tmp)
        logs.mkdir(parents=True, exist_ok=True)
        for size in sizes(args.sizes):
            cluster = args.cluster / str(size) if args.cluster else None
            options = Options(
                args.record_rate,
                args.record_seconds,
                args.max_rate,
                cluster,
                args.reuse,
                args.quiet,
            )
            rates = [float(r) for r in args.rates.split(",")]
            runs.append(ceiling(size, rates, args.seconds, logs, log, readers, options))
            report = (
                "`python -m bench.ceiling " + shlex.join(sys.argv[1:]) + "`\n\n" + markdown(runs)
            )
            if args.output:
                args.output.write_text(report + "\n")
                args.output.with_suffix(".json").write_text(
                    json.dumps(runs, default=vars, indent=1)
                )
    print(report, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
