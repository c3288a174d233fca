"""A selection is judged once per operation, while it lives, within a budget of bytes."""

from __future__ import annotations

import gc
import tracemalloc
import weakref
from typing import Any

import pytest
from graphql import (
    FieldNode,
    GraphQLObjectType,
    OperationDefinitionNode,
    Undefined,
    parse,
)
from graphql.execution.collect_fields import FieldDetails

from gateway.api.executor import Executor
from gateway.api.judgments import Judgment, Judgments, judge
from gateway.api.schema import schema
from tests.test_executor import CONTEXT
from tests.test_reuse import ACROSS, PAGE_TEXT, fleet

HYPERVISOR = schema._schema.type_map["Hypervisor"]
assert isinstance(HYPERVISOR, GraphQLObjectType)

FRAGMENTS = (
    " fragment F on Hypervisor { zone }"
    " fragment G on Hypervisor { resource(name: $r) { free } }"
    " fragment H on Hypervisor { consumers { hypervisor { name } } }"
)


def hosts(text: str, variables: dict[str, Any] | None = None) -> tuple[Executor, FieldNode]:
    """An executor of ``text``, and its selection of ``hypervisors { nodes { ... } }``."""
    built = Executor.build(schema._schema, parse(text), None, CONTEXT, variables)
    assert isinstance(built, Executor), built
    (field,) = built.operation.selection_set.selections
    assert isinstance(field, FieldNode) and field.selection_set is not None
    (node,) = field.selection_set.selections
    assert isinstance(node, FieldNode) and node.name.value == "nodes"
    return built, node


def judged_of(built: Executor, node: FieldNode) -> Judgment:
    arguments = (built.schema, built.fragments, built.variable_values, built.operation)
    return judge(*arguments, HYPERVISOR, [FieldDetails(node, None)])


def judged(
    text: str, variables: dict[str, Any] | None = None, judgments: Judgments | None = None
) -> tuple[Judgment, OperationDefinitionNode]:
    """The judgment of the selection of ``hypervisors { nodes { ... } }`` in ``text``;
    kept in ``judgments`` and found there again, when given."""
    built, node = hosts(text, variables)
    judgment = judged_of(built, node)
    if judgments is not None:
        key = (id(HYPERVISOR), id(node))
        judgments.put(built.operation, key, (node,), judgment)
        assert judgments.get(built.operation, key, (node,)) is judgment
    return judgment, built.operation


@pytest.mark.parametrize(
    ("selection", "record_only", "planned"),
    [
        ('name cpu: resource(name: "cpu") { free } ...F', True, True),
        ("name consumers { uuid } ... on Hypervisor { zone } warnings", True, True),
        ("name resource(name: $r) { free }", True, False),  # an argument
        ("name zone @include(if: $on)", True, False),  # a directive
        ("name ... @skip(if: $on) { zone }", True, False),  # an inline fragment's directive
        ("name ...G", True, False),  # a fragment that reads one
        ("name consumers { hypervisor { name } }", False, False),  # a resolver: the fleet
        ("name ...H", False, False),  # the same, in a fragment
        ("name ...F ...H ...G", False, False),
    ],
)
def test_a_selection_is_kept_when_it_reads_only_its_record_and_planned_unless_it_reads_a_variable(
    selection: str, record_only: bool, planned: bool
) -> None:
    """A plan answers for every run of its operation: one that read a variable, made
    with its first value, would answer the next with it."""
    text = f"query($r: String!, $on: Boolean!) {{ hypervisors {{ nodes {{ {selection} }} }} }}"
    judgment, _ = judged(text + FRAGMENTS, {"r": "cpu", "on": True})
    assert judgment.record_only is record_only
    assert (judgment.plan is not None) is planned
    if judgment.plan is not None:
        host = fleet(1)[0].snapshot.ordered[0]
        assert judgment.plan(host) is not Undefined


def test_a_judgment_is_kept_by_the_operations_identity_while_it_lives(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Judgments are found again by the operation itself, never by its hash (a node's
    hash walks its whole tree: 4-6 us per lookup of bench.churn's queries, once or
    twice per answer); and go with the operation."""

    def unhashable(node: object) -> int:
        raise AssertionError("an operation was hashed")

    monkeypatch.setattr(OperationDefinitionNode, "__hash__", unhashable)
    judgments = Judgments()
    page, operation = judged(PAGE_TEXT, judgments=judgments)
    across, _ = judged(ACROSS.loc.source.body, judgments=judgments)  # type: ignore[union-attr]
    assert (page.record_only, across.record_only) == (True, False)
    assert judgments.figures().entries == 2
    assert judgments.figures().bytes == page.bytes + across.bytes
    gone = weakref.ref(operation)
    del operation
    gc.collect()
    assert gone() is None
    figures = judgments.figures()
    assert (figures.entries, figures.bytes, figures.evictions) == (1, across.bytes, 0)


def test_judgments_are_bounded_in_bytes_the_first_operations_let_go_first() -> None:
    sizes = [judged(PAGE_TEXT)[0].bytes] * 4
    judgments = Judgments(max_bytes=sum(sizes[:3]))
    operations = [judged(PAGE_TEXT, judgments=judgments)[1] for _ in sizes]
    figures = judgments.figures()
    assert (figures.entries, figures.bytes, figures.evictions) == (3, sum(sizes[:3]), 1)
    assert judgments._judged.keys() == {id(o) for o in operations[1:]}


def test_a_judgment_is_charged_what_it_takes_in_memory() -> None:
    """Plans are closures, a few per field: a long selection's are most of its judgment."""
    for fields in (
        " ".join(f"a{i}: name" for i in range(200)),
        " ".join(f'r{i}: resource(name: "cpu") {{ free capacity }}' for i in range(100)),
    ):
        built, node = hosts(f"{{ hypervisors {{ nodes {{ {fields} }} }} }}")
        judged_of(built, node)  # graphql-core's own memos, made once
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            judgment = judged_of(built, node)
            gc.collect()
            taken = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
        assert judgment.plan is not None
        assert 0.8 * taken <= judgment.bytes <= 1.5 * taken, (judgment.bytes, taken)
