"""The ceiling figures as markdown: one row per size and rate, then each size's ceiling."""

from __future__ import annotations

from typing import Any

from bench.churn.report import cell, phases, ratio
from bench.stats import Summary

__all__ = ["markdown"]


def markdown(runs: list[dict[str, Any]]) -> str:
    """Lag and cost per phase, the queries against the floor, and the ceilings."""
    return _lag(runs) + "\n\n" + _floor(runs) + "\n\n" + _ceilings(runs)


def _lag(runs: list[dict[str, Any]]) -> str:
    lines = [
        "| Hosts | changes/s asked / sent / applied | send to message p50 / p99 "
        "| send to answer p50 / p99 "
        "| lag growth over the window | gateway CPU | CPU per change | : API server per write "
        "| above the readers alone, per change | : API server per write "
        "| gateway waiting for a CPU | replay server CPU | RSS | messages/s (totals / hosts) "
        "| kept up |",
        "|" + "---|" * 15,
    ]
    for run, p in phases(runs):
        per_write = run["recorded"]["apiserver_cpu_per_write"]
        per_change = _per_change(p["cpu_share"], p)
        quiet = _quiet_cpu(run)
        above = None if quiet is None else _per_change(p["cpu_share"] - quiet, p)
        lines.append(
            f"| {run['size']:,} | {p['rate']:g} / {p['achieved']:.1f} "
            f"/ {p['events_per_second']:.1f} | {cell(p['message'])} | {cell(p['answer'])} "
            f"| {_ms(p['growth'])} "
            f"| {p['cpu_share'] * 100:.0f}% of a core | {_ms(per_change)} "
            f"| {_fraction(per_change, per_write)} "
            f"| {_ms(above)} | {_fraction(above, per_write)} "
            f"| {p['gateway_waiting_share']:.0%} of the window "
            f"| {p['replay_cpu_share'] * 100:.0f}% of a core "
            f"| {p['rss_kib'] / 1024:.0f} MiB "
            f"| {_per_second(p, 'totals')} / {_per_second(p, 'hosts')} "
            f"| {_kept_up(p['kept_up'])} |"
        )
    return "\n".join(lines)


def _floor(runs: list[dict[str, Any]]) -> str:
    lines = [
        "| Hosts | changes/s sent | bare Starlette p50 / p99 | ZONE p50 / p99 : bare "
        "| page p50 / p99 : bare | canFit p50 / p99 : bare | hypervisor(name:) p50 / p99 : bare "
        "| query errors |",
        "|" + "---|" * 8,
    ]
    for run, p in phases(runs):
        q: dict[str, Summary] = p["queries"]
        floor: Summary | None = p["floor"]
        kinds = " | ".join(
            f"{cell(q.get(kind))} : {ratio(q.get(kind), floor)}"
            for kind in ("zones", "page", "fit", "host")
        )
        lines.append(
            f"| {run['size']:,} | {p['achieved']:.1f} | {cell(floor)} | {kinds} | {p['errors']} |"
        )
    return "\n".join(lines)


def _ceilings(runs: list[dict[str, Any]]) -> str:
    lines = [
        "| Hosts | ceiling (changes/s kept up with) | recorded: writes/s, API server CPU per write "
        "| gateway ready on the replay |",
        "|---|---|---|---|",
    ]
    for run in runs:
        recorded = run["recorded"]
        ceiling = "-" if run["ceiling"] is None else f"{run['ceiling']:,.0f}"
        if not run["ceiling_bounded"]:
            ceiling += " (not reached: the last rate tried was kept up with)"
        lines.append(
            f"| {run['size']:,} | {ceiling} | {recorded['achieved']:.1f}/s, "
            f"{_ms(recorded['apiserver_cpu_per_write'])} | {run['ready_seconds']:.1f} s |"
        )
    return "\n".join(lines)


def _per_change(cpu_share: float, phase: dict[str, Any]) -> float | None:
    """Seconds of CPU per change applied; None without changes."""
    rate: float = phase["events_per_second"]
    return cpu_share / rate if phase["rate"] and rate else None


def _quiet_cpu(run: dict[str, Any]) -> float | None:
    """The gateway's CPU share under the readers alone, if the run had such a phase."""
    return next((p["cpu_share"] for p in run["phases"] if not p["rate"]), None)


def _kept_up(kept: bool | None) -> str:
    return "-" if kept is None else "yes" if kept else "no"


def _per_second(phase: dict[str, Any], kind: str) -> str:
    return f"{phase['messages'][kind] / phase['seconds']:,.0f}"


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:,.2f} ms"


def _fraction(part: float | None, whole: float | None) -> str:
    return "-" if not part or not whole else f"1/{whole / part:,.0f}"
