"""The specification's rules, with codes: a refused literal says where, a mutation why."""

from __future__ import annotations

import pytest
from graphql import parse, validate

from gateway.api.schema import schema
from gateway.api.validation import specified


def errors(query: str) -> list[tuple[str, str | None]]:
    found = validate(schema._schema, parse(query), specified())
    return [(e.message, (e.extensions or {}).get("code")) for e in found]


@pytest.mark.parametrize(
    ("query", "start", "code"),
    [
        ('{ consumer(uuid: "x") { uuid } }', "consumer(uuid:): invalid UUID 'x'", "BAD_UUID"),
        (
            '{ slots(request: [{resource: "memory", amount: "16GiB"}]) { key } }',
            "slots(request:) at [0].amount: invalid quantity '16GiB': did you mean 16Gi?",
            "BAD_QUANTITY",
        ),
        (
            '{ hypervisors(orderBy: {field: FREE, resource: "a b"}) { totalCount } }',
            "hypervisors(orderBy:) at .resource: invalid resource name 'a b'",
            "BAD_RESOURCE_NAME",
        ),
        (
            '{ hypervisors(after: "%%") { totalCount } }',
            "hypervisors(after:): invalid cursor",
            "BAD_CURSOR",
        ),
        (
            'query($q: Quantity = "1x") { slots(request: [{resource: "cpu", amount: $q}]) { key } }',
            "default of $q: invalid quantity '1x'",
            "BAD_QUANTITY",
        ),
    ],
)
def test_a_refused_literal_keeps_its_scalars_code_and_names_its_place(
    query: str, start: str, code: str
) -> None:
    [(message, found)] = errors(query)
    assert message.startswith(start)
    assert found == code


def test_quantity_refusals_say_what_the_notation_expects() -> None:
    [(message, _)] = errors('{ slots(request: [{resource: "cpu", amount: "lots"}]) { key } }')
    assert "did you mean" not in message  # no reading of "lots" as an amount
    assert "Ki Mi Gi Ti Pi Ei (powers of 1024)" in message


def test_other_literal_errors_are_graphql_cores() -> None:
    [(message, code)] = errors('{ hypervisors(first: "x") { totalCount } }')
    assert message == 'Int cannot represent non-integer value: "x"'
    assert code is None  # answered as GRAPHQL_VALIDATION_FAILED (tests/test_codes.py)


def test_a_mutation_is_told_there_are_none() -> None:
    [(message, code)] = errors("mutation { anything }")
    assert message.startswith("This schema has no mutations")
    assert code == "MUTATIONS_NOT_SUPPORTED"
