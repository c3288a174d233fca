"""Running operations off the event loop, within the time, size and concurrency limits.

One :class:`Execution` serves both transports, so a query costs the same slot,
time and bytes whether it came over HTTP or WebSocket. Of the operations admitted
(``Limits.max_concurrent``), a few run in worker threads at once
(``Limits.max_running``) and the others wait their turn, as long as one may run;
one estimated cheap (below) takes no turn. The concurrency slot is taken and
given back on the event loop, around the waits for a turn and for the worker
thread: however they end (an answer, the deadline, the request cancelled, the
thread never started), the slot is free again. The thread itself stops at its
deadline (gateway.api.budget), and is told to stop as soon as nobody waits for it.

An operation whose estimated cost is small (``Limits.inline_cost``: a lookup, the
fleet's totals, a page) runs on the event loop instead: its work is shorter than
a thread's handoff, and under churn, with the loop applying changes and the
threads contending for the interpreter, that handoff was most of its time. So
does one that is small but for a filter's scan (``canFit``'s count): the store
keeps the hosts a filter selects from change to change once asked. One that
meets work its estimate could not see (past gateway.api.budget's INLINE_BYTES or
INLINE_SECONDS: a host of 200,000 instances, where the estimate knows the fleet's
usual lists), or a scan not kept (the first count of a total, or of a filter's
hosts, that the store then keeps), stops there and runs again in a worker thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any, TypeVar

import anyio.to_thread
from graphql import (
    DocumentNode,
    ExecutionResult,
    GraphQLError,
    GraphQLSchema,
    execute,
    get_operation_ast,
)

from gateway.api.budget import TIMEOUT, Budget, Offload, Overrun
from gateway.api.codes import Code, coded
from gateway.api.context import Context
from gateway.api.cost import Cost
from gateway.api.executor import Executor
from gateway.api.limits import LimitError, Limits
from gateway.http.request import HttpError, RequestError
from gateway.http.tracing import Tracing
from gateway.store.feed import Lagging

__all__ = ["Execution", "execute_document", "forget_tracebacks", "mask"]

log = logging.getLogger(__name__)

T = TypeVar("T")

#: How long past its deadline a thread may take to notice it (one resolver's work)
#: before its requester stops waiting.
GRACE_SECONDS = 1.0


class Execution:
    """Runs operations of one schema in worker threads, within ``limits``."""

    def __init__(
        self, schema: GraphQLSchema, limits: Limits, tracing: Tracing | None = None
    ) -> None:
        self.schema = schema
        self.limits = limits
        #: Spans of operations, when tracing is on.
        self.tracing = tracing
        #: Operations holding a slot (executing, or waiting for a turn or a thread).
        self.running = 0
        self._turns = asyncio.Semaphore(limits.max_running)

    async def run(
        self,
        document: DocumentNode,
        context: Context,
        variables: dict[str, Any] | None,
        operation_name: str | None,
        finish: Callable[[ExecutionResult], T],
        cost: Cost,
    ) -> T:
        """Execute in a worker thread, then ``finish`` the result there (serialize it);
        on the event loop if ``cost`` (the operation's estimate), but for the scans of
        selections the store may keep, is at most the inline cost.

        Raises :class:`HttpError` (429) when every slot is taken (an operation run on
        the loop takes none) or its turn at a thread (one estimated costly) did not
        come within its time limit, and :class:`RequestError` (400) for an operation
        over its time (counted from its turn) or size, or whose variables were
        refused (it never ran).
        """
        with self._span(document, operation_name):
            return await self._run(document, context, variables, operation_name, finish, cost)

    def _span(
        self, document: DocumentNode, operation_name: str | None
    ) -> contextlib.AbstractContextManager[object]:
        """The operation's span when tracing is on; nothing to do when it is off."""
        if self.tracing is None:
            return contextlib.nullcontext()
        operation = get_operation_ast(document, operation_name)
        return self.tracing.operation(
            operation.name.value if operation and operation.name else None
        )

    async def _run(
        self,
        document: DocumentNode,
        context: Context,
        variables: dict[str, Any] | None,
        operation_name: str | None,
        finish: Callable[[ExecutionResult], T],
        cost: Cost,
    ) -> T:
        budget = context.budget = self._budget()

        def work() -> T:
            errors: list[GraphQLError] | None = None
            try:
                result = execute_document(self.schema, document, context, variables, operation_name)
                errors = result.errors
                if errors and result.data is None and all(e.path is None for e in errors):
                    # No path: variable coercion failed, nothing was executed.
                    raise RequestError([coded(e, Code.BAD_USER_INPUT) for e in errors])
                return finish(result)
            except Overrun as overrun:
                forget_tracebacks([overrun])
                error = LimitError(overrun.message, extensions={"code": overrun.code})
                raise RequestError([error], status=400) from None
            finally:
                forget_tracebacks(errors or ())  # finished: masked and logged

        cheap = cost.total - cost.kept <= self.limits.inline_cost
        if cheap:  # no thread, no slot: done at once
            budget.run_inline()
            try:
                return work()
            except Offload:  # larger than estimated, or a count over the fleet: a thread's
                pass
        if self.running >= self.limits.max_concurrent:
            raise _busy()
        self.running += 1
        try:
            # One estimated cheap takes no turn behind the costly: it was to take no thread.
            turn = contextlib.nullcontext() if cheap else self._turn()
            async with turn:
                budget = context.budget = self._budget()  # its time counts from its turn
                return await asyncio.wait_for(
                    anyio.to_thread.run_sync(work, abandon_on_cancel=True),
                    self.limits.max_seconds + GRACE_SECONDS,
                )
        except RequestError as refused:
            # Its traceback runs through the thread's frames and the future that
            # carried it here, which the frames hold: a cycle (see forget_tracebacks).
            forget_tracebacks([refused])
            raise
        except TimeoutError as timeout:
            forget_tracebacks([timeout])
            error = LimitError(budget.time_message(), extensions={"code": TIMEOUT})
            raise RequestError([error], status=400) from None
        finally:
            budget.stop()
            self.running -= 1

    @contextlib.asynccontextmanager
    async def _turn(self) -> AsyncIterator[None]:
        """One of the ``max_running`` turns at a worker thread, waited for as long as an
        operation may run, else 429.

        The interpreter runs one thread at a time: operations past a few would only
        share it, and reach their deadline together (32 queries of 2,000 hosts each at
        20,000 demo hosts, 2.7 s alone: 31 timed out, none answered). In turns of two
        the same burst had 4 answered and 27 told to retry (429) after the 10 s wait.
        So the admitted take turns, first come first served.
        """
        try:
            await asyncio.wait_for(self._turns.acquire(), self.limits.max_seconds)
        except TimeoutError:
            raise _busy() from None
        try:
            yield
        finally:
            self._turns.release()

    def _budget(self) -> Budget:
        """A fresh budget for one run of an operation (a second one for an offloaded rerun)."""
        return Budget(self.limits.max_seconds, self.limits.max_response_bytes)


def _busy() -> HttpError:
    return HttpError(
        429,
        "too many queries in progress; retry shortly",
        {"retry-after": "1"},
        "TOO_MANY_REQUESTS",
    )


def execute_document(
    schema: GraphQLSchema,
    document: DocumentNode,
    context: Any,
    variables: dict[str, Any] | None,
    operation_name: str | None,
) -> ExecutionResult:
    """graphql-core's execute with the gateway's executor; every resolver is synchronous."""
    result = execute(
        schema,
        document,
        context_value=context,
        variable_values=variables,
        operation_name=operation_name,
        executor_class=Executor,
    )
    assert isinstance(result, ExecutionResult), "resolvers are synchronous"
    return result


def forget_tracebacks(errors: Iterable[BaseException]) -> None:
    """Drop the tracebacks of ``errors`` and of every error behind them.

    A traceback holds the frames it passed through, and they hold the operation's
    executor, context and snapshot; the frame that caught the error holds the error.
    That cycle is freed only by the cyclic collector, and one caught while the store
    settles is frozen with it (gateway.store.collector): the snapshot it holds
    stays until the next thorough settle. Without its traceback, an answered
    operation is freed by reference counting, at once.
    """
    pending, seen = list(errors), set()
    while pending:
        error = pending.pop()
        if id(error) in seen:
            continue
        seen.add(id(error))
        error.__traceback__ = None
        behind = (error.__cause__, error.__context__, getattr(error, "original_error", None))
        pending.extend(e for e in behind if isinstance(e, BaseException))


def mask(error: GraphQLError, request_id: str) -> GraphQLError:
    """Errors we raised on purpose read as they are, each with its code; anything else
    is our bug, logged. So is an error graphql-core raised in completing a value
    (a null where the schema promises none): it has no code of ours. One of those
    without a path stopped the operation before it ran: a variable that did not
    coerce, as a subscription reports it. A subscription that fell behind the store
    ends with its own code (its connection told why)."""
    original = error.original_error
    if original is None or isinstance(original, GraphQLError):
        return coded(
            error, Code.BAD_USER_INPUT if error.path is None else Code.INTERNAL_SERVER_ERROR
        )
    if isinstance(original, Lagging):
        return coded(error, Code.SUBSCRIBER_TOO_SLOW)
    log.error("request %s: unexpected error at %s", request_id, error.path, exc_info=original)
    return GraphQLError(
        f"internal error (request id {request_id})",
        path=error.path,
        nodes=error.nodes,
        extensions={"code": Code.INTERNAL_SERVER_ERROR.value},
    )
