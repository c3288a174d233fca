"""Reading JSON-like values leniently: a wrong type or a bad amount is a warning.

Objects come from a cluster (or files) that the gateway does not control. Each
accessor here returns a value of the expected type or a neutral default, and
records a warning naming the path of what it could not use, so that a parser
built on it never fails on bad data and never hides it.
"""

from __future__ import annotations

import itertools
import reprlib
import sys
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, TypeVar

from gateway.domain.bounded import Figures
from gateway.domain.memo import BUDGET, PARSING, Memo, readings
from gateway.domain.quantity import QuantityError, parse_number, parse_quantity

__all__ = [
    "INT_MAX",
    "INT_MIN",
    "STRINGS",
    "Reader",
    "SharedStrings",
    "bound_shared",
    "remembered",
    "share",
    "shared_string",
]


#: The integers the API's Int carries: GraphQL's Int is a signed 32-bit integer.
INT_MIN, INT_MAX = -(2**31), 2**31 - 1


class Reader:
    """Reads one object, collecting warnings with the path they concern."""

    def __init__(self) -> None:
        self.warnings: list[str] = []
        #: Which object this is, for the memos to tell its sightings from another's.
        self.reading = readings()
        # Its strings are shared with `share`, which does not look at the bound: what
        # one object adds comes before the next reader's check (see SharedStrings).
        bound_shared()

    def warn(self, path: str, message: str) -> None:
        self.warnings.append(f"{path}: {message}")

    def mapping(self, value: Any, path: str) -> Mapping[str, Any]:
        if type(value) is dict:  # the common case, without an ABC check
            return value
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            self.warn(path, f"expected an object, got {type(value).__name__}; ignored")
            return {}
        return value

    def items(self, value: Any, path: str) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            self.warn(path, f"expected a list, got {type(value).__name__}; ignored")
            return []
        return value

    def string(self, value: Any, path: str) -> str | None:
        if value is None or isinstance(value, str):
            return value
        self.warn(path, f"expected a string, got {type(value).__name__}; ignored")
        return None

    def shared(self, value: Any, path: str) -> str | None:
        """A string that repeats across a fleet (a reason, a zone): one copy is kept."""
        if type(value) is str:  # the common case, without a call
            return share(value, value)
        text = self.string(value, path)
        return None if text is None else share(text, text)

    def strings(self, value: Any, path: str) -> tuple[str, ...]:
        items = (self.string(v, f"{path}[{i}]") for i, v in enumerate(self.items(value, path)))
        return tuple(s for s in items if s is not None)

    def string_map(self, value: Any, path: str) -> Mapping[str, str]:
        """A map of strings (labels, metadata); other values are warned about and left out.

        ``str()`` would turn a YAML ``null`` into the label value ``"None"``. Keys
        and values are shared: hosts carry the same labels and facts, by and large.
        """
        result: dict[str, str] = {}
        for key, item in self.mapping(value, path).items():
            # Paths are spelled out only for a warning.
            text = share(item, item) if type(item) is str else self.shared(item, f"{path}.{key}")
            if text is not None:
                name = key if type(key) is str else str(key)
                result[share(name, name)] = text
        return _shared(result, self.reading)

    def boolean(self, value: Any, path: str) -> bool | None:
        if value is None or isinstance(value, bool):
            return value
        self.warn(path, f"expected a boolean, got {type(value).__name__}; ignored")
        return None

    def integer(self, value: Any, path: str) -> int | None:
        """An integer as the API shows it (GraphQL's Int: 32 bits, signed)."""
        if value is None or (type(value) is int and INT_MIN <= value <= INT_MAX):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            self.warn(path, f"{value} is beyond the 32-bit integers the API shows; ignored")
        else:
            self.warn(path, f"expected an integer, got {reprlib.repr(value)}; ignored")
        return None

    def amounts(self, value: Any, path: str) -> Mapping[str, Decimal]:
        """A resource map; a bad quantity is warned about and left out.

        Every amount the gateway reads (capacity, allocation, a booking) counts
        something a host has or uses, so a negative one is as bad as a typo:
        summed, it would hide a booking or make a host look over-subscribed.

        Bookings of one flavor carry the same map: equal maps are shared (records
        never change them), which saves most of a large fleet's memory for them.
        """
        mapping = self.mapping(value, path)
        try:
            key = tuple(mapping.items())
            known = _READ.get(key, self.reading)
        except TypeError:  # an unhashable value (a list, say): not a quantity either
            key, known = None, None
        if known is not None:
            return known
        result: dict[str, Decimal] = {}
        for name, raw in mapping.items():
            try:
                amount = parse_quantity(raw)
            except QuantityError as error:
                self.warn(f"{path}.{name}", f"{error}; left out of all sums")
                continue
            if amount < 0:
                self.warn(f"{path}.{name}", f"negative amount {amount}; left out of all sums")
                continue
            result[str(name)] = amount
        shared = _shared(result, self.reading)
        # Only maps of strings that read cleanly are remembered by their spelling:
        # a key with True in it can then never find the entry of one with 1.
        if (
            key is not None
            and len(shared) == len(mapping)
            and all(type(raw) is str for _, raw in key)
        ):
            _READ.add(key, shared, self.reading)
        return shared

    def ratios(self, value: Any, path: str) -> Mapping[str, Decimal]:
        """Overcommit ratios: plain numbers >= 1.0 (the CRD's CEL rule), not quantities."""
        result: dict[str, Decimal] = {}
        for name, raw in self.mapping(value, path).items():
            try:
                ratio = parse_number(raw)
            except QuantityError as error:
                self.warn(f"{path}.{name}", f"{error}; ratio 1.0 used")
                continue
            if ratio < 1:
                self.warn(f"{path}.{name}", f"ratio {raw!r} is below 1.0; ratio 1.0 used")
                continue
            result[str(name)] = ratio
        return _shared(result, self.reading)


_MAPS: Memo[tuple[tuple[str, Any], ...], Mapping[str, Any]] = PARSING.add(Memo("maps"))
#: Resource maps as spelled in objects -> their parsed (shared) maps.
_READ: Memo[tuple[tuple[Any, Any], ...], Mapping[str, Decimal]] = PARSING.add(Memo("resource maps"))
_V = TypeVar("_V")


class SharedStrings:
    """One copy of each string that repeats across a fleet (a project, a consumer type).

    Bounded in entries and in bytes, and let go all at once past either (a fleet's
    own strings, over months of changes): the strings made next are shared again.
    The bytes are measured every :data:`CHECK_EVERY` new strings (so they may pass
    the budget by as many strings before they go), and the hot loops pay one
    comparison per call of :meth:`bound`. Each string is measured once: strings are
    only ever added, in order, or let go all at once (measuring all of them at every
    check took 6% of a start at 20,000 hosts, 100,000 strings).
    """

    name = "shared strings"
    #: New strings between two measurements of the bytes.
    CHECK_EVERY = 1024

    def __init__(self, max_entries: int = 100_000, max_bytes: int = BUDGET) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.strings: dict[str, str] = {}
        self.evictions = 0
        self._check_at = self.CHECK_EVERY
        # The first string when last measured, how many were, and their bytes.
        self._measured: tuple[str | None, int, int] = (None, 0, 0)

    def bound(self) -> None:
        """Let the strings go once there are too many, or they take too much."""
        count = len(self.strings)
        if count >= self._check_at or count >= self.max_entries:
            if count >= self.max_entries or self._bytes() > self.max_bytes:
                self.evictions += count
                self.strings.clear()
            self._check_at = len(self.strings) + self.CHECK_EVERY

    def figures(self) -> Figures:
        return Figures(len(self.strings), self._bytes(), 0, self.evictions)

    def _bytes(self) -> int:
        strings = self.strings
        first, count, nbytes = self._measured
        if next(iter(strings), None) is not first or len(strings) < count:
            first, count, nbytes = next(iter(strings), None), 0, 0  # let go since
        # The newest strings are the last. An estimate: one a parsing thread adds while
        # this runs may be counted twice, or another not at all.
        new = list(itertools.islice(reversed(strings), len(strings) - count))
        nbytes += sum(map(sys.getsizeof, new))
        self._measured = (first, count + len(new), nbytes)
        return nbytes


STRINGS = PARSING.add(SharedStrings())
#: ``share(text, text)`` is :func:`shared_string` without a Python call, for the hot
#: loops of a :class:`Reader`, made after a look at the bound: each object read adds
#: only its own strings to it.
share = STRINGS.strings.setdefault


def _shared(mapping: dict[str, _V], reading: int) -> Mapping[str, _V]:
    """One copy of equal maps (never changed once read) that repeat across a fleet."""
    return _MAPS.share(tuple(mapping.items()), mapping, reading)


def remembered(value: Any, reading: int) -> Mapping[str, Decimal] | None:
    """The map :meth:`Reader.amounts` read from a resource map spelled like ``value``
    before, if it did (and it had no warning); without a path, for the hot loops
    that try it first (``reading``: their :class:`Reader`'s)."""
    if type(value) is not dict:
        return None
    try:
        key = tuple(value.items())
        return _READ.kept(key) or _READ.get(key, reading)
    except TypeError:  # an unhashable value: not a quantity, and never remembered
        return None


def shared_string(text: str) -> str:
    """One copy of a string that repeats across a fleet (a project, a consumer type)."""
    bound_shared()
    return share(text, text)


def bound_shared() -> None:
    """Keep the shared strings within their bounds (see :class:`SharedStrings`)."""
    STRINGS.bound()
