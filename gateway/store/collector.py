"""Building a whole fleet's objects at once without the cyclic collector in the way.

A fleet is millions of small dicts, lists and strings with no reference cycles.
While they pile up, every collection of the oldest generation rescans the growing
heap for cycles that are not there: generating or parsing a large fleet takes two
to three times as long with the collector running. Pausing it for the duration
is safe because nothing built meanwhile is cyclic garbage.
"""

from __future__ import annotations

import contextlib
import gc
import math
import time
from collections.abc import Callable, Iterator

from gateway.store import heap

__all__ = ["Spacing", "collector_paused", "freeze", "settle"]

#: The collector's generations: a collection of the oldest is a whole one.
_YOUNGER, _OLDEST = 1, 2


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


def settle(*, thorough: bool = True) -> None:
    """Take everything alive now out of the cyclic collector's reach (``gc.freeze``),
    after collecting the garbage there is: all of it if ``thorough``, else what the
    younger generations hold (most of what was made since the last settle).

    A gateway holds hundreds of thousands of long-lived tracked objects (its views,
    the capacity series, the schema): left in the oldest generation, each of its
    collections walks all of them, and pauses every request meanwhile. Frozen
    objects are still freed when no longer referenced, but a cycle among them is
    not, and a freeze takes whatever is alive at that moment: the requests in
    flight too, whose executor, error and traceback refer to each other and to the
    answer they were building. Frozen for good, each settle under load kept
    megabytes (in a soak of 1,000 demo hosts, about half of the RSS growth: 278 MiB
    in five minutes with the freeze, 146 MiB without). So a thorough settle hands
    the frozen objects back to the collector first (``gc.unfreeze``): a cycle frozen
    at one settle lives until the next thorough one. That collection walks the
    whole heap, 0.49 s at 20,000 demo hosts (300,000 tracked objects, on a busy
    machine). One that is not thorough collects the two younger generations only,
    and freezes what reached the oldest since the last settle as it is (a cycle
    there too lives until the next thorough one): a whole collection also empties
    the interpreter's free lists of tuples, floats, lists and dicts, some 40,000
    blocks handed back to malloc and asked for again, 2 ms however little is new
    (at 20,000 hosts and 333 changes a second, the 1,300 objects new at each settle
    took 1.9 ms: 4-6% of the gateway's CPU). The store settles
    every 25 changes, thoroughly once per its fleet's size in changes (at least
    1,000) and no sooner than a thousand times the last thorough pause; its first
    (the initial state's) collects nothing: see :func:`freeze`.

    Then the C heap is trimmed: building a fleet frees far more than it keeps (a
    page of raw JSON objects per page of records), and glibc keeps freed memory
    for reuse unless asked to hand it back (6 MiB after listing 5,000 hosts).
    """
    if thorough:
        gc.unfreeze()
    gc.collect(_OLDEST if thorough else _YOUNGER)
    freeze()


def freeze() -> None:
    """Take everything alive now out of the cyclic collector's reach as it is, without
    collecting first, then trim the C heap: :func:`settle` for a whole new set, built
    with the collector paused (:func:`collector_paused`), which leaves no cyclic
    garbage behind (none found at 1,000 and 20,000 hosts from the API server, nor at
    2,000 from files), so that a young collection would walk every object of the fleet
    for nothing: 7-9 ms of a start at 1,000 hosts, 190 ms at 20,000. Whatever cycle
    is garbage all the same lives until the next thorough settle.
    """
    gc.freeze()
    heap.trim()


class Spacing:
    """When a pause of every answer may come again: no sooner than ``times`` its last
    duration after it ended, so that it takes at most ``1 / times`` of the time.

    A whole-heap collection, and a walk of the frozen heap to count it, grow with
    the fleet (0.14 s and 25 ms at 20,000 hosts): on the event loop, they set the p99
    of every answer while they run.
    """

    def __init__(self, times: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.times = times
        self._clock = clock
        self._next = -math.inf

    def due(self) -> bool:
        return self._clock() >= self._next

    @contextlib.contextmanager
    def spaced(self) -> Iterator[None]:
        """Time the block: the next is due ``times`` its duration after it ends."""
        started = self._clock()
        try:
            yield
        finally:
            ended = self._clock()
            self._next = ended + (ended - started) * self.times
