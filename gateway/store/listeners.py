"""Who hears a store's changes: one registry for the fleet's store and the evictions'."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["Listeners"]

log = logging.getLogger(__name__)

S = TypeVar("S")
C = TypeVar("C")


class Listeners(Generic[S, C]):
    """Callables told ``(snapshot, changes)`` after every change, in the order they came.

    A listener that fails is logged and does not keep the others from hearing.
    """

    def __init__(self, what: str) -> None:
        #: What the listeners hear about, for the log.
        self.what = what
        self._listeners: list[Callable[[S, C], None]] = []

    def add(self, listener: Callable[[S, C], None]) -> Callable[[], None]:
        """Tell ``listener`` every change from now on; returns an unsubscribe."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def __len__(self) -> int:
        return len(self._listeners)

    def tell(self, snapshot: S, changes: C) -> None:
        for listener in list(self._listeners):
            try:
                listener(snapshot, changes)
            except Exception:
                log.exception("%s listener failed", self.what)
