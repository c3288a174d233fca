"""Fan-out of store changes to subscribers, with bounded memory per subscriber.

Two kinds of subscriber, because two kinds of question are asked:

* an *event stream* (``hypervisorChanged``, ``consumerChanged``) must see every
  change, in order, with the fleet it was made in. Its queue holds the store's
  commits (their snapshots shared by every stream) and is bounded, in commits; a
  subscriber that falls that far behind is cut off with :class:`Lagging` rather
  than letting its queue (and our memory) grow without end, or silently dropping
  events it would then never know it missed.
* a *latest value* (``fleetCapacityChanged``) only needs to know that something
  changed; it then reads the newest snapshot. It never queues anything, so a slow
  reader costs nothing and always gets the latest state.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Generic, NamedTuple, Protocol, TypeVar

from gateway.store.snapshot import Change, ChangeType, Snapshot

__all__ = ["ChangeFeed", "Changing", "Commit", "Feed", "Lagging"]

S = TypeVar("S")
C = TypeVar("C")
S_co = TypeVar("S_co", covariant=True)
C_co = TypeVar("C_co", covariant=True)


class Lagging(Exception):
    """The subscriber fell more than its queue's length behind the store: that many
    commits (one watch event, or one relist however many hosts it changed)."""


class Commit(NamedTuple, Generic[S, C]):
    """The changes the store made at once, and the snapshots before and after them."""

    changes: Sequence[C]
    before: S
    after: S

    def holding(self, change: Change) -> S:
        """The snapshot a fleet ``change``'s record is in: the one made, or for a
        deletion the one before."""
        return self.before if change.type is ChangeType.DELETED else self.after


class Changing(Protocol[S_co, C_co]):
    """A store that swaps immutable snapshots and tells listeners the changes between."""

    @property
    def snapshot(self) -> S_co: ...

    def listen(self, listener: Callable[[S_co, Sequence[C_co]], None]) -> Callable[[], None]: ...


class _Stream(Generic[S, C]):
    def __init__(self, limit: int, on_lag: Callable[[], None] | None) -> None:
        self.queue: asyncio.Queue[Commit[S, C]] = asyncio.Queue(limit)
        self.lagging = False
        self.on_lag = on_lag

    def put(self, commit: Commit[S, C]) -> None:
        if self.lagging:
            return
        try:
            self.queue.put_nowait(commit)
        except asyncio.QueueFull:
            self.lagging = True
            # Wake the reader so it learns it lags now, not after the backlog (what it
            # then gets is not read); and tell the connection, whose reader may be
            # stuck writing to a stalled socket.
            self.queue.get_nowait()
            self.queue.put_nowait(commit)
            if self.on_lag is not None:
                self.on_lag()


class ChangeFeed(Generic[S, C]):
    """Listens to a store and hands its changes to any number of subscribers.

    Any store of snapshots (:class:`Changing`): the fleet's, and its evictions'.
    """

    def __init__(self, store: Changing[S, C], *, queue_limit: int = 1000) -> None:
        self.store = store
        self.queue_limit = queue_limit
        self._streams: set[_Stream[S, C]] = set()
        #: Subscribers that only want the latest state (fleetCapacityChanged).
        self.latest_readers = 0
        # Set, then replaced, on every change: waiters hold the one current when they began.
        self._changed = asyncio.Event()
        self._unlisten: Callable[[], None] | None = None
        #: The snapshot of the last change heard: the fleet before the next one.
        self._seen = store.snapshot

    def start(self) -> None:
        self._seen = self.store.snapshot
        self._unlisten = self.store.listen(self._on_change)

    def stop(self) -> None:
        if self._unlisten is not None:
            self._unlisten()
            self._unlisten = None

    @property
    def subscribers(self) -> int:
        return len(self._streams)

    def _on_change(self, snapshot: S, changes: Sequence[C]) -> None:
        commit = Commit(changes, self._seen, snapshot)
        self._seen = snapshot
        for stream in self._streams:
            stream.put(commit)
        self._changed.set()
        self._changed = asyncio.Event()

    @contextlib.contextmanager
    def changes(
        self, on_lag: Callable[[], None] | None = None
    ) -> Iterator[AsyncIterator[Commit[S, C]]]:
        """Every commit of changes from entering on, in order, read as the subscriber
        pleases: the ones made meanwhile wait for it. Raises :class:`Lagging` if too
        slow, and calls ``on_lag`` the moment the queue overflows."""
        stream: _Stream[S, C] = _Stream(self.queue_limit, on_lag)
        self._streams.add(stream)
        try:
            yield self._read(stream)
        finally:
            self._streams.discard(stream)

    async def _read(self, stream: _Stream[S, C]) -> AsyncIterator[Commit[S, C]]:
        while True:
            # A subscriber behind reads its backlog to the end in one turn of the loop:
            # a pause every few commits let it read that many a turn, and when the
            # informer applied more a turn (a busy loop turns slowly) it fell behind
            # for good (bench.ceiling: cut off at 1,000 changes/s). The subscribers of
            # one operation share their run of it (gateway.http.broadcast), not the
            # moments they read a commit.
            commit = await stream.queue.get()
            if stream.lagging:
                raise Lagging(
                    f"subscriber fell more than {self.queue_limit} updates behind; "
                    "subscribe again to resume from the current state"
                )
            yield commit

    async def snapshots(self, interval: float) -> AsyncIterator[S]:
        """The current snapshot at once, then the newest one after each change,
        at most once per ``interval`` seconds (changes in between coalesce)."""
        self.latest_readers += 1
        try:
            seen = self.store.snapshot
            yield seen
            while True:
                await asyncio.sleep(interval)
                if self.store.snapshot is seen:
                    await self._changed.wait()
                seen = self.store.snapshot
                yield seen
        finally:
            self.latest_readers -= 1


class Feed(ChangeFeed[Snapshot, Change]):
    """The fleet's change feed: of hypervisors."""
