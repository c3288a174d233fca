"""Subscription events answered by a walk over their payload, planned once per operation.

A broadcast (gateway.http.broadcast) executes its operation once per change for
all its subscribers. graphql-core's per-event path copies the operation's
executor, collects the root field and each object's fields again, builds a
ResolveInfo per field and assembles the result through the incremental
executor: for ``hypervisorChanged { type hypervisor { name resourceVersion } }``
that was ~40 us of an event in process, two thirds of what a broadcast to 20
subscribers cost, and at 20,000 hosts the event comes 333 times a second.

Yet an operation's selection is the same for every one of its events (its
variables are fixed), and where it reads nothing but attributes (the fields
the executor's short path knows, gateway.api.shortcuts.Attribute) and
``__typename``, every event is the same walk over its payload: :func:`plan`
makes that walk once, from the fields graphql-core collects (fragments, aliases,
``@skip`` and ``@include`` applied as it applies them), and :class:`Plan` takes
it per event. Anything a walk cannot answer as graphql-core would without its
machinery, a null where none is allowed, a value its serializer refuses, an
object its type does not recognise, it leaves to the full path, which words the
error. A selection with anything else in it (a lookup, a resolver, an abstract
type, ``@defer`` or ``@stream``) is not planned.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from graphql import (
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLSchema,
    OperationDefinitionNode,
    Undefined,
    is_leaf_type,
)
from graphql.execution.collect_fields import (
    CollectedFields,
    FieldDetailsList,
    FragmentDetails,
    collect_fields,
    collect_subfields,
)
from graphql.execution.values import VariableValues

from gateway.api.shortcuts import Attribute

__all__ = ["Plan", "plan"]

#: A value as graphql-core completes it for a field's type; Undefined where only the
#: full path can say what it becomes (an error, mostly).
Complete = Callable[[Any], Any]


class _Unplanned(Exception):
    """Something in the selection that only the full path answers."""


class Plan:
    """The walk that makes an event's ``data`` from its payload (the root field's value)."""

    __slots__ = ("_complete", "_key")

    def __init__(self, key: str, complete: Complete) -> None:
        self._key = key
        self._complete = complete

    def data(self, payload: Any) -> dict[str, Any] | None:
        """The event's data, as graphql-core makes it; None where the full path must
        answer."""
        value = self._complete(payload)
        return None if value is Undefined else {self._key: value}


def plan(
    schema: GraphQLSchema,
    fragments: dict[str, FragmentDetails],
    variable_values: VariableValues,
    operation: OperationDefinitionNode,
) -> Plan | None:
    """The plan of a subscription operation's events, if its selection can have one."""
    root = schema.subscription_type
    if root is None:
        return None
    try:
        collected = collect_fields(schema, fragments, variable_values, root, operation)
        ((key, details),) = _fields(collected)
        field = root.fields[details[0].node.name.value]
        if not _passes_events(field.resolve):
            return None
        walk = _Walk(schema, fragments, variable_values, operation)
        return Plan(key, walk.value(field.type, details))
    except (_Unplanned, ValueError, KeyError):
        return None


def _passes_events(resolve: Any) -> bool:
    """Whether a root subscription field's resolver is Strawberry's, which answers each
    event with the event itself (its source stream's item is the field's value)."""
    event = object()
    try:
        return resolve is not None and resolve(event, None) is event
    except Exception:
        return False


def _fields(collected: CollectedFields) -> Iterable[tuple[str, FieldDetailsList]]:
    if collected.new_defer_usages:
        raise _Unplanned("@defer")
    fields = collected.grouped_field_set.items()
    for _, details in fields:
        if any(d.fragment_variable_values is not None for d in details):
            raise _Unplanned("fragment arguments")
        if any(d.name.value == "stream" for f in details for d in f.node.directives or ()):
            raise _Unplanned("@stream")
    return fields


class _Walk:
    """Plans a selection's completions, given what collecting its fields needs."""

    def __init__(
        self,
        schema: GraphQLSchema,
        fragments: dict[str, FragmentDetails],
        variable_values: VariableValues,
        operation: OperationDefinitionNode,
    ) -> None:
        self._collecting = (schema, fragments, variable_values, operation)

    def value(self, type_: GraphQLOutputType, details: FieldDetailsList) -> Complete:
        """How a value of ``type_`` is completed for the fields ``details``."""
        nullable = not isinstance(type_, GraphQLNonNull)
        inner = type_.of_type if isinstance(type_, GraphQLNonNull) else type_
        if is_leaf_type(inner):
            complete = _leaf(inner.coerce_output_value)
        elif isinstance(inner, GraphQLList):
            complete = _list(self.value(inner.of_type, details))
        elif isinstance(inner, GraphQLObjectType):
            complete = self._object(inner, details)
        else:
            raise _Unplanned(f"an abstract type: {inner}")

        def completed(value: Any) -> Any:
            if value is None:
                return None if nullable else Undefined
            return complete(value)

        return completed

    def _object(self, type_: GraphQLObjectType, details: FieldDetailsList) -> Complete:
        fields: list[tuple[str, Callable[[Any], Any]]] = []
        for key, sub in _fields(collect_subfields(*self._collecting, type_, details)):
            name = sub[0].node.name.value
            if name == "__typename":
                fields.append((key, _constant(type_.name)))
                continue
            resolve = type_.fields[name].resolve
            if type(resolve) is not Attribute:
                raise _Unplanned(f"{type_.name}.{name} is not an attribute")
            fields.append((key, _read(resolve.name, self.value(type_.fields[name].type, sub))))
        return _completed_object(type_.is_type_of, fields)


def _leaf(serialize: Callable[[Any], Any]) -> Complete:
    def complete(value: Any) -> Any:
        try:
            serialized = serialize(value)
        except Exception:
            return Undefined
        return Undefined if serialized is None else serialized

    return complete


def _list(item: Complete) -> Complete:
    def complete(value: Any) -> Any:
        if not isinstance(value, list | tuple):  # read once: the full path reads it again
            return Undefined
        items = [item(v) for v in value]
        return Undefined if any(i is Undefined for i in items) else items

    return complete


def _completed_object(
    is_type_of: Callable[[Any, Any], Any] | None, fields: list[tuple[str, Complete]]
) -> Complete:
    def complete(value: Any) -> Any:
        # Strawberry's is_type_of checks read only the object, never the info.
        if is_type_of is not None and is_type_of(value, None) is not True:
            return Undefined
        data = {}
        for key, field in fields:
            data[key] = completed = field(value)
            if completed is Undefined:
                return Undefined
        return data

    return complete


def _read(attribute: str, complete: Complete) -> Complete:
    return lambda source: complete(getattr(source, attribute))


def _constant(value: str) -> Complete:
    return lambda _: value
