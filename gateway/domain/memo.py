"""Bounded memos for what repeats across a fleet: kept once seen twice.

A fleet repeats itself: the hosts of one building block carry the same
aggregates and traits, the bookings of one flavor the same resource map. Parsing
each spelling once and sharing the result saves time and memory, but an entry
for what only one host has (its labels, with its own hostname; its allocation)
would cost memory for nothing: 2.4 KiB per host of 16 when every map was kept.
So an entry is kept for good only when its key comes a second time, from another
object; until then it waits among a few candidates, which are forgotten all at
once when full. A host repeats itself too (the allocation of each of its two
NUMA cells, its capacity beside its effective capacity at ratio 1): counted as
sightings, such maps kept 45,000 entries at 20,000 demo hosts, 97% of them one
host's own.

The parse memos live as long as the process (parsing runs in sources and worker
threads, far from any request): :data:`PARSING` holds them, and the app reports
them and sets their budget (:func:`set_budget`).
"""

from __future__ import annotations

import functools
import itertools
import pickle
from collections.abc import Callable, Hashable
from typing import Any, Generic, Protocol, TypeVar

from gateway.domain.bounded import Figures, Memos, deep_size

__all__ = ["BUDGET", "PARSING", "Memo", "by_spelling", "readings", "set_budget"]


class Warns(Protocol):
    """What a part parser reads with (a :class:`~gateway.domain.lenient.Reader`)."""

    warnings: list[str]
    #: Which object it reads: the :data:`readings` number of its sightings.
    reading: int


K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
R = TypeVar("R")
W = TypeVar("W", bound=Warns)

#: The parse memos of the process, for the app to report.
PARSING = Memos()
#: Bytes each parse memo may take by default (their entries with all they hold, deep_size).
BUDGET = 16 * 2**20
#: Entries kept for good, per memo: far more kinds than a fleet has.
KEPT = 100_000
#: Entries waiting for a second sighting. What repeats comes again within a few
#: hosts (each brings a handful of entries of its own); what does not is dropped.
CANDIDATES = 512
#: A number for each object read, telling one object's sightings from another's.
readings = itertools.count().__next__


class Memo(Generic[K, V]):
    """Values by key: :meth:`get` finds what :meth:`add` offered, kept once asked for
    while reading another object, while the kept take at most ``max_bytes``
    (key and value with all they hold: :func:`~gateway.domain.bounded.deep_size`)."""

    __slots__ = (
        "_bytes",
        "_candidates",
        "_hits",
        "_kept",
        "_refused",
        "kept",
        "max_bytes",
        "name",
    )

    def __init__(self, name: str, max_bytes: int = BUDGET) -> None:
        #: What it remembers, as /metrics names it.
        self.name = name
        self.max_bytes = max_bytes
        self._kept: dict[K, V] = {}
        # Each candidate with the reading that offered it.
        self._candidates: dict[K, tuple[V, int]] = {}
        self._bytes = 0
        self._hits = 0
        # The budget an entry did not fit in: full, it keeps no more (nor measures).
        self._refused: int | None = None
        #: The value kept for a key, else None: no candidates, but no Python call
        #: either, for the hot loops to try before :meth:`get`.
        self.kept: Callable[[K], V | None] = self._kept.get

    def get(self, key: K, reading: int) -> V | None:
        """The value for ``key``; a candidate another reading offered is kept from now on."""
        found = self._kept.get(key)
        if found is None:
            candidate = self._candidates.get(key)
            if candidate is None:
                return None
            found, offered_by = candidate
            full = len(self._kept) >= KEPT or self._refused == self.max_bytes
            if offered_by != reading and not full:
                size = deep_size(key, found)
                if self._bytes + size <= self.max_bytes:
                    self._kept[key] = found
                    self._bytes += size
                    # Another thread may have kept it first: then it is gone already.
                    self._candidates.pop(key, None)
                else:
                    self._refused = self.max_bytes
        self._hits += 1
        return found

    def add(self, key: K, value: V, reading: int) -> None:
        """Offer ``value`` for ``key`` (not found before): a candidate until another
        reading asks for it."""
        if len(self._candidates) >= CANDIDATES:
            self._candidates.clear()
        self._candidates[key] = (value, reading)

    def __len__(self) -> int:
        """Entries held: kept, and waiting for a second sighting."""
        return len(self._kept) + len(self._candidates)

    def figures(self) -> Figures:
        """The kept entries (the candidates are a few hundred at most), and every value
        found (a candidate's too); a full memo keeps no more, it evicts nothing."""
        return Figures(len(self._kept), self._bytes, self._hits, 0)

    def share(self, key: K, value: V, reading: int) -> V:
        """The value remembered for ``key``, else ``value`` (then offered)."""
        found = self.get(key, reading)
        if found is None:
            self.add(key, value, reading)
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
        found = memo.get(key, reader.reading) if len(key) <= LONGEST else None
        warnings = reader.warnings
        if found is None:
            before = len(warnings)
            found = (parse(reader, part), tuple(warnings[before:]))
            if len(key) <= LONGEST:
                memo.add(key, found, reader.reading)
        else:
            warnings.extend(found[1])
        return found[0]

    return parse_once
