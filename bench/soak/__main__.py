"""``python -m bench.soak``: the demo gateway soaked under every load at once."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import sys
import tempfile
from pathlib import Path

from bench.soak import Soak, markdown, soak
from bench.stats import plain
from harness.processes import stop_on_terminate


def main() -> int:
    stop_on_terminate()
    defaults = Soak()
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__)
    parser.add_argument("--size", type=int, default=defaults.size, help="demo hosts (5000)")
    parser.add_argument("--minutes", type=float, default=defaults.minutes, help="window (30)")
    parser.add_argument(
        "--warmup", type=float, default=defaults.warmup, help="minutes left out of the slope (5)"
    )
    parser.add_argument(
        "--churn", type=float, default=defaults.churn, help="seconds between changes (0.1)"
    )
    parser.add_argument(
        "--every", type=float, default=defaults.every, help="seconds between samples (5)"
    )
    parser.add_argument(
        "--query-seconds",
        type=float,
        default=defaults.query_seconds,
        help="the gateway's time limit per query (5)",
    )
    parser.add_argument(
        "--rss-limit",
        type=float,
        default=defaults.rss_limit_mib,
        help="MiB of RSS at which the gateway is stopped (8192)",
    )
    parser.add_argument("--output", type=Path, help="write the report here, the samples beside it")
    parser.add_argument("--logs", type=Path, help="keep the gateway's log here")
    args = parser.parse_args()
    plan = dataclasses.replace(
        defaults,
        size=args.size,
        minutes=args.minutes,
        warmup=args.warmup,
        churn=args.churn,
        every=args.every,
        query_seconds=args.query_seconds,
        rss_limit_mib=args.rss_limit,
    )
    log = functools.partial(print, file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory(prefix="hgw-soak-") as tmp:
        logs = args.logs or Path(tmp)
        logs.mkdir(parents=True, exist_ok=True)
        run = soak(plan, logs, log)
    report = markdown(run)
    if args.output:
        args.output.write_text(report + "\n")
        args.output.with_suffix(".json").write_text(json.dumps(run, default=plain, indent=1))
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
