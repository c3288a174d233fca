"""The fleet in name order, as a sequence that builds nothing until it is read.

A page of 100 hosts out of 5,000 reads 100 records; materializing the whole
ordered fleet for it (a sort and 5,000 lookups, per snapshot, and under churn
every change makes a snapshot) cost more than the page. The sorted names are
what must be kept: a change that only modifies hosts, by far the most common,
leaves them as they were, so the store hands them from snapshot to snapshot
and each record is looked up by name when it is read.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import overload

from gateway.domain.records import Hypervisor

__all__ = ["Ordered"]


class Ordered(Sequence[Hypervisor]):
    """The records of ``by_name``, in the order of ``names`` (its keys, sorted)."""

    __slots__ = ("_by_name", "names")

    def __init__(self, names: tuple[str, ...], by_name: Mapping[str, Hypervisor]) -> None:
        self.names = names
        self._by_name = by_name

    def __len__(self) -> int:
        return len(self.names)

    @overload
    def __getitem__(self, index: int) -> Hypervisor: ...
    @overload
    def __getitem__(self, index: slice) -> list[Hypervisor]: ...
    def __getitem__(self, index: int | slice) -> Hypervisor | list[Hypervisor]:
        if isinstance(index, slice):
            return [self._by_name[name] for name in self.names[index]]
        return self._by_name[self.names[index]]

    def __iter__(self) -> Iterator[Hypervisor]:
        return map(self._by_name.__getitem__, self.names)
