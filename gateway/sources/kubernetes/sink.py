"""What an informer writes into: a store of one resource's records.

The fleet's :class:`~gateway.store.store.Store` (Hypervisors) and the
:class:`~gateway.store.evictions.EvictionStore` both are one: the list+watch
engine (gateway.sources.kubernetes.informer) needs nothing else of them, so it
is written once for both.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol, Self, TypeVar

__all__ = ["Prepared", "Sink", "SinkT"]


class Prepared(Protocol):
    """A parsed part of a complete set, joined with the parts parsed after it."""

    def absorb(self, part: Self) -> None: ...


PreparedT = TypeVar("PreparedT", bound=Prepared)


class Sink(Protocol[PreparedT]):
    """A store that takes complete sets (parsed ahead, possibly in a worker thread) and
    single watch events, each with the resourceVersion it brings the store to."""

    @property
    def ready(self) -> bool: ...

    @property
    def rejected(self) -> Mapping[str, str]: ...

    def prepare(self, objects: Iterable[Any], start: int = 0) -> PreparedT: ...

    def commit(self, prepared: PreparedT, resource_version: str | None = None) -> None: ...

    def mark_ready(self) -> None: ...

    def upsert(self, obj: Any, resource_version: str | None = None) -> None: ...

    def delete(self, name: str, resource_version: str | None = None) -> None: ...

    def advance(self, resource_version: str) -> None: ...


#: The store an informer feeds.
SinkT = TypeVar("SinkT", bound=Sink[Any])
