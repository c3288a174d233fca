"""Subscriptions end to end over a real WebSocket, in both protocols."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
import websockets

from gateway.api.totals import fleet_groups
from gateway.domain.flavors import NO_CATALOG
from gateway.http.websocket import SubscriptionServer
from gateway.store.consumers import ConsumerIndex
from gateway.store.store import Store
from tests import fleet
from tests.support import listening, run_server

TRANSPORT_WS = "graphql-transport-ws"
LEGACY_WS = "graphql-ws"


class Client:
    """A minimal client for both subscription protocols."""

    def __init__(self, ws: websockets.ClientConnection, protocol: str) -> None:
        self.ws = ws
        self.protocol = protocol

    async def init(self) -> None:
        await self.send({"type": "connection_init", "payload": {}})
        assert (await self.receive())["type"] == "connection_ack"

    async def subscribe(self, id: str, query: str, **variables: Any) -> None:
        kind = "subscribe" if self.protocol == TRANSPORT_WS else "start"
        await self.send(
            {"id": id, "type": kind, "payload": {"query": query, "variables": variables}}
        )

    async def send(self, message: dict[str, Any]) -> None:
        await self.ws.send(json.dumps(message))

    async def receive(self, wait: float = 5) -> dict[str, Any]:
        while True:
            message: dict[str, Any] = json.loads(await asyncio.wait_for(self.ws.recv(), wait))
            if message["type"] not in ("ka", "ping", "pong"):
                return message

    async def next(self, wait: float = 5) -> dict[str, Any]:
        message = await self.receive(wait)
        assert message["type"] in ("next", "data"), message
        data: dict[str, Any] = message["payload"]["data"]
        return data


@pytest.fixture
async def server() -> AsyncIterator[tuple[str, Store]]:
    async with run_server(fleet.objects(), coalesce_interval=0.2) as running:
        yield running


async def connect(address: str, protocol: str) -> AsyncIterator[Client]:
    async with websockets.connect(f"ws://{address}/graphql", subprotocols=[protocol]) as ws:
        client = Client(ws, protocol)
        await client.init()
        yield client


def modified(name: str, cpu: str) -> dict[str, Any]:
    objects = {o["metadata"]["name"]: o for o in fleet.objects()}
    obj = objects[name]
    obj["metadata"]["resourceVersion"] = cpu
    # node-a: consumer C2; node-b: consumer C3
    obj["spec"]["bookings"][-2]["consumer"]["resources"]["cpu"] = cpu
    return obj


@pytest.mark.parametrize("protocol", [TRANSPORT_WS, LEGACY_WS])
async def test_hypervisor_changed(server: tuple[str, Store], protocol: str) -> None:
    address, store = server
    async for client in connect(address, protocol):
        await client.subscribe(
            "1",
            """subscription { hypervisorChanged(filter: {zone: "qa-de-1a"}) {
            type hypervisor { name resource(name: "cpu") { free } } } }""",
        )
        await listening(address)
        store.upsert(modified("node-a", "10"))  # booked 16+10+4 = 30, free 474
        store.delete("node-c")
        store.upsert(modified("node-b", "10"))  # other zone: not seen
        assert await client.next() == {
            "hypervisorChanged": {
                "type": "MODIFIED",
                "hypervisor": {"name": "node-a", "resource": {"free": "474"}},
            }
        }
        assert await client.next() == {
            "hypervisorChanged": {
                "type": "DELETED",
                "hypervisor": {"name": "node-c", "resource": {"free": None}},
            }
        }
        with pytest.raises(TimeoutError):
            await client.receive(wait=0.5)


async def test_moving_out_of_the_filter_reads_as_deleted(server: tuple[str, Store]) -> None:
    address, store = server
    async for client in connect(address, TRANSPORT_WS):
        await client.subscribe(
            "1",
            """subscription { hypervisorChanged(filter: {zone: "qa-de-1a"}) {
            type hypervisor { name zone } } }""",
        )
        await listening(address)
        moved = modified("node-a", "10")
        moved["metadata"]["labels"]["topology.kubernetes.io/zone"] = "qa-de-1b"
        store.upsert(moved)
        assert await client.next() == {
            "hypervisorChanged": {
                "type": "DELETED",
                "hypervisor": {"name": "node-a", "zone": "qa-de-1b"},
            }
        }


async def test_a_change_links_within_the_fleet_it_was_made_in(server: tuple[str, Store]) -> None:
    """A deleted host's bookings lead back to it and to their consumers as they were;
    a change's links never read a later fleet either."""
    address, store = server
    async for client in connect(address, TRANSPORT_WS):
        await client.subscribe(
            "1",
            """subscription { hypervisorChanged { type hypervisor { name consumers {
            uuid hypervisor { name } consumer { hypervisors { name } } } } } }""",
        )
        await listening(address)
        store.delete("node-c")
        store.upsert(modified("node-b", "10"))
        store.delete("node-a")  # before node-b's change is sent: C3 still on node-a there
        booked = {"uuid": fleet.C5, "hypervisor": {"name": "node-c"}}
        assert await client.next() == {
            "hypervisorChanged": {
                "type": "DELETED",
                "hypervisor": {
                    "name": "node-c",
                    "consumers": [{**booked, "consumer": {"hypervisors": [{"name": "node-c"}]}}],
                },
            }
        }
        node_b = (await client.next())["hypervisorChanged"]["hypervisor"]
        migrating = {"hypervisors": [{"name": "node-a"}, {"name": "node-b"}]}
        assert node_b["consumers"][0] == {
            "uuid": fleet.C3,
            "hypervisor": {"name": "node-b"},
            "consumer": migrating,
        }
        deleted = (await client.next())["hypervisorChanged"]
        assert deleted["type"] == "DELETED" and deleted["hypervisor"]["name"] == "node-a"


async def test_consumer_changed(server: tuple[str, Store]) -> None:
    address, store = server
    async for client in connect(address, TRANSPORT_WS):
        await client.subscribe(
            "c",
            """subscription($u: UUID!) { consumerChanged(uuid: $u) {
            migrating hypervisors { name } } }""",
            u=fleet.C3,
        )
        assert await client.next() == {
            "consumerChanged": {
                "migrating": True,
                "hypervisors": [{"name": "node-a"}, {"name": "node-b"}],
            }
        }
        node_b = modified("node-b", "10")
        node_b["spec"]["bookings"] = node_b["spec"]["bookings"][1:]  # migration finished
        store.upsert(node_b)
        assert await client.next() == {
            "consumerChanged": {"migrating": False, "hypervisors": [{"name": "node-a"}]}
        }
        store.delete("node-a")
        assert await client.next() == {"consumerChanged": None}


async def test_consumer_changed_misses_no_change_made_while_its_first_message_is_sent(
    server: tuple[str, Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A change made as the consumer's first message goes out is the next message:
    the subscription listens for changes before it reads the consumer."""
    address, store = server
    node_b = modified("node-b", "10")
    node_b["spec"]["bookings"] = node_b["spec"]["bookings"][1:]  # C3's migration finished
    encode = SubscriptionServer.encode_json

    def changing(self: SubscriptionServer, data: object) -> str:
        if isinstance(data, dict) and data.get("type") == "next" and node_b:
            store.upsert(node_b.copy())
            node_b.clear()
        return encode(self, data)

    monkeypatch.setattr(SubscriptionServer, "encode_json", changing)
    async for client in connect(address, TRANSPORT_WS):
        await client.subscribe(
            "c", "subscription($u: UUID!) { consumerChanged(uuid: $u) { migrating } }", u=fleet.C3
        )
        assert await client.next() == {"consumerChanged": {"migrating": True}}
        assert await client.next() == {"consumerChanged": {"migrating": False}}


async def test_consumer_changed_indexes_the_consumers_in_a_worker_thread(
    server: tuple[str, Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    on_loop: list[bool] = []
    index = ConsumerIndex.of.__func__  # type: ignore[attr-defined]

    def watched(cls: type[ConsumerIndex], *args: Any) -> ConsumerIndex:
        on_loop.append(asyncio._get_running_loop() is not None)
        return index(cls, *args)  # type: ignore[no-any-return]

    monkeypatch.setattr(ConsumerIndex, "of", classmethod(watched))
    address, _ = server
    async for client in connect(address, TRANSPORT_WS):
        await client.subscribe(
            "c", "subscription($u: UUID!) { consumerChanged(uuid: $u) { uuid } }", u=fleet.C1
        )
        assert await client.next() == {"consumerChanged": {"uuid": fleet.C1}}
    assert on_loop == [False]


async def test_fleet_capacity_is_coalesced_and_latest(server: tuple[str, Store]) -> None:
    address, store = server
    async for client in connect(address, TRANSPORT_WS):
        await client.subscribe(
            "f",
            """subscription { fleetCapacityChanged(groupBy: ZONE) {
            key resource(name: "cpu") { free } } }""",
        )
        first = await client.next()
        assert first["fleetCapacityChanged"][0] == {"key": "qa-de-1a", "resource": {"free": "476"}}
        for booked in range(1, 51):  # 50 changes, the subscription free to run between two
            store.upsert(modified("node-a", str(booked)))
            await asyncio.sleep(0)
        # Every message up to the final state: booked 16 + 50 + 4 = 70, free 434.
        messages = [await client.next()]
        while messages[-1]["fleetCapacityChanged"][0]["resource"] != {"free": "434"}:
            messages.append(await client.next())
        # One per 0.2 s interval: the changes took a few milliseconds, one boundary at most.
        assert len(messages) <= 2, messages


async def test_fleet_capacity_follows_a_host_into_tracking(server: tuple[str, Store]) -> None:
    address, store = server
    async for client in connect(address, TRANSPORT_WS):
        await client.subscribe(
            "f",
            """subscription { fleetCapacityChanged(groupBy: ZONE) { key resource(name: "cpu") {
            trackedHosts untrackedHosts booked free available } } }""",
        )
        zone_b = (await client.next())["fleetCapacityChanged"][1]
        # node-b: free -4; node-d (untracked): 28 unallocated
        assert zone_b["resource"] == {
            "trackedHosts": 1,
            "untrackedHosts": 1,
            "booked": "68",
            "free": "-4",
            "available": "24",
        }
        node_d = next(o for o in fleet.objects() if o["metadata"]["name"] == "node-d")
        node_d["metadata"]["resourceVersion"] = "2"
        node_d["spec"]["bookings"] = []  # now tracked: nothing booked, capacity 128 free
        store.upsert(node_d)
        zone_b = (await client.next())["fleetCapacityChanged"][1]
        assert zone_b["resource"] == {
            "trackedHosts": 2,
            "untrackedHosts": 0,
            "booked": "68",
            "free": "124",
            "available": "124",
        }


async def test_live_totals_are_computed_once_for_all_their_subscribers(
    server: tuple[str, Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    from gateway.api import subscriptions

    computed: list[tuple[int, str]] = []
    on_loop: list[bool] = []

    def counting(views: Any, snapshot: Any, where: Any, group_by: Any, *rest: Any) -> Any:
        computed.append((snapshot.generation, str(group_by)))
        on_loop.append(asyncio._get_running_loop() is not None)
        return fleet_groups(views, snapshot, where, group_by, *rest)

    monkeypatch.setattr(subscriptions, "fleet_groups", counting)
    address, store = server
    query = 'subscription { fleetCapacityChanged(groupBy: ZONE) { key resource(name: "cpu") { free } } }'
    async with contextlib.AsyncExitStack() as stack:
        clients = [
            await stack.enter_async_context(
                contextlib.asynccontextmanager(connect)(address, protocol)
            )
            for protocol in (TRANSPORT_WS, LEGACY_WS, TRANSPORT_WS)
        ]
        for client in clients:
            await client.subscribe("t", query)
        first = [await client.next() for client in clients]
        store.upsert(modified("node-a", "7"))
        second = [await client.next() for client in clients]
    assert first[0] == first[1] == first[2] != second[0] == second[1] == second[2]
    # One computation per generation, whatever the number of subscribers.
    assert len(computed) == len(set(computed)) == 2
    # The first counts the fleet, in a worker thread; the next reads the kept sums.
    assert on_loop == [False, True]


def executions(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The variables of every operation the executor runs from now on, as text."""
    from gateway.api.executor import Executor

    executed: list[str] = []
    execute = Executor._execute_operation

    def counting(self: Executor, serially: bool | None) -> Any:
        executed.append(self._variables_text())
        return execute(self, serially)

    monkeypatch.setattr(Executor, "_execute_operation", counting)
    return executed


def planned(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The variables of every event's result made by its operation's plan from now on."""
    from gateway.api.executor import Executor

    made: list[str] = []
    answer = Executor._planned

    def counting(self: Executor, payload: Any) -> Any:
        result = answer(self, payload)
        if result is not None:
            made.append(self._variables_text())
        return result

    monkeypatch.setattr(Executor, "_planned", counting)
    return made


def per_event_copies(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The payload of every copy of an executor made for one subscription event."""
    from graphql.execution.executor import Executor

    copies: list[object] = []
    build = Executor.build_per_event_executor

    def counting(self: Executor, payload: Any) -> Executor:
        copies.append(payload)
        return build(self, payload)

    monkeypatch.setattr(Executor, "build_per_event_executor", counting)
    return copies


async def test_an_event_is_executed_once_for_every_subscriber_of_its_operation(
    server: tuple[str, Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three subscribers of one text (both protocols) get one execution per change;
    another text, or the same text with other variables, has its own (by its plan,
    for one that reads only attributes and lookups). Nor is an event's executor copied for a
    subscriber that takes a result already made, or for a plan's."""
    executed = executions(monkeypatch)
    by_plan = planned(monkeypatch)
    copies = per_event_copies(monkeypatch)
    address, store = server
    query = """subscription Changed($zone: String) { hypervisorChanged(filter: {zone: $zone}) {
        type hypervisor { name resource(name: "cpu") { free } placement { __typename } } } }"""
    other = "subscription { hypervisorChanged { type hypervisor { name } } }"
    subscriptions = [
        (TRANSPORT_WS, query, {"zone": "qa-de-1a"}),
        (LEGACY_WS, query, {"zone": "qa-de-1a"}),
        (TRANSPORT_WS, query, {"zone": "qa-de-1a"}),
        (TRANSPORT_WS, query, {}),
        (TRANSPORT_WS, other, {}),
    ]
    async with contextlib.AsyncExitStack() as stack:
        clients = []
        for protocol, text, variables in subscriptions:
            client = await stack.enter_async_context(
                contextlib.asynccontextmanager(connect)(address, protocol)
            )
            await client.subscribe("s", text, **variables)
            clients.append(client)
        await listening(address, streams=len(clients))
        store.upsert(modified("node-a", "10"))
        got = [await client.next() for client in clients]
    placement = {"__typename": "PlacementProvider"}
    host = {"name": "node-a", "resource": {"free": "474"}, "placement": placement}
    assert got[:4] == [{"hypervisorChanged": {"type": "MODIFIED", "hypervisor": host}}] * 4
    assert got[4] == {"hypervisorChanged": {"type": "MODIFIED", "hypervisor": {"name": "node-a"}}}
    assert sorted(executed) == sorted(['{"zone": "qa-de-1a"}', "{}"])
    assert by_plan == ["{}"]
    assert len(copies) == len(executed)


async def test_subscribers_with_the_same_label_selector_share_an_execution(
    server: tuple[str, Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A selector is its text: each subscriber's parse of it is the same argument."""
    executed = executions(monkeypatch)
    by_plan = planned(monkeypatch)
    address, store = server
    query = """subscription($s: LabelSelector) { hypervisorChanged(filter: {labelSelector: $s})
        { type hypervisor { name } } }"""
    selector = "topology.kubernetes.io/zone in (qa-de-1a)"
    async with contextlib.AsyncExitStack() as stack:
        clients = []
        for protocol in (TRANSPORT_WS, LEGACY_WS):
            client = await stack.enter_async_context(
                contextlib.asynccontextmanager(connect)(address, protocol)
            )
            await client.subscribe("s", query, s=selector)
            clients.append(client)
        await listening(address, streams=len(clients))
        store.upsert(modified("node-a", "10"))
        got = [await client.next() for client in clients]
    changed = {"type": "MODIFIED", "hypervisor": {"name": "node-a"}}
    assert got == [{"hypervisorChanged": changed}] * 2
    assert len(executed + by_plan) == 1, (executed, by_plan)


async def test_slow_event_subscriber_is_cut_off_not_buffered(server: tuple[str, Store]) -> None:
    address, store = server
    async for client in connect(address, TRANSPORT_WS):
        await client.subscribe(
            "1", "subscription { hypervisorChanged { type hypervisor { name } } }"
        )
        await listening(address)
        for n in range(3000):  # far more than the per-subscriber queue (1000) in one go
            store.upsert(modified("node-a", str(n % 200 + 1)))
        seen = 0
        with pytest.raises(websockets.ConnectionClosed) as closed:
            while True:
                await client.receive()
                seen += 1
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1013
        assert seen <= 1000
    # The server is fine and serves a new subscriber from the current state.
    async for client in connect(address, TRANSPORT_WS):
        await client.subscribe(
            "c", "subscription($u: UUID!) { consumerChanged(uuid: $u) { uuid } }", u=fleet.C1
        )
        assert await client.next() == {"consumerChanged": {"uuid": fleet.C1}}


@pytest.mark.parametrize("protocol", [TRANSPORT_WS, LEGACY_WS])
async def test_a_variable_that_does_not_coerce_reads_as_over_http(
    server: tuple[str, Store], protocol: str
) -> None:
    """Nothing ran: the client's input is wrong, not the gateway (BAD_USER_INPUT, as
    HTTP answers a query with the same variable missing)."""
    address, _ = server
    for document in (
        "subscription($u: UUID!) { consumerChanged(uuid: $u) { uuid } }",
        "subscription($n: [String!]!) { hypervisorChanged(filter: {names: $n}) { type } }",
    ):
        async for client in connect(address, protocol):
            await client.subscribe("1", document)
            message = await client.receive()
        assert message["type"] == "error", message
        errors = message["payload"]
        errors = errors if isinstance(errors, list) else [errors]  # graphql-ws: the first
        assert [e["extensions"]["code"] for e in errors] == ["BAD_USER_INPUT"], message


@pytest.mark.parametrize("protocol", [TRANSPORT_WS, LEGACY_WS])
async def test_a_slow_subscriber_of_its_own_stream_is_one_warning_and_a_code(
    server: tuple[str, Store], protocol: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Not an error with a traceback in the log: the gateway did nothing wrong. The
    subscriber reads, if it reads anything more, an error it can branch on."""
    address, store = server
    async for client in connect(address, protocol):
        await client.subscribe(
            "c", "subscription($u: UUID!) { consumerChanged(uuid: $u) { uuid } }", u=fleet.C2
        )
        assert await client.next() == {"consumerChanged": {"uuid": fleet.C2}}
        received = []
        with caplog.at_level("WARNING"), pytest.raises(websockets.ConnectionClosed) as closed:
            for n in range(3000):  # far more than its queue (1000) in one go
                store.upsert(modified("node-a", str(n % 200 + 1)))
            while True:
                received.append(await client.receive())
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1013
    codes = [
        e["extensions"]["code"] for m in received if m["type"] == "error" for e in m["payload"]
    ]
    codes += [
        e["extensions"]["code"]
        for m in received
        if m["type"] in ("next", "data")
        for e in m["payload"].get("errors", ())
    ]
    assert set(codes) <= {"SUBSCRIBER_TOO_SLOW"}, received[-3:]
    assert [r.getMessage() for r in caplog.records] == [
        "a subscriber fell more than its queue of changes behind the store: "
        "closing its connection (1013)"
    ]


@pytest.mark.parametrize("protocol", [TRANSPORT_WS, LEGACY_WS])
async def test_subscriptions_per_connection_are_limited(
    server: tuple[str, Store], protocol: str
) -> None:
    address, _ = server
    async for client in connect(address, protocol):
        for n in range(21):  # the limit is 20
            await client.subscribe(str(n), "subscription { hypervisorChanged { type } }")
        refused = await client.receive()
        assert refused["type"] == "error" and refused["id"] == "20"
        errors = refused["payload"]
        [error] = errors if isinstance(errors, list) else [errors]  # graphql-ws: the first
        assert error == {
            "message": "Subscription limit reached",
            "extensions": {"code": "TOO_MANY_REQUESTS"},
        }


async def test_a_relist_brings_subscribers_to_the_true_state(server: tuple[str, Store]) -> None:
    address, store = server
    async for client in connect(address, TRANSPORT_WS):
        await client.subscribe(
            "1",
            'subscription { hypervisorChanged { type hypervisor { name resource(name: "cpu") { booked } } } }',
        )
        await listening(address)
        # A relist: node-c vanished while disconnected, node-a changed, node-e is new.
        objects = [o for o in fleet.objects() if o["metadata"]["name"] != "node-c"]
        objects[0] = modified("node-a", "10")
        new = fleet.objects()[2]
        new["metadata"]["name"] = "node-e"
        store.replace([*objects, new], "500")
        events = {}
        for _ in range(3):
            change = (await client.next())["hypervisorChanged"]
            events[change["hypervisor"]["name"]] = (
                change["type"],
                change["hypervisor"]["resource"]["booked"],
            )
        assert events == {
            "node-a": ("MODIFIED", "30"),
            "node-c": ("DELETED", "2"),
            "node-e": ("ADDED", "2"),
        }


async def test_connections_per_server_are_limited(caplog: pytest.LogCaptureFixture) -> None:
    async with run_server(fleet.objects(), max_connections=2) as (address, _):
        # uvicorn's records do not reach the root logger (its logging set up by then).
        logging.getLogger("uvicorn.error").addHandler(caplog.handler)
        async with (
            websockets.connect(f"ws://{address}/graphql", subprotocols=[TRANSPORT_WS]),
            websockets.connect(f"ws://{address}/graphql", subprotocols=[TRANSPORT_WS]),
        ):
            with pytest.raises(websockets.InvalidStatus) as refused:
                async with websockets.connect(
                    f"ws://{address}/graphql", subprotocols=[TRANSPORT_WS]
                ):
                    pass
            # A full server says so: a bare 403 would read like an authentication failure.
            assert refused.value.response.status_code == 503
            assert refused.value.response.body == (
                b"too many WebSocket connections (the limit is 2)\n"
            )
        # Closed connections free their places.
        async for client in connect(address, TRANSPORT_WS):
            await client.subscribe("1", "subscription { fleetCapacityChanged { hypervisorCount } }")
            assert (await client.next())["fleetCapacityChanged"] == [{"hypervisorCount": 4}]
    logging.getLogger("uvicorn.error").removeHandler(caplog.handler)
    # A refusal is a client's matter, answered: no error of the server's.
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


async def test_websocket_origins_are_an_allow_list() -> None:
    async with run_server(fleet.objects(), cors_origins=["https://dash.example"]) as (address, _):
        url = f"ws://{address}/graphql"
        with pytest.raises(websockets.InvalidStatus) as refused:
            async with websockets.connect(
                url, subprotocols=[TRANSPORT_WS], origin=websockets.Origin("https://evil.example")
            ):
                pass
        assert refused.value.response.status_code == 403
        assert refused.value.response.body == (
            b"origin 'https://evil.example' may not open a WebSocket here: see --cors-origins\n"
        )
        for origin in ("https://dash.example", f"http://{address}"):
            async with websockets.connect(
                url, subprotocols=[TRANSPORT_WS], origin=websockets.Origin(origin)
            ) as ws:
                await ws.send(json.dumps({"type": "connection_init"}))
                assert json.loads(await ws.recv())["type"] == "connection_ack"


async def test_live_totals_kept_are_bounded() -> None:
    """A quiet fleet keeps one snapshot for long: subscribers asking ever new filters
    of it must not make the kept totals grow without end."""
    from gateway.api import subscriptions
    from gateway.api.enums import FleetGrouping
    from gateway.api.filters import HypervisorFilter
    from gateway.api.memos import MAX_TOTALS, Totals

    store = Store()
    store.replace(fleet.objects())
    totals = Totals()
    for n in range(MAX_TOTALS + 10):
        groups = await subscriptions.shared_groups(
            store.views,
            totals,
            store.snapshot,
            HypervisorFilter(names=[f"node-{n}"]),
            FleetGrouping.NONE,
            NO_CATALOG,
        )
        assert groups[0].hypervisor_count == 0
    figures = totals.figures()
    assert figures.entries == MAX_TOTALS and figures.evictions == 10
    assert 0 < figures.bytes <= totals.max_bytes
