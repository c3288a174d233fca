"""Request limits: each gets a clear 4xx, measured before anything costly runs."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio.to_thread
import httpx
import pytest

from gateway.api.budget import TIMEOUT, Overrun
from gateway.api.limits import Limits
from gateway.sources.demo.source import generate
from tests import fleet
from tests.support import eventually, serve, watch_workers

GQL = "application/graphql-response+json"


@contextlib.asynccontextmanager
async def gateway(
    objects: list[dict[str, Any]] | None = None, **options: Any
) -> AsyncIterator[httpx.AsyncClient]:
    async with serve(objects if objects is not None else fleet.objects(), **options) as (client, _):
        yield client


async def post(client: httpx.AsyncClient, query: str, accept: str = GQL) -> httpx.Response:
    return await client.post("/graphql", json={"query": query}, headers={"accept": accept})


def nested(depth: int) -> str:
    """consumer -> bookings -> consumer -> ... a legitimately recursive query."""
    inner = "uuid"
    for _ in range(depth):
        inner = f"bookings {{ consumer {{ {inner} }} }}"
    return f'{{ consumer(uuid: "{fleet.C1}") {{ {inner} }} }}'


@pytest.mark.parametrize(("accept", "status"), [(GQL, 400), ("application/json", 200)])
async def test_depth(accept: str, status: int) -> None:
    """Answered like every validation error: 400 under GQL, 200 under application/json."""
    async with gateway(limits=Limits(max_depth=15)) as client:
        assert "errors" not in (await post(client, nested(6), accept)).json()  # depth 14
        response = await post(client, nested(7), accept)  # depth 16
    assert response.status_code == status
    [error] = response.json()["errors"]
    assert error["message"] == "query depth 16 exceeds the limit of 15"
    assert error["extensions"] == {"code": "QUERY_TOO_DEEP"}
    assert "data" not in response.json()


async def test_alias_bomb() -> None:
    query = "{ " + " ".join(f"a{n}: fleetCapacity {{ key }}" for n in range(60)) + " }"
    async with gateway() as client:
        response = await post(client, query)
    assert response.status_code == 400
    assert "aliases" in response.json()["errors"][0]["message"]
    assert response.json()["errors"][0]["extensions"] == {"code": "TOO_MANY_ALIASES"}


async def test_fragment_bomb_is_refused_before_validation() -> None:
    # F0 selects 2 fields, each level doubles: F30 would be 2**30 selections.
    levels = ["fragment F0 on Hypervisor { name zone }"]
    levels += [f"fragment F{n} on Hypervisor {{ ...F{n - 1} ...F{n - 1} }}" for n in range(1, 31)]
    query = "{ hypervisors { nodes { ...F30 } } } " + " ".join(levels)
    async with gateway() as client:
        started = time.monotonic()
        response = await post(client, query)
        elapsed = time.monotonic() - started
    assert response.status_code == 400
    assert "once fragments are expanded" in response.json()["errors"][0]["message"]
    assert response.json()["errors"][0]["extensions"] == {"code": "TOO_MANY_SELECTIONS"}
    assert elapsed < 1.0


async def test_cyclic_fragments() -> None:
    query = (
        "{ hypervisors { nodes { ...A } } } fragment A on Hypervisor { name ...B } "
        "fragment B on Hypervisor { zone ...A }"
    )
    async with gateway() as client:
        response = await post(client, query)
    assert response.status_code == 400
    assert response.json()["errors"][0]["message"] == "fragment cycle: A -> B -> A"


async def test_token_limit() -> None:
    query = "{ " + "__typename " * 20_000 + "}"
    async with gateway() as client:
        response = await post(client, query, accept="application/json")
    assert response.status_code == 200  # a document refused, as one that does not parse
    assert "tokens" in response.json()["errors"][0]["message"]
    assert response.json()["errors"][0]["extensions"] == {"code": "TOO_MANY_TOKENS"}


async def test_body_size() -> None:
    async with gateway(limits=Limits(max_body_bytes=1000)) as client:
        response = await client.post("/graphql", json={"query": "{ __typename }", "x": "y" * 2000})
        assert response.status_code == 413
        names = [f"node-{n}" for n in range(100)]  # a list in variables within the limit is fine
        ok = await client.post(
            "/graphql",
            json={
                "query": "query($n: [String!]) { hypervisors(filter: {names: $n}) { totalCount } }",
                "variables": {"n": names[:50]},
            },
        )
        assert ok.status_code == 200


async def test_page_size() -> None:
    async with gateway(limits=Limits(max_page_size=2)) as client:
        response = await post(client, "{ hypervisors(first: 3) { nodes { name } } }")
        [warning] = response.json()["extensions"]["warnings"]
        assert warning["message"] == (
            "first is 3; answered with 2 (first runs from 0 to the page size limit, 2)"
        )
        assert len(response.json()["data"]["hypervisors"]["nodes"]) == 2
        capped = await post(
            client, "{ hypervisors { totalCount pageInfo { hasNextPage } nodes { name } } }"
        )
    page = capped.json()["data"]["hypervisors"]
    assert page["totalCount"] == 4 and len(page["nodes"]) == 2 and page["pageInfo"]["hasNextPage"]


HEAVY = (
    "{ hypervisors { nodes { name bookings { ... on ConsumerBooking { uuid projectId "
    "resources { name amount } } } resources { name capacity booked free } } } }"
)


async def test_execution_time_and_concurrency(monkeypatch: pytest.MonkeyPatch) -> None:
    fleet_objects = generate(1500, bookings_per_host=40)
    limits = Limits(max_seconds=0.05, max_concurrent=1)
    runs = watch_workers(monkeypatch)
    async with gateway(fleet_objects, limits=limits) as client:
        response = await post(client, HEAVY)
        assert response.status_code == 400
        assert "took longer than the limit of 0.05 s" in response.json()["errors"][0]["message"]
        # The work (seconds of it, on any machine) ended itself at the first look at the
        # clock past its deadline, a few hundred fields later, and its slot is free.
        (run,) = runs
        await eventually(run.ended.is_set)
        assert isinstance(run.outcome, Overrun) and run.outcome.code == TIMEOUT
        assert run.budget.looks_past_deadline() == 1
        again = await post(client, HEAVY)
        assert again.status_code == 400 and "took longer" in again.json()["errors"][0]["message"]
        assert (await client.get("/healthz")).status_code == 200
    # However slow the machine, the one query let in must not reach a time limit.
    async with gateway(fleet_objects, limits=Limits(max_concurrent=1, max_seconds=120)) as client:
        statuses = sorted(
            r.status_code for r in await asyncio.gather(*(post(client, HEAVY) for _ in range(4)))
        )
    assert statuses == [200, 429, 429, 429]  # one admitted, the others refused at once


async def test_a_request_cancelled_before_its_thread_runs_gives_its_slot_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """anyio never runs the thread function of a request cancelled while it waits for a
    thread, where the slot used to be given back."""
    runs = watch_workers(monkeypatch)
    app_limits = Limits(max_concurrent=1, max_seconds=120)
    async with gateway(generate(1500, bookings_per_host=40), limits=app_limits) as client:
        endpoint = await _endpoint(client)
        async with _threads_busy():
            request = asyncio.create_task(post(client, HEAVY))
            await eventually(lambda: endpoint.execution.running == 1)
            request.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await request
            assert endpoint.execution.running == 0
        assert (await post(client, "{ hypervisors { totalCount } }")).status_code == 200
    assert len(runs) == 1  # the cancelled one never ran


async def test_a_cancelled_request_stops_its_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    runs = watch_workers(monkeypatch)
    app_limits = Limits(max_concurrent=1, max_seconds=120)
    async with gateway(generate(1500, bookings_per_host=40), limits=app_limits) as client:
        endpoint = await _endpoint(client)
        request = asyncio.create_task(post(client, HEAVY))
        await eventually(lambda: bool(runs))  # its thread runs it
        request.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await request
        assert endpoint.execution.running == 0
        # Told to stop, the work (seconds of it) ended itself long before its deadline.
        (run,) = runs
        await eventually(run.ended.is_set)
        assert isinstance(run.outcome, Overrun) and run.budget.stopped
        assert run.budget.looks_past_deadline() == 0
        assert (await post(client, "{ hypervisors { totalCount } }")).status_code == 200


@contextlib.asynccontextmanager
async def _threads_busy() -> AsyncIterator[None]:
    """Every worker thread of anyio's default limiter taken, as under load."""
    limiter = anyio.to_thread.current_default_thread_limiter()
    borrowers = [object() for _ in range(int(limiter.total_tokens))]
    for borrower in borrowers:
        await limiter.acquire_on_behalf_of(borrower)
    try:
        yield
    finally:
        for borrower in borrowers:
            limiter.release_on_behalf_of(borrower)


async def _endpoint(client: httpx.AsyncClient) -> Any:
    transport = client._transport
    assert isinstance(transport, httpx.ASGITransport)
    app: Any = transport.app
    route = next(r.endpoint for r in app.routes if getattr(r, "path", "") == "/graphql")
    return route.app  # inside the OPTIONS answerer


async def test_cheap_operations_are_answered_on_the_event_loop_with_every_worker_busy() -> None:
    name = generate(1)[0]["metadata"]["name"]
    lookup = f'{{ hypervisor(name: "{name}") {{ name cpu: resource(name: "cpu") {{ free }} }} }}'
    scan = "{ hypervisors(filter: {evicted: false}) { totalCount } }"  # costs 50 and more
    async with gateway(generate(50), limits=Limits(max_concurrent=0, inline_cost=10)) as client:
        assert (await post(client, scan)).status_code == 429
        answer = await post(client, lookup)
    assert answer.status_code == 200
    assert answer.json()["data"]["hypervisor"]["name"] == name


async def test_introspection_can_be_turned_off() -> None:
    async with gateway(introspection=False) as client:
        response = await post(client, "{ __schema { types { name } } }")
        assert response.status_code == 400
        assert "introspection" in response.json()["errors"][0]["message"].lower()
        assert (await post(client, "{ hypervisors { totalCount } }")).status_code == 200
        page = await client.get("/graphql", headers={"accept": "text/html"})
        assert page.status_code == 406  # no GraphiQL: HTML is not an answer it gives
        assert page.json()["errors"][0]["message"].startswith(
            "cannot answer with any of: text/html"
        )


async def test_cors_is_an_allow_list() -> None:
    async with gateway(cors_origins=["https://dash.example"]) as client:
        allowed = await client.options(
            "/graphql",
            headers={"origin": "https://dash.example", "access-control-request-method": "POST"},
        )
        denied = await client.options(
            "/graphql",
            headers={"origin": "https://evil.example", "access-control-request-method": "POST"},
        )
    assert allowed.headers["access-control-allow-origin"] == "https://dash.example"
    assert "access-control-allow-origin" not in denied.headers
