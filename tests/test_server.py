"""The uvicorn protocol's guards (gateway.http.server) against the real server on loopback."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from gateway.store.store import Store
from tests import fleet
from tests.support import run_server

#: More body than uvicorn buffers before it stops reading (its high-water mark, 64 KiB).
UNREAD = b" " * 300_000


@pytest.fixture
async def server() -> AsyncIterator[tuple[str, Store]]:
    # The Host check on (loopback names only), for the 421 below.
    async with run_server(fleet.objects(), allowed_hosts=()) as running:
        yield running


async def exchange(address: str, request: bytes) -> bytes:
    """What the server sends back to ``request`` until it closes the connection.

    Within 3 s: the keep-alive timeout (5 s) must not be what closes it.
    """
    host, port = address.split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(request)
        return await asyncio.wait_for(reader.read(), 3)
    finally:
        writer.close()


#: Requests answered before their body is read, by the status they get.
EARLY = {
    413: b"POST /graphql HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json",
    415: b"POST /graphql HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain",
    405: b"PUT /healthz HTTP/1.1\r\nHost: 127.0.0.1",
    404: b"POST /nowhere HTTP/1.1\r\nHost: 127.0.0.1",
    421: b"POST /graphql HTTP/1.1\r\nHost: evil.example\r\nContent-Type: application/json",
}


@pytest.mark.parametrize("status", EARLY)
async def test_an_answer_before_the_body_closes_the_connection(
    server: tuple[str, Store], status: int
) -> None:
    """Answered with most of its body unread and more to come, a request's connection is
    closed; the client reads the whole answer (no reset), then the end."""
    address, _ = server
    declared = 2_000_000 if status == 413 else 1_000_000  # 1 MB is the limit
    request = EARLY[status] + b"\r\nContent-Length: %d\r\n\r\n" % declared + UNREAD
    answer = await exchange(address, request)
    assert answer.startswith(b"HTTP/1.1 %d " % status), answer[:100]
    assert answer.count(b"HTTP/1.1 ") == 1


async def test_request_headers_are_limited_from_their_first_byte(
    server: tuple[str, Store],
) -> None:
    """A head over the limit sent at once is refused, though it ends within what one
    read returns."""
    address, _ = server
    big = (
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Big: "
        + b"a" * 100_000
        + b"\r\n\r\n"
    )
    answer = await exchange(address, big)
    assert answer.startswith(b"HTTP/1.1 431 "), answer[:100]


async def test_pipelined_requests_are_limited_one_by_one(server: tuple[str, Store]) -> None:
    """Many requests in one write, 120 KB together, are each within the limit."""
    address, _ = server
    one = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 1000 + b"\r\n\r\n"
    last = b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    answer = await exchange(address, one * 120 + last)
    assert answer.count(b"HTTP/1.1 200 ") == 121, answer[:100]
