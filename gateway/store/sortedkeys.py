"""A sorted sequence of strings that a change copies in part: the consumers in UUID order.

The consumers are listed in UUID order, a page after a cursor. At 20,000 hosts
there are 800,000 of them: sorting them takes about a second, and even copying
one sorted tuple of them to insert a UUID touches every string's reference
count (tens of milliseconds, see :mod:`gateway.store.shards`). Kept in sorted
chunks of about :data:`CHUNK` keys, a change copies the chunks it touches and
the tuple of chunks; the others are shared with the previous sequence.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Iterator, Sequence
from typing import overload

__all__ = ["CHUNK", "SortedKeys"]

#: Keys per chunk when sorted afresh; a chunk that grows past twice as many is halved.
CHUNK = 1024


class SortedKeys(Sequence[str]):
    """Distinct strings in ascending order, with :meth:`changed` returning a new sequence."""

    __slots__ = ("_chunks", "_firsts", "_starts")

    def __init__(self, keys: Iterable[str] = ()) -> None:
        ordered = sorted(keys)
        self._set(tuple(tuple(ordered[i : i + CHUNK]) for i in range(0, len(ordered), CHUNK)))

    def _set(self, chunks: tuple[tuple[str, ...], ...]) -> None:
        self._chunks = chunks
        #: The first key of each chunk, to find the chunk a key belongs in.
        self._firsts = tuple(chunk[0] for chunk in chunks)
        #: Where each chunk starts, and (last) the length of the whole.
        self._starts = tuple(itertools.accumulate(map(len, chunks), initial=0))

    def changed(self, added: Iterable[str], removed: Iterable[str]) -> SortedKeys:
        """These keys with ``added`` (keys it lacks) and without ``removed`` (keys it has)."""
        gone: dict[int, set[str]] = {}
        come: dict[int, list[str]] = {}
        for key in removed:
            gone.setdefault(self._chunk(key), set()).add(key)
        for key in added:
            come.setdefault(self._chunk(key), []).append(key)
        if not self._chunks:
            return SortedKeys(come.get(0, ()))
        chunks = list(self._chunks)
        for i in sorted(gone.keys() | come.keys(), reverse=True):
            left = gone.get(i, set())
            keys = sorted([k for k in chunks[i] if k not in left] + come.get(i, []))
            half = len(keys) // 2
            parts = [keys] if len(keys) <= 2 * CHUNK else [keys[:half], keys[half:]]
            chunks[i : i + 1] = [tuple(part) for part in parts if part]
        new = SortedKeys.__new__(SortedKeys)
        new._set(tuple(chunks))
        return new

    def _chunk(self, key: str) -> int:
        """The chunk ``key`` is in, or belongs in (the first one for a key below all)."""
        return max(bisect.bisect_right(self._firsts, key) - 1, 0)

    def __len__(self) -> int:
        return self._starts[-1]

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> list[str]: ...
    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step != 1:
                return [self[i] for i in range(start, stop, step)]
            return self._between(start, stop)
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("SortedKeys index out of range")
        i = bisect.bisect_right(self._starts, index) - 1
        return self._chunks[i][index - self._starts[i]]

    def _between(self, start: int, stop: int) -> list[str]:
        keys: list[str] = []
        i = bisect.bisect_right(self._starts, start) - 1
        while start < stop:
            chunk, offset = self._chunks[i], self._starts[i]
            keys += chunk[start - offset : stop - offset]
            start, i = offset + len(chunk), i + 1
        return keys

    def __iter__(self) -> Iterator[str]:
        return itertools.chain.from_iterable(self._chunks)

    def __repr__(self) -> str:
        return f"SortedKeys({list(self)!r})"
