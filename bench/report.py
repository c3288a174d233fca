"""The figures as tables: targets with PASS/FAIL per fleet size, and growth across sizes."""

from __future__ import annotations

import os
import platform
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.stats import Summary

__all__ = ["machine", "markdown"]

MiB = 2**20


def machine() -> str:
    cpuinfo = Path("/proc/cpuinfo").read_text()
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in cpuinfo.splitlines()
            if line.startswith("model name")
        ),
        platform.processor() or "unknown",
    )
    memory = next(
        int(line.split()[1])
        for line in Path("/proc/meminfo").read_text().splitlines()
        if line.startswith("MemTotal")
    )
    return f"{os.cpu_count()} CPUs ({model}), {memory / 2**20:.1f} GiB RAM, Linux {platform.release()}, Python {platform.python_version()}"  # noqa: E501


def list_reference(f: dict[str, Any]) -> float:
    """The faster of the two LISTs (paged as kubectl does, or in one response)."""
    return min(float(f["list_paged"].median), float(f["list_whole"].median))


# (name, value, reference, reference name, target ratio, higher is better, unit)
_Target = tuple[
    str, Callable[[dict[str, Any]], float], Callable[[dict[str, Any]], float], str, float, bool, str
]
TARGETS: Sequence[_Target] = (
    (
        "fleet query uncached, median",
        lambda f: f["fleet_uncached"].median,
        list_reference,
        "LIST median",
        1 / 10,
        False,
        "ms",
    ),
    (
        "fleet query cached, median",
        lambda f: f["fleet_cached"].median,
        list_reference,
        "LIST median",
        1 / 200,
        False,
        "ms",
    ),
    (
        "start to ready, median",
        lambda f: f["ready_loaded"].median,
        list_reference,
        "LIST median",
        1.5,
        False,
        "ms",
    ),
    (
        "write to GraphQL answer, p99",
        lambda f: f["delay_answer"].p99,
        lambda f: f["delay_watch"].p99,
        "bare watch p99",
        2,
        False,
        "ms",
    ),
    (
        "resident memory, fleet loaded",
        lambda f: f["rss_steady"],
        lambda f: f["list_bytes"],
        "LIST JSON size",
        3,
        False,
        "MiB",
    ),
    (
        "relist peak memory",
        lambda f: f["rss_relist_peak"],
        lambda f: f["rss_steady"],
        "steady RSS",
        2,
        False,
        "MiB",
    ),
    (
        "small cached query, req/s",
        lambda f: f["rps_gateway"],
        lambda f: f["rps_bare"],
        "bare Starlette req/s",
        1 / 2,
        True,
        "req/s",
    ),
)


def _value(x: float, unit: str) -> str:
    if unit == "ms":
        return f"{x * 1000:.2f} ms"
    if unit == "MiB":
        return f"{x / MiB:.1f} MiB"
    return f"{x:,.0f} req/s"


def _ratio_text(r: float) -> str:
    return f"1/{1 / r:.1f}" if 0 < r < 1 else f"{r:.2f}"


def targets_table(f: dict[str, Any]) -> list[str]:
    lines = [
        "| Figure | Value | Reference | Ratio | Target | Result |",
        "|---|---|---|---|---|---|",
    ]
    for name, value, reference, ref_name, target, higher, unit in TARGETS:
        v, r = value(f), reference(f)
        ratio = v / r if r > 0 else float("inf")
        ok = ratio >= target if higher else ratio <= target
        sign = ">=" if higher else "<="
        lines.append(
            f"| {name} | {_value(v, unit)} | {ref_name} {_value(r, unit)} | {_ratio_text(ratio)} "
            f"| {sign} {_ratio_text(target)} | {'PASS' if ok else 'FAIL'} |"
        )
    return lines


def _ms(s: Summary) -> str:
    return f"{s.median * 1000:.2f} / {s.p99 * 1000:.2f}"


def figures_table(f: dict[str, Any]) -> list[str]:
    rows = [
        ("LIST, paged by 500 (kubectl)", _ms(f["list_paged"]), f["list_paged"].n),
        ("LIST, one response", _ms(f["list_whole"]), f["list_whole"].n),
        (
            "the same as a watch's initial events (how the gateway reads it; not a reference)",
            _ms(f["list_stream"]),
            f["list_stream"].n,
        ),
        (
            "LIST + json + free cpu/memory per host (Decimal)",
            _ms(f["list_compute"]),
            f["list_compute"].n,
        ),
        (
            "gateway: every host's name, zone, free cpu/memory, uncached",
            _ms(f["fleet_uncached"]),
            f["fleet_uncached"].n,
        ),
        ("gateway: the same, cached", _ms(f["fleet_cached"]), f["fleet_cached"].n),
        (
            "gateway: fleetCapacity(groupBy: ZONE), uncached",
            _ms(f["zones_uncached"]),
            f["zones_uncached"].n,
        ),
        (
            "gateway: fleetCapacity(groupBy: ZONE), cached",
            _ms(f["zones_cached"]),
            f["zones_cached"].n,
        ),
        ("gateway: process start to /readyz 200", _ms(f["ready_loaded"]), f["ready_loaded"].n),
        (
            "gateway: the same on the empty cluster (its fixed cost)",
            _ms(f["ready_empty"]),
            f["ready_empty"].n,
        ),
        ("write -> bare watch event", _ms(f["delay_watch"]), f["delay_watch"].n),
        ("write -> GraphQL answer reflects it", _ms(f["delay_answer"]), f["delay_answer"].n),
        (
            "write -> hypervisorChanged message",
            _ms(f["delay_subscription"]),
            f["delay_subscription"].n,
        ),
    ]
    lines = ["| Measurement | median / p99 (ms) | runs |", "|---|---|---|"]
    lines += [f"| {name} | {value} | {n} |" for name, value, n in rows]
    lines += [
        "",
        f"- LIST JSON: {f['list_bytes'] / MiB:.1f} MiB for {f['size']:,} hosts and "
        f"{f['bookings']:,} bookings",
        f"- gateway RSS: {f['rss_loaded'] / MiB:.1f} MiB at ready (median of the timed starts; "
        f"{f['rss_empty'] / MiB:.1f} MiB on the empty cluster), {f['rss_steady'] / MiB:.1f} MiB "
        f"after the run (cache filled; {f['rss_empty_run'] / MiB:.1f} MiB on the empty cluster "
        f"after its queries), peak {f['rss_relist_peak'] / MiB:.1f} MiB during a forced "
        f"relist that took {f['relist_seconds']:.1f} s (etcd compacted, API server restarted)",
        f"- small cached query: {f['rps_gateway']:,.0f} req/s; "
        f"bare Starlette: {f['rps_bare']:,.0f} req/s",
        f"- loading the fleet (not a measured figure): {_loading(f['load_seconds'])}",
    ]
    return lines


def _loading(seconds: float | None) -> str:
    return "kept from an earlier run" if seconds is None else f"{seconds:.1f} s"


def costs_table(f: dict[str, Any]) -> list[str]:
    """The figures that carry a fixed cost, split into it and the cost per host.

    The targets compare totals; a process that imports its libraries pays the
    same whatever the fleet, which weighs most against the smallest LIST.
    """
    n = f["size"]
    ready = (f["ready_loaded"].median - f["ready_empty"].median) / n
    list_time, json_size = list_reference(f) / n, f["list_bytes"] / n

    def memory(what: str, loaded: str, empty: str) -> str:
        per_host = (f[loaded] - f[empty]) / n
        return (
            f"| {what} | {f[empty] / MiB:.1f} MiB | {per_host / 1024:.1f} KiB "
            f"| LIST JSON {json_size / 1024:.1f} KiB | {_ratio_text(per_host / json_size)} |"
        )

    return [
        "| Cost | gateway, empty cluster | gateway per host | API server per host | ratio |",
        "|---|---|---|---|---|",
        f"| start to ready | {f['ready_empty'].median:.2f} s | {ready * 1e3:.2f} ms "
        f"| LIST {list_time * 1e3:.2f} ms | {_ratio_text(ready / list_time)} |",
        memory("resident memory at ready", "rss_loaded", "rss_empty"),
        memory("resident memory after the run's queries", "rss_steady", "rss_empty_run"),
    ]


def growth_table(runs: Sequence[dict[str, Any]]) -> list[str]:
    lines = [
        "| Hosts | LIST JSON | LIST median | per host | fleet query uncached | per host | cached | ready | RSS |",  # noqa: E501
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for f in runs:
        n, ref, fleet = f["size"], list_reference(f), f["fleet_uncached"].median
        lines.append(
            f"| {n:,} | {f['list_bytes'] / MiB:.1f} MiB | {ref * 1000:.0f} ms "
            f"| {ref / n * 1e6:.0f} us | {fleet * 1000:.1f} ms | {fleet / n * 1e6:.1f} us "
            f"| {f['fleet_cached'].median * 1000:.2f} ms "
            f"| {f['ready_loaded'].median:.2f} s | {f['rss_steady'] / MiB:.0f} MiB |"
        )
    return lines


def markdown(runs: Sequence[dict[str, Any]], command: str, notes: Sequence[str] = ()) -> str:
    out = ["# Benchmark results", "", f"Machine: {machine()}", "", f"Command: `{command}`", ""]
    out += [*notes, ""] if notes else []
    for f in runs:
        out += [f"## {f['size']:,} hypervisors, ~{f['bookings_per_host']} bookings each", ""]
        out += [*targets_table(f), "", *costs_table(f), "", *figures_table(f), ""]
    if len(runs) > 1:
        out += ["## Growth with fleet size", "", *growth_table(runs), ""]
    return "\n".join(out)
