"""GraphQL over WebSocket: the HTTP endpoint's policy, and a close code for bad messages."""

from __future__ import annotations

import asyncio
import gc
import itertools
import json
import socket
import time
from typing import Any

import httpx
import pytest
import websockets
from starlette.websockets import WebSocketDisconnected as ClosedAlready
from strawberry.http.exceptions import WebSocketDisconnected

from gateway.api.budget import Overrun
from gateway.api.limits import Limits
from gateway.http import websocket
from gateway.http.subprotocols import send_while_connected
from gateway.sources.demo.source import generate
from tests import fleet
from tests.support import (
    cycles,
    eventually,
    holding_snapshots,
    listening,
    run_server,
    watch_workers,
)
from tests.test_broadcast import HOSTS, gauges
from tests.test_cost import DEPTH_12
from tests.test_limits import HEAVY
from tests.test_subscriptions import Client, connect, modified

TRANSPORT_WS = "graphql-transport-ws"
LEGACY_WS = "graphql-ws"
PROTOCOLS = [TRANSPORT_WS, LEGACY_WS]


async def ws_errors(address: str, protocol: str, query: str) -> list[str]:
    """The error messages a query gets over WebSocket (none: it succeeded).

    graphql-transport-ws closes the connection (4400) on a document that does not
    parse, with the parser's message as the reason.
    """
    async with websockets.connect(f"ws://{address}/graphql", subprotocols=[protocol]) as ws:
        await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
        assert json.loads(await ws.recv())["type"] == "connection_ack"
        kind = "subscribe" if protocol == TRANSPORT_WS else "start"
        await ws.send(json.dumps({"id": "1", "type": kind, "payload": {"query": query}}))
        try:
            while True:
                message = json.loads(await asyncio.wait_for(ws.recv(), 30))
                if message["type"] == "error":
                    payload = message["payload"]
                    errors = payload if isinstance(payload, list) else [payload]
                    return [e["message"] for e in errors]
                if message["type"] in ("next", "data"):
                    return [e["message"] for e in message["payload"].get("errors", [])]
        except websockets.ConnectionClosed as closed:
            assert closed.rcvd is not None and closed.rcvd.code == 4400
            return [closed.rcvd.reason]


async def http_errors(address: str, query: str) -> list[str]:
    async with httpx.AsyncClient(timeout=30) as client:
        response = await client.post(f"http://{address}/graphql", json={"query": query})
    return [e["message"] for e in response.json().get("errors", [])]


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_every_limit_reads_the_same_over_both_transports(protocol: str) -> None:
    too_deep = "{ hypervisors { nodes { consumers { consumer { hypervisors { name } } } } } }"
    aliases = "{ " + " ".join(f"a{n}: fleetCapacity {{ key }}" for n in range(60)) + " }"
    tokens = "{ " + "__typename " * 20_000 + "}"
    limits = Limits(max_depth=5, max_tokens=10_000)
    async with run_server(generate(200), limits=limits, introspection=False) as (address, _):
        for query in (too_deep, aliases, tokens, DEPTH_12, "{ __schema { types { name } } }"):
            over_http = await http_errors(address, query)
            assert over_http, query
            # The legacy protocol's error message carries one error: the first.
            expected = over_http if protocol == TRANSPORT_WS else over_http[:1]
            assert await ws_errors(address, protocol, query) == expected
    async with run_server(generate(200)) as (address, _):
        [cost] = await ws_errors(address, protocol, DEPTH_12)
    assert cost.startswith("query cost ") and "exceeds the limit of 1000000" in cost


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_query_runs_off_the_event_loop_and_stops_at_its_deadline(
    protocol: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Well under the query's own time (2.6 s on a busy machine, less on a quiet one,
    # where it once answered within a 2 s limit).
    limits = Limits(max_seconds=0.5)
    runs = watch_workers(monkeypatch)
    async with run_server(generate(1500, bookings_per_host=40), limits=limits) as (address, _):
        query = asyncio.create_task(ws_errors(address, protocol, HEAVY))
        answered = 0
        async with httpx.AsyncClient() as client:
            while not query.done():
                started = time.monotonic()
                assert (await client.get(f"http://{address}/healthz")).status_code == 200
                # On the event loop the query would hold /healthz till its deadline; a
                # collection of a test run's heap may pause every thread for a moment.
                assert time.monotonic() - started < 1.0
                answered += 1
        assert await query == ["query took longer than the limit of 0.5 s"]
        assert answered >= 2  # the loop answered while the query ran
        # Its thread ended the work at the first look at the clock past the deadline.
        (run,) = runs
        await eventually(run.ended.is_set)
        assert isinstance(run.outcome, Overrun) and run.budget.looks_past_deadline() == 1


DEEP = "[" * 1000 + "]" * 1000


def subscribe(kind: str, payload: Any) -> str:
    return json.dumps({"id": "1", "type": kind, "payload": payload})


MALFORMED = [
    # (protocol, before connection_init?, message, the close reason's start)
    (TRANSPORT_WS, True, f'{{"type": "connection_init", "payload": {{"a": {DEEP}}}}}', "message"),
    (TRANSPORT_WS, False, subscribe("subscribe", "x"), "subscribe payload must be an object"),
    (TRANSPORT_WS, False, subscribe("subscribe", {"query": 1}), "subscribe payload needs"),
    (TRANSPORT_WS, False, subscribe("subscribe", {"query": "{ a }", "variables": 2}), "var"),
    (TRANSPORT_WS, False, subscribe("subscribe", {"extensions": 3}), "extensions must be"),
    (TRANSPORT_WS, False, subscribe("subscribe", {"extensions": {}}), "subscribe payload needs"),
    (
        TRANSPORT_WS,
        False,
        subscribe("subscribe", {"query": None, "extensions": {"persistedQuery": {}}}),
        "subscribe payload needs a string query (or a persistedQuery)",
    ),
    (
        TRANSPORT_WS,
        False,
        f'{{"id": "1", "type": "subscribe", "payload": {{"query": "{{ a }}", "variables": '
        f'{{"v": {DEEP}}}}}}}',
        "message refused: JSON nested deeper than 64 levels",
    ),
    (TRANSPORT_WS, False, json.dumps({"id": ["1"], "type": "complete"}), "a message id"),
    (TRANSPORT_WS, False, json.dumps({"payload": {}}), "a message needs a string type"),
    (TRANSPORT_WS, False, DEEP, "message refused"),
    (LEGACY_WS, True, f'{{"type": "connection_init", "payload": {DEEP}}}', "message refused"),
    (LEGACY_WS, False, subscribe("start", "x"), "start payload must be an object"),
    (LEGACY_WS, False, subscribe("start", {"extensions": []}), "extensions must be an object"),
    (LEGACY_WS, False, json.dumps({"type": "start", "payload": {"query": "{ a }"}}), "start"),
    (LEGACY_WS, False, json.dumps({"payload": {}}), "a message needs a string type"),
    (LEGACY_WS, False, "not json", "a message must be valid JSON"),
    (LEGACY_WS, False, "[1, 2]", "a message must be a JSON object"),
    (TRANSPORT_WS, False, b"{}", "WebSocket message type must be text"),
    (LEGACY_WS, False, b"{}", "WebSocket message type must be text"),
]


@pytest.mark.parametrize(("protocol", "first", "message", "reason"), MALFORMED)
async def test_every_malformed_message_is_closed_with_4400(
    protocol: str, first: bool, message: str | bytes, reason: str
) -> None:
    async with run_server(fleet.objects()) as (address, _):
        async with websockets.connect(f"ws://{address}/graphql", subprotocols=[protocol]) as ws:
            if not first:
                await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
                assert json.loads(await ws.recv())["type"] == "connection_ack"
            await ws.send(message)
            with pytest.raises(websockets.ConnectionClosed) as closed:
                while True:
                    assert json.loads(await asyncio.wait_for(ws.recv(), 5))["type"] == "ka"
        async with httpx.AsyncClient() as client:
            assert (await client.get(f"http://{address}/healthz")).status_code == 200
    received = closed.value.rcvd
    assert received is not None, "closed without a close frame"
    assert received.code == 4400
    assert received.reason.startswith(reason)


async def ws_answer(address: str, query: str, variables: dict[str, Any]) -> Any:
    """The payload of a query's first message over graphql-transport-ws."""
    async with websockets.connect(f"ws://{address}/graphql", subprotocols=[TRANSPORT_WS]) as ws:
        await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
        assert json.loads(await ws.recv())["type"] == "connection_ack"
        payload = {"query": query, "variables": variables}
        await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": payload}))
        message = json.loads(await asyncio.wait_for(ws.recv(), 30))
    assert message["type"] in ("next", "error"), message
    return message["payload"]


async def test_codes_rules_and_warnings_reach_websocket_clients_too() -> None:
    page = "query($n: Int) { hypervisors(first: $n) { totalCount } }"
    unknown = "query($r: ResourceName) { hypervisors(orderBy: {field: FREE, resource: $r}) { totalCount } }"
    async with run_server(generate(20)) as (address, _):
        [mutation] = await ws_answer(address, "mutation { a }", {})
        page_size = await ws_answer(address, page, {"n": 10**6})
        warned = await ws_answer(address, unknown, {"r": "cpuz"})
    assert mutation["extensions"] == {"code": "MUTATIONS_NOT_SUPPORTED"}
    assert page_size["data"] == {"hypervisors": {"totalCount": 20}}
    assert [w["code"] for w in page_size["extensions"]["warnings"]] == ["PAGE_SIZE_CLAMPED"]
    assert warned["data"] == {"hypervisors": {"totalCount": 20}}
    assert [w["code"] for w in warned["extensions"]["warnings"]] == ["UNKNOWN_RESOURCE"]


class _Gone:
    """A connection whose client has left, or that the server closed already: what a
    send meets, as Strawberry and Starlette raise it."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    async def send_json(self, message: Any) -> None:
        raise self.error


class _Open:
    def __init__(self) -> None:
        self.sent: list[Any] = []

    async def send_json(self, message: Any) -> None:
        self.sent.append(message)


async def test_a_send_to_a_client_that_left_is_no_error() -> None:
    for error in (WebSocketDisconnected(), ClosedAlready('Cannot call "send" once closed')):
        await send_while_connected(_Gone(error), {"type": "next"})  # does not raise
    connected = _Open()
    await send_while_connected(connected, {"type": "next"})
    assert connected.sent == [{"type": "next"}]


TOTALS = "subscription { fleetCapacityChanged(groupBy: ZONE) { key hypervisorCount } }"


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("document", [HOSTS, TOTALS], ids=["broadcast", "own-stream"])
async def test_an_ended_subscription_leaves_no_cycle_holding_a_snapshot(
    protocol: str, document: str
) -> None:
    """A subscription ends by its task's cancellation, and the task keeps the error,
    whose traceback holds every frame the subscription ran in: the last change's
    snapshot among their locals. Frozen with the long-lived subscription, that cycle
    held the snapshot till the whole heap was collected."""
    async with run_server(fleet.objects()) as (address, store):
        with cycles() as found:
            async for client in connect(address, protocol):
                await client.subscribe("1", document)
                if document == HOSTS:  # the others' first message is the totals as they are
                    await listening(address)
                    store.upsert(modified("node-a", "10"))
                await client.next()
                if protocol == TRANSPORT_WS:
                    await client.send({"id": "1", "type": "complete"})
                    # Its handler ends the operation's task before it reads the ping.
                    await client.send({"type": "ping"})
                    assert json.loads(await client.ws.recv())["type"] == "pong"
                else:
                    await client.send({"id": "1", "type": "stop"})
                    assert (await client.receive())["type"] == "complete"

                async def stopped() -> bool:  # a broadcast's run too, a few turns later
                    zero = {"subscription_streams": 0.0, "subscription_broadcasts": 0.0}
                    return await gauges(address) == zero

                await eventually(stopped)
    assert holding_snapshots(found) == []


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_connection_without_connection_init_is_closed_with_4408(
    protocol: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Else it holds its place among the connections for ever (the legacy protocol's
    did: 500 of them and every new client was refused)."""
    monkeypatch.setattr(websocket, "INIT_SECONDS", 0.1)
    async with run_server(fleet.objects()) as (address, _):
        async with websockets.connect(f"ws://{address}/graphql", subprotocols=[protocol]) as ws:
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await asyncio.wait_for(ws.recv(), 5)
        assert await gauges(address, ("websocket_connections",)) == {"websocket_connections": 0}
    assert closed.value.rcvd is not None
    assert (closed.value.rcvd.code, closed.value.rcvd.reason) == (
        4408,
        "Connection initialisation timeout",
    )


async def test_an_unknown_legacy_type_is_answered_and_the_connection_goes_on() -> None:
    """As the legacy protocol's reference server answers it: an error, under its id."""
    async with run_server(fleet.objects()) as (address, _):
        async for client in connect(address, LEGACY_WS):
            await client.send({"id": "7", "type": "foo"})
            assert await client.receive() == {
                "type": "error",
                "id": "7",
                "payload": {
                    "message": "unknown message type 'foo'",
                    "extensions": {"code": "BAD_REQUEST"},
                },
            }
            await client.subscribe("1", TOTALS)
            assert (await client.next())["fleetCapacityChanged"]


async def test_a_client_that_reads_nothing_is_dropped_when_cut_off(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Its close frame waits behind all it did not read, for ever: the connection, its
    subscription's stream and the close's task with it, till the client left and the
    task's error was logged as never retrieved."""
    monkeypatch.setattr(websocket, "ABORT_AFTER", 0.1)
    async with run_server(fleet.objects()) as (address, store):
        host, port = address.split(":")
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: no autotuning
        sock.connect((host, int(port)))
        url = f"ws://{address}/graphql"
        # One message queued, and the client reads no more from the socket.
        async with websockets.connect(
            url, subprotocols=[TRANSPORT_WS], sock=sock, max_queue=1, close_timeout=0
        ) as ws:
            client = Client(ws, TRANSPORT_WS)
            await client.init()
            await client.subscribe("1", HOSTS)
            await listening(address)
            versions = itertools.cycle(str(n) for n in range(1, 201))

            async def backed_up() -> bool:
                """Changes till the server keeps frames it cannot write."""
                for version in itertools.islice(versions, 200):
                    store.upsert(modified("node-a", version))
                pending = await gauges(address, ("subscription_pending_bytes",))
                return pending["subscription_pending_bytes"] > 0

            await eventually(backed_up, within=30)
            for version in itertools.islice(versions, 1100):  # past its queue: cut off
                store.upsert(modified("node-a", version))

            async def released() -> bool:
                names = ("websocket_connections", "subscription_streams")
                return await gauges(address, names) == dict.fromkeys(names, 0.0)

            await eventually(released)
            await eventually(lambda: not websocket._background)
    gc.collect()  # where an error never retrieved is logged
    assert [r.getMessage() for r in caplog.records if r.levelname == "ERROR"] == []
