"""From a request's bytes to a checked operation, each step remembered per distinct input."""

from __future__ import annotations

import copy
import json
from typing import Any
from urllib.parse import urlencode

import pytest
from graphql import print_ast

from gateway.api.documents import BYTES_PER_CHARACTER, DOCUMENT_BYTES
from gateway.api.limits import Limits
from gateway.api.schema import LIVE_FIELDS, schema
from gateway.http.operations import Operations
from gateway.http.request import RequestError
from gateway.sources.demo.source import generate
from gateway.store.store import Store

QUERY = "query Find($n: String!) { hypervisor(name: $n) { name } }"


@pytest.fixture
def operations() -> Operations:
    return Operations(schema._schema, Limits(), uncacheable=LIVE_FIELDS)


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
    """An entry is charged by its text's length; one over a sixteenth of the budget
    (a payload of 8 KiB under the default 16 MiB) is worked out every time."""
    padded = body(variables={"n": "x" * (DOCUMENT_BYTES // 16 // BYTES_PER_CHARACTER)})
    first = operations.prepare("POST", padded)
    again = operations.prepare("POST", padded)
    assert again is not first and again.params == first.params


def test_long_documents_are_parsed_each_time_not_kept(operations: Operations) -> None:
    short = '{ hypervisor(name: "a") { name } }'
    long = '{ hypervisor(name: "%s") { name } }' % ("x" * 8192)
    assert operations.parse(short) is operations.parse(short)
    assert operations.parse(long) is not operations.parse(long)
    assert print_ast(operations.parse(long)) == print_ast(operations.parse(long))


def test_distinct_documents_stay_within_the_budget() -> None:
    """Distinct texts are client input: each memo keeps the latest within its bytes."""
    operations = Operations(schema._schema, Limits(), memo_bytes=256 * 2**10)
    texts = [f'{{ a{n}: hypervisor(name: "{n}") {{ name }} }}' for n in range(500)]
    for text in texts:
        operations.validate(text)
        operations.prepare("POST", body(text))
    for memo in operations.memos:
        figures = memo.figures()
        assert 0 < figures.bytes <= memo.max_bytes, memo.name
        assert figures.evictions > 0, memo.name
    assert operations.parse(texts[-1]) is operations.parse(texts[-1])  # the latest kept


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
    assert [e.extensions for e in over.value.errors] == [{"code": "QUERY_TOO_DEEP"}]


HOSTS = Store()
HOSTS.replace(generate(300, seed=2, bookings_per_host=2))


@pytest.mark.parametrize(
    ("query", "scans"),
    [
        (QUERY, False),
        ("{ fleetCapacity(groupBy: ZONE) { key resources { name free } } }", False),
        ("{ fleetCapacity(filter: null) { key } }", False),
        ('{ fleetCapacity(filter: {zone: "a"}) { key } }', True),
        ("{ hypervisors(first: 100) { nodes { name } } }", False),
        ("{ hypervisors(filter: {evicted: false}, first: 1) { totalCount } }", True),
        ('{ hypervisors(orderBy: {field: FREE, resource: "cpu"}, first: 1) { totalCount } }', True),
        ('{ placementProvider(uuid: "6f1c2a9e-0b7d-4c35-9d6e-5a8f7e2b1c40") { name } }', True),
    ],
)
def test_only_filters_and_orders_cost_a_scan_of_the_fleet(
    operations: Operations, query: str, scans: bool
) -> None:
    """The fleet's totals and its pages by name are kept by the store; a filter or an
    order is computed over every host."""
    prepared = operations.prepare("POST", body(query, variables={"n": "a"}))
    operations.validate(query)
    cost = operations.check_cost(prepared, HOSTS.snapshot)
    assert (cost.total >= len(HOSTS.snapshot)) is scans


def test_a_cost_is_estimated_once_per_fleet_profile(operations: Operations) -> None:
    objects = generate(50, seed=2, bookings_per_host=2)
    store = Store()
    store.replace(objects)
    query = "{ hypervisors(filter: {evicted: false}) { totalCount } }"
    prepared = operations.prepare("POST", body(query))
    cost = operations.check_cost(prepared, store.snapshot)
    kept = prepared.cost
    changed = copy.deepcopy(objects[0])
    changed["metadata"]["resourceVersion"] = "changed"
    store.upsert(changed)  # a new snapshot of as many hosts: the same profile
    assert operations.check_cost(prepared, store.snapshot) == cost
    assert prepared.cost is kept
    store.delete(objects[1]["metadata"]["name"])  # one host fewer to scan
    assert operations.check_cost(prepared, store.snapshot).total == cost.total - 1
    assert prepared.cost is not kept
