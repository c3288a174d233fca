"""Rules that span several arguments, as validation rules.

The types cannot state them: ``slots`` takes exactly one of a request (each
resource once) and a flavor, ``drainPlan`` drains hosts named, a filter's, or both.
(A ``first`` outside the page size range is answered at its nearest bound, and an
ordering by a figure without a resource orders by memory: neither needs a rule.)
What the document alone decides is decided while it is validated, so such
a request is refused (400 under ``application/graphql-response+json``) before
anything runs, as a custom scalar's value is.

A value given by a variable is not known during validation, which is done once
per document text for every request that sends it. So the same rule runs again,
where variables are known (:func:`check_with_variables`, once per distinct
request), before execution; there only what depends on a variable can fail.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    GraphQLError,
    GraphQLField,
    GraphQLSchema,
    OperationDefinitionNode,
    Undefined,
    validate,
    value_from_ast_untyped,
)
from graphql.validation import ValidationRule

from gateway.api.codes import Code

__all__ = ["ArgumentRules", "argument_rules", "check_with_variables"]


class ArgumentRules(ValidationRule):
    """Checks each field's arguments; a value not known yet (a variable) is skipped."""

    #: The request's variables; None while validating the document alone.
    variables: dict[str, Any] | None = None

    def enter_field(self, node: FieldNode, *_: Any) -> None:
        field = self.context.get_field_def()
        if field is None or not field.args:
            return
        given = {
            a.name.value: value_from_ast_untyped(a.value, self.variables)
            for a in node.arguments or ()
        }
        for message, code in _problems(node.name.value, field, given):
            self.report_error(GraphQLError(message, node, extensions={"code": code.value}))


def argument_rules(variables: dict[str, Any] | None = None) -> type[ArgumentRules]:
    """The rule for a request's variables (none: the document alone)."""
    return type("ArgumentRules", (ArgumentRules,), {"variables": variables})


def check_with_variables(
    schema: GraphQLSchema,
    document: DocumentNode,
    operation: OperationDefinitionNode,
    variables: Mapping[str, Any] | None,
) -> list[GraphQLError]:
    """The rules on ``operation`` (of a valid ``document``) with the values of its
    variables: given, else their defaults, else null. Nothing to do without variables."""
    if not operation.variable_definitions:
        return []
    values = {
        d.variable.name.value: None
        if d.default_value is None
        else value_from_ast_untyped(d.default_value)
        for d in operation.variable_definitions
    }
    values.update(variables or {})
    fragments = (d for d in document.definitions if isinstance(d, FragmentDefinitionNode))
    alone = DocumentNode(definitions=(operation, *fragments))
    return validate(schema, alone, [argument_rules(values)])


def _problems(name: str, field: GraphQLField, given: dict[str, Any]) -> Iterator[tuple[str, Code]]:
    if "request" in field.args and "flavor" in field.args:
        yield from _slots_problems(name, given.get("request"), given.get("flavor"))
    if "hosts" in field.args and "filter" in field.args:
        hosts, where = given.get("hosts"), given.get("filter")
        if hosts is not Undefined and where is not Undefined and hosts is None and where is None:
            yield f"{name} needs hosts, a filter, or both", Code.BAD_DRAIN


def _slots_problems(name: str, request: Any, flavor: Any) -> Iterator[tuple[str, Code]]:
    if request is Undefined or flavor is Undefined:
        return
    if (request is None) == (flavor is None):
        yield f"{name} needs exactly one of request and flavor", Code.BAD_SLOTS_REQUEST
    if not isinstance(request, list):
        return
    if not request:
        yield f"{name}: a request needs at least one resource", Code.BAD_SLOTS_REQUEST
    seen = set()
    for item in request:
        resource = item.get("resource") if isinstance(item, dict) else None
        if isinstance(resource, str) and resource in seen:
            yield f"{name} request names {resource} twice", Code.BAD_SLOTS_REQUEST
        seen.add(resource)
