"""Input objects built from a table of their fields: the values Strawberry's own
conversion makes, for every field of every input type of the schema."""

from __future__ import annotations

from typing import Any

import pytest
import strawberry
from graphql import FieldNode, GraphQLInputObjectType, OperationDefinitionNode, parse
from graphql.execution.values import VariableValues, get_argument_values, get_variable_values
from strawberry.types.arguments import InputContext, convert_argument, convert_arguments
from strawberry.types.base import StrawberryObjectDefinition, get_object_definition

from gateway.api.evictions import EvictionFilter
from gateway.api.filters import HypervisorFilter, HypervisorOrder, ResourceRequest
from gateway.api.inputs import built_once
from gateway.api.schema import ConsumerFilter, schema

BUILT = (HypervisorFilter, HypervisorOrder, ResourceRequest, ConsumerFilter, EvictionFilter)

EVERY_HYPERVISOR_FIELD = """
  names: ["a", "b"], zone: "z1", region: "r", buildingBlock: "bb1", aggregate: "agg",
  trait: "CUSTOM_X", labelSelector: "a=b,c in (d,e),!f", ready: true, maintenance: ["", "manual"],
  consumer: "00000000-0000-0000-0000-000000000001", projectId: "p", view: BOOKINGS,
  canFit: [{resource: "cpu", amount: "4"}, {resource: "memory", amount: "16Gi"}],
  overcommitted: false, fitsFlavor: "m1.small", project: "p2", bookingsTracked: true,
  hasStatus: false, evicted: false, tainted: true
"""

#: Root fields and their arguments: every input type, each field given, null or left out.
QUERIES = [
    f"{{ hypervisors(filter: {{{EVERY_HYPERVISOR_FIELD}}}, first: 3) {{ totalCount }} }}",
    "{ hypervisors(filter: {zone: null, canFit: null, names: null}) { totalCount } }",
    "{ hypervisors(filter: {canFit: []}) { totalCount } }",
    '{ hypervisors(filter: {canFit: {resource: "cpu", amount: "1"}}) { totalCount } }',
    "{ hypervisors(filter: {}) { totalCount } }",
    "{ hypervisors { totalCount } }",
    '{ hypervisors(orderBy: {field: FREE, resource: "cpu", direction: DESC}) { totalCount } }',
    "{ hypervisors(orderBy: {field: UTILIZATION, resource: null}) { totalCount } }",
    "{ hypervisors(orderBy: {}) { totalCount } }",
    f"{{ fleetCapacity(filter: {{{EVERY_HYPERVISOR_FIELD}}}) {{ key }} }}",
    '{ slots(request: [{resource: "cpu", amount: "2"}], filter: {zone: "z"}) { key } }',
    '{ consumers(filter: {projectId: "p", userId: "u", consumerType: "INSTANCE",'
    ' migrating: true, hypervisor: "h"}) { totalCount } }',
    "{ consumers(filter: {migrating: null}) { totalCount } }",
    '{ evictions(filter: {hypervisor: "h", state: RUNNING}) { name } }',
    "{ evictions(filter: {state: null}) { name } }",
]


#: Queries with variables: graphql-core coerces their values, not literals.
WITH_VARIABLES = [
    (
        "query($f: HypervisorFilter, $o: HypervisorOrder) {"
        " hypervisors(filter: $f, orderBy: $o) { totalCount } }",
        {
            "f": {
                "names": ["a"],
                "zone": None,
                "canFit": [{"resource": "cpu", "amount": "2"}],
                "view": "ALLOCATION",
                "maintenance": [],
            },
            "o": {"field": "BOOKED", "direction": "DESC"},
        },
    ),
    ("query($f: HypervisorFilter) { hypervisors(filter: $f) { totalCount } }", {"f": {}}),
    ("query($f: HypervisorFilter) { hypervisors(filter: $f) { totalCount } }", {"f": None}),
    (
        "query($c: ConsumerFilter) { consumers(filter: $c) { totalCount } }",
        {"c": {"projectId": "p", "migrating": False}},
    ),
]


def converted(query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
    """The arguments of ``query``'s root field as its resolver gets them."""
    operation = parse(query).definitions[0]
    assert isinstance(operation, OperationDefinitionNode)
    node = operation.selection_set.selections[0]
    assert isinstance(node, FieldNode)
    query_type = schema._schema.query_type
    assert query_type is not None
    values = None
    if variables is not None:
        values = get_variable_values(
            schema._schema, operation.variable_definitions or (), variables
        )
        assert isinstance(values, VariableValues), values
    raw = get_argument_values(query_type.fields[node.name.value], node, values)
    field = schema.get_field_for_type(node.name.value, "Query")
    assert field is not None
    converter = schema.schema_converter
    return convert_arguments(
        raw, field.arguments, scalar_registry=converter.scalar_registry, config=schema.config
    )


def context() -> InputContext:
    converter = schema.schema_converter
    return InputContext(None, schema.config, converter.scalar_registry, ())


def strawberrys_own(monkeypatch: pytest.MonkeyPatch) -> None:
    for cls in BUILT:
        monkeypatch.setattr(get_object_definition(cls, strict=True), "from_input", None)


@pytest.mark.parametrize(("query", "variables"), [(q, None) for q in QUERIES] + WITH_VARIABLES)
def test_the_arguments_are_strawberrys_own(query: str, variables: dict[str, Any] | None) -> None:
    built = converted(query, variables)
    with pytest.MonkeyPatch.context() as monkeypatch:
        strawberrys_own(monkeypatch)
        own = converted(query, variables)
    assert built == own
    assert [type(v) for v in built.values()] == [type(v) for v in own.values()]


def test_every_input_type_of_the_schema_is_built_from_its_table() -> None:
    """One left to Strawberry would be read field by field again at every request."""
    inputs = {
        definition.origin
        for name, graphql_type in schema._schema.type_map.items()
        if isinstance(graphql_type, GraphQLInputObjectType)
        and isinstance(definition := schema.get_type_by_name(name), StrawberryObjectDefinition)
    }
    assert inputs == set(BUILT)
    assert all(get_object_definition(cls, strict=True).from_input is not None for cls in BUILT)


def test_a_list_is_the_requests_own() -> None:
    """graphql-core hands every request that omits a list the same default (none of the
    schema's is a list today): the resolver gets a copy, as from Strawberry."""
    shared = ["a", "b"]
    raw = {"names": shared, "maintenance": shared, "zone": "z"}
    built = HypervisorFilter.__strawberry_definition__.from_input(  # type: ignore[attr-defined]
        HypervisorFilter, raw, context()
    )
    assert built.names == built.maintenance == shared and built.zone == "z"
    assert built.names is not shared and built.maintenance is not shared


@built_once
@strawberry.input
class Probe:
    """Fields no input of the schema has today: without a published default, items that
    may be null, a Maybe."""

    plain: str | None
    requests: list[ResourceRequest | None] | None
    many: list[int] | None = None
    maybe: strawberry.Maybe[str | None] = None


@pytest.mark.parametrize(
    "raw",
    [
        {},
        {"plain": "x", "many": [1, 2], "requests": [{"resource": "cpu", "amount": 1}, None]},
        {"plain": None, "requests": None},
        {"maybe": None},
        {"maybe": "set"},
    ],
)
def test_fields_no_input_has_yet_are_what_strawberry_makes_them(
    raw: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Left out (Strawberry's implicit None), null (a Maybe's Some(None)), or given."""
    converter = schema.schema_converter
    built = Probe.__strawberry_definition__.from_input(  # type: ignore[attr-defined]
        Probe, raw, context()
    )
    monkeypatch.setattr(get_object_definition(Probe, strict=True), "from_input", None)
    strawberrys_own(monkeypatch)
    own = convert_argument(raw, Probe, converter.scalar_registry, schema.config)
    assert built == own
