"""Hostile and broken clients against the real server: nothing crashes or hangs,
and /healthz stays fast throughout."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
import websockets
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_graphql import from_schema, nodes

from gateway.api.limits import Limits
from gateway.api.schema import sdl
from gateway.http.server import GuardedHttpToolsProtocol
from gateway.store.store import Store
from tests import fleet, scalar_values
from tests.support import run_server, wait_until_ready


@pytest.fixture
async def server() -> AsyncIterator[tuple[str, Store]]:
    async with run_server(fleet.objects()) as running:
        yield running


async def healthz_time(address: str) -> float:
    async with httpx.AsyncClient() as client:
        started = time.monotonic()
        response = await client.get(f"http://{address}/healthz")
        assert response.status_code == 200
        return time.monotonic() - started


async def test_slowloris_is_cut_off(
    server: tuple[str, Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    address, _ = server
    monkeypatch.setattr(GuardedHttpToolsProtocol, "header_timeout", 1.0)
    host, port = address.split(":")
    loop = asyncio.get_running_loop()
    slow = []
    for _ in range(50):
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(b"POST /graphql HTTP/1.1\r\nHost: x\r\n")
        slow.append((reader, writer))
    assert await healthz_time(address) < 0.5
    started = loop.time()
    answers = await asyncio.gather(*(asyncio.wait_for(r.read(), 5) for r, _ in slow))
    assert loop.time() - started < 3
    assert all(a.startswith(b"HTTP/1.1 408") for a in answers)
    for _, writer in slow:
        writer.close()


async def test_slow_body_is_cut_off() -> None:
    async with run_server(fleet.objects(), limits=Limits(max_body_seconds=1)) as (address, _):
        host, port = address.split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(
            b"POST /graphql HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\n"
            b'content-length: 100\r\n\r\n{"query":'
        )
        await writer.drain()
        assert await healthz_time(address) < 0.5
        answer = await asyncio.wait_for(reader.read(), 10)
        assert answer.startswith(b"HTTP/1.1 408")
        writer.close()


async def test_huge_request_headers_are_refused(server: tuple[str, Store]) -> None:
    """A header that does not end is refused past the limit, not read in full."""
    address, _ = server
    host, port = address.split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 2**20)
    with contextlib.suppress(ConnectionError):  # the server stops reading, and closes
        await writer.drain()
    answer = await asyncio.wait_for(reader.read(), 5)
    assert answer.startswith(b"HTTP/1.1 431 "), answer[:100]
    assert answer.endswith(b"request headers larger than 64 KiB\r\n")
    writer.close()
    assert await healthz_time(address) < 0.5


async def test_many_idle_websockets(server: tuple[str, Store]) -> None:
    address, _ = server
    idle = [
        await websockets.connect(f"ws://{address}/graphql", subprotocols=["graphql-transport-ws"])
        for _ in range(100)
    ]
    try:
        assert await healthz_time(address) < 0.5
        # A connection that never sends connection_init is closed (4408) after 10 s;
        # meanwhile the server answers queries as usual.
        async with httpx.AsyncClient() as client:
            response = await client.post(
                f"http://{address}/graphql", json={"query": "{ hypervisors { totalCount } }"}
            )
            assert response.json() == {"data": {"hypervisors": {"totalCount": 4}}}
    finally:
        for ws in idle:
            await ws.close()


async def test_garbage_bytes_on_the_socket(server: tuple[str, Store]) -> None:
    address, _ = server
    host, port = address.split(":")
    for garbage in (b"\x00\xff" * 1000, b"GET / HTTP/9.9\r\n\r\n", b"\r\n\r\n\r\n", b"A" * 70_000):
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(garbage)
        writer.write_eof()
        reply = await asyncio.wait_for(reader.read(100), 5)
        assert reply == b"" or reply.startswith(b"HTTP/1.1 4"), reply
        writer.close()
    assert await healthz_time(address) < 0.5


async def test_malformed_websocket_messages(server: tuple[str, Store]) -> None:
    address, _ = server
    for message in (
        "not json",
        json.dumps({"type": "nope"}),
        json.dumps([1, 2]),
        json.dumps({"type": "subscribe", "id": "1", "payload": {"query": "subscription {"}}),
    ):
        async with websockets.connect(
            f"ws://{address}/graphql", subprotocols=["graphql-transport-ws"]
        ) as ws:
            await ws.send(json.dumps({"type": "connection_init"}))
            assert json.loads(await ws.recv())["type"] == "connection_ack"
            await ws.send(message)
            try:
                reply = await asyncio.wait_for(ws.recv(), 5)
                assert json.loads(reply)["type"] == "error"
            except websockets.ConnectionClosed as closed:
                assert closed.rcvd is not None and 4000 <= closed.rcvd.code < 5000
    assert await healthz_time(address) < 0.5


SCHEMA = sdl()
QUANTITIES = st.one_of(
    st.from_regex(r"[+-]?[0-9]{1,8}(\.[0-9]{1,3})?(Ki|Mi|Gi|m|k)?", fullmatch=True),
    st.text(max_size=8),
).map(nodes.String)


@pytest.fixture(scope="module")
def gateway_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The real gateway as a separate process, serving the test fleet from a file."""
    directory = tmp_path_factory.mktemp("fleet")
    (directory / "fleet.json").write_text(json.dumps({"kind": "List", "items": fleet.objects()}))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gateway",
            "serve",
            "--from",
            str(directory),
            "--port",
            str(port),
            "--log-level",
            "warning",
        ]
    )
    address = f"127.0.0.1:{port}"
    try:
        wait_until_ready(f"http://{address}", process)
    except AssertionError:
        process.kill()
        raise
    yield address
    process.terminate()
    # uvicorn shuts down gracefully, then re-raises SIGTERM so the exit status tells why.
    assert process.wait(15) in (0, -signal.SIGTERM)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    query=from_schema(
        SCHEMA,
        custom_scalars={**scalar_values.strategies(), "Quantity": QUANTITIES},
        fields=[
            "hypervisors",
            "hypervisor",
            "consumers",
            "consumer",
            "fleetCapacity",
            "placementProvider",
            "syncStatus",
        ],
    ),
    junk=st.sampled_from(["", " }", "{", "query", "$x", "..."]),
)
def test_fuzz_generated_queries(gateway_process: str, query: str, junk: str) -> None:
    """Generated valid queries (and broken variants) never get a 5xx or an internal error."""
    with httpx.Client(base_url=f"http://{gateway_process}", timeout=30) as client:
        for document in (query, query + junk):
            response = client.post(
                "/graphql",
                json={"query": document},
                headers={"accept": "application/graphql-response+json"},
            )
            assert response.status_code < 500, response.text
            messages = [e["message"] for e in response.json().get("errors", [])]
            assert not any("internal error" in m for m in messages), messages
    assert httpx.get(f"http://{gateway_process}/healthz").status_code == 200
