"""Evictions in GraphQL: lists, filters, the link to hosts, live changes, unavailability."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import websockets

from gateway.http.cache import BoundedMemoryCache, ResponseCache
from tests.objects import eviction, reported
from tests.support import StaticSource, eventually, query, run_server, serve

GiB = 2**30

HOSTS = [reported("node-1"), reported("node-2"), reported("node-3")]


def _evictions() -> list[dict[str, Any]]:
    running = eviction(
        "evict-node-1",
        "node-1",
        "kernel update",
        state="Running",
        status={"outstandingRamMb": 4096, "outstandingInstances": ["i-1", "i-2"]},
    )
    running["metadata"]["creationTimestamp"] = "2026-12-01T08:00:00Z"
    return [
        running,
        eviction("evict-node-2", "node-2", "disk swap", state="Failed"),
        eviction("old-node-1", "node-1", "kernel update", state="Succeeded"),
        eviction("evict-gone", "node-9", "decommission"),
    ]


def _source() -> StaticSource:
    return StaticSource(HOSTS, evictions=_evictions())


async def test_every_field_and_the_link_to_the_host() -> None:
    async with serve(_source()) as (client, _):
        data = await query(
            client,
            """{ eviction(name: "evict-node-1") { name hypervisorName reason state
                 outstandingRam outstandingInstances createdAt warnings
                 conditions { type status reason }
                 hypervisor { name evictions { name state } } } }""",
        )
    assert data["eviction"] == {
        "name": "evict-node-1",
        "hypervisorName": "node-1",
        "reason": "kernel update",
        "state": "RUNNING",
        "outstandingRam": str(4 * GiB),
        "outstandingInstances": ["i-1", "i-2"],
        "createdAt": "2026-12-01T08:00:00Z",
        "warnings": [],
        "conditions": [{"type": "Evicting", "status": "True", "reason": "Running"}],
        "hypervisor": {
            "name": "node-1",
            "evictions": [
                {"name": "evict-node-1", "state": "RUNNING"},
                {"name": "old-node-1", "state": "SUCCEEDED"},
            ],
        },
    }


@pytest.mark.parametrize(
    ("arguments", "names"),
    [
        ("", ["evict-gone", "evict-node-1", "evict-node-2", "old-node-1"]),
        ('(filter: {hypervisor: "node-1"})', ["evict-node-1", "old-node-1"]),
        ("(filter: {state: FAILED})", ["evict-node-2"]),
        ("(filter: {state: PENDING})", ["evict-gone"]),
        ('(filter: {hypervisor: "node-1", state: SUCCEEDED})', ["old-node-1"]),
        ('(filter: {hypervisor: "node-3"})', []),
    ],
)
async def test_evictions_by_host_and_state(arguments: str, names: list[str]) -> None:
    async with serve(_source()) as (client, _):
        data = await query(client, f"{{ evictions{arguments} {{ name }} }}")
    assert [e["name"] for e in data["evictions"]] == names


async def test_a_host_not_in_the_fleet_and_a_host_without_evictions() -> None:
    async with serve(_source()) as (client, _):
        data = await query(
            client,
            """{ eviction(name: "evict-gone") { hypervisorName hypervisor { name } }
                 missing: eviction(name: "nope") { name }
                 hypervisor(name: "node-3") { evictions { name } }
                 syncStatus { evictionsAvailable evictionsMessage } }""",
        )
    assert data == {
        "eviction": {"hypervisorName": "node-9", "hypervisor": None},
        "missing": None,
        "hypervisor": {"evictions": []},
        "syncStatus": {"evictionsAvailable": True, "evictionsMessage": None},
    }


async def _post(client: httpx.AsyncClient, document: str) -> dict[str, Any]:
    response = await client.post("/graphql", json={"query": document})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_unavailable_evictions_are_an_error_and_hosts_are_served() -> None:
    async with serve(HOSTS) as (client, store):
        store.evictions.absent("the cluster does not serve evictions.kvm.cloud.sap")
        body = await _post(
            client,
            """{ hypervisors { nodes { name evictions { name } } }
                 evictions { name } eviction(name: "x") { name }
                 syncStatus { synced evictionsAvailable evictionsMessage } }""",
        )
        ready = await client.get("/readyz")
    assert ready.status_code == 200
    data, errors = body["data"], body["errors"]
    assert [h["name"] for h in data["hypervisors"]["nodes"]] == ["node-1", "node-2", "node-3"]
    assert all(h["evictions"] is None for h in data["hypervisors"]["nodes"])
    assert (data["evictions"], data["eviction"]) == (None, None)
    assert data["syncStatus"] == {
        "synced": True,
        "evictionsAvailable": False,
        "evictionsMessage": "the cluster does not serve evictions.kvm.cloud.sap",
    }
    assert len(errors) == 5
    assert {e["extensions"]["code"] for e in errors} == {"EVICTIONS_UNAVAILABLE"}
    assert errors[-1]["message"] == (
        "evictions are unavailable: the cluster does not serve evictions.kvm.cloud.sap"
    )


async def test_before_a_source_delivers_them_evictions_are_unavailable() -> None:
    async with serve(HOSTS) as (client, _):
        data = await query(client, "{ syncStatus { evictionsAvailable evictionsMessage } }")
    assert data["syncStatus"] == {
        "evictionsAvailable": False,
        "evictionsMessage": "evictions have not been loaded yet",
    }


@pytest.mark.parametrize(
    "document",
    [
        '{ hypervisor(name: "node-2") { evictions { state } } }',
        # A page of hosts: the executor reuses what it completed of an unchanged record.
        '{ hypervisors(filter: {names: ["node-2"]}) { nodes { evictions { state } } } }',
    ],
)
async def test_an_answer_kept_never_hides_a_changed_eviction(document: str) -> None:
    """Evictions change without a new fleet generation, or a new host record: answers
    that read them are neither cached nor reused."""
    async with serve(_source(), cache=ResponseCache(BoundedMemoryCache())) as (client, store):
        first = await query(client, document)
        store.evictions.upsert(eviction("evict-node-2", "node-2", state="Succeeded"))
        second = await query(client, document)
    assert "FAILED" in json.dumps(first) and "FAILED" not in json.dumps(second)
    assert "SUCCEEDED" in json.dumps(second)


async def test_eviction_changed_over_a_websocket() -> None:
    subscription = """subscription { evictionChanged(filter: {hypervisor: "node-2"}) {
        type eviction { name state hypervisor { name } } } }"""
    async with (
        run_server(_source()) as (address, store),
        websockets.connect(f"ws://{address}/graphql", subprotocols=["graphql-transport-ws"]) as ws,
    ):
        await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
        assert json.loads(await ws.recv())["type"] == "connection_ack"
        message = {"id": "1", "type": "subscribe", "payload": {"query": subscription}}
        await ws.send(json.dumps(message))
        await eventually(lambda: store.evictions.listening == 1)
        store.evictions.upsert(eviction("evict-node-1", "node-1", state="Failed"))  # not node-2
        store.evictions.upsert(eviction("evict-node-2", "node-2", state="Running"))
        store.evictions.delete("evict-node-2")
        received = [json.loads(await ws.recv())["payload"]["data"] for _ in range(2)]
    node = {"name": "node-2"}
    assert received == [
        {
            "evictionChanged": {
                "type": "MODIFIED",
                "eviction": {"name": "evict-node-2", "state": "RUNNING", "hypervisor": node},
            }
        },
        {
            "evictionChanged": {
                "type": "DELETED",
                "eviction": {"name": "evict-node-2", "state": "RUNNING", "hypervisor": node},
            }
        },
    ]


async def test_eviction_changed_fails_when_evictions_are_unavailable() -> None:
    async with (
        run_server(HOSTS) as (address, _),
        websockets.connect(f"ws://{address}/graphql", subprotocols=["graphql-transport-ws"]) as ws,
    ):
        await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
        assert json.loads(await ws.recv())["type"] == "connection_ack"
        document = "subscription { evictionChanged { type } }"
        await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": {"query": document}}))
        answer = json.loads(await ws.recv())
    assert answer["type"] in ("error", "next"), answer
    errors = answer["payload"] if answer["type"] == "error" else answer["payload"]["errors"]
    assert errors[0]["extensions"]["code"] == "EVICTIONS_UNAVAILABLE"
