"""One suite of queries over every transport: HTTP POST and GET, both WebSocket protocols.

Each document is answered by the real app under uvicorn, four ways; every
answer must be the HTTP POST one. A transport that builds its own context
(a WebSocket operation's) is where a resolver's view of the server can drift:
the flavor catalog once went missing there.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest
import websockets
from websockets.typing import Subprotocol

from gateway.api.limits import Limits
from gateway.domain.flavors import load_catalog
from gateway.sources.demo.source import generate
from tests import fleet
from tests.support import cycles, holding_snapshots, run_server
from tests.test_limits import HEAVY

TRANSPORT_WS = "graphql-transport-ws"
LEGACY_WS = "graphql-ws"

Answer = dict[str, Any]
Ask = Callable[[str, str, dict[str, Any]], Awaitable[Answer]]

LINKS = (
    "{ hypervisors(orderBy: {field: NAME}) { totalCount nodes { name"
    " consumers { uuid hypervisor { name } consumer { uuid hypervisors { name } } } } } }"
)
FLEET_CAPACITY = (
    "{ fleetCapacity(groupBy: ZONE) { key hypervisorCount resources { name capacity free } } }"
)
CONSUMERS = "{ consumers { totalCount nodes { uuid migrating hypervisors { name } } } }"

#: (id, document, variables, whether the answer has errors)
DOCUMENTS: list[tuple[str, str, dict[str, Any], bool]] = [
    ("flavors", "{ flavors { name vcpus ramMib resources { name amount } } }", {}, False),
    (
        "slots-of-a-flavor",
        "query($flavor: String) { slots(flavor: $flavor, groupBy: ZONE)"
        " { key flavor slots hostsWithRoom hypervisors { hypervisor { name } slots } } }",
        {"flavor": "g_c4_m16"},
        False,
    ),
    (
        "flavor-slots",
        "{ flavors { name requiredTraits judged slots { slots hostsWithRoom"
        " excluded { reason hosts } } } }",
        {},
        False,
    ),
    (
        "slots-for-a-project",
        'query($p: String) { slots(flavor: "g_c4_m16", project: $p) { slots project'
        " excluded { reason hosts } hypervisors { hypervisor { name } slots reason } } }",
        {"p": "p1"},
        False,
    ),
    (
        "eligibility",
        '{ hypervisors { nodes { name eligibility(flavor: "g_c4_m16")'
        " { eligible reasons slots basis } } } }",
        {},
        False,
    ),
    (
        "drain-plan",
        '{ drainPlan(hosts: ["node-a"]) { drained exact moves { uuid from to }'
        " unplaced { uuid reason } after { key hypervisorCount } } }",
        {},
        False,
    ),
    (
        "fits-flavor",
        '{ hypervisors(filter: {fitsFlavor: "g_c4_m16"}) { nodes { name } } }',
        {},
        False,
    ),
    ("hypervisors-with-links", LINKS, {}, False),
    ("fleet-capacity", FLEET_CAPACITY, {}, False),
    ("consumers", CONSUMERS, {}, False),
    ("unknown-flavor", '{ slots(flavor: "nope") { slots } }', {}, True),
    ("bad-slots-request", "{ slots(request: []) { key } }", {}, True),
    ("page-size-clamped", "{ hypervisors(first: -1) { totalCount } }", {}, False),
    ("unknown-field", "{ hypervisors { nodes { nope } } }", {}, True),
    ("missing-variable", "query($n: String!) { hypervisor(name: $n) { name } }", {}, True),
]


async def over_post(address: str, document: str, variables: dict[str, Any]) -> Answer:
    async with httpx.AsyncClient(timeout=30) as client:
        payload = {"query": document, "variables": variables}
        response = await client.post(f"http://{address}/graphql", json=payload)
    answer: Answer = response.json()
    return answer


async def over_get(address: str, document: str, variables: dict[str, Any]) -> Answer:
    params = {"query": document, "variables": json.dumps(variables)}
    async with httpx.AsyncClient(timeout=30) as client:
        response = await client.get(f"http://{address}/graphql", params=params)
    answer: Answer = response.json()
    return answer


def over_websocket(protocol: str) -> Ask:
    """Ask over one WebSocket protocol; a pre-execution error reads like HTTP's answer.

    That is ``{"errors": [...]}``: graphql-ws (legacy) carries one error, the first,
    so the suite's error documents have one each.
    """
    start = "subscribe" if protocol == TRANSPORT_WS else "start"

    async def ask(address: str, document: str, variables: dict[str, Any]) -> Answer:
        url = f"ws://{address}/graphql"
        async with websockets.connect(url, subprotocols=[Subprotocol(protocol)]) as ws:
            await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
            assert json.loads(await ws.recv())["type"] == "connection_ack"
            payload = {"query": document, "variables": variables}
            await ws.send(json.dumps({"id": "1", "type": start, "payload": payload}))
            async for message in messages(ws):
                if message["type"] in ("next", "data"):
                    answer: Answer = message["payload"]
                    return answer
                if message["type"] == "error":
                    errors = message["payload"]
                    return {"errors": errors if isinstance(errors, list) else [errors]}
        raise AssertionError("the connection closed without an answer")

    return ask


async def messages(ws: websockets.ClientConnection) -> AsyncIterator[dict[str, Any]]:
    """The server's messages, keep-alives left out."""
    while True:
        message = json.loads(await asyncio.wait_for(ws.recv(), 30))
        if message["type"] != "ka":
            yield message


TRANSPORTS: dict[str, Ask] = {
    "GET": over_get,
    TRANSPORT_WS: over_websocket(TRANSPORT_WS),
    LEGACY_WS: over_websocket(LEGACY_WS),
}


@pytest.mark.parametrize(
    ("document", "variables", "failed"),
    [pytest.param(*rest, id=name) for name, *rest in DOCUMENTS],
)
async def test_every_transport_answers_like_http_post(
    document: str, variables: dict[str, Any], failed: bool
) -> None:
    async with run_server(fleet.objects(), catalog=load_catalog(None)) as (address, _):
        expected = await over_post(address, document, variables)
        assert ("errors" in expected) is failed, expected
        # An empty answer would match a transport that sees nothing.
        assert failed or all(expected["data"].values()), expected
        answers = {
            name: await ask(address, document, variables) for name, ask in TRANSPORTS.items()
        }
    assert answers == dict.fromkeys(TRANSPORTS, expected)


#: Operations that fail each their own way: in a resolver, in coercing a variable,
#: and at the time limit (in a worker thread).
FAILING = [
    ('{ slots(flavor: "nope") { slots } }', {}),
    (
        "query($a: Quantity!) { hypervisors(filter:"
        ' {canFit: [{resource: "memory", amount: $a}]}) { totalCount } }',
        {"a": "3 parsecs"},
    ),
    (HEAVY, {}),
]


@pytest.mark.parametrize("ask", [over_post, *TRANSPORTS.values()], ids=["POST", *TRANSPORTS])
async def test_a_failed_operation_leaves_no_cycle_holding_its_snapshot(ask: Ask) -> None:
    """An error's traceback holds the frames that ran the operation, and they hold its
    context and snapshot. Left in a cycle, the store's settle may freeze it, and the
    snapshot lives till the whole heap is collected: answered, nothing of it may be
    left for the cyclic collector."""
    limits = Limits(max_seconds=0.02)
    hosts = generate(500, bookings_per_host=40)
    async with run_server(hosts, catalog=load_catalog(None), limits=limits) as (address, _):
        for document, variables in FAILING:  # parsed and kept before
            await ask(address, document, variables)
        with cycles() as found:
            for document, variables in FAILING:
                assert "errors" in await ask(address, document, variables)
    assert holding_snapshots(found) == []
