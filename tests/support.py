"""Test support: serve objects (or a source) through the real app, and wait on state."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import httpx
import pytest

from gateway.api.budget import Budget
from gateway.http import execution
from gateway.http.app import create_app
from gateway.store.snapshot import Snapshot
from gateway.store.source import Source, SyncStatus
from gateway.store.store import Store


class StaticSource:
    """A source that loads a fixed list of objects once and keeps them; Eviction objects
    too when given (without them, evictions stay unavailable, as before a first list)."""

    def __init__(
        self,
        objects: list[dict[str, Any]],
        resource_version: str | None = None,
        evictions: list[dict[str, Any]] | None = None,
    ) -> None:
        self.objects = objects
        self.resource_version = resource_version
        self.evictions = evictions
        self.status = SyncStatus("static")
        self.loaded = asyncio.Event()

    async def run(self, store: Store) -> None:
        store.replace(self.objects, self.resource_version)
        store.mark_ready()
        if self.evictions is not None:
            store.evictions.replace(self.evictions)
        self.status.synced = True
        self.status.confirm()
        self.loaded.set()
        await asyncio.Event().wait()


@contextlib.asynccontextmanager
async def serve(
    objects: list[dict[str, Any]] | Source,
    *,
    base_url: str = "http://gateway",
    **app_options: Any,
) -> AsyncIterator[tuple[httpx.AsyncClient, Store]]:
    """The real ASGI app with its lifespan running, and an HTTP client for it.

    Given objects, it serves them (and waits until they are loaded); given a
    source, it serves whatever that source delivers, from whenever it does.
    """
    store = Store()
    source = StaticSource(objects) if isinstance(objects, list) else objects
    app = create_app(source, store, **app_options)
    async with app.router.lifespan_context(app):
        if isinstance(source, StaticSource):
            await source.loaded.wait()
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=base_url) as client:
            yield client, store


async def query(client: httpx.AsyncClient, document: str, **variables: Any) -> dict[str, Any]:
    """POST a query, assert it succeeded without errors, return its data."""
    response = await client.post("/graphql", json={"query": document, "variables": variables})
    assert response.status_code == 200, response.text
    body = response.json()
    assert "errors" not in body, body["errors"]
    data: dict[str, Any] = body["data"]
    return data


@contextlib.asynccontextmanager
async def run_server(
    objects: list[dict[str, Any]] | Source, **app_options: Any
) -> AsyncIterator[tuple[str, Store]]:
    """The real app under uvicorn on a free loopback port; yields its base URL.

    Given objects, it serves them (and waits until they are loaded); given a
    source (an informer), it serves whatever that source delivers.
    """
    import uvicorn

    from gateway.http.server import config

    store = Store()
    source = StaticSource(objects) if isinstance(objects, list) else objects
    app = create_app(source, store, **app_options)
    server = uvicorn.Server(config(app, host="127.0.0.1", port=0, log_level="warning"))
    task = asyncio.create_task(server.serve())
    await eventually(lambda: server.started)  # uvicorn only exposes a flag
    if isinstance(source, StaticSource):
        await source.loaded.wait()
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"127.0.0.1:{port}", store
    finally:
        server.should_exit = True
        await task


class Clock:
    """A clock the test moves, instead of waiting out a TTL or a retry interval."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@contextlib.asynccontextmanager
async def loop_turns() -> AsyncIterator[Callable[[], int]]:
    """The event loop's turns while in the block, as a task that yields at each one
    counts them: what shows whether some work let the loop turn meanwhile."""
    turns = 0

    async def turning() -> None:
        nonlocal turns
        while True:
            await asyncio.sleep(0)
            turns += 1

    ticker = asyncio.create_task(turning())
    await asyncio.sleep(0)  # the ticker is running
    try:
        yield lambda: turns
    finally:
        ticker.cancel()


async def eventually(
    condition: Callable[[], Awaitable[bool] | bool], within: float = 5.0, interval: float = 0.01
) -> None:
    """Wait until ``condition()`` holds; fail after ``within`` seconds.

    For state that has no event to wait on; the interval is how often to look,
    never a guess at how long something takes.
    """
    deadline = time.monotonic() + within
    while True:
        result = condition()
        if isinstance(result, Awaitable):
            result = await result
        if result:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"condition still false after {within}s")
        await asyncio.sleep(interval)


def wait_until_ready(url: str, process: subprocess.Popen[Any], within: float = 30.0) -> None:
    """Wait until a gateway process answers ``url``/readyz with 200.

    Fails at once if the process exits, and after ``within`` seconds. A separate
    process has no event to wait on: its answer is the state, looked at every 0.1 s.
    """
    deadline = time.monotonic() + within
    while True:
        assert process.poll() is None, f"the gateway exited with {process.returncode}"
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(f"{url}/readyz").status_code == 200:
                return
        assert time.monotonic() < deadline, f"the gateway was not ready within {within} s"
        time.sleep(0.1)


async def listening(address: str, streams: int = 1, within: float = 5.0) -> None:
    """Wait until the server at ``address`` has this many change streams open.

    What /metrics reports (the feed's subscriber count): the sign that a
    subscription is registered, so that changes made next reach it.
    """
    sample = f"hypervisor_gateway_subscription_streams {float(streams)}"

    async def registered() -> bool:
        async with httpx.AsyncClient(base_url=f"http://{address}") as client:
            return sample in (await client.get("/metrics")).text.splitlines()

    await eventually(registered, within)


class WatchedBudget(Budget):
    """A :class:`Budget` on the real clock that keeps every look at it."""

    __slots__ = ("readings",)

    def __init__(self, seconds: float, max_bytes: int) -> None:
        self.readings: list[float] = []
        super().__init__(seconds, max_bytes, self._read)

    def _read(self) -> float:
        now = time.monotonic()
        self.readings.append(now)
        return now

    def looks_past_deadline(self) -> int:
        """How often the work looked at the clock past its deadline: 1 if it ended there."""
        return sum(now > self.at for now in self.readings)


@dataclasses.dataclass
class Run:
    """One operation a worker thread executed, and how that ended."""

    budget: WatchedBudget
    ended: threading.Event = dataclasses.field(default_factory=threading.Event)
    #: What ended it: None for an answer, else what it raised.
    outcome: BaseException | None = None


def watch_workers(monkeypatch: pytest.MonkeyPatch) -> list[Run]:
    """The operations worker threads run from now on, each when its thread starts it.

    A thread's own end is the state to wait on, where a test would otherwise watch
    the process's CPU time for a while to see that the work stopped.
    """
    runs: list[Run] = []
    execute = execution.execute_document

    def watched(schema: Any, document: Any, context: Any, *rest: Any) -> Any:
        run = Run(context.budget)
        runs.append(run)
        try:
            return execute(schema, document, context, *rest)
        except BaseException as raised:
            run.outcome = raised
            raise
        finally:
            run.ended.set()

    monkeypatch.setattr(execution, "Budget", WatchedBudget)
    monkeypatch.setattr(execution, "execute_document", watched)
    return runs


async def cancelled(tasks: list[asyncio.Task[None]]) -> None:
    """End the tasks a fixture started, and wait until each has."""
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError):
            await task


@contextlib.contextmanager
def cycles() -> Iterator[list[object]]:
    """What only the cyclic collector frees of the block's work: the collector is off
    in the block, and what it then finds unreachable is in the list after it."""
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    found: list[object] = []
    try:
        yield found
    finally:
        gc.collect()
        found.extend(gc.garbage)
        gc.garbage.clear()
        gc.set_debug(0)
        if enabled:
            gc.enable()


def holding_snapshots(objects: list[object]) -> list[str]:
    """The types of the ``objects`` that are a snapshot or refer to one."""

    def holds(thing: object) -> bool:
        try:
            return any(isinstance(o, Snapshot) for o in (thing, *gc.get_referents(thing)))
        except ReferenceError:  # a weak proxy whose object is gone
            return False

    return [type(thing).__qualname__ for thing in objects if holds(thing)]
