"""Every error the gateway answers has a code of the registry, and README lists them all."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from graphql import GraphQLError

from gateway.api.codes import Code, coded, for_status
from tests import fleet
from tests.support import serve

README = (Path(__file__).resolve().parents[1] / "README.md").read_text("utf-8")


def test_readme_tables_list_every_code() -> None:
    table = README.split("### Error codes", 1)[1].split("\n### ", 1)[0]
    listed = set(re.findall(r"\b[A-Z][A-Z_]{2,}\b", table))
    assert {c.value for c in Code} - listed == set()


def test_coded_keeps_a_code_and_adds_one_where_none() -> None:
    own = GraphQLError("x", extensions={"code": "BAD_UUID"})
    assert coded(own, Code.BAD_USER_INPUT) is own
    plain = coded(GraphQLError("y", extensions={"hint": 1}), Code.BAD_USER_INPUT)
    assert plain.message == "y" and plain.extensions == {"hint": 1, "code": "BAD_USER_INPUT"}
    assert for_status(415) is Code.UNSUPPORTED_MEDIA_TYPE and for_status(418) is Code.BAD_REQUEST


REQUESTS: list[tuple[str, dict[str, Any], str]] = [
    ("POST", {"json": {"query": "{ x"}}, "GRAPHQL_PARSE_FAILED"),
    ("POST", {"json": {"query": "{ nope }"}}, "GRAPHQL_VALIDATION_FAILED"),
    ("POST", {"json": {"query": "mutation { a }"}}, "MUTATIONS_NOT_SUPPORTED"),
    ("POST", {"json": {"query": "subscription { a }"}}, "SUBSCRIPTION_NEEDS_WEBSOCKET"),
    (
        "POST",
        {"json": {"query": "query A { __typename } query B { __typename }"}},
        "OPERATION_RESOLUTION_FAILURE",
    ),
    ("POST", {"json": {}}, "BAD_REQUEST"),
    ("POST", {"content": b"{", "headers": {"content-type": "application/json"}}, "BAD_REQUEST"),
    (
        "POST",
        {"content": b"{}", "headers": {"content-type": "text/plain"}},
        "UNSUPPORTED_MEDIA_TYPE",
    ),
    ("PUT", {}, "METHOD_NOT_ALLOWED"),
    (
        "GET",
        {"params": {"query": "{ __typename }"}, "headers": {"accept": "text/csv"}},
        "NOT_ACCEPTABLE",
    ),
    (
        "POST",
        {
            "json": {
                "query": "query($n: Int) { hypervisors(first: $n) { totalCount } }",
                "variables": {"n": "x"},
            }
        },
        "BAD_USER_INPUT",
    ),
    (
        "POST",
        {
            "json": {
                "query": "query($u: UUID!) { consumer(uuid: $u) { uuid } }",
                "variables": {"u": "x"},
            }
        },
        "BAD_UUID",
    ),
    (
        "POST",
        {
            "json": {
                "query": "query($r: [ResourceRequest!]) { slots(request: $r) { key } }",
                "variables": {"r": []},
            }
        },
        "BAD_SLOTS_REQUEST",
    ),
    ("POST", {"json": {"query": '{ hypervisors(after: "x") { totalCount } }'}}, "BAD_CURSOR"),
    ("POST", {"json": {"query": '{ slots(flavor: "none") { key } }'}}, "UNKNOWN_FLAVOR"),
]


@pytest.mark.parametrize(("method", "options", "code"), REQUESTS)
async def test_every_error_answered_has_its_code(
    method: str, options: dict[str, Any], code: str
) -> None:
    async with serve(fleet.objects()) as (client, _):
        response = await client.request(method, "/graphql", **options)
    errors = response.json()["errors"]
    assert [e["extensions"]["code"] for e in errors] == [code]


async def test_limits_answer_like_validation_errors() -> None:
    deep = "{ consumers { nodes { bookings { hypervisor { bookings { hypervisor { bookings { hypervisor { bookings { hypervisor { name } } } } } } } } } } }"
    async with serve(fleet.objects()) as (client, _):
        plain = await client.post(
            "/graphql", json={"query": deep.replace("name", "a: name b: name")}
        )
        typed = await client.post(
            "/graphql",
            json={"query": deep},
            headers={"accept": "application/graphql-response+json"},
        )
    assert plain.status_code == 200 and typed.status_code == 400
    assert (
        plain.json()["errors"][0]["extensions"]["code"]
        == typed.json()["errors"][0]["extensions"]["code"]
    )
