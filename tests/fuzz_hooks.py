"""Schemathesis hooks for the gateway: ``SCHEMATHESIS_HOOKS=tests.fuzz_hooks st run URL/graphql``.

Two things a GraphQL schema cannot tell a generator, and these hooks do:

- what values of the custom scalars look like (:mod:`tests.scalar_values`), without
  which schemathesis skips every argument of one;
- what the schema cannot state and a generated query still has to respect, each
  refused with its own ``extensions.code`` (tests/test_rules.py and
  tests/test_catalog.py check those answers); schemathesis counts the refusal of a
  document its types allow as a failure (ST206 in validation, ST113 in execution):

  - names that must be the fleet's or the catalog's: every flavor argument and
    filter field (``fitsFlavor``) names a catalog flavor (UNKNOWN_FLAVOR), hosts
    to drain are hosts of the fleet (UNKNOWN_HYPERVISOR). These are data, not
    types: a name nobody has is answered as a lookup of it is elsewhere (a field
    error with a code), and a generator cannot guess the fleet's names;
  - ``slots`` asks for exactly one of a request (non-empty, each resource once)
    and a flavor (BAD_SLOTS_REQUEST), and ``drainPlan`` for hosts, a filter or
    both (BAD_DRAIN). Exactly-one is what a ``@oneOf`` input states, but
    hypothesis-graphql 0.13 generates such inputs with any number of fields, and
    moving ``slots(request:, flavor:)`` to one would break every client of it.

  A ``first`` outside the page size range and an ordering by a figure without a
  resource need no hook: both are answered (at the nearest bound with a warning;
  by memory). The hooks bend a generated query to follow the rest rather than drop
  it, so all else about it is still tested.
"""

from __future__ import annotations

from typing import Any

import graphql
import schemathesis
from graphql import (
    ArgumentNode,
    FieldNode,
    ListValueNode,
    NameNode,
    NullValueNode,
    ObjectFieldNode,
    ObjectValueNode,
    StringValueNode,
)

from gateway.domain.flavors import load_catalog
from tests import scalar_values

for _name, _strategy in scalar_values.strategies().items():
    schemathesis.graphql.scalar(_name, _strategy)

FLAVORS = [f.name for f in load_catalog(None).flavors]
#: The fuzzed fleet's hosts (tests/test_fuzz.py serves generate(200, 0)).
HOSTS = [f"node{n:03d}-bb040" for n in range(1, 9)]


def _argument(name: str, value: graphql.ValueNode) -> ArgumentNode:
    return ArgumentNode(name=NameNode(value=name), value=value)


class _Documented(graphql.Visitor):
    """Rewrites a value that breaks a documented rule into one that keeps it."""

    def enter_argument(self, node: ArgumentNode, *_: Any) -> Any:
        value = node.value
        if node.name.value == "flavor" and isinstance(value, StringValueNode):
            flavor = FLAVORS[len(value.value) % len(FLAVORS)]
            return _argument("flavor", StringValueNode(value=flavor))
        if node.name.value in ("hosts", "drain") and isinstance(value, ListValueNode):
            named = tuple(
                StringValueNode(value=HOSTS[len(v.value) % len(HOSTS)])
                for v in value.values
                if isinstance(v, StringValueNode)
            )
            return _argument(node.name.value, ListValueNode(values=named))
        return None

    def enter_object_field(self, node: ObjectFieldNode, *_: Any) -> Any:
        value = node.value
        if node.name.value == "fitsFlavor" and isinstance(value, StringValueNode):
            flavor = FLAVORS[len(value.value) % len(FLAVORS)]
            return ObjectFieldNode(name=node.name, value=StringValueNode(value=flavor))
        return None


def _one_size(field: FieldNode) -> FieldNode:
    """``Query.slots`` with its request if that is a good one, else with a catalog flavor."""
    given = {a.name.value: a for a in field.arguments}
    arguments = [a for name, a in given.items() if name not in ("request", "flavor")]
    request = given.get("request")
    if request is not None and _good_request(request.value):
        arguments.append(request)
    else:
        arguments.append(_argument("flavor", StringValueNode(value=FLAVORS[0])))
    return FieldNode(
        alias=field.alias,
        name=field.name,
        arguments=tuple(arguments),
        directives=field.directives,
        selection_set=field.selection_set,
    )


def _something_drained(field: FieldNode) -> FieldNode:
    """``Query.drainPlan`` with hosts when it has neither hosts nor a filter."""
    given = {a.name.value: a.value for a in field.arguments}
    if any(
        not isinstance(given.get(name), (type(None), NullValueNode)) for name in ("hosts", "filter")
    ):
        return field
    arguments = [a for a in field.arguments if a.name.value not in ("hosts", "filter")]
    host = ListValueNode(values=(StringValueNode(value=HOSTS[0]),))
    return FieldNode(
        alias=field.alias,
        name=field.name,
        arguments=(*arguments, _argument("hosts", host)),
        directives=field.directives,
        selection_set=field.selection_set,
    )


#: Root fields whose arguments are bent to follow a rule across them.
_ACROSS = {"slots": _one_size, "drainPlan": _something_drained}


def _good_request(value: graphql.ValueNode) -> bool:
    if not isinstance(value, ListValueNode) or not value.values:
        return False
    names = [
        f.value.value
        for item in value.values
        if isinstance(item, ObjectValueNode)
        for f in item.fields
        if f.name.value == "resource" and isinstance(f.value, StringValueNode)
    ]
    return len(names) == len(set(names)) == len(value.values)


def documented(document: graphql.DocumentNode) -> graphql.DocumentNode:
    """``document`` with every argument following the rules the descriptions document."""
    document = graphql.visit(document, _Documented())
    definitions = []
    for definition in document.definitions:
        if isinstance(definition, graphql.OperationDefinitionNode):
            selections = tuple(
                _ACROSS[s.name.value](s)
                if isinstance(s, FieldNode) and s.name.value in _ACROSS
                else s
                for s in definition.selection_set.selections
            )
            selection_set = graphql.SelectionSetNode(selections=selections)
            definition = graphql.OperationDefinitionNode(
                operation=definition.operation,
                name=definition.name,
                variable_definitions=definition.variable_definitions,
                directives=definition.directives,
                selection_set=selection_set,
            )
        definitions.append(definition)
    return graphql.DocumentNode(definitions=tuple(definitions))


@schemathesis.hook
def map_case(context: Any, case: Any) -> Any:
    """Positive cases only: a negative one must stay as wrong as it was drawn."""
    if case.meta is not None and case.meta.generation.mode.is_positive:
        case.body = graphql.print_ast(documented(graphql.parse(case.body)))
    return case
