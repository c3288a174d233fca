"""Subscription events answered by a walk over their payload, planned once per operation.

A broadcast (gateway.http.broadcast) executes its operation once per change for
all its subscribers. graphql-core's per-event path copies the operation's
executor, collects the root field and each object's fields again, builds a
ResolveInfo per field and assembles the result through the incremental
executor: for ``hypervisorChanged { type hypervisor { name resourceVersion } }``
that was ~40 us of an event in process, two thirds of what a broadcast to 20
subscribers cost, and at 20,000 hosts the event comes 333 times a second.

Yet an operation's selection is the same for every one of its events (its
variables are fixed), and where it reads nothing but its payload, attributes and
lookups (the fields the executor's short paths know, gateway.api.shortcuts) and
``__typename``, every event is the same walk over its payload: :func:`plan`
makes that walk once, from the fields graphql-core collects (fragments, aliases,
``@skip`` and ``@include`` applied as it applies them, a lookup's arguments
coerced), and :class:`Plan` takes it per event. Anything a walk cannot answer as
graphql-core would without its machinery, a null where none is allowed, a value
its serializer refuses, an object its type does not recognise, a lookup that
raises, it leaves to the full path, which words the error. A selection with
anything else in it (a resolver, an abstract type, ``@defer`` or ``@stream``) is
not planned.

Queries take the same walks for the objects of their answers (:func:`object_plan`),
but for those of reusable types below the object, which the executor completes
with what an earlier answer made of them (gateway.api.reuse). bench.churn's zone
totals (nine zones of three resources: 126 fields), executed with nothing kept,
took 566-620 us by the executor's short paths and 350-358 us by plans; a 100-host
page 2.28-2.36 ms and 1.60-1.72 ms. A query's plans are made and kept once per
operation, with the other judgments of its selections (gateway.api.judgments).
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
from graphql.execution.values import VariableValues, get_argument_values

from gateway.api.reuse import REUSABLE
from gateway.api.shortcuts import Attribute, Lookup

__all__ = ["LONGEST_LIST", "Complete", "Plan", "object_plan", "plan"]

#: A value as graphql-core completes it for a field's type; Undefined where only the
#: full path can say what it becomes (an error, mostly).
Complete = Callable[[Any], Any]
#: Items a plan walks of one list at most. A plan is one call, charged to the
#: operation's budget once it returns: a longer list (a host's 200,000 instances)
#: takes the full path, which charges and checks the budget as it goes.
LONGEST_LIST = 1024


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


def object_plan(
    schema: GraphQLSchema,
    fragments: dict[str, FragmentDetails],
    variable_values: VariableValues,
    operation: OperationDefinitionNode,
    type_: GraphQLObjectType,
    details: FieldDetailsList,
) -> tuple[Complete, int] | None:
    """The walk that completes an object of ``type_`` for the fields ``details`` as
    graphql-core does (Undefined where it cannot), if their selection has one; and
    the fields it walks. It is made with these variables' values: kept for others,
    its selection must read none, nor fragment arguments (gateway.api.judgments)."""
    try:
        walk = _Walk(schema, fragments, variable_values, operation, kept_below=True)
        return walk.object(type_, details), walk.fields
    except Exception:  # graphql-core's refusals too (@defer in a subscription): the full
        return None  # path raises them again, where they become the answer's errors


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
        *,
        kept_below: bool = False,
    ) -> None:
        self._collecting = (schema, fragments, variable_values, operation)
        #: Whether objects of reusable types below are left to the full path, which
        #: reuses what earlier answers made of them (gateway.api.reuse).
        self._kept_below = kept_below
        #: The fields planned so far: what the plan's closures number.
        self.fields = 0

    def value(self, type_: GraphQLOutputType, details: FieldDetailsList) -> Complete:
        """How a value of ``type_`` is completed for the fields ``details``."""
        nullable = not isinstance(type_, GraphQLNonNull)
        inner = type_.of_type if isinstance(type_, GraphQLNonNull) else type_
        if is_leaf_type(inner):
            complete = _leaf(inner.coerce_output_value)
        elif isinstance(inner, GraphQLList):
            complete = _list(self.value(inner.of_type, details))
        elif isinstance(inner, GraphQLObjectType):
            if self._kept_below and (inner.extensions or {}).get(REUSABLE):
                raise _Unplanned(f"{inner.name} objects may be reused")
            complete = self.object(inner, details)
        else:
            raise _Unplanned(f"an abstract type: {inner}")

        def completed(value: Any) -> Any:
            if value is None:
                return None if nullable else Undefined
            return complete(value)

        return completed

    def object(self, type_: GraphQLObjectType, details: FieldDetailsList) -> Complete:
        """How an object of ``type_`` (never null) is completed for the fields ``details``."""
        fields: list[tuple[str, Callable[[Any], Any]]] = []
        for key, sub in _fields(collect_subfields(*self._collecting, type_, details)):
            name = sub[0].node.name.value
            self.fields += 1
            if name == "__typename":
                fields.append((key, _constant(type_.name)))
                continue
            field = type_.fields[name]
            complete = self.value(field.type, sub)
            resolve = field.resolve
            if type(resolve) is Attribute:
                fields.append((key, _read(resolve.name, complete)))
            elif type(resolve) is Lookup:
                # Merged fields have the same arguments (validation): the first's are theirs.
                _, _, variable_values, _ = self._collecting
                try:
                    arguments = get_argument_values(field, sub[0].node, variable_values)
                except Exception as error:  # the full path words it
                    raise _Unplanned(f"{type_.name}.{name}'s arguments") from error
                fields.append((key, _looked_up(resolve, arguments, complete)))
            else:
                raise _Unplanned(f"{type_.name}.{name} is neither an attribute nor a lookup")
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
        if len(value) > LONGEST_LIST:  # the full path charges every field as it goes
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


def _looked_up(resolve: Lookup, arguments: dict[str, Any], complete: Complete) -> Complete:
    function = resolve.function

    def read(source: Any) -> Any:
        try:
            found = function(None, source, **arguments)
        except Exception:  # the full path calls it again, and words the error
            return Undefined
        return complete(found)

    return read


def _constant(value: str) -> Complete:
    return lambda _: value
