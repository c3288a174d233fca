"""The C heap under the store: freed memory handed back to the system.

glibc's malloc serves a block of at least its mmap threshold with a mapping of
its own, unmapped when the block is freed, and everything smaller from heaps it
keeps for reuse. The threshold starts at 128 KiB but moves: freeing a mapped
block raises it to that block's size (up to 32 MiB), on the guess that a
program that freed one large block will soon ask for another of that size. A
gateway's answers are such blocks: 50 aliases of every instance of 200 hosts
encode to some 15 MB of JSON. Once one is freed, every block under 15 MB comes
from the heap instead, between the long-lived records of the fleet, and the
heap grows wherever the next large block finds no hole of its size. In a soak
of 1,000 demo hosts (``python -m bench.soak --size 1000 --minutes 8 --warmup
2``) malloc's heaps grew from 40 to 403 MiB while the blocks in use in them
stayed at 31-45 MiB, and RSS with them, from 273 to 599 MiB: ``malloc_trim``
at each settle hands back only whole free pages, and most of the free space
stayed resident. With the threshold held the heaps stayed at 33-53 MiB (RSS 293
to 337 MiB in the same time).

So the gateway holds the threshold where glibc starts it
(:func:`map_large_blocks`): a large answer is mapped, and unmapped when freed.
That costs an ``mmap`` and the page faults of the block's size: 15 MB made and
freed took 9 ms instead of 0.5 ms, a 1 MB block 0.5 ms instead of 13 us (a
busy 2-core machine), against the hundreds of ms a 15 MB answer takes to
build. Setting it also fixes the trim threshold, so the heap's top is handed
back past 128 KiB free, as it was before the first large block.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

__all__ = ["MMAP_THRESHOLD", "map_large_blocks", "trim"]

#: Blocks of this size and more get a mapping of their own: glibc's initial value.
MMAP_THRESHOLD = 128 * 1024
#: ``mallopt`` parameters (``malloc.h``).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3

_LIBC = ctypes.CDLL(None)  # the process's own symbols: glibc's, or another C library's


def map_large_blocks(library: object = _LIBC) -> bool:
    """Hold malloc's mmap and trim thresholds at :data:`MMAP_THRESHOLD`, for the
    whole process; False, and nothing changed, on a C library without ``mallopt``
    (musl, whose large blocks are always mapped)."""
    mallopt = getattr(library, "mallopt", None)
    if mallopt is None:
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return all(mallopt(p, MMAP_THRESHOLD) == 1 for p in (_M_MMAP_THRESHOLD, _M_TRIM_THRESHOLD))


def _malloc_trim(library: object = _LIBC) -> Callable[[], object]:
    """glibc's ``malloc_trim(0)``, or nothing on a C library without it."""
    found = getattr(library, "malloc_trim", None)
    if found is None:
        return lambda: None
    found.argtypes = [ctypes.c_size_t]
    return lambda: found(0)


#: Hand the free pages of every heap back to the system (the store's settle).
trim = _malloc_trim()
