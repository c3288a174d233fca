"""Running sums per group of hosts: kept up to date per change, not recounted per question.

Fleet totals and slot counts are sums over hosts. Under churn (every node agent
writes its status about once a minute: 83 changes/s at 5,000 hosts) recounting
them from every host for every question costs a pass over the fleet per answer;
keeping them costs, per change, the changed host's own figures: subtract what
the host added before, add what it adds now. Exact decimals make this exact, as
long as every sum also counts its terms, so that a sum whose last known term
went away is unknown again rather than a zero.

A :class:`Ledger` is immutable, as snapshots are: :meth:`Ledger.apply` returns a
new one that shares every group the change did not touch.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Hashable, Iterable, Mapping
from decimal import Decimal

from gateway.domain.quantity import CONTEXT
from gateway.domain.records import Hypervisor

__all__ = ["Cells", "Entry", "Ledger", "Tally", "Vector"]

#: Numbers summed together, element by element; element 0 counts the hosts in the sum.
Vector = tuple[Decimal, ...]
#: What one host adds to one cell: (group key, cell key, its numbers).
Entry = tuple[Hashable, Hashable, Vector]
#: A host's entries. Must be a pure function of the host, and hashable: it names the ledger.
Tally = Callable[[Hypervisor], Iterable[Entry]]


class Cells(dict[Hashable, Vector]):
    """Cell key -> the sums of one group, and what a reader made of them (``made``).

    A change copies only the groups it touches, so an untouched group's sums are
    the same object in every ledger after it: what was made of them is kept on
    them, shared the same way, and let go with the last ledger holding them.
    """

    __slots__ = ("made",)

    def __init__(self, sums: Mapping[Hashable, Vector] | None = None) -> None:
        super().__init__(() if sums is None else sums)
        #: Whatever a reader made of these sums last (fleet totals), or None.
        self.made: object = None


#: What one sum takes (a Decimal of a few digits), for :meth:`Ledger.nbytes`.
_DECIMAL_BYTES = sys.getsizeof(Decimal("12345.678"))


class Ledger:
    """Sums per group and cell of what ``tally`` says of each host."""

    # Weakly referable: an answer's reads name the ledger it read (gateway.store.reads).
    __slots__ = ("__weakref__", "_nbytes", "groups", "tally")

    def __init__(self, tally: Tally, groups: dict[Hashable, Cells]) -> None:
        self.tally = tally
        #: Group key -> cell key -> sums; a cell (and a group) without hosts is absent.
        self.groups = groups
        #: What the groups' sums take (:meth:`nbytes`), once counted.
        self._nbytes: int | None = None

    @classmethod
    def of(cls, tally: Tally, hypervisors: Iterable[Hypervisor]) -> Ledger:
        """The sums over ``hypervisors``, counted from scratch."""
        groups: dict[Hashable, Cells] = {}
        for hypervisor in hypervisors:
            for key, cell, vector in tally(hypervisor):
                cells = groups.get(key)
                if cells is None:
                    cells = groups[key] = Cells()
                known = cells.get(cell)
                cells[cell] = vector if known is None else tuple(map(CONTEXT.add, known, vector))
        return cls(tally, groups)

    def apply(self, removed: Iterable[Hypervisor], added: Iterable[Hypervisor]) -> Ledger:
        """These sums without the ``removed`` records (each one counted here) and with
        the ``added`` ones: a change's previous and new states.

        An entry a change leaves as it was (a status patch moves one figure of one
        resource, not the host's count or its other resources) is neither subtracted
        nor added again, and a change that moves nothing counted here returns this
        ledger itself: what readers made of its groups stays theirs.
        """
        subtracted, summed = _moved(self.tally, removed, added)
        if not subtracted and not summed:
            return self
        groups = dict(self.groups)
        copied: set[Hashable] = set()

        def cells_of(key: Hashable) -> Cells:
            if key not in copied:
                copied.add(key)
                groups[key] = Cells(groups.get(key))
            return groups[key]

        for key, cell, vector in subtracted:
            cells = cells_of(key)
            left = tuple(map(CONTEXT.subtract, cells[cell], vector))
            if left[0]:
                cells[cell] = left
            else:
                del cells[cell]
        for key, cell, vector in summed:
            cells = cells_of(key)
            known = cells.get(cell)
            cells[cell] = vector if known is None else tuple(map(CONTEXT.add, known, vector))
        for key in copied:
            if not groups[key]:
                del groups[key]
        ledger = Ledger(self.tally, groups)
        if self._nbytes is not None:  # the copied groups' bytes for theirs before
            before = sum(_group_bytes(self.groups.get(key)) for key in copied)
            after = sum(_group_bytes(groups.get(key)) for key in copied)
            ledger._nbytes = self._nbytes + after - before
        return ledger

    def nbytes(self) -> int:
        """The memory its sums take, estimated: every cell counted as its own (a ledger
        carried by a change shares the groups the change did not touch). Counted once,
        then carried by :meth:`apply` over the groups a change copied."""
        if self._nbytes is None:
            self._nbytes = sum(map(_group_bytes, self.groups.values()))
        return sys.getsizeof(self.groups) + self._nbytes


def _moved(
    tally: Tally, removed: Iterable[Hypervisor], added: Iterable[Hypervisor]
) -> tuple[list[Entry], list[Entry]]:
    """The entries of ``removed`` and of ``added`` that do not cancel out: an entry
    of each with the same group, cell and numbers is left out of both."""
    before: dict[tuple[Hashable, Hashable], list[Vector]] = {}
    for hypervisor in removed:
        for key, cell, vector in tally(hypervisor):
            before.setdefault((key, cell), []).append(vector)
    summed: list[Entry] = []
    for hypervisor in added:
        for key, cell, vector in tally(hypervisor):
            vectors = before.get((key, cell))
            if vectors and vector in vectors:
                vectors.remove(vector)
            else:
                summed.append((key, cell, vector))
    subtracted = [(key, cell, v) for (key, cell), vectors in before.items() for v in vectors]
    return subtracted, summed


def _group_bytes(cells: Cells | None) -> int:
    """What one group's sums take, estimated; none for a group not there."""
    if cells is None:
        return 0
    size = sys.getsizeof(cells)
    for vector in cells.values():
        size += sys.getsizeof(vector) + _DECIMAL_BYTES * len(vector)
    return size
