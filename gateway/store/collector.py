"""Building a whole fleet's objects at once without the cyclic collector in the way.

A fleet is millions of small dicts, lists and strings with no reference cycles.
While they pile up, every collection of the oldest generation rescans the growing
heap for cycles that are not there: generating or parsing a large fleet takes two
to three times as long with the collector running. Pausing it for the duration
is safe because nothing built meanwhile is cyclic garbage.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
from collections.abc import Callable, Iterator

__all__ = ["collector_paused", "settle"]


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Disable the cyclic collector inside the block (it is process-wide), then restore it."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def settle() -> None:
    """Take everything alive now out of the cyclic collector's reach (``gc.freeze``).

    A fleet is millions of long-lived objects with no cycles. Left in the oldest
    generation, each of its collections walks all of them: a 5,000-host fleet
    paused every query caught by one for about 0.2 s (p99 of a small query: 222 ms;
    frozen: 9 ms). Frozen objects are still freed when no longer referenced, but a
    cycle among them never is: every generation is collected first, the oldest too,
    where an executor of a long query that ended in an error waits, holding its
    snapshot. Frozen objects are out of the collection, so it walks only what was
    made since the last settle: 0.8 ms instead of 0.5 ms (median, 20,000 hosts,
    one settle per 100 changes).

    Then the C heap is trimmed: building a fleet frees far more than it keeps (a
    page of raw JSON objects per page of records), and glibc keeps freed memory
    for reuse unless asked to hand it back (6 MiB after listing 5,000 hosts).
    """
    gc.collect()
    gc.freeze()
    _trim_heap()


def _malloc_trim() -> Callable[[], object]:
    """glibc's ``malloc_trim(0)``, or nothing on a C library without it (musl)."""
    trim = getattr(ctypes.CDLL(None), "malloc_trim", None)  # the process's own symbols
    if trim is None:
        return lambda: None
    trim.argtypes = [ctypes.c_size_t]
    return lambda: trim(0)


_trim_heap = _malloc_trim()
