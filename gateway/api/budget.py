"""What one operation may spend while it runs: time and response bytes.

A thread cannot be stopped from outside, so the work stops itself: the executor
charges every field it completes to the operation's :class:`Budget`, which
counts the bytes the answer will take and, every few hundred fields, compares
them with the limit and looks at the clock. Past the deadline, past the size
limit or once the waiting request gave up (:meth:`Budget.stop`), the charge
raises :class:`Overrun`, and the thread is free again within a fraction of a
second.

:class:`Overrun` is a ``BaseException`` on purpose: graphql-core turns every
``Exception`` a field raises into a field error and carries on with the next
field; an overrun must end the whole operation instead.
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["INLINE_BYTES", "INLINE_SECONDS", "TIMEOUT", "TOO_LARGE", "Budget", "Offload", "Overrun"]

#: The ``extensions.code`` of the errors an overrun is answered with.
TIMEOUT = "QUERY_TIMEOUT"
TOO_LARGE = "RESPONSE_TOO_LARGE"

#: Fields completed between two looks at the clock (a look costs about 50 ns).
CLOCK_EVERY = 256
#: What an operation run on the event loop may spend there, in answer bytes and in
#: seconds, before it goes to a worker thread (:class:`Offload`): its estimate said
#: it was small (from the fleet's usual list lengths), but one host may hold 200,000
#: instances, and the loop serves everyone else meanwhile.
INLINE_BYTES = 256 * 1024
INLINE_SECONDS = 0.02


class Overrun(BaseException):
    """The operation went over its budget; ``message`` says which part and the limit."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.message = message
        #: The error's ``extensions.code``.
        self.code = code


class Offload(BaseException):
    """An operation run on the event loop reached work that must not run there."""


class Budget:
    """The time and response bytes left to one operation, charged field by field."""

    __slots__ = (
        "_clock",
        "_inline_at",
        "at",
        "inline",
        "max_bytes",
        "seconds",
        "spent",
        "stopped",
        "ticks",
    )

    def __init__(
        self,
        seconds: float,
        max_bytes: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.seconds = seconds
        self.max_bytes = max_bytes
        self._clock = clock
        self.at = clock() + seconds
        #: Bytes of the answer so far (keys, punctuation and leaf values, UTF-8 aside).
        self.spent = 0
        self.stopped = False
        #: Charges left before the next :meth:`check`.
        self.ticks = CLOCK_EVERY
        #: Whether the operation runs on the event loop (:meth:`run_inline`).
        self.inline = False
        self._inline_at = self.at

    def charge(self, size: int) -> None:
        """Count ``size`` bytes of answer; raise :class:`Overrun` once over budget.

        The executor does the same inline, on its hot path: add to ``spent``, count
        down ``ticks``, and :meth:`check` when they run out.
        """
        self.spent += size
        self.ticks -= 1
        if self.ticks <= 0:
            self.check()

    def run_inline(self) -> None:
        """The operation runs on the event loop: past :data:`INLINE_BYTES` or
        :data:`INLINE_SECONDS`, or at a count over the whole fleet (:meth:`scan`), it
        raises :class:`Offload`, and runs again in a worker thread."""
        self.inline = True
        self._inline_at = self._clock() + INLINE_SECONDS

    def scan(self) -> None:
        """About to count over the whole fleet (a total the store does not keep yet).

        Estimated cheap, the operation may run on the event loop, where a second of
        counting would stall every other request: :class:`Offload` it to a thread.
        """
        if self.inline:
            raise Offload

    def check(self) -> None:
        """Raise :class:`Overrun` if over the size, past the deadline, or stopped;
        :class:`Offload` if more than the event loop's share (:meth:`run_inline`)."""
        self.ticks = CLOCK_EVERY
        if self.spent > self.max_bytes:
            raise Overrun(self.size_message(), TOO_LARGE)
        now = self._clock()
        if self.stopped or now > self.at:
            raise Overrun(self.time_message(), TIMEOUT)
        if self.inline and (self.spent > INLINE_BYTES or now > self._inline_at):
            raise Offload

    def stop(self) -> None:
        """Ask the work to end at its next charge (its requester gave up on it)."""
        self.stopped = True

    def time_message(self) -> str:
        return f"query took longer than the limit of {self.seconds:g} s"

    def size_message(self) -> str:
        return f"response larger than the limit of {self.max_bytes} bytes"
