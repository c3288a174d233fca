"""The Host check against DNS rebinding: loopback and listed names only, HTTP and WebSocket."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
import websockets

from gateway.cli import allowed_hosts
from gateway.http.app import create_app
from gateway.http.hosts import host_name, parse_allowed_hosts
from gateway.settings import Settings
from tests import fleet
from tests.support import StaticSource, run_server

REFUSED = (
    "is not served: without authentication the gateway answers only for loopback names "
    "and those given with --allowed-hosts\n"
)


@pytest.fixture
async def gateway() -> AsyncIterator[httpx.AsyncClient]:
    source = StaticSource(fleet.objects())
    app = create_app(source, allowed_hosts=("gateway.example", "127.0.0.1"))
    async with app.router.lifespan_context(app):
        await source.loaded.wait()
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport) as client:
            yield client


@pytest.mark.parametrize(
    "host",
    [
        "localhost",
        "localhost:8080",
        "LOCALHOST.",
        "127.0.0.1:8080",
        "127.1.2.3",
        "[::1]:8080",
        "gateway.example",
        "Gateway.Example:443",
    ],
)
async def test_loopback_and_listed_hosts_are_served(gateway: httpx.AsyncClient, host: str) -> None:
    response = await gateway.post(
        "http://x/graphql", json={"query": "{ hypervisors { totalCount } }"}, headers={"host": host}
    )
    assert response.json() == {"data": {"hypervisors": {"totalCount": 4}}}


@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
async def test_probes_are_served_to_any_host(gateway: httpx.AsyncClient, path: str) -> None:
    """A kubelet's probe names the pod's IP as Host."""
    response = await gateway.get(f"http://x{path}", headers={"host": "10.1.2.3:8080"})
    assert response.status_code == 200


@pytest.mark.parametrize(
    "host", ["evil.example", "evil.example:8080", "127.0.0.1.evil.example", "[::2]", ""]
)
async def test_other_hosts_are_refused_with_the_reason(
    gateway: httpx.AsyncClient, host: str
) -> None:
    response = await gateway.post(
        "http://x/graphql", json={"query": "{ hypervisors { totalCount } }"}, headers={"host": host}
    )
    assert response.status_code == 421
    assert response.text == f"Host {host!r} {REFUSED}"


async def test_websocket_handshakes_are_checked_too() -> None:
    async with run_server(fleet.objects(), allowed_hosts=()) as (address, _):
        _, port = address.split(":")
        with pytest.raises(websockets.InvalidStatus) as refused:
            async with websockets.connect(
                f"ws://evil.example:{port}/graphql",
                subprotocols=["graphql-transport-ws"],
                host="127.0.0.1",
            ):
                pass
        assert refused.value.response.status_code == 421
        assert refused.value.response.body == f"Host 'evil.example:{port}' {REFUSED}".encode()
        async with websockets.connect(
            f"ws://{address}/graphql", subprotocols=["graphql-transport-ws"]
        ) as ws:
            await ws.send('{"type": "connection_init"}')
            assert "connection_ack" in str(await ws.recv())


async def test_without_a_list_every_host_is_served() -> None:
    source = StaticSource(fleet.objects())
    app = create_app(source)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://evil.example") as c:
            assert (await c.get("/graphql?query={__typename}")).status_code == 200


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        (Settings(demo=True), ("127.0.0.1",)),
        (Settings(demo=True, host="0.0.0.0"), ("0.0.0.0",)),
        (
            Settings(demo=True, allowed_hosts="a.example, b.example:80"),
            ("a.example", "b.example", "127.0.0.1"),
        ),
        (Settings(auth="kubernetes"), None),
        (Settings(auth="kubernetes", allowed_hosts="*"), ("*", "127.0.0.1")),
    ],
)
def test_the_check_is_on_without_authentication(
    settings: Settings, expected: tuple[str, ...] | None
) -> None:
    assert allowed_hosts(settings) == expected


@pytest.mark.parametrize(
    ("header", "name"),
    [
        ("Example.COM:8080", "example.com"),
        ("example.com.", "example.com"),
        ("[::1]:80", "::1"),
        ("[::1]", "::1"),
        ("10.0.0.1", "10.0.0.1"),
    ],
)
def test_host_name(header: str, name: str) -> None:
    assert host_name(header) == name


def test_parse_allowed_hosts() -> None:
    assert parse_allowed_hosts(" a.example ,,B.example:8080, ") == ("a.example", "b.example")
