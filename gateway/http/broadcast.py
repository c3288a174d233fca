"""An event subscription run once for all its subscribers, each sent the same text.

``hypervisorChanged`` sends every change to every subscriber, and all the
subscribers of one operation (its document, variables and operation name) get
the same messages. Run one by one, each subscriber went through the same chain
alone for every message: its own queue of commits, the resolver's generator,
graphql-core's mapping, Strawberry's result handling and extension hooks, its
message built, encoded and compressed. At 100 subscribers and 50 changes a
second that chain was half of the gateway's samples, ~86 µs a message; at 20,000
hosts and 500 changes a second, 20 such subscribers (10,000 messages a second)
fell a thousand commits behind and were cut off.

Here one :class:`Broadcast` per operation runs the subscription: each event is
executed once and its payload encoded once, and every subscriber is handed
that text. Nothing of an event is kept in the store's memos of answers
(``Executor.remembers``): no other operation could take it. A subscriber
(:class:`Member`) is written its frame (the payload inside its operation id) at
once, where its connection can take it (gateway.http.frames); otherwise it keeps
the payloads it has yet to send in a queue of its own and writes them from its
own task, so a slow socket holds up no one else. Two rules keep each
subscriber's stream what it was alone:

* It sees the changes made after it subscribed, and only those: an event's
  payload names the store generation its change made (``generation``), and a
  subscriber takes the events of generations after the one current when it
  joined, whether the broadcast's source is behind the store or not.
* It is cut off as the change feed cuts off a subscriber behind
  (:class:`gateway.store.feed.Lagging`): more than ``queue_limit`` payloads, or
  :data:`MAX_PENDING_BYTES` of them, unsent, and its connection is closed with
  1013 ("reconnect to resume"). A broadcast that itself falls ``queue_limit``
  commits behind the store cuts off every member.

An operation whose events, or whose subscribers' first messages, differ by
subscriber (``consumerChanged``, ``fleetCapacityChanged``) is not broadcast:
:data:`gateway.api.subscriptions.BROADCAST` names the fields that are.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable, Iterator
from typing import Any, cast

import msgspec
from graphql import DocumentNode, ExecutionResult, GraphQLError, GraphQLSchema
from graphql.execution import create_source_event_stream

from gateway.api.context import Context
from gateway.api.executor import Executor
from gateway.http.execution import forget_tracebacks

__all__ = ["MAX_PENDING_BYTES", "Broadcast", "Broadcasts", "Member"]

log = logging.getLogger(__name__)

#: The text a subscriber may have unsent before it is cut off: the payloads are
#: shared by the members, but a slow one keeps them alive.
MAX_PENDING_BYTES = 32 * 2**20

#: Sends one frame's text on a subscriber's connection.
Send = Callable[[str], Awaitable[None]]
#: Writes one frame's text on a subscriber's connection now; False when it cannot
#: take one now (its writes are paused), and the frame is to wait.
Write = Callable[[str], bool]
#: An event's errors as its subscribers read them (gateway.http.execution.mask).
Mask = Callable[[list[GraphQLError]], list[GraphQLError]]


class Member:
    """One subscriber of a broadcast: its frames (``prefix``, a payload, ``}``) written
    at once by ``write``, or the payloads it has yet to send, in order.

    Iterating :meth:`frames` gives the frames that could not be written at once, as
    they come; it ends when the broadcast ends or cuts it off.
    """

    __slots__ = (
        "_pending",
        "_ready",
        "_sending",
        "context",
        "ended",
        "limit",
        "max_bytes",
        "pending_bytes",
        "prefix",
        "since",
        "write",
    )

    def __init__(
        self,
        context: Context,
        prefix: str,
        since: int,
        limit: int,
        max_bytes: int = MAX_PENDING_BYTES,
        write: Write | None = None,
    ) -> None:
        self.context = context
        self.write = write
        #: The frame's text before its payload: its operation id and message type.
        self.prefix = prefix
        #: The store generation current when it joined: it takes the later ones' events.
        self.since = since
        self.limit = limit
        self.max_bytes = max_bytes
        self.ended = False
        self._pending: deque[str] = deque()
        #: The length of the payloads in ``_pending``.
        self.pending_bytes = 0
        self._sending = False
        self._ready = asyncio.Event()

    def put(self, payload: str) -> None:
        if self.ended:
            return
        # Written at once only behind nothing: a frame queued or being sent goes first.
        queued = self._pending or self._sending
        if not queued and self.write is not None and self.write(self._frame(payload)):
            return
        if len(self._pending) >= self.limit or self.pending_bytes > self.max_bytes:
            log.warning(
                "a subscriber of every change has %d messages (%d bytes) unsent (its client "
                "reads too slowly): closing its connection (1013)",
                len(self._pending),
                self.pending_bytes,
            )
            self.cut_off()
            return
        self._pending.append(payload)
        self.pending_bytes += len(payload)
        self._ready.set()

    def cut_off(self) -> None:
        """Too far behind: its connection is told (1013), and it ends without the rest."""
        self._pending.clear()
        self.pending_bytes = 0
        self.end()
        self.context.cut_off()

    def end(self) -> None:
        self.ended = True
        self._ready.set()

    def _frame(self, payload: str) -> str:
        return f"{self.prefix}{payload}}}"

    async def frames(self) -> AsyncIterator[str]:
        while True:
            await self._ready.wait()
            self._ready.clear()
            # All that came meanwhile, in one turn: the frames of a member behind go
            # out together (gateway.http.frames writes them in one system call).
            while self._pending:
                payload = self._pending.popleft()
                self.pending_bytes -= len(payload)
                self._sending = True  # put writes nothing at once before it is sent
                yield self._frame(payload)
                self._sending = False
            if self.ended:
                return


class Broadcast:
    """One subscription operation's source, run for all its members."""

    def __init__(
        self, key: Hashable, executor: Executor, events: AsyncIterator[Any], queue_limit: int
    ) -> None:
        self.key = key
        self._executor = executor
        self._events = events
        self.queue_limit = queue_limit
        self.members: set[Member] = set()
        #: The payload that ended it (the source's failure), for a member joining late.
        self._failure: str | None = None
        self.ended = False
        self.task: asyncio.Task[None] | None = None

    def join(self, context: Context, prefix: str, write: Write | None = None) -> Member:
        generation = context.store.snapshot.generation
        member = Member(context, prefix, generation, self.queue_limit, write=write)
        if self.ended:  # between its source's failure and its leaving the running ones
            if self._failure is not None:
                member.put(self._failure)
            member.end()
        self.members.add(member)
        return member

    def cut_off(self) -> None:
        """The source fell behind the store: no member can be told every change."""
        log.warning(
            "a broadcast fell %d changes behind the store: closing the connections of "
            "its %d subscribers (1013)",
            self.queue_limit,
            len(self.members),
        )
        for member in list(self.members):
            member.cut_off()

    async def run(self, mask: Mask) -> None:
        """Every event, executed and encoded once, to every member that takes it; the
        source's failure, as graphql-core words it, to every member, ending them."""
        try:
            async with contextlib.aclosing(self._events):  # type: ignore[type-var]
                async for payload in self._events:
                    event = self._executor.build_per_event_executor(payload)
                    result = event.execute_operation(False)
                    if self._executor.is_awaitable(result):
                        result = await result
                    payload_text = _encoded(result, mask)
                    for member in self.members:
                        if payload.generation > member.since:
                            member.put(payload_text)
        except Exception as error:  # the source's own failure (Lagging among them)
            failed = error
            if not isinstance(failed, GraphQLError):
                failed = GraphQLError(str(error), original_error=error)
            self._failure = _encoded(ExecutionResult(None, [failed]), mask)
            for member in self.members:
                member.put(self._failure)
        finally:
            self.ended = True
            for member in self.members:
                member.end()


def _encoded(result: ExecutionResult, mask: Mask) -> str:
    """An event's result as a message's payload, its errors masked once for all."""
    if result.errors:
        result = ExecutionResult(result.data, mask(result.errors))
    return msgspec.json.encode(result.formatted).decode()


class Broadcasts:
    """The broadcasts running, one per operation and variables, while they have members.

    ``mask`` words the events' errors for the members. ``queue_limit``: the payloads
    a member may have unsent before it is cut off, and the commits the source may be
    behind the store (the change feed's ``queue_limit``).
    """

    def __init__(
        self,
        schema: GraphQLSchema,
        mask: Mask,
        queue_limit: int = 1000,
    ) -> None:
        self.schema = schema
        self.mask = mask
        self.queue_limit = queue_limit
        self._running: dict[Hashable, Broadcast] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def members(self) -> int:
        return sum(len(b.members) for b in self._running.values())

    @property
    def pending_bytes(self) -> int:
        """The text the members have yet to send, as each counts it (they share it)."""
        return sum(m.pending_bytes for b in self._running.values() for m in b.members)

    def __len__(self) -> int:
        return len(self._running)

    async def start(
        self,
        key: Hashable,
        document: DocumentNode,
        variables: dict[str, Any] | None,
        operation_name: str | None,
        context: Context,
    ) -> Broadcast | ExecutionResult:
        """The operation's broadcast, started if none runs; or the errors that stop it
        before its first event (variables that do not coerce, a failing resolver)."""
        running = self._running.get(key)
        if running is not None:
            return running
        broadcast: Broadcast | None = None

        def lagging() -> None:
            if broadcast is not None:
                broadcast.cut_off()

        shared = context.detached(on_lag=lagging)
        built = Executor.build(self.schema, document, None, shared, variables, operation_name)
        if isinstance(built, list):
            return ExecutionResult(None, built)
        # Its events' results, and the objects in them, are for its members alone.
        cast("Executor", built).remembers = False
        events = create_source_event_stream(built)
        if built.is_awaitable(events):
            events = await events
        if isinstance(events, ExecutionResult):
            return events
        running = self._running.get(key)  # another subscriber started it meanwhile
        if running is not None:
            await events.aclose()  # type: ignore[union-attr]
            return running
        broadcast = Broadcast(key, built, events, self.queue_limit)  # type: ignore[arg-type]
        self._running[key] = broadcast
        broadcast.task = task = asyncio.create_task(self._run(broadcast))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        # One turn of the loop: the source takes its place in the change feed (its
        # resolver runs up to its first wait) before any member counts on it.
        await asyncio.sleep(0)
        return broadcast

    async def _run(self, broadcast: Broadcast) -> None:
        try:
            await broadcast.run(self.mask)
        except asyncio.CancelledError as ended:
            forget_tracebacks([ended])  # its frames hold the last change: see there
            raise
        finally:
            self._forget(broadcast)

    def _forget(self, broadcast: Broadcast) -> None:
        if self._running.get(broadcast.key) is broadcast:
            del self._running[broadcast.key]

    @contextlib.contextmanager
    def member(
        self, broadcast: Broadcast, context: Context, prefix: str, write: Write | None = None
    ) -> Iterator[Member]:
        """``context``'s subscriber in ``broadcast`` while in the block (written to by
        ``write``, where its connection offers one); the broadcast stops with its last
        member."""
        member = broadcast.join(context, prefix, write)
        try:
            yield member
        finally:
            broadcast.members.discard(member)
            if not broadcast.members:
                self._forget(broadcast)  # a new subscriber starts a new one
                if broadcast.task is not None:
                    broadcast.task.cancel()


async def send_frames(member: Member, send: Send) -> None:
    """Write ``member``'s frames that could not be written at once to its connection,
    until it ends."""
    async for frame in member.frames():
        await send(frame)
