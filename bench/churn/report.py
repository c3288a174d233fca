"""The churn figures as markdown: what readers got, and how fresh it was."""

from __future__ import annotations

from typing import Any

from bench.stats import Summary

__all__ = ["cell", "markdown", "phases", "ratio"]


def markdown(runs: list[dict[str, Any]]) -> str:
    """Three tables, one row per size and rate: queries and cost, the machine's floor
    under the same load, then delays from a write."""
    return _queries(runs) + "\n\n" + _floor(runs) + "\n\n" + _freshness(runs)


def _queries(runs: list[dict[str, Any]]) -> str:
    lines = [
        "| Hosts | changes/s asked / achieved | fleetCapacity(ZONE) p50 / p99 "
        "| 100-host page p50 / p99 | canFit p50 / p99 | hypervisor(name:) p50 / p99 "
        "| LIST + compute p50 | ZONE p50 : LIST | every host p50 / p99 | every host p50 : LIST "
        "| cache hits, all | lookups alone: hits / ceiling | gateway CPU | RSS | events/s |",
        "|" + "---|" * 15,
    ]
    for run, p in phases(runs):
        q: dict[str, Summary] = p["queries"]
        base: Summary = p["baseline"]
        zone_ratio = f"1/{base.median / q['zones'].median:,.0f}" if "zones" in q else "-"
        every: Summary | None = p["every_host"]
        every_ratio = f"1/{base.median / every.median:,.1f}" if every else "-"
        lines.append(
            f"| {run['size']:,} | {p['rate']:g} / {p['achieved']:.1f} "
            f"| {cell(q.get('zones'))} | {cell(q.get('page'))} | {cell(q.get('fit'))} "
            f"| {cell(q.get('host'))} | {base.median * 1e3:,.0f} ms | {zone_ratio} "
            f"| {cell(every)} | {every_ratio} "
            f"| {_percent(p['hit_rate'])} "
            f"| {_percent(p['host_hit_rate'])} / {_percent(p['host_ceiling'])} "
            f"| {p['cpu_share'] * 100:.0f}% of a core | {p['rss_kib'] / 1024:.0f} MiB "
            f"| {p['events_per_second']:.1f} |"
        )
    return "\n".join(lines)


def _floor(runs: list[dict[str, Any]]) -> str:
    """Each query kind's p99 against the bare Starlette app's, polled as the host pages
    are, in the same window: what no gateway on this machine answers faster."""
    lines = [
        "| Hosts | changes/s achieved | bare Starlette p50 / p99 "
        "| ZONE p99 : bare | page p99 : bare | canFit p99 : bare | hypervisor(name:) p99 : bare |",
        "|" + "---|" * 7,
    ]
    for run, p in phases(runs):
        q: dict[str, Summary] = p["queries"]
        floor: Summary | None = p["floor"]
        ratios = " | ".join(ratio(q.get(kind), floor) for kind in ("zones", "page", "fit", "host"))
        lines.append(f"| {run['size']:,} | {p['achieved']:.1f} | {cell(floor)} | {ratios} |")
    return "\n".join(lines)


def _freshness(runs: list[dict[str, Any]]) -> str:
    lines = [
        "| Hosts | changes/s achieved | write to bare watch p50 / p99 "
        "| write to message p50 / p99 | message p99 : watch p99 "
        "| write to answer p50 / p99 | watch p99, same writes | answer p99 : watch p99 "
        "| messages (totals / hosts) |",
        "|" + "---|" * 9,
    ]
    for run, p in phases(runs):
        d: dict[str, Summary | None] = p["delays"]
        lines.append(
            f"| {run['size']:,} | {p['achieved']:.1f} | {cell(d['watch'])} "
            f"| {cell(d['message'])} | {ratio(d['message'], d['watch'])} "
            f"| {cell(d['answer'])} | {_p99(d['answer_watch'])} "
            f"| {ratio(d['answer'], d['answer_watch'])} "
            f"| {p['messages']['totals']:,} / {p['messages']['hosts']:,} |"
        )
    return "\n".join(lines)


def phases(runs: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return [(run, phase) for run in runs for phase in run["phases"]]


def cell(s: Summary | None) -> str:
    return "-" if s is None else f"{s.median * 1e3:,.2f} / {s.p99 * 1e3:,.2f} ms"


def _p99(s: Summary | None) -> str:
    return "-" if s is None else f"{s.p99 * 1e3:,.2f} ms"


def ratio(s: Summary | None, reference: Summary | None) -> str:
    if s is None or reference is None or reference.p99 <= 0:
        return "-"
    return f"{s.p99 / reference.p99:.1f}x"


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"
