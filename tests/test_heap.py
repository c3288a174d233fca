"""Large blocks stay mapped apart from the heap, whatever was freed before them.

malloc's thresholds are process-wide and, once set, cannot be made dynamic
again: each case runs in a fresh interpreter of its own.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import types

import pytest

from gateway.store import heap

#: Whether a 1 MiB block made after a 16 MiB one was freed is mapped (glibc only).
PROBE = """
import ctypes

class Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd",
        "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]

mallinfo2 = ctypes.CDLL(None).mallinfo2
mallinfo2.restype = Mallinfo2
bytearray(16 * 2**20)  # made and freed at once
before = mallinfo2().hblkhd
block = bytearray(2**20)
print(mallinfo2().hblkhd - before >= 2**20)
"""


def probe(setup: str) -> bool:
    code = textwrap.dedent(setup) + PROBE
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    return result.stdout.split()[-1] == "True"


glibc_only = pytest.mark.skipif(
    not hasattr(heap._LIBC, "mallinfo2"), reason="mallinfo2 is glibc's (2.33 and later)"
)


@glibc_only
def test_a_freed_large_block_moves_glibcs_own_threshold() -> None:
    """The cause: left to itself, glibc serves blocks under the freed one from the heap."""
    assert not probe("")


@glibc_only
def test_held_thresholds_map_a_large_block_after_a_larger_one_was_freed() -> None:
    assert probe("from gateway.store.heap import map_large_blocks\nassert map_large_blocks()")


@glibc_only
def test_serve_holds_the_thresholds_before_it_serves() -> None:
    serve_without_serving = """
    import gateway.cli
    gateway.cli._serve = lambda *args: None
    assert gateway.cli.main(["serve", "--demo", "--demo-size", "10"]) == 0
    """
    assert probe(serve_without_serving)


def test_a_c_library_without_mallopt_is_left_as_it_is() -> None:
    assert heap.map_large_blocks(types.SimpleNamespace()) is False


def test_trim_is_nothing_on_a_c_library_without_malloc_trim() -> None:
    assert heap._malloc_trim(types.SimpleNamespace())() is None
    heap.trim()
