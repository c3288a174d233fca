"""GraphQL over HTTP: the spec's rules for media types, methods and status codes.

application/json answers every well-formed request with 200; with
application/graphql-response+json a request error (nothing executed) is a 400
without a ``data`` entry.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from starlette.types import Message

from gateway.api.limits import Limits
from gateway.http.app import create_app
from tests import fleet
from tests.support import StaticSource, serve

GQL = "application/graphql-response+json"
JSON = "application/json"


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with serve(fleet.objects()) as (client, _):
        yield client


async def post(
    client: httpx.AsyncClient, body: Any, accept: str | None = GQL, content_type: str | None = JSON
) -> httpx.Response:
    headers = {}
    if accept is not None:
        headers["accept"] = accept
    if content_type is not None:
        headers["content-type"] = content_type
    content = body if isinstance(body, (str, bytes)) else json.dumps(body)
    return await client.post("/graphql", content=content, headers=headers)


@pytest.mark.parametrize(
    ("accept", "media_type"),
    [
        (GQL, GQL),
        (JSON, JSON),
        ("*/*", JSON),
        (None, JSON),
        (f"{JSON};q=0.9, {GQL}", GQL),
        (f"{GQL};q=0.5, {JSON}", JSON),
        ("application/*", JSON),
    ],
)
async def test_response_media_type_follows_accept(
    client: httpx.AsyncClient, accept: str | None, media_type: str
) -> None:
    response = await post(client, {"query": "{ __typename }"}, accept=accept)
    assert response.status_code == 200
    assert response.headers["content-type"] == f"{media_type}; charset=utf-8"
    assert response.json() == {"data": {"__typename": "Query"}}


async def test_unacceptable_accept_is_406(client: httpx.AsyncClient) -> None:
    response = await post(client, {"query": "{ __typename }"}, accept="text/plain")
    assert response.status_code == 406


async def test_get_executes_queries(client: httpx.AsyncClient) -> None:
    response = await client.get(
        "/graphql",
        params={
            "query": "query($n: String!) { hypervisor(name: $n) { name } }",
            "variables": json.dumps({"n": "node-b"}),
        },
        headers={"accept": GQL},
    )
    assert response.status_code == 200
    assert response.json() == {"data": {"hypervisor": {"name": "node-b"}}}


async def test_graphiql_for_browsers(client: httpx.AsyncClient) -> None:
    response = await client.get("/graphql", headers={"accept": "text/html,application/xhtml+xml"})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert "graphiql" in response.text.lower()


@pytest.mark.parametrize(
    ("content_type", "status"),
    [
        (None, 415),
        ("text/plain", 415),
        ("application/json; charset=latin-1", 415),
        ("application/json; charset=utf-8", 200),
        ("Application/JSON", 200),
    ],
)
async def test_post_content_type(
    client: httpx.AsyncClient, content_type: str | None, status: int
) -> None:
    response = await post(client, {"query": "{ __typename }"}, content_type=content_type)
    assert response.status_code == status


async def test_post_needs_a_body(client: httpx.AsyncClient) -> None:
    assert (await post(client, b"")).status_code == 400


@pytest.mark.parametrize("method", ["PUT", "PATCH", "DELETE", "HEAD", "TRACE", "QUERY"])
async def test_other_methods_are_405(client: httpx.AsyncClient, method: str) -> None:
    response = await client.request(method, "/graphql", json={"query": "{ __typename }"})
    assert response.status_code == 405
    assert response.headers["allow"] == "GET, POST, OPTIONS"


async def test_options_lists_the_methods_that_work(client: httpx.AsyncClient) -> None:
    response = await client.options("/graphql")
    assert response.status_code == 204 and response.content == b""
    allowed = [m.strip() for m in response.headers["allow"].split(",")]
    assert allowed == ["GET", "POST", "OPTIONS"]
    for method in allowed:
        answer = await client.request(
            method, "/graphql", params={"query": "{ __typename }"}, json={"query": "{ __typename }"}
        )
        assert answer.status_code != 405, method


@pytest.mark.parametrize(
    "body",
    [
        "{ not json",
        {"query": None},
        {},
        {"qeury": "{ __typename }"},
        {"query": {"a": 1}},
        {"query": 1},
        {"query": True},
        {"query": ["{ __typename }"]},
        {"query": "{ __typename }", "operationName": {"a": 1}},
        {"query": "{ __typename }", "operationName": 1},
        {"query": "{ __typename }", "operationName": True},
        {"query": "{ __typename }", "operationName": []},
        {"query": "{ __typename }", "variables": "{}"},
        {"query": "{ __typename }", "variables": 1},
        {"query": "{ __typename }", "variables": True},
        {"query": "{ __typename }", "variables": []},
        {"query": "{ __typename }", "extensions": "x"},
        {"query": "{ __typename }", "extensions": 1},
        {"query": "{ __typename }", "extensions": False},
        {"query": "{ __typename }", "extensions": []},
        [{"query": "{ __typename }"}],
    ],
)
async def test_malformed_parameters_are_400_under_either_media_type(
    client: httpx.AsyncClient, body: Any
) -> None:
    """Not a GraphQL request at all: 400 without data, whatever the client accepts."""
    for accept in (GQL, JSON):
        response = await post(client, body, accept=accept)
        assert response.status_code == 400, (accept, response.text)
        assert response.headers["content-type"].startswith(accept)
        assert "data" not in response.json() and response.json()["errors"]


async def test_malformed_get_variables_are_400_under_either_media_type(
    client: httpx.AsyncClient,
) -> None:
    for accept in (GQL, JSON):
        response = await client.get(
            "/graphql",
            params={"query": "{ __typename }", "variables": "{ nope"},
            headers={"accept": accept},
        )
        assert response.status_code == 400, (accept, response.text)


@pytest.mark.parametrize(
    "body",
    [
        {"query": "{"},
        {"query": "{ nope }"},
        {"query": "query($n: String!) { hypervisor(name: $n) { name } }", "variables": {"n": 1}},
        {"query": "query($n: String!) { hypervisor(name: $n) { name } }"},
        {"query": "query A { __typename } query B { __typename }"},
        {"query": "query A { __typename }", "operationName": "B"},
    ],
)
async def test_document_errors(client: httpx.AsyncClient, body: Any) -> None:
    """400 without data for graphql-response+json; 200 with errors for application/json."""
    strict = await post(client, body, accept=GQL)
    assert strict.status_code == 400, strict.text
    assert "data" not in strict.json() and strict.json()["errors"]
    legacy = await post(client, body, accept=JSON)
    assert legacy.status_code == 200, legacy.text
    assert "data" not in legacy.json() and legacy.json()["errors"]


@pytest.mark.parametrize(
    "body",
    [
        {"query": "{ __typename }", "variables": None, "operationName": None, "extensions": None},
        {"query": "{ __typename }", "variables": {}, "extensions": {"persistedQuery": None}},
        {"query": "query A { __typename } query B { __typename }", "operationName": "B"},
    ],
)
async def test_optional_parameters(client: httpx.AsyncClient, body: Any) -> None:
    response = await post(client, body)
    assert response.status_code == 200
    assert response.json() == {"data": {"__typename": "Query"}}


async def test_mutations_and_subscriptions_are_not_run_over_http(client: httpx.AsyncClient) -> None:
    response = await client.get(
        "/graphql", params={"query": "mutation { x }"}, headers={"accept": GQL}
    )
    assert response.status_code == 405
    response = await post(client, {"query": "subscription { x }"})
    assert response.status_code == 400


async def test_utf8_request_and_response(client: httpx.AsyncClient) -> None:
    body = json.dumps({"query": '{ hypervisor(name: "nöde-ä") { name } }'}, ensure_ascii=False)
    response = await post(client, body.encode("utf-8"))
    assert response.status_code == 200
    assert response.json() == {"data": {"hypervisor": None}}


async def test_non_utf8_body_is_a_request_error(client: httpx.AsyncClient) -> None:
    response = await post(client, '{"query": "{ __typename }", "x": "\xe9"}'.encode("latin-1"))
    assert response.status_code == 400


async def test_field_errors_are_executed_responses(client: httpx.AsyncClient) -> None:
    """A field error is not a request error: 200, a data entry, and the error's path."""
    response = await post(
        client,
        {
            "query": '{ ok: hypervisor(name: "node-a") { name } '
            'bad: slots(flavor: "no-such-flavor") { key } }'
        },
    )
    assert response.status_code == 200
    body = response.json()
    assert body["data"] is None  # slots is non-null, so the error reaches the root
    assert body["errors"][0]["path"] == ["bad"]
    assert body["errors"][0]["extensions"] == {"code": "UNKNOWN_FLAVOR"}


async def test_every_response_has_a_request_id(client: httpx.AsyncClient) -> None:
    first = await post(client, {"query": "{ __typename }"})
    second = await post(client, "{ broken")
    assert first.headers["x-request-id"] != second.headers["x-request-id"]


@pytest.mark.parametrize(("pause", "status"), [(0.05, 200), (0.6, 408)])
async def test_a_body_in_parts_is_waited_for_until_its_deadline(pause: float, status: int) -> None:
    """The body's deadline is armed only once its read has to wait (tests/test_hostile.py
    has the client that never finishes, over a socket)."""
    source = StaticSource(fleet.objects())
    app = create_app(source, limits=Limits(max_body_seconds=0.3))
    parts = [b'{"query": "{ __type', b'name }"}']
    sent: list[Message] = []

    async def receive() -> Message:
        if len(parts) == 1:
            await asyncio.sleep(pause)  # the slow client, within or past the deadline
        return {"type": "http.request", "body": parts.pop(0), "more_body": bool(parts)}

    async def send(message: Message) -> None:
        sent.append(message)

    headers = [(b"content-type", b"application/json"), (b"content-length", b"29")]
    scope = {"type": "http", "method": "POST", "path": "/graphql", "headers": headers}
    async with app.router.lifespan_context(app):
        await app({**scope, "query_string": b"", "root_path": ""}, receive, send)
    assert sent[0]["status"] == status
    if status == 200:
        assert json.loads(sent[1]["body"]) == {"data": {"__typename": "Query"}}


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (
            "{ " + "hypervisors { totalCount } " * 1000 + "}",
            "Validation aborted: checking that the selections of each field can be merged takes "
            "more than the limit of 500,000 comparisons; select each field once instead of "
            "repeating it.",
        ),
        (
            "{ " + " ".join(f"f{n}" for n in range(150)) + " }",
            "Validation stopped after 100 errors, the limit: fix these and send the document "
            "again.",
        ),
    ],
)
async def test_aborted_validation_names_its_limit(
    client: httpx.AsyncClient, document: str, message: str
) -> None:
    response = await post(client, {"query": document})
    assert response.status_code == 400
    assert response.json()["errors"][-1]["message"] == message
