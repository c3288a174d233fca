"""The parts of an object version spelled as in the version before: read once, then kept.

A region's changes are mostly status patches: a host's allocation and instance
count, written once a minute, 333 times a second at 20,000 hosts. Everything
else in the object is spelled as it was, and reading it again (its quantities,
conditions, cells, host facts, labels) was most of a parse. So an object is read
in parts, each a few places of it read as a whole (``status.cells``; the five
places traits and aggregates come from), and a part spelled as in the version
before is taken from that version's record, with its warnings.

A part's spelling is a digest of its JSON: of its own bytes where the source
left it JSON (gateway.sources.kubernetes.decoding), else of its encoding. JSON
spells some values of YAML (a date, a key 1) as it spells others (a string, a
key "1"): only versions decoded from JSON are compared (the store passes no
version before for a file's objects).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar

import msgspec

__all__ = ["Parts", "Spellings", "decoded", "digest", "is_list"]

T = TypeVar("T")

_encode = msgspec.json.Encoder().encode
#: A part without a digest (JSON cannot spell it): ``hash`` never gives -1.
_UNSPELLED = -1


class Spelled(Protocol):
    """A record of a version: its parts' digests, and its warnings."""

    @property
    def spellings(self) -> bytes: ...

    @property
    def warnings(self) -> tuple[str, ...]: ...


class Parts:
    """The parts of a kind of object, by name: each the paths of its places
    (``status.cells``), which its warnings begin with too."""

    def __init__(self, parts: Mapping[str, tuple[str, ...]]) -> None:
        self._index = {name: index for index, name in enumerate(parts)}
        #: Per part, its places as (section, key): ("status", "cells").
        self.places = tuple(tuple(_split(path) for path in paths) for paths in parts.values())
        #: Per part, how its warnings begin: a place, then ``:``, ``.`` or ``[``.
        self.warned = tuple(
            tuple(f"{path}{after}" for path in paths for after in ":.[") for paths in parts.values()
        )
        self._packing = struct.Struct(f"{len(parts)}q")

    def read(
        self,
        sections: Mapping[str, Mapping[str, Any]],
        warnings: list[str],
        previous: Spelled | None,
    ) -> Spellings:
        """The parts of one version (its ``sections``: "spec" and the others) being read,
        its warnings gathered in ``warnings``, against ``previous``, the record of the
        version before."""
        before = None if previous is None else self._packing.unpack(previous.spellings)
        return Spellings(self, sections, warnings, previous, before)

    def index(self, name: str) -> int:
        return self._index[name]

    def packed(self, digests: list[int]) -> bytes:
        return self._packing.pack(*digests)

    def __len__(self) -> int:
        return len(self.places)


class Spellings:
    """Which parts of one version are spelled as in the version before (:meth:`kept`),
    what is read of them (:meth:`read`, :meth:`values`), and the digests of all of
    them, for its record (:meth:`packed`)."""

    __slots__ = ("_before", "_digests", "_parts", "_previous", "_sections", "_warnings")

    def __init__(
        self,
        parts: Parts,
        sections: Mapping[str, Mapping[str, Any]],
        warnings: list[str],
        previous: Spelled | None,
        before: tuple[int, ...] | None,
    ) -> None:
        self._parts = parts
        self._sections = sections
        self._warnings = warnings
        self._previous = previous
        self._before = before
        self._digests = [_UNSPELLED] * len(parts)

    def kept(self, name: str) -> Any:
        """The record of the version before where the part ``name`` is spelled as there:
        what was read of it then stands, and its warnings are carried over, in their
        place among the others. None where it must be read."""
        part = self._parts.index(name)
        places = [self._sections[section].get(key) for section, key in self._parts.places[part]]
        found = digest(places[0]) if len(places) == 1 else _combined(places)
        if found is None:
            return None
        self._digests[part] = found
        if self._before is None or self._before[part] != found:
            return None
        warned = self._parts.warned[part]
        previous = self._previous
        assert previous is not None  # there is a digest before only with a record
        self._warnings += [w for w in previous.warnings if w.startswith(warned)]
        return previous

    def read(self, name: str, reader: Callable[[Any], T]) -> T:
        """What ``reader`` makes of the part ``name`` (of one place), decoded; or the
        record before's field of that name, where the part is spelled as there."""
        kept = self.kept(name)
        if kept is not None:
            return getattr(kept, name)  # type: ignore[no-any-return]
        (value,) = self.values(name)
        return reader(value)

    def values(self, name: str) -> tuple[Any, ...]:
        """The values of the part ``name``'s places, decoded, to be read."""
        places = self._parts.places[self._parts.index(name)]
        return tuple(decoded(self._sections[section].get(key)) for section, key in places)

    def packed(self) -> bytes:
        """The digests of every part, as the record keeps them (8 bytes each)."""
        return self._parts.packed(self._digests)


def _split(path: str) -> tuple[str, str]:
    section, key = path.split(".")
    return section, key


def digest(part: Any) -> int | None:
    """A digest of how a ``part`` of an object is spelled in JSON: the same for the same
    spelling (in one process), different otherwise but by a chance of 2**-64 (SipHash,
    keyed per process). A fraction of reading the part: a seventh for 40 bookings, a
    quarter for 40 instances; of a part still JSON (:func:`decoded`), its own bytes.
    None for a value JSON cannot spell at all (a null key).
    """
    try:
        return hash(bytes(part) if isinstance(part, msgspec.Raw) else _encode(part))
    except (TypeError, ValueError):
        return None


def _combined(places: list[Any]) -> int | None:
    digests = tuple(digest(place) for place in places)
    return None if None in digests else hash(digests)


def decoded(part: Any) -> Any:
    """A part as decoded JSON: the source may leave parts JSON (a :class:`msgspec.Raw`)
    for the parser to decode only where they changed. Its spelling then is the API
    server's own, so their digests differ from those of the same parts decoded (a part
    is read again, once, where a host's versions came both ways)."""
    return msgspec.json.decode(part) if isinstance(part, msgspec.Raw) else part


def is_list(part: Any) -> bool:
    """Whether a part is a list, or JSON that spells one."""
    if isinstance(part, msgspec.Raw):
        return memoryview(part)[:1].tobytes() == b"["
    return isinstance(part, list)
