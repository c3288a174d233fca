"""Client processes started together, measured over one window, each reporting back.

A load generator that shares one event loop between its writers and readers
measures itself: at 100 writes/s and 160 readers, the figures of one Python
process were its own delays. Here each role runs in an OS process of its own
(the ``spawn`` context: nothing inherited but its arguments), with its own
event loop. Every role first gets ready (connects, subscribes), then waits at
the gate; once all are ready the window is opened for all at once. Times are
``time.monotonic()``, the same clock in every process on Linux, so a write
stamped in one process and its arrival stamped in another can be subtracted.
"""

from __future__ import annotations

import asyncio
import dataclasses
import multiprocessing
import queue
import time
import traceback
from collections.abc import Callable, Coroutine
from multiprocessing.process import BaseProcess
from typing import Any

__all__ = ["Crowd", "Gate", "Role", "Window"]

#: Seconds between the last role getting ready and the window's start: every
#: process must have seen the gate open (and subscriptions registered) by then.
LEAD = 0.5


@dataclasses.dataclass(frozen=True)
class Window:
    """The measured window ``[start, stop)`` and the end of what follows it (``end``)."""

    start: float
    stop: float
    end: float

    async def wait_start(self) -> None:
        await asyncio.sleep(max(0.0, self.start - time.monotonic()))


class Gate:
    """A role's side of the crowd: say it is ready, learn the window."""

    def __init__(self, name: str, ready: Any, opened: Any, times: Any) -> None:
        self.name = name
        self._ready, self._opened, self._times = ready, opened, times

    async def ready(self) -> Window:
        """Report ready, wait until every role is; returns the window (not yet started)."""
        self._ready.put(self.name)
        await asyncio.to_thread(self._opened.wait)
        start, stop, end = self._times[:]
        return Window(start, stop, end)


Role = Callable[..., Coroutine[Any, Any, Any]]


def _child(role: Role, args: tuple[Any, ...], gate: Gate, results: Any) -> None:
    try:
        results.put((gate.name, True, asyncio.run(role(gate, *args))))
    except BaseException:  # reported to the parent, which raises it there
        results.put((gate.name, False, traceback.format_exc()))


class Crowd:
    """Roles in processes of their own: ``add`` them, ``open`` the window, ``collect``."""

    def __init__(self) -> None:
        self._context = multiprocessing.get_context("spawn")
        self._ready = self._context.Queue()
        self._results = self._context.Queue()
        self._opened = self._context.Event()
        self._times = self._context.Array("d", 3)
        self._processes: dict[str, BaseProcess] = {}
        self._done: dict[str, Any] = {}

    def add(self, name: str, role: Role, *args: Any) -> None:
        """Start ``role(gate, *args)`` (a module-level coroutine function) in a new process."""
        if name in self._processes:
            raise ValueError(f"a role named {name!r} is already in the crowd")
        gate = Gate(name, self._ready, self._opened, self._times)
        process = self._context.Process(
            target=_child, args=(role, args, gate, self._results), name=name, daemon=True
        )
        process.start()
        self._processes[name] = process

    def open(self, seconds: float, tail: float = 0.0, timeout: float = 300) -> Window:
        """Wait until every role is ready, then open the window for all of them."""
        waiting = set(self._processes)
        deadline = time.monotonic() + timeout
        while waiting:
            try:
                waiting.discard(self._ready.get(timeout=0.2))
            except queue.Empty:
                self._check(deadline, "ready")
        start = time.monotonic() + LEAD
        self._times[:] = [start, start + seconds, start + seconds + tail]
        self._opened.set()
        return Window(start, start + seconds, start + seconds + tail)

    def collect(self, *names: str, timeout: float = 300) -> dict[str, Any]:
        """The results of ``names`` (all roles if none), once each has finished."""
        wanted = set(names or self._processes)
        deadline = time.monotonic() + timeout
        while not wanted <= self._done.keys():
            self._receive(0.2)
            self._check(deadline, "done")
        return {name: self._done[name] for name in wanted}

    def _receive(self, timeout: float) -> None:
        try:
            name, ok, result = self._results.get(timeout=timeout)
        except queue.Empty:
            return
        if not ok:
            raise RuntimeError(f"role {name} failed:\n{result}")
        self._done[name] = result

    def _check(self, deadline: float, state: str) -> None:
        """Raise if a role failed, died without a word, or the deadline passed."""
        self._receive(0)
        for name, process in self._processes.items():
            if process.exitcode is not None and name not in self._done:
                drained = time.monotonic() + 5  # its last words may be in the pipe, behind others'
                while name not in self._done and time.monotonic() < drained:
                    self._receive(0.2)
                if name not in self._done:
                    raise RuntimeError(f"role {name} exited with {process.exitcode} before {state}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"roles not {state} in time")

    def __enter__(self) -> Crowd:
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        """Every process is joined; after an error, or one that does not end, ended."""
        for process in self._processes.values():
            process.join(timeout=5 if kind is None else 0)
            if process.is_alive():
                process.terminate()
                process.join()
