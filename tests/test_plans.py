"""A subscription event answered by its operation's plan is what graphql-core makes of it."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any

import pytest
import strawberry
from graphql import ExecutionResult, GraphQLObjectType, GraphQLSchema, parse, print_ast
from graphql.execution.incremental.incremental_executor import IncrementalExecutor
from graphql.language import FieldNode, OperationDefinitionNode
from hypothesis import HealthCheck, given, settings
from hypothesis_graphql import from_schema

from gateway.api.executor import Executor
from gateway.api.plans import LONGEST_LIST, Plan, plan
from gateway.api.schema import build_schema, schema, sdl
from gateway.api.shortcuts import shortcut_resolvers
from gateway.api.subscriptions import ChangeType, HypervisorChange
from tests import scalar_values
from tests.test_executor import CONTEXT, MACHINES, Machine, Part, PartView, Root, store

#: One schema twice: with Strawberry's own resolvers, and with the shortcuts installed.
Schemas = tuple[GraphQLSchema, GraphQLSchema]


def events(
    schemas: Schemas, document: str, payload: Any, variables: dict[str, Any] | None = None
) -> tuple[ExecutionResult, ExecutionResult, Plan | None]:
    """An event's result by graphql-core's executor on the unmodified schema, and by ours
    (its plan, where it has one): checked to be the same; and the plan."""
    plain_schema, short_schema = schemas
    results = []
    for graphql_schema, executor in ((plain_schema, IncrementalExecutor), (short_schema, Executor)):
        built = executor.build(graphql_schema, parse(document), None, CONTEXT, variables)
        assert isinstance(built, executor), built
        result = built.build_per_event_executor(payload).execute_operation(False)
        assert isinstance(result, ExecutionResult)
        results.append(result)
    plain, ours = results
    assert ours.data == plain.data
    assert [e.formatted for e in ours.errors or ()] == [e.formatted for e in plain.errors or ()]
    assert list(_keys(ours.data)) == list(_keys(plain.data))  # in the same order
    built = Executor.build(short_schema, parse(document), None, CONTEXT, variables)
    assert isinstance(built, Executor)
    return plain, ours, plan(built.schema, built.fragments, built.variable_values, built.operation)


def _keys(data: Any) -> Any:
    if isinstance(data, dict):
        for key, value in data.items():
            yield key
            yield from _keys(value)
    elif isinstance(data, list):
        for item in data:
            yield from _keys(item)


# -- the real schema, on the test fleet's records ------------------------------------

REAL: Schemas = (build_schema(shortcuts=False)._schema, schema._schema)
HOSTS = list(store.snapshot.by_name.values())


def change(record: Any) -> HypervisorChange:
    return HypervisorChange(  # type: ignore[call-arg]
        type=ChangeType.MODIFIED,
        hypervisor=record,
        snapshot=store.snapshot,
        generation=store.snapshot.generation,
    )


@pytest.mark.parametrize(
    ("selection", "variables"),
    [
        ("type hypervisor { name resourceVersion }", None),
        ("kind: type h: hypervisor { n: name __typename zone region } __typename", None),
        ("hypervisor { name allowedProjects warnings maintenance numInstances }", None),
        ("...F hypervisor { ... on Hypervisor { name } name }", None),
        ("hypervisor { name zone @skip(if: $no) region @include(if: $no) }", {"no": True}),
        ("hypervisor { name zone @skip(if: $no) region @include(if: $no) }", {"no": False}),
        (
            'hypervisor { name resource(name: "cpu") { free } gpu: resource(name: "x") { name } }',
            None,
        ),
        ("hypervisor { consumers { uuid projectId consumerGeneration } }", None),
    ],
)
@pytest.mark.parametrize("host", range(len(HOSTS)), ids=lambda n: HOSTS[n].name)
def test_an_attribute_or_lookup_selection_is_planned_and_answers_alike(
    selection: str, variables: dict[str, Any] | None, host: int
) -> None:
    arguments = "($no: Boolean!)" if variables else ""
    fragment = "fragment F on HypervisorChange { type }" if "...F" in selection else ""
    document = f"subscription{arguments} {{ hypervisorChanged {{ {selection} }} }} {fragment}"
    _, ours, planned = events(REAL, document, change(HOSTS[host]), variables)
    assert planned is not None and planned.data(change(HOSTS[host])) == ours.data


@pytest.mark.parametrize(
    "selection",
    [
        "hypervisor { name drift { __typename } }",  # a resolver
        "hypervisor { bookings { __typename } }",  # an abstract type
        "... @defer { type }",
        "hypervisor { allowedProjects @stream }",
    ],
)
def test_anything_but_attributes_and_lookups_is_not_planned(selection: str) -> None:
    document = f"subscription {{ hypervisorChanged {{ {selection} }} }}"
    *_, planned = events(REAL, document, change(HOSTS[0]))
    assert planned is None


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(query=from_schema(sdl(), custom_scalars=scalar_values.strategies(), fields=["hypervisor"]))
def test_any_selection_of_a_host_answers_alike(query: str) -> None:
    """Whatever is asked of a change's host: planned or not, the same result."""
    document = parse(query)
    operation = document.definitions[0]
    assert isinstance(operation, OperationDefinitionNode)
    (field,) = operation.selection_set.selections
    assert isinstance(field, FieldNode) and field.selection_set is not None
    selection = print_ast(field.selection_set)
    subscription = f"subscription {{ hypervisorChanged {{ type hypervisor {selection} }} }}"
    for record in HOSTS:
        events(REAL, subscription, change(record))


# -- errors and nulls: the full path answers what the plan cannot ---------------------


@strawberry.type
class Shelf:
    parts: list[PartView]
    labels: list[str]


@dataclass
class ShelfRecord:
    parts: Any
    labels: Any


SHELVES = [
    ShelfRecord([Part(1, "a"), Part(2, "b")], ["x"]),
    ShelfRecord([Part(1, "a"), Part(2)], ["x"]),  # an item without its non-null label
    ShelfRecord((Part(3, "c"),), ("y", None)),  # a null item where none is allowed
]


@strawberry.type
class Events:
    @strawberry.subscription
    async def shelf_changed(self) -> AsyncGenerator[Shelf, None]:
        yield SHELVES[0]  # type: ignore[misc]

    @strawberry.subscription
    async def machine_changed(self) -> AsyncGenerator[Machine, None]:
        yield MACHINES[0]  # type: ignore[misc]

    @strawberry.subscription
    async def maybe_changed(self) -> AsyncGenerator[Machine | None, None]:
        yield None


@pytest.fixture(scope="module")
def machines() -> Schemas:
    built = strawberry.Schema(query=Root, subscription=Events)
    shortcut_resolvers(built, [("Machine", "part")])
    return strawberry.Schema(query=Root, subscription=Events)._schema, built._schema


@pytest.mark.parametrize(
    ("selection", "errors"),
    [
        ("machineChanged { name count }", (0, 0, 1)),  # an Int that is not one
        ("machineChanged { name serial }", (0, 1, 0)),  # a null for a non-null field
        ("machineChanged { name main { size label } }", (0, 1, 1)),  # a null below
        ("machineChanged { spare { size } }", (0, 0, 0)),
        ("machineChanged { tagged { tag } }", (0, 1, 0)),  # not of its type: is_type_of
        ("machineChanged { __typename main { __typename size } }", (0, 0, 1)),
        ("maybeChanged { name }", (0, 0, 0)),  # the event itself null
    ],
)
def test_what_a_plan_cannot_answer_the_full_path_does(
    machines: Schemas, selection: str, errors: tuple[int, ...]
) -> None:
    document = f"subscription {{ {selection} }}"
    for machine, expected in zip(MACHINES, errors, strict=True):
        payload = None if selection.startswith("maybe") else machine
        plain, _, planned = events(machines, document, payload)
        assert len(plain.errors or ()) == expected
        assert planned is not None
        assert (planned.data(payload) is None) is bool(expected)


def test_lists_are_planned_and_an_item_the_plan_cannot_answer_is_the_full_paths(
    machines: Schemas,
) -> None:
    document = "subscription { shelfChanged { parts { size label } labels } }"
    answered = []
    for shelf in SHELVES:
        _, _, planned = events(machines, document, shelf)
        assert planned is not None
        answered.append(planned.data(shelf) is not None)
    assert answered == [True, False, False]


def test_a_list_longer_than_a_plan_walks_at_once_is_the_full_paths(machines: Schemas) -> None:
    """A plan is charged to the budget once it returns: a longer list takes the full
    path, which charges and checks it as it goes."""
    document = "subscription { shelfChanged { parts { size label } labels } }"
    long = ShelfRecord([Part(1, "a")] * (LONGEST_LIST + 1), ["x"])
    for shelf, answered in ((ShelfRecord(long.parts[1:], ["x"]), True), (long, False)):
        plain, _, planned = events(machines, document, shelf)
        assert planned is not None and (planned.data(shelf) is not None) is answered
        assert plain.data is not None and len(plain.data["shelfChanged"]["parts"]) == len(
            shelf.parts
        )


def test_an_iterable_that_is_read_once_is_left_to_the_full_path(machines: Schemas) -> None:
    document = "subscription { shelfChanged { labels } }"
    built = Executor.build(machines[1], parse(document), None, CONTEXT)
    assert isinstance(built, Executor)
    shelf = ShelfRecord((), iter(["z", None]))  # the full path must see its null
    result = built.build_per_event_executor(shelf).execute_operation(False)
    assert isinstance(result, ExecutionResult)
    assert [e.path for e in result.errors or ()] == [["shelfChanged", "labels", 1]]


def test_an_operation_with_a_budget_or_middleware_takes_the_full_path() -> None:
    """A plan charges no budget and runs no middleware: where they are, it is not used."""
    document = parse("subscription { hypervisorChanged { type hypervisor { name } } }")
    budgeted = Executor.build(schema._schema, document, None, CONTEXT)
    assert isinstance(budgeted, Executor)
    budgeted.budget = object()  # type: ignore[assignment]
    assert budgeted._planned(change(HOSTS[0])) is None
    free = Executor.build(schema._schema, document, None, CONTEXT)
    assert isinstance(free, Executor)
    assert free._planned(change(HOSTS[0])) is not None


def test_a_root_field_that_makes_its_value_of_the_event_is_not_planned() -> None:
    """Strawberry's subscription fields answer an event with the event itself; a field
    whose resolver makes something else of it is the full path's."""
    from graphql import GraphQLField, GraphQLInt

    query = GraphQLObjectType("Query", {"n": GraphQLField(GraphQLInt)})
    doubled = GraphQLField(GraphQLInt, resolve=lambda event, info: event * 2)
    subscription = GraphQLObjectType("Subscription", {"doubled": doubled})
    built = Executor.build(
        GraphQLSchema(query, subscription=subscription), parse("subscription { doubled }")
    )
    assert isinstance(built, Executor)
    assert plan(built.schema, built.fragments, built.variable_values, built.operation) is None
    result = built.build_per_event_executor(21).execute_operation(False)
    assert isinstance(result, ExecutionResult) and result.data == {"doubled": 42}
