"""The gateway's memory over the soak: its RSS, and what ``/metrics`` says it keeps.

RSS is the kernel's figure (``VmRSS``), the one an out-of-memory kill judges.
Beside it, from each scrape, every gauge whose name ends in ``_bytes`` (a memo,
a cache, a store of documents: whatever the gateway reports sizing in bytes)
and the live snapshots gauge, which counts the fleet states still referenced
(by queries running, subscribers behind, carried views): bounded when nothing
holds an old state longer than it is used; and the frozen objects, the
long-lived heap by count, level under churn unless something keeps what the
changes make (RSS that grows while they stay level is the allocator's). A
budget is known when the gauge's help says it (``at most N``) or a gauge of the
same name ending in ``_budget_bytes`` or ``_max_bytes`` gives it.
"""

from __future__ import annotations

import dataclasses
import re
import time

import httpx
from prometheus_client.parser import text_string_to_metric_families

from harness.processes import memory_kib

__all__ = ["COUNTS", "FROZEN_OBJECTS", "LIVE_SNAPSHOTS", "Sample", "budgets", "is_limit", "sample"]

LIVE_SNAPSHOTS = "hypervisor_gateway_snapshots_live"
FROZEN_OBJECTS = "hypervisor_gateway_frozen_objects"
#: The gauges sampled beside the ``_bytes`` ones: counts, not memos.
COUNTS = (LIVE_SNAPSHOTS, FROZEN_OBJECTS)
_BUDGET = re.compile(r"at most (\d+)")
_LIMITS = ("_budget_bytes", "_max_bytes")


@dataclasses.dataclass(frozen=True)
class Sample:
    """One look at the gateway, ``at`` seconds into the window."""

    at: float
    rss_kib: int
    #: Every ``_bytes`` gauge by its series (name and labels), the COUNTS too;
    #: None when the scrape failed (the gateway too busy to answer in time).
    gauges: dict[str, float] | None


def sample(pid: int, url: str, start: float) -> tuple[Sample, dict[str, float]]:
    """A sample now, and the budgets the scrape names (by series).

    Each scrape opens a connection of its own: one kept between samples a few
    seconds apart meets the server's keep-alive timeout, closing it as it is reused.
    """
    rss = memory_kib(pid)["VmRSS"]
    at = time.monotonic() - start
    try:
        text = httpx.get(url + "/metrics", timeout=30).text
    except httpx.HTTPError:
        return Sample(at, rss, None), {}
    gauges: dict[str, float] = {}
    known: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        if family.type != "gauge":
            continue
        if family.name not in COUNTS and not family.name.endswith("_bytes"):
            continue
        for metric in family.samples:
            series = _series(metric.name, metric.labels)
            gauges[series] = metric.value
            if found := _BUDGET.search(family.documentation):
                known[series] = float(found.group(1))
    return Sample(at, rss, gauges), known


def budgets(sampled: Sample, named: dict[str, float]) -> dict[str, float]:
    """Each ``_bytes`` series' budget: named in its help, or by a limit gauge beside it."""
    found = dict(named)
    for series, value in (sampled.gauges or {}).items():
        for suffix in _LIMITS:
            name, _, labels = series.partition("{")
            if name.endswith(suffix):
                used = name.removesuffix(suffix) + "_bytes" + (f"{{{labels}" if labels else "")
                found[used] = value
    return {series: value for series, value in found.items() if not is_limit(series)}


def is_limit(series: str) -> bool:
    """Whether a series is a budget (of the ``_bytes`` series beside it), not a size."""
    return series.partition("{")[0].endswith(_LIMITS)


def _series(name: str, labels: dict[str, str]) -> str:
    if not labels:
        return name
    return name + "{" + ",".join(f'{key}="{value}"' for key, value in sorted(labels.items())) + "}"
