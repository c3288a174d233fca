"""Stopping the gateway: subscriptions are closed with 1001, and the process exits 0."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import websockets

from gateway.http import server
from gateway.http.app import create_app
from gateway.http.graceful import GracefulServer, WebSocketTracker, serve
from gateway.store.store import Store
from harness.controlplane import free_port
from tests import fleet
from tests.support import StaticSource, eventually, wait_until_ready

ROOT = Path(__file__).resolve().parents[1]
SUBSCRIPTION = "subscription { fleetCapacityChanged(groupBy: ZONE) { key } }"


async def subscribe(url: str, protocol: str) -> websockets.ClientConnection:
    """A connection with one running subscription that has sent its first message."""
    ws = await websockets.connect(url, subprotocols=[protocol])
    await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
    assert json.loads(await ws.recv())["type"] == "connection_ack"
    start = "subscribe" if protocol == "graphql-transport-ws" else "start"
    await ws.send(json.dumps({"id": "1", "type": start, "payload": {"query": SUBSCRIPTION}}))
    while (kind := json.loads(await ws.recv())["type"]) == "ka":  # legacy keep-alive
        pass
    assert kind in ("next", "data")
    return ws


async def closed_with(ws: websockets.ClientConnection) -> tuple[int | None, int | None]:
    """Read until the server closes; the codes received and sent in the close handshake."""
    try:
        while True:
            await asyncio.wait_for(ws.recv(), 5)
    except websockets.ConnectionClosed as closed:
        return (
            closed.rcvd.code if closed.rcvd else None,
            closed.sent.code if closed.sent else None,
        )


def test_the_interpreter_changes_threads_promptly_while_the_gateway_serves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A worker thread (a large query, a first count) hands the interpreter to the event
    loop within ``SWITCH_SECONDS`` while the gateway serves; the process's own setting
    is back once it stopped."""
    seen: list[float] = []
    monkeypatch.setattr(GracefulServer, "run", lambda self: seen.append(sys.getswitchinterval()))
    before = sys.getswitchinterval()
    assert before != server.SWITCH_SECONDS
    serve(create_app(StaticSource([]), Store()), host="127.0.0.1", port=0, log_level="warning")
    assert seen == [server.SWITCH_SECONDS]
    assert sys.getswitchinterval() == before


async def test_shutdown_closes_subscriptions_of_both_protocols_with_1001() -> None:
    source = StaticSource(fleet.objects())
    app = create_app(source, Store(), coalesce_interval=0.05)
    tracker = WebSocketTracker(app)
    config = server.config(tracker, host="127.0.0.1", port=0, log_level="warning")
    graceful = GracefulServer(config, tracker)
    task = asyncio.create_task(graceful.serve())
    await eventually(lambda: graceful.started)  # uvicorn only exposes a flag
    port = graceful.servers[0].sockets[0].getsockname()[1]
    url = f"ws://127.0.0.1:{port}/graphql"
    try:
        clients = [await subscribe(url, "graphql-transport-ws"), await subscribe(url, "graphql-ws")]
        assert len(tracker.open) == 2
    finally:
        graceful.should_exit = True
    codes = await asyncio.gather(*(closed_with(ws) for ws in clients))
    assert codes == [(1001, 1001), (1001, 1001)]  # both sides completed the handshake
    await asyncio.wait_for(task, 5)
    assert not tracker.open


async def test_sigterm_stops_the_real_gateway_cleanly_and_quickly() -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GATEWAY_")}
    command = [sys.executable, "-m", "gateway", "serve", "--demo", "--demo-size", "20"]
    process = subprocess.Popen(  # noqa: ASYNC220 - started once, then only waited for in a thread
        [*command, "--port", str(port)], cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True
    )
    try:
        await asyncio.to_thread(wait_until_ready, f"http://127.0.0.1:{port}", process)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
            response = await client.post(
                "/graphql", json={"query": "query Count { hypervisors { totalCount } }"}
            )
            assert response.status_code == 200
        ws = await subscribe(f"ws://127.0.0.1:{port}/graphql", "graphql-transport-ws")
        stopping = time.monotonic()
        process.send_signal(signal.SIGTERM)
        assert await closed_with(ws) == (1001, 1001)
        status = await asyncio.to_thread(process.wait, 10)
        elapsed = time.monotonic() - stopping
    finally:
        process.kill()
        _, errors = process.communicate()
    assert status == 0, errors
    assert elapsed < 3
    # Not a terminal: one JSON object per line, the request among them with its id.
    lines = [json.loads(line) for line in errors.splitlines()]
    (request,) = [line for line in lines if line["logger"] == "gateway.http.access"]
    assert (request["operation"], request["request_id"]) == (
        "Count",
        response.headers["x-request-id"],
    )
