"""Summaries of timing samples: the median and the 99th percentile (nearest rank)."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence

__all__ = ["Summary", "plain", "sample", "summarize"]


class Summary:
    """Median and p99 of a set of samples, in seconds."""

    def __init__(self, samples: Sequence[float]) -> None:
        if not samples:
            raise ValueError("no samples")
        ordered = sorted(samples)
        self.n = len(ordered)
        self.median = statistics.median(ordered)
        self.p99 = ordered[max(0, math.ceil(0.99 * self.n) - 1)]

    def __repr__(self) -> str:
        return f"Summary(n={self.n}, median={self.median:.6f}, p99={self.p99:.6f})"


def plain(value: object) -> object:
    """A summary as JSON can hold it (``json.dumps(..., default=plain)``)."""
    if isinstance(value, Summary):
        return {"n": value.n, "median": value.median, "p99": value.p99}
    raise TypeError(type(value).__name__)


def summarize(samples: Sequence[float]) -> Summary:
    return Summary(samples)


def sample(call: Callable[[], object], runs: int, warmup: int = 1) -> Summary:
    """Time ``call`` ``runs`` times, after ``warmup`` untimed calls."""
    for _ in range(warmup):
        call()
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return Summary(times)
