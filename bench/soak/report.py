"""The soak's figures, and a verdict per property, as markdown.

RSS after warm-up is fitted by least squares: the slope, in MiB an hour, is
what the gateway would gain running on, and set against its RSS it reads
across fleet sizes. It is called flat when an hour at that slope adds less
than ``FLAT`` of the RSS at warm-up end. Live snapshots are called bounded
when the second half of the run after warm-up holds no more than the first
half did (plus ``SLACK``): a count that grows with time keeps rising. The
frozen objects are shown from warm-up end to the end, with their slope: RSS
that grows while they stay level is memory the allocator keeps, not objects.
"""

from __future__ import annotations

import statistics
from typing import Any

from bench.churn.report import cell
from bench.soak.samples import COUNTS, FROZEN_OBJECTS, LIVE_SNAPSHOTS, is_limit

__all__ = ["FLAT", "SLACK", "figures", "markdown"]

#: Growth an hour, as a share of the RSS at warm-up end, below which RSS is flat.
FLAT = 0.05
#: Live snapshots the later half may hold beyond the earlier half's most.
SLACK = 2

#: KiB in a MiB (RSS is read in KiB).
KIB = 1024


def figures(run: dict[str, Any]) -> dict[str, Any]:
    """What the report states, from a run's raw samples."""
    samples = run["samples"]
    warmup = run["plan"]["warmup"] * 60
    after = [s for s in samples if s["at"] >= warmup] or samples[-1:]
    rss = [s["rss_kib"] / KIB for s in after]
    hours = [s["at"] / 3600 for s in after]
    slope = statistics.linear_regression(hours, rss).slope if len(after) > 1 else 0.0
    scraped = [s["gauges"] for s in after if s["gauges"] is not None]
    live = [gauges[LIVE_SNAPSHOTS] for gauges in scraped if LIVE_SNAPSHOTS in gauges]
    frozen = [(s["at"] / 3600, s["gauges"][FROZEN_OBJECTS]) for s in after if _has_frozen(s)]
    last: dict[str, float] = next(
        (s["gauges"] for s in reversed(samples) if s["gauges"] is not None), {}
    )
    memos = {
        series: value
        for series, value in last.items()
        if series not in COUNTS and not is_limit(series)
    }
    return {
        "rss_start_mib": samples[0]["rss_kib"] / KIB,
        "rss_warm_mib": rss[0],
        "rss_end_mib": rss[-1],
        "rss_max_mib": max(s["rss_kib"] for s in samples) / KIB,
        "peak_mib": run["peak_kib"] / KIB,
        "slope_mib_per_hour": slope,
        "slope_share": slope / rss[0],
        "samples_after_warmup": len(after),
        "scrapes_failed": sum(s["gauges"] is None for s in samples),
        "live": _spread(live),
        "live_bounded": _bounded(live),
        "frozen": _growth(frozen),
        "memos": {series: (value, run["budgets"].get(series)) for series, value in memos.items()},
        "budget_mib": sum(run["budgets"].values()) / 2**20,
        "log_errors": sum(run["log_errors"].values()),
        "stopped": run["stopped_over_limit"],
        "rss_limit_mib": run["plan"]["rss_limit_mib"],
    }


def _has_frozen(sample: dict[str, Any]) -> bool:
    return sample["gauges"] is not None and FROZEN_OBJECTS in sample["gauges"]


def _growth(points: list[tuple[float, float]]) -> tuple[float, float, float] | None:
    """The first value, the last, and the slope an hour by least squares."""
    if not points:
        return None
    hours, values = zip(*points, strict=True)
    slope = statistics.linear_regression(hours, values).slope if len(points) > 1 else 0.0
    return values[0], values[-1], slope


def _spread(values: list[float]) -> tuple[float, float, float] | None:
    return (min(values), statistics.median(values), max(values)) if values else None


def _bounded(values: list[float]) -> bool | None:
    if not values:
        return None
    half = len(values) // 2
    earlier, later = values[: max(half, 1)], values[half:]
    return max(later) <= max(earlier) + SLACK


def markdown(run: dict[str, Any]) -> str:
    """Memory, the memos against their budgets, every request kind's outcomes, verdicts."""
    f = figures(run)
    plan = run["plan"]
    live = f["live"]
    lines = [
        f"Soak of {plan['size']:,} demo hosts, a change every {plan['churn']:g} s, for "
        f"{plan['minutes']:g} minutes ({plan['warmup']:g} of warm-up); ready in "
        f"{run['ready_seconds']:.1f} s; {len(run['samples'])} samples, every {plan['every']:g} s"
        f" ({f['scrapes_failed']} scrapes of /metrics not answered in time).",
        "",
        "| RSS at the window's start | at warm-up end | at the end | peak sampled | peak (VmHWM) "
        "| slope after warm-up | slope : RSS at warm-up end | live snapshots min / median / max |",
        "|" + "---|" * 8,
        f"| {f['rss_start_mib']:,.0f} MiB | {f['rss_warm_mib']:,.0f} MiB "
        f"| {f['rss_end_mib']:,.0f} MiB | {f['rss_max_mib']:,.0f} MiB | {f['peak_mib']:,.0f} MiB "
        f"| {f['slope_mib_per_hour']:+,.1f} MiB/h | {f['slope_share'] * 100:+.1f}% an hour "
        f"| {'absent' if live is None else ' / '.join(f'{v:g}' for v in live)} |",
        "",
        "| Bytes reported in /metrics, at the end | bytes | budget |",
        "|---|---|---|",
    ]
    for series, (value, budget) in sorted(f["memos"].items()):
        known = "not stated" if not budget else f"{budget:,.0f} ({value / budget:.0%} used)"
        lines.append(f"| `{series}` | {value:,.0f} | {known} |")
    lines += ["", "| Requests | outcomes |", "|---|---|"]
    for kind, counted in sorted(run["outcomes"].items()):
        told = ", ".join(f"{outcome} {n:,}" for outcome, n in sorted(counted.items()))
        lines.append(f"| {kind} | {told} |")
    lines += ["", "| Churn reader | p50 / p99 |", "|---|---|"]
    lines += [f"| {kind} | {cell(s)} |" for kind, s in run["latencies"].items()]
    lines += ["", "| The gateway's log: errors | lines |", "|---|---|"]
    lines += [f"| {message[:160]} | {n:,} |" for message, n in run["log_errors"].items()]
    return "\n".join([*lines, "", *_verdicts(f)])


def _verdicts(f: dict[str, Any]) -> list[str]:
    """One line per property the soak checks."""
    flat = "flat" if f["slope_share"] < FLAT else "NOT flat"
    lines = [f"- stopped early: RSS over {f['rss_limit_mib']:g} MiB"] if f["stopped"] else []
    lines += [
        f"- RSS {flat} after warm-up: slope {f['slope_mib_per_hour']:+,.1f} MiB/h "
        f"({f['slope_share'] * 100:+.1f}% of {f['rss_warm_mib']:,.0f} MiB an hour; flat below "
        f"{FLAT:.0%}), {f['rss_warm_mib']:,.0f} -> {f['rss_end_mib']:,.0f} MiB",
        f"- RSS growth over the window: {f['rss_max_mib'] - f['rss_start_mib']:+,.0f} MiB at most, "
        f"against {f['budget_mib']:,.0f} MiB of budgets stated in /metrics",
    ]
    if f["live"] is None:
        lines.append(f"- live snapshots: absent (`{LIVE_SNAPSHOTS}` not in /metrics)")
    else:
        bounded = "bounded" if f["live_bounded"] else "NOT bounded"
        lines.append(f"- live snapshots {bounded}: max {f['live'][2]:g}")
    if f["frozen"] is None:
        lines.append(f"- frozen objects: absent (`{FROZEN_OBJECTS}` not in /metrics)")
    else:
        first, last, slope = f["frozen"]
        lines.append(
            f"- frozen objects after warm-up: {first:,.0f} -> {last:,.0f} ({slope:+,.0f} an hour)"
        )
    lines.append(f"- the gateway's log: {f['log_errors']:,} error lines")
    for series, (value, budget) in sorted(f["memos"].items()):
        if budget is not None:
            within = "within" if value <= budget else "OVER"
            lines.append(f"- `{series}` {within} its budget: {value:,.0f} of {budget:,.0f} bytes")
    return lines
