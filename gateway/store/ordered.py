"""The fleet in name order, as a sequence that builds nothing until it is read.

A page of 100 hosts out of 5,000 reads 100 records; materializing the whole
ordered fleet for it (a sort and 5,000 lookups, per snapshot, and under churn
every change makes a snapshot) cost more than the page. The sorted names are
what must be kept: a change that only modifies hosts, by far the most common,
leaves them as they were, so the store hands them from snapshot to snapshot
and each record is looked up by name when it is read.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from typing import Generic, TypeVar, overload

from gateway.domain.records import Hypervisor

__all__ = ["FLEET_ORDER", "Mapped", "Ordered"]

#: The key of the fleet's own order (a snapshot's names) among the views an answer reads.
FLEET_ORDER: Hashable = ("names",)

_T = TypeVar("_T")
_V = TypeVar("_V")


class Mapped(Sequence[_V], Generic[_T, _V]):
    """``function`` of each of ``items``, made only where it is read."""

    __slots__ = ("_function", "_items")

    def __init__(self, items: Sequence[_T], function: Callable[[_T], _V]) -> None:
        self._items = items
        self._function = function

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, index: int) -> _V: ...
    @overload
    def __getitem__(self, index: slice) -> list[_V]: ...
    def __getitem__(self, index: int | slice) -> _V | list[_V]:
        if isinstance(index, slice):
            return [self._function(item) for item in self._items[index]]
        return self._function(self._items[index])

    def __iter__(self) -> Iterator[_V]:
        return map(self._function, self._items)


class Ordered(Mapped[str, Hypervisor]):
    """The records of ``by_name``, in the order of ``names`` (its keys, sorted).

    ``view``: the key the names are kept under, and the value kept (a filter's
    selection; for the fleet's own, the generation since which it has had these
    hosts): while the same, these are a later snapshot's names too
    (gateway.store.reads).
    """

    __slots__ = ("names", "view")

    def __init__(
        self,
        names: tuple[str, ...],
        by_name: Mapping[str, Hypervisor],
        view: tuple[Hashable, object],
    ) -> None:
        super().__init__(names, by_name.__getitem__)
        self.names = names
        self.view = view
