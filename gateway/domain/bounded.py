"""Memos and caches bounded in bytes, and the registry the app reports them from.

Every memo the gateway keeps grows with what it is asked: spellings of amounts
in objects and in queries, completed objects of answers, filters' selections.
A bound in entries says nothing about memory (one completed object of 50
aliases of every instance is 75 kB, another 100 bytes), so every memo is
bounded in bytes, by a budget the operator can set, and says what it holds.
The app creates one :class:`Memos`, adds every memo it owns to it, and
``/metrics`` reports each one's :class:`Figures` under its name; the sum of
the budgets is what ``serve --help`` states memos may take in all.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterator
from enum import Enum
from typing import Protocol, TypeVar

__all__ = ["Bounded", "BoundedT", "Figures", "Memos", "deep_size"]


@dataclasses.dataclass(frozen=True, slots=True)
class Figures:
    """What a memo holds now, and what it did since it was made."""

    entries: int
    #: The bytes its entries take, as the memo estimates them (at most its budget).
    bytes: int
    hits: int
    #: Entries let go to stay within the bounds.
    evictions: int


class Bounded(Protocol):
    """A memo or cache bounded in bytes."""

    @property
    def name(self) -> str:
        """What it remembers, as /metrics labels it."""
        ...

    @property
    def max_bytes(self) -> int:
        """Its budget: the bytes its entries may take."""
        ...

    def figures(self) -> Figures: ...


BoundedT = TypeVar("BoundedT", bound=Bounded)


class Memos:
    """The memos of one app, by name, for /metrics and for the sum of their budgets."""

    def __init__(self) -> None:
        self._memos: dict[str, Bounded] = {}

    def add(self, memo: BoundedT) -> BoundedT:
        """Report ``memo`` from now on, in place of one of the same name before it."""
        self._memos[memo.name] = memo
        return memo

    def get(self, name: str) -> Bounded | None:
        return self._memos.get(name)

    def __iter__(self) -> Iterator[Bounded]:
        return iter(self._memos.values())

    @property
    def budget(self) -> int:
        """The bytes every memo may take, in all."""
        return sum(memo.max_bytes for memo in self)


_CONTAINERS = (tuple, list, set, frozenset)


def deep_size(*roots: object) -> int:
    """The bytes of ``roots`` and of all they hold, each object counted once.

    Containers and records (msgspec Structs) are walked; None, booleans and enum
    members are the process's own and count nothing. An object two entries share
    is counted in each (a string, an amount), so a memo's sum of its entries is an
    upper bound of what letting them go would free: a budget is never passed.
    """
    seen: set[int] = set()
    total = 0
    stack = list(roots)
    while stack:
        obj = stack.pop()
        if obj is None or type(obj) is bool or isinstance(obj, Enum) or id(obj) in seen:
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        if isinstance(obj, _CONTAINERS):
            stack.extend(obj)
        elif isinstance(obj, dict):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        else:
            stack.extend(getattr(obj, name) for name in getattr(obj, "__struct_fields__", ()))
    return total
