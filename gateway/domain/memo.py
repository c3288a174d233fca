"""Bounded memos for what repeats across a fleet: kept once seen twice.

A fleet repeats itself: the hosts of one building block carry the same
aggregates and traits, the bookings of one flavor the same resource map. Parsing
each spelling once and sharing the result saves time and memory, but an entry
for what only one host has (its labels, with its own hostname; its allocation)
would cost memory for nothing: 2.4 KiB per host of 16 when every map was kept.
So an entry is kept for good only when its key comes a second time; until then
it waits among a few candidates, which are forgotten all at once when full.

The parse memos live as long as the process (parsing runs in sources and worker
threads, far from any request): :data:`PARSING` holds them, and the app reports
them and sets their budget (:func:`set_budget`).
"""

from __future__ import annotations

import functools
import pickle
import sys
from collections.abc import Callable, Hashable
from typing import Any, Generic, Protocol, TypeVar

from gateway.domain.bounded import Figures, Memos

__all__ = ["BUDGET", "PARSING", "Memo", "by_spelling", "set_budget"]


class Warns(Protocol):
    """What a part parser reads with (a :class:`~gateway.domain.lenient.Reader`)."""

    warnings: list[str]


K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
R = TypeVar("R")
W = TypeVar("W", bound=Warns)

#: The parse memos of the process, for the app to report.
PARSING = Memos()
#: Bytes each parse memo may take by default (their entries as sys.getsizeof sees them).
BUDGET = 16 * 2**20
#: Entries kept for good, per memo: far more kinds than a fleet has.
KEPT = 100_000
#: Entries waiting for a second sighting. What repeats comes again within a few
#: hosts (each brings a handful of entries of its own); what does not is dropped.
CANDIDATES = 512


class Memo(Generic[K, V]):
    """Values by key: :meth:`get` finds what :meth:`add` offered, kept once asked twice,
    while the kept take at most ``max_bytes`` (key and value, shallow)."""

    __slots__ = ("_bytes", "_candidates", "_hits", "_kept", "kept", "max_bytes", "name")

    def __init__(self, name: str, max_bytes: int = BUDGET) -> None:
        #: What it remembers, as /metrics names it.
        self.name = name
        self.max_bytes = max_bytes
        self._kept: dict[K, V] = {}
        self._candidates: dict[K, V] = {}
        self._bytes = 0
        self._hits = 0
        #: The value kept for a key, else None: no candidates, but no Python call
        #: either, for the hot loops to try before :meth:`get`.
        self.kept: Callable[[K], V | None] = self._kept.get

    def get(self, key: K) -> V | None:
        found = self._kept.get(key)
        if found is None:
            found = self._candidates.pop(key, None)
            if found is not None and len(self._kept) < KEPT:
                size = sys.getsizeof(key) + sys.getsizeof(found)
                if self._bytes + size <= self.max_bytes:
                    self._kept[key] = found
                    self._bytes += size
        if found is not None:
            self._hits += 1
        return found

    def add(self, key: K, value: V) -> None:
        """Offer ``value`` for ``key`` (not found before): a candidate until asked for."""
        if len(self._candidates) >= CANDIDATES:
            self._candidates.clear()
        self._candidates[key] = value

    def __len__(self) -> int:
        """Entries held: kept, and waiting for a second sighting."""
        return len(self._kept) + len(self._candidates)

    def figures(self) -> Figures:
        """The kept entries (the candidates are a few hundred at most, and none is
        counted as a hit until kept); a full memo keeps no more, it evicts nothing."""
        return Figures(len(self._kept), self._bytes, self._hits, 0)

    def share(self, key: K, value: V) -> V:
        """The value remembered for ``key``, else ``value`` (then offered)."""
        found = self.get(key)
        if found is None:
            self.add(key, value)
            return value
        return found


def set_budget(max_bytes: int) -> None:
    """Let every parse memo take up to ``max_bytes`` from now on (what it kept stays)."""
    for memo in PARSING:
        memo.max_bytes = max_bytes  # type: ignore[misc]  # each is a settable attribute


#: Longest spelling remembered: far beyond any real part, and no hostile megabyte.
LONGEST = 16_384


def by_spelling(parse: Callable[[W, Any], R]) -> Callable[[W, Any], R]:
    """``parse(reader, part)`` once per spelling of ``part``, its warnings replayed.

    For parts of an object that repeat across a fleet (memberships, host facts).
    The spelling is the part's pickle, made in C three times as fast as its
    ``repr``: equal bytes are equal values of the same types (``1``, ``True``,
    ``1.0`` and ``"1"`` all differ, unlike in JSON), so they parse alike. The
    part's warnings must depend on nothing but the part (their paths are fixed).
    """
    memo: Memo[bytes, tuple[R, tuple[str, ...]]] = PARSING.add(Memo(parse.__name__))

    @functools.wraps(parse)
    def parse_once(reader: W, part: Any) -> R:
        try:
            key = pickle.dumps(part, pickle.HIGHEST_PROTOCOL)
        except Exception:  # not picklable, or nested too deep: parsed as it is
            return parse(reader, part)
        found = memo.get(key) if len(key) <= LONGEST else None
        warnings = reader.warnings
        if found is None:
            before = len(warnings)
            found = (parse(reader, part), tuple(warnings[before:]))
            if len(key) <= LONGEST:
                memo.add(key, found)
        else:
            warnings.extend(found[1])
        return found[0]

    return parse_once
