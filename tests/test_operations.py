"""From a request's bytes to a checked operation, each step remembered per distinct input."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

import pytest

from gateway.api.limits import Limits
from gateway.api.schema import LIVE_FIELDS, LOOKUP_FIELDS, schema
from gateway.http.operations import MEMO_PAYLOAD_BYTES, Operations
from gateway.http.request import RequestError

QUERY = "query Find($n: String!) { hypervisor(name: $n) { name } }"


@pytest.fixture
def operations() -> Operations:
    return Operations(schema._schema, Limits(), uncacheable=LIVE_FIELDS, lookups=LOOKUP_FIELDS)


def body(query: str = QUERY, **extra: Any) -> bytes:
    return json.dumps({"query": query, **extra}).encode()


def test_a_repeated_payload_is_worked_out_once(operations: Operations) -> None:
    first = operations.prepare("POST", body(variables={"n": "node-a"}))
    again = operations.prepare("POST", body(variables={"n": "node-a"}))
    other = operations.prepare("POST", body(variables={"n": "node-b"}))
    assert again is first
    assert other is not first and other.document is first.document  # parsed once
    assert (first.name, first.params.variables) == ("Find", {"n": "node-a"})


def test_large_payloads_are_not_kept(operations: Operations) -> None:
    padded = body(variables={"n": "x" * MEMO_PAYLOAD_BYTES})
    first = operations.prepare("POST", padded)
    again = operations.prepare("POST", padded)
    assert again is not first and again.params == first.params


def test_get_reads_the_query_string(operations: Operations) -> None:
    query = urlencode({"query": QUERY, "variables": json.dumps({"n": "node-a"})}).encode()
    prepared = operations.prepare("GET", query)
    assert (prepared.params.query, prepared.params.variables) == (QUERY, {"n": "node-a"})
    with pytest.raises(RequestError, match="not valid JSON"):
        operations.prepare("POST", query)  # the same bytes are no JSON body


def test_failures_are_refused_every_time(operations: Operations) -> None:
    for _ in range(2):
        with pytest.raises(RequestError, match="unknown operation 'Other'"):
            operations.prepare("POST", body(operationName="Other"))


def test_digests_follow_meaning_not_spelling(operations: Operations) -> None:
    spelled = QUERY.replace(" { ", "{")
    first = operations.prepare("POST", body(variables={"n": "a"}))
    respelled = operations.prepare("POST", body(spelled, variables={"n": "a"}))
    other = operations.prepare("POST", body(variables={"n": "b"}))
    text = operations.validate(QUERY)
    assert text is not None and operations.validate(spelled) == text
    assert respelled.digest(text) == first.digest(text)
    assert other.digest(text) != first.digest(text)


def test_live_fields_are_never_cacheable(operations: Operations) -> None:
    assert operations.validate("{ hypervisors { totalCount } }") is not None
    assert operations.validate("{ syncStatus { relists } }") is None
    assert operations.validate("{ ...S } fragment S on Query { s: syncStatus { relists } }") is None


def test_limits_are_checked_before_validation(operations: Operations) -> None:
    """Validation can be made expensive; a document over a limit is refused unvalidated."""
    with pytest.raises(RequestError, match="noSuchField") as invalid:
        operations.validate("{ noSuchField }")
    assert invalid.value.status is None  # the status follows the accepted media type
    deep = "{ noSuchField " * 20 + "{ name }" + " }" * 20
    with pytest.raises(RequestError, match="depth") as over:
        operations.validate(deep)
    assert over.value.status == 400


@pytest.mark.parametrize(
    ("query", "lookup"),
    [
        (QUERY, True),
        ('{ hypervisor(name: "a") { zone cpu: resource(name: "cpu") { free } } }', True),
        ('{ a: hypervisor(name: "a") { name } b: consumer(uuid: "u") { uuid } }', True),
        ("{ syncStatus { relists } }", True),
        ('{ hypervisor(name: "a") { ...F } } fragment F on Hypervisor { name }', True),
        ('{ hypervisor(name: "a") { resources { name free } } }', False),
        (
            '{ hypervisor(name: "a") { ...F } } fragment F on Hypervisor { bookings { __typename } }',
            False,
        ),
        ('{ consumer(uuid: "u") { bookings { hypervisor { name } } } }', False),
        ("{ hypervisors { totalCount } }", False),
        ("{ fleetCapacity { key } }", False),
        ('{ hypervisor(name: "a") { name } hypervisors { totalCount } }', False),
        ("{ ...Q } fragment Q on Query { syncStatus { relists } }", False),
        ("{ __typename }", False),
    ],
)
def test_only_lookups_of_single_objects_that_read_no_list_are_lookups(
    operations: Operations, query: str, lookup: bool
) -> None:
    operations.validate(query)
    assert operations.is_lookup(query) is lookup
