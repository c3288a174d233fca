"""Rules across arguments: refused in validation, and again once variables are known."""

from __future__ import annotations

from typing import Any

import pytest
from graphql import get_operation_ast, parse, validate

from gateway.api.rules import argument_rules, check_with_variables
from gateway.api.schema import schema

SLOTS_BY_VARIABLES = (
    "query($r: [ResourceRequest!], $f: String) { slots(request: $r, flavor: $f) { key } }"
)


def literal(query: str) -> list[tuple[str, str]]:
    found = validate(schema._schema, parse(query), [argument_rules()])
    return [(e.message, e.extensions["code"]) for e in found]  # type: ignore[index]


def with_variables(query: str, variables: dict[str, Any] | None) -> list[tuple[str, str]]:
    document = parse(query)
    operation = get_operation_ast(document)
    assert operation is not None
    found = check_with_variables(schema._schema, document, operation, variables)
    return [(e.message, e.extensions["code"]) for e in found]  # type: ignore[index]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        (
            "{ slots { key } }",
            ("slots needs exactly one of request and flavor", "BAD_SLOTS_REQUEST"),
        ),
        (
            '{ slots(flavor: "f", request: [{resource: "cpu", amount: "1"}]) { key } }',
            ("slots needs exactly one of request and flavor", "BAD_SLOTS_REQUEST"),
        ),
        (
            "{ slots(request: []) { key } }",
            ("slots: a request needs at least one resource", "BAD_SLOTS_REQUEST"),
        ),
        (
            '{ s: slots(request: [{resource: "cpu", amount: "1"}, {resource: "cpu", amount: "2"}]) { key } }',
            ("slots request names cpu twice", "BAD_SLOTS_REQUEST"),
        ),
        (
            "{ drainPlan { exact } }",
            ("drainPlan needs hosts, a filter, or both", "BAD_DRAIN"),
        ),
        (
            "{ drainPlan(hosts: null, filter: null) { exact } }",
            ("drainPlan needs hosts, a filter, or both", "BAD_DRAIN"),
        ),
    ],
)
def test_literals_are_refused_in_validation(query: str, expected: tuple[str, str]) -> None:
    assert literal(query) == [expected]


@pytest.mark.parametrize(
    "query",
    [
        "{ hypervisors(first: 100000, orderBy: {field: FREE}) { totalCount } }",  # answered
        "{ hypervisors(first: -1, orderBy: {field: FREE, resource: null}) { totalCount } }",
        '{ slots(flavor: "f") { key } }',
        '{ drainPlan(hosts: ["a"]) { exact } }',
        "query($h: [String!]) { drainPlan(hosts: $h) { exact } }",  # not known yet
        '{ slots(request: [{resource: "cpu", amount: "1"}]) { key } }',
        "query($n: Int) { hypervisors(first: $n) { totalCount } }",  # not known yet
        SLOTS_BY_VARIABLES,
    ],
)
def test_what_keeps_the_rules_or_is_not_known_yet_passes(query: str) -> None:
    assert literal(query) == []


@pytest.mark.parametrize(
    ("variables", "codes"),
    [
        ({"f": "m1.small"}, []),
        ({"r": [{"resource": "cpu", "amount": "1"}]}, []),
        ({}, ["BAD_SLOTS_REQUEST"]),  # neither: an absent variable is null
        (None, ["BAD_SLOTS_REQUEST"]),
        ({"f": "m1.small", "r": [{"resource": "cpu", "amount": "1"}]}, ["BAD_SLOTS_REQUEST"]),
        (
            {"r": [{"resource": "cpu", "amount": "1"}, {"resource": "cpu", "amount": "1"}]},
            ["BAD_SLOTS_REQUEST"],
        ),
    ],
)
def test_variables_are_judged_by_the_same_rules(
    variables: dict[str, Any] | None, codes: list[str]
) -> None:
    assert [code for _, code in with_variables(SLOTS_BY_VARIABLES, variables)] == codes


def test_defaults_of_variables_count() -> None:
    query = "query($r: [ResourceRequest!] = []) { slots(request: $r) { key } }"
    assert with_variables(query, None) == [
        ("slots: a request needs at least one resource", "BAD_SLOTS_REQUEST")
    ]
    assert with_variables(query, {"r": [{"resource": "cpu", "amount": "1"}]}) == []


def test_a_value_of_the_wrong_type_is_left_to_coercion() -> None:
    assert (
        with_variables("query($n: Int) { hypervisors(first: $n) { totalCount } }", {"n": "x"}) == []
    )


def test_only_the_operation_asked_for_is_judged() -> None:
    query = (
        "query A($r: [ResourceRequest!]) { slots(request: $r) { key } } "
        "query B($r: [ResourceRequest!]) { slots(request: $r) { key } }"
    )
    document = parse(query)
    operation = get_operation_ast(document, "A")
    assert operation is not None
    found = check_with_variables(schema._schema, document, operation, {"r": []})
    assert [e.locations[0].column for e in found if e.locations] == [35]  # A's field only
