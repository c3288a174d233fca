"""One execution per subscription event for every subscriber of the same operation.

A change wakes every subscriber at once, and a dashboard's hundred viewers of
``fleetCapacityChanged`` subscribe with the same document: each executed the
same selection over the same totals, one after another on the event loop,
while every HTTP request waited behind them. The subscription resolvers hand
each subscriber the same payload object for one event (fleet totals are shared
per snapshot, filter and grouping; a host's change per change and kind), so an
event's result is kept under its operation, variables and payload, and the next
subscriber of that operation takes it as it is. :class:`Recent` keeps both: the
results, and the payloads of host changes.

What a subscription event's selection reads is its payload, the snapshot the
payload names (a host's change or a consumer: its links are followed in the
fleet it is part of) and the flavor catalog, so a subscriber may get the result
an earlier one made moments before, of the same event. Documents are parsed once
per text (Strawberry's parser cache), so one text is one operation node. Kept
results hold what they are filed under, so that the ids in a key are not
reused while it is kept. Subscription events run on the event loop only: no
lock.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, NamedTuple, TypeVar

from gateway.domain.bounded import Figures

__all__ = ["Recent"]

T = TypeVar("T")

#: Values kept at most: the events of one wake-up, for every distinct operation. A
#: kept value holds what it was made of (records a change replaced since, among them),
#: so no more are kept than one wake-up's subscribers share.
MAX_KEPT = 64
#: Bytes the values may take, as ``size`` measures them.
MAX_BYTES = 8 * 2**20


class _Kept(NamedTuple, Generic[T]):
    same: tuple[object, ...]
    value: T
    size: int


class Recent(Generic[T]):
    """Values filed under the objects they are made of, the newest kept: at most
    ``max_kept`` of them, of at most ``max_bytes`` in all (``size`` measures one)."""

    def __init__(
        self,
        name: str,
        size: Callable[[T], int],
        max_kept: int = MAX_KEPT,
        max_bytes: int = MAX_BYTES,
    ) -> None:
        self.name = name
        self.size = size
        self.max_kept = max_kept
        self.max_bytes = max_bytes
        self._kept: dict[tuple[Hashable, ...], _Kept[T]] = {}
        self._bytes = 0
        self._hits = 0
        self._evictions = 0

    def __len__(self) -> int:
        return len(self._kept)

    def get(self, same: tuple[object, ...], plain: Hashable = None) -> T | None:
        """What was kept for the objects ``same`` (compared by identity) and ``plain``
        (compared by value), or None."""
        kept = self._kept.get((*map(id, same), plain))
        if kept is not None and all(a is b for a, b in zip(kept.same, same, strict=True)):
            self._hits += 1
            return kept.value
        return None

    def put(self, same: tuple[object, ...], value: T, plain: Hashable = None) -> None:
        size = self.size(value)
        if size > self.max_bytes:
            return
        key = (*map(id, same), plain)
        replaced = self._kept.pop(key, None)
        if replaced is not None:
            self._bytes -= replaced.size
        self._kept[key] = _Kept(same, value, size)
        self._bytes += size
        while len(self._kept) > self.max_kept or self._bytes > self.max_bytes:
            self._bytes -= self._kept.pop(next(iter(self._kept))).size
            self._evictions += 1

    def figures(self) -> Figures:
        return Figures(len(self._kept), self._bytes, self._hits, self._evictions)
