"""Persisted queries through the real app: Apollo's protocol, the byte bound, trusted documents."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets
from prometheus_client.parser import text_string_to_metric_families
from websockets.typing import Subprotocol

from gateway.http.persisted import ENTRY_OVERHEAD, PersistedQueries, load_trusted, sha256
from gateway.http.request import Params, RequestError
from tests import fleet
from tests.support import run_server, serve

NAMES = "{ hypervisors { nodes { name } } }"
COUNT = "{ fleetCapacity { hypervisorCount } }"
GRAPHQL_RESPONSE = "application/graphql-response+json"
P = "hypervisor_gateway_"


def extensions(document: str) -> dict[str, Any]:
    return {"persistedQuery": {"version": 1, "sha256Hash": sha256(document)}}


async def by_hash(client: httpx.AsyncClient, document: str, **headers: str) -> httpx.Response:
    """A hash-only GET, as Apollo Client sends one with ``useGETForHashedQueries``."""
    params = {"extensions": json.dumps(extensions(document))}
    return await client.get("/graphql", params=params, headers=headers)


async def scrape(client: httpx.AsyncClient) -> dict[str, float]:
    text = (await client.get("/metrics")).text
    return {
        sample.name: sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if "persisted" in sample.name
    }


async def test_an_unknown_hash_is_not_found_then_registered_and_served_by_hash() -> None:
    async with serve(fleet.objects()) as (client, _):
        for accept in ("application/json", GRAPHQL_RESPONSE):
            missed = await by_hash(client, NAMES, accept=accept)
            assert missed.status_code == 200  # as Apollo Server: the client retries
            assert missed.headers["cache-control"] == "no-store"  # registered a moment later
            assert missed.json() == {
                "errors": [
                    {
                        "message": "PersistedQueryNotFound",
                        "extensions": {"code": "PERSISTED_QUERY_NOT_FOUND"},
                    }
                ]
            }
        registered = await client.post(
            "/graphql", json={"query": NAMES, "extensions": extensions(NAMES)}
        )
        assert registered.status_code == 200
        found = await by_hash(client, NAMES)
        assert found.status_code == 200
        assert found.json() == registered.json()
        assert "data" in found.json()
        figures = await scrape(client)
    assert figures[f"{P}persisted_queries"] == 1
    assert figures[f"{P}persisted_query_bytes"] == len(NAMES) + ENTRY_OVERHEAD
    assert figures[f"{P}persisted_query_misses_total"] == 2
    assert figures[f"{P}persisted_query_hits_total"] == 1
    assert figures[f"{P}persisted_query_registrations_total"] == 1


async def test_a_hash_that_is_not_the_documents_is_refused_and_not_registered() -> None:
    async with serve(fleet.objects()) as (client, _):
        wrong = {"persistedQuery": {"version": 1, "sha256Hash": sha256(COUNT)}}
        refused = await client.post("/graphql", json={"query": NAMES, "extensions": wrong})
        assert refused.status_code == 400
        assert refused.json()["errors"][0]["extensions"]["code"] == "PERSISTED_QUERY_HASH_MISMATCH"
        assert (await by_hash(client, COUNT)).json()["errors"][0]["extensions"]["code"] == (
            "PERSISTED_QUERY_NOT_FOUND"
        )


@pytest.mark.parametrize(
    ("persisted", "code"),
    [
        ({"version": 2, "sha256Hash": "0" * 64}, "PERSISTED_QUERY_VERSION_NOT_SUPPORTED"),
        ({"version": True, "sha256Hash": "0" * 64}, "PERSISTED_QUERY_VERSION_NOT_SUPPORTED"),
        ({"version": 1.0, "sha256Hash": "0" * 64}, "PERSISTED_QUERY_VERSION_NOT_SUPPORTED"),
        ({"version": 1, "sha256Hash": "not a hash"}, "BAD_REQUEST"),
        ("x", "PERSISTED_QUERY_VERSION_NOT_SUPPORTED"),
    ],
)
async def test_a_malformed_persisted_query_extension_is_a_400(persisted: Any, code: str) -> None:
    async with serve(fleet.objects()) as (client, _):
        response = await client.post("/graphql", json={"extensions": {"persistedQuery": persisted}})
    assert response.status_code == 400
    assert response.json()["errors"][0]["extensions"]["code"] == code


def test_the_store_keeps_within_its_bytes_dropping_the_least_recently_used() -> None:
    documents = [f"{{ hypervisor(name: {'x' * 100}{i}) {{ name }} }}" for i in range(5)]
    size = len(documents[0]) + ENTRY_OVERHEAD
    store = PersistedQueries(max_bytes=3 * size)
    for document in documents:
        store.resolve(_params(document, sha256(document)))
    assert (store.entries, store.bytes, store.stats.evictions) == (3, 3 * size, 2)
    kept = store.resolve(_params("", sha256(documents[2])))
    assert kept.query == documents[2]
    with pytest.raises(RequestError, match="PersistedQueryNotFound"):
        store.resolve(_params("", sha256(documents[0])))
    huge = "{ a }" + " " * (4 * size)
    store.resolve(_params(huge, sha256(huge)))  # runs, is not kept: it would take everything
    assert store.entries == 3


def _params(query: str, hash_: str) -> Params:
    return Params(query, None, None, hash_)


def trusted_file(tmp_path: Path, manifest: bool) -> Path:
    path = tmp_path / "trusted.json"
    if manifest:
        operation = {"id": sha256(COUNT), "body": COUNT, "name": "Count", "type": "query"}
        content: Any = {
            "format": "apollo-persisted-query-manifest",
            "version": 1,
            "operations": [operation],
        }
    else:
        content = {sha256(COUNT): COUNT}
    path.write_text(json.dumps(content))
    return path


@pytest.mark.parametrize("manifest", [False, True])
async def test_trusted_documents_run_by_hash_or_text_and_nothing_else(
    tmp_path: Path, manifest: bool
) -> None:
    trusted = PersistedQueries(trusted=load_trusted(trusted_file(tmp_path, manifest)))
    async with serve(fleet.objects(), persisted=trusted) as (client, _):
        named = (await by_hash(client, COUNT)).json()
        by_text = await client.post("/graphql", json={"query": COUNT})
        assert by_text.json() == named
        assert named["data"]["fleetCapacity"][0]["hypervisorCount"] == len(fleet.objects())
        for refused in (
            await by_hash(client, NAMES),
            await client.post("/graphql", json={"query": NAMES}),
            await client.post("/graphql", json={"query": NAMES, "extensions": extensions(NAMES)}),
        ):
            assert refused.status_code == 400
            assert refused.json()["errors"][0]["extensions"]["code"] == (
                "PERSISTED_QUERY_NOT_IN_LIST"
            )


def test_a_trusted_file_whose_hash_is_not_its_documents_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "trusted.json"
    path.write_text(json.dumps({"0" * 64: COUNT}))
    with pytest.raises(ValueError, match="not the SHA-256"):
        load_trusted(path)


CHANGES = "subscription { fleetCapacityChanged { hypervisorCount } }"


async def ws_first(address: str, protocol: str, *payloads: dict[str, Any]) -> list[Any]:
    """The first answer to each payload, sent in turn on one connection: the result's
    payload (``next``, ``data``) or the error's, as a list of errors."""
    kind = "subscribe" if protocol == "graphql-transport-ws" else "start"
    answers = []
    url = f"ws://{address}/graphql"
    async with websockets.connect(url, subprotocols=[Subprotocol(protocol)]) as ws:
        await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
        assert json.loads(await ws.recv())["type"] == "connection_ack"
        for n, payload in enumerate(payloads):
            await ws.send(json.dumps({"id": str(n), "type": kind, "payload": payload}))
            answered = ("next", "data", "error")
            while (message := json.loads(await ws.recv()))["type"] not in answered:
                assert message["type"] in ("ka", "complete"), message
            assert message["id"] == str(n)
            found = message["payload"]
            legacy_error = message["type"] == "error" and protocol == "graphql-ws"
            answers.append([found] if legacy_error else found)
    return answers


def codes(answer: Any) -> list[str]:
    errors = answer if isinstance(answer, list) else answer.get("errors", [])
    return [e["extensions"]["code"] for e in errors]


@pytest.mark.parametrize("protocol", ["graphql-transport-ws", "graphql-ws"])
async def test_over_websocket_a_hash_is_not_found_registered_then_served(protocol: str) -> None:
    persisted = PersistedQueries()
    async with run_server(fleet.objects(), persisted=persisted) as (address, _):
        wrong = {"query": NAMES, "extensions": extensions(COUNT)}
        answers = await ws_first(
            address,
            protocol,
            {"extensions": extensions(COUNT)},
            wrong,
            {"query": COUNT, "extensions": extensions(COUNT)},
            {"extensions": extensions(COUNT)},
            {"extensions": extensions(CHANGES)},
            {"query": CHANGES, "extensions": extensions(CHANGES)},
        )
        async with httpx.AsyncClient(base_url=f"http://{address}") as client:
            over_http = (await by_hash(client, COUNT)).json()
    missed, mismatched, registered, by_hash_alone, subscription_missed, subscribed = answers
    assert codes(missed) == codes(subscription_missed) == ["PERSISTED_QUERY_NOT_FOUND"]
    assert codes(mismatched) == ["PERSISTED_QUERY_HASH_MISMATCH"]
    count = {"data": {"fleetCapacity": [{"hypervisorCount": len(fleet.objects())}]}}
    assert registered == by_hash_alone == count
    assert subscribed["data"]["fleetCapacityChanged"] == count["data"]["fleetCapacity"]
    # Registered over WebSocket, found over HTTP: one store.
    assert over_http == count
    assert persisted.stats.registered == 2 and persisted.stats.misses == 2


@pytest.mark.parametrize("protocol", ["graphql-transport-ws", "graphql-ws"])
async def test_over_websocket_only_trusted_documents_run_by_hash(
    tmp_path: Path, protocol: str
) -> None:
    trusted = PersistedQueries(trusted=load_trusted(trusted_file(tmp_path, manifest=True)))
    async with run_server(fleet.objects(), persisted=trusted) as (address, _):
        named, unknown, sent = await ws_first(
            address,
            protocol,
            {"extensions": extensions(COUNT)},
            {"extensions": extensions(NAMES)},
            {"query": NAMES, "extensions": extensions(NAMES)},
        )
    assert named["data"]["fleetCapacity"][0]["hypervisorCount"] == len(fleet.objects())
    assert codes(unknown) == codes(sent) == ["PERSISTED_QUERY_NOT_IN_LIST"]
    assert trusted.entries == 1  # nothing registered


async def test_a_subscription_not_trusted_is_refused_over_websocket(tmp_path: Path) -> None:
    trusted = PersistedQueries(trusted=load_trusted(trusted_file(tmp_path, manifest=False)))
    changes = "subscription { fleetCapacityChanged { hypervisorCount } }"
    async with run_server(fleet.objects(), persisted=trusted) as (address, _):
        protocol = Subprotocol("graphql-transport-ws")
        async with websockets.connect(f"ws://{address}/graphql", subprotocols=[protocol]) as ws:
            await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
            assert json.loads(await ws.recv())["type"] == "connection_ack"
            subscribe = {"id": "1", "type": "subscribe", "payload": {"query": changes}}
            await ws.send(json.dumps(subscribe))
            answer = json.loads(await ws.recv())
    assert answer["type"] == "error"
    assert answer["payload"][0]["extensions"]["code"] == "PERSISTED_QUERY_NOT_IN_LIST"
