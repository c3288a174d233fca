"""``python -m bench``: the gateway against the API server, side by side, at one or more sizes."""

from __future__ import annotations

import functools
import json
import shlex
import sys
import tempfile
from pathlib import Path

from bench import churn
from bench.options import fleet_parser, sizes
from bench.report import markdown
from bench.run import Options, run
from bench.stats import plain
from harness.processes import stop_on_terminate


def main() -> int:
    stop_on_terminate()
    parser = fleet_parser("python -m bench", __doc__, "5000")
    parser.add_argument("--runs", type=int, default=30, help="timed runs of each uncached query")
    parser.add_argument("--cached-runs", type=int, default=300, help="timed runs of cached queries")
    parser.add_argument("--writes", type=int, default=300, help="writes for the delay figures")
    parser.add_argument("--starts", type=int, default=3, help="timed gateway starts, each fleet")
    parser.add_argument("--rps-seconds", type=int, default=10, help="seconds of load per server")
    parser.add_argument("--output", type=Path, help="write the report here (e.g. bench/RESULTS.md)")
    parser.add_argument(
        "--logs", type=Path, help="keep the servers' logs here (default: discarded)"
    )
    parser.add_argument(
        "--churn-rates",
        default="10,100",
        help="changes/s of the churn phases, comma-separated (default 10,100; empty: none)",
    )
    parser.add_argument("--churn-seconds", type=float, default=30, help="seconds per churn phase")
    parser.add_argument(
        "--cluster",
        type=Path,
        help="keep each size's loaded cluster here across runs (bench.ceiling's too)",
    )
    args = parser.parse_args()
    rates = [float(r) for r in args.churn_rates.split(",") if r]

    runs, churned = [], []
    with tempfile.TemporaryDirectory(prefix="hgw-bench-") as tmp:
        logs = args.logs or Path(tmp)
        logs.mkdir(parents=True, exist_ok=True)
        for size in sizes(args.sizes):
            options = Options(
                size=size,
                bookings=args.bookings,
                runs=args.runs,
                cached_runs=args.cached_runs,
                writes=args.writes,
                starts=args.starts,
                rps_seconds=args.rps_seconds,
                workdir=logs,
                cluster=args.cluster / str(size) if args.cluster else None,
            )
            log = functools.partial(print, file=sys.stderr, flush=True)
            runs.append(run(options, log=log))
            if rates:
                churned.append(churn.churn(size, rates, args.churn_seconds, logs, log))
            report = markdown(runs, "python -m bench " + shlex.join(sys.argv[1:]))
            if churned:
                report += "\n\n## Under churn\n\n" + churn.markdown(churned)
            if args.output:
                args.output.write_text(report + "\n")
                raw = args.output.with_suffix(".json")
                raw.write_text(json.dumps([*runs, *churned], default=plain, indent=1))
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
