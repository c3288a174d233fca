"""Query execution with a short path for the fields that make up large answers.

A fleet query reads a few fields of thousands of hypervisors, and graphql-core
runs the same steps for every field of every host: it builds a ResolveInfo,
coerces the arguments, calls the resolver (through Strawberry's wrappers, for a
plain attribute), checks whether the result is awaitable and completes it through
each wrapper of its type. At 5,000 hosts that was most of an uncached answer.

Two kinds of fields carry almost all of that weight, and need almost none of it:

- a scalar read from an attribute (``name``, ``free``): the value's attribute,
  serialized;
- a per-host lookup (``resource(name: "cpu")``): a function of the host and
  String arguments, whose arguments are the same for every host the query reaches.

:func:`shortcut_resolvers` gives those fields resolvers that say so
(:class:`Attribute`, :class:`Lookup`); they stay ordinary resolvers for any
executor. :class:`Executor` recognises them and takes the short path when the
answer is a plain value. Anything else, an error or a null where none is allowed,
goes the full way again, so every error reads exactly as graphql-core words it.
The results are the same field for field (``tests/test_executor.py`` compares
them with graphql-core's own executor).

Every field completed, by either path, is charged to the operation's
:class:`gateway.api.budget.Budget` (the context's ``budget``, when it has one): the
bytes it adds to the answer, and now and then a look at the clock, so that an
operation over its time or size ends itself instead of running on unseen.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from graphql import (
    GraphQLField,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    Undefined,
    get_nullable_type,
    is_leaf_type,
)
from graphql.execution.collect_fields import FieldDetailsList
from graphql.execution.incremental.incremental_executor import IncrementalExecutor
from graphql.execution.values import get_argument_values
from graphql.pyutils import Path
from strawberry import Schema
from strawberry.types.base import StrawberryObjectDefinition

from gateway.api.budget import Budget

__all__ = ["Attribute", "Executor", "Lookup", "shortcut_resolvers"]


class Attribute:
    """The resolver of a field that is an attribute of its parent, nothing more."""

    __slots__ = ("leaf", "name", "nullable")

    def __init__(self, name: str, type_: GraphQLOutputType) -> None:
        self.name = name
        self.nullable = not isinstance(type_, GraphQLNonNull)
        inner = get_nullable_type(type_)
        #: The scalar's or enum's serializer; None for a list or an object.
        self.leaf: Callable[[Any], Any] | None = (
            inner.coerce_output_value if is_leaf_type(inner) else None
        )

    def __call__(self, source: Any, info: Any, **arguments: Any) -> Any:
        return getattr(source, self.name)


class Lookup:
    """The resolver of a field computed from its parent and its arguments only.

    ``function(None, parent, **arguments)`` is the Strawberry resolver as written
    (``self`` unused, the parent, no ``info``). ``object_type`` is the type it
    returns when that is an object type (the short path's case), else None.
    """

    __slots__ = ("function", "object_type")

    def __init__(self, function: Callable[..., Any], object_type: GraphQLObjectType | None) -> None:
        self.function = function
        self.object_type = object_type

    def __call__(self, source: Any, info: Any, **arguments: Any) -> Any:
        return self.function(None, source, **arguments)


def shortcut_resolvers(built: Schema, lookups: Iterable[tuple[str, str]]) -> None:
    """Give attribute fields an :class:`Attribute`, and the named fields a :class:`Lookup`.

    Attribute fields are those Strawberry would answer with
    ``getattr(parent, python_name)``: no resolver and no field extension. Lookups
    must take only arguments that graphql-core coerces to the values Strawberry
    would pass (Strings), under the same names, and neither ``info`` nor any
    extension; this is checked, and a field that does not qualify raises TypeError.
    """
    if built.config.default_resolver is not getattr:
        raise TypeError("attribute fields need the schema's default resolver to be getattr")
    for name, strawberry_type in built.schema_converter.type_map.items():
        definition = strawberry_type.definition
        graphql_type = built._schema.type_map.get(name)
        if not isinstance(definition, StrawberryObjectDefinition) or not isinstance(
            graphql_type, GraphQLObjectType
        ):
            continue
        for field in definition.fields:
            if field.is_basic_field and not field.extensions:
                graphql_field = graphql_type.fields[built.config.name_converter.from_field(field)]
                graphql_field.resolve = Attribute(field.python_name, graphql_field.type)
    for type_name, field_name in lookups:
        _install_lookup(built, type_name, field_name)


def _install_lookup(built: Schema, type_name: str, field_name: str) -> None:
    where = f"lookup {type_name}.{field_name}"
    definition = built.get_type_by_name(type_name)
    if not isinstance(definition, StrawberryObjectDefinition):
        raise TypeError(f"{where}: {type_name} is not an object type of the schema")
    field = next((f for f in definition.fields if f.python_name == field_name), None)
    if field is None:
        raise TypeError(f"{where}: {type_name} has no such field")
    if field.base_resolver is None or field.extensions:
        raise TypeError(f"{where}: needs a resolver of its own and no field extension")
    if not all(a.type in (str, str | None) for a in field.arguments):
        raise TypeError(f"{where}: takes an argument that is not a String")
    function = field.base_resolver.wrapped_func
    if isinstance(function, (staticmethod, classmethod)):
        raise TypeError(f"{where}: a static or class method is not given the parent")
    graphql_type = built._schema.type_map[type_name]
    if not isinstance(graphql_type, GraphQLObjectType):
        raise TypeError(f"{where}: {type_name} is not a GraphQL object type")
    graphql_field = graphql_type.fields[built.config.name_converter.from_field(field)]
    object_type = graphql_field.type
    if isinstance(object_type, GraphQLObjectType):
        if object_type.is_type_of is not None:
            # The short path completes the object without asking is_type_of.
            raise TypeError(f"{where}: {object_type.name} has an is_type_of check")
        graphql_field.resolve = Lookup(function, object_type)
    else:
        graphql_field.resolve = Lookup(function, None)


class Executor(IncrementalExecutor):
    """graphql-core's executor, with the short paths for :class:`Attribute` and :class:`Lookup`.

    Pass it as ``executor_class`` to ``graphql.execute``; every resolver below a
    lookup must be synchronous. One instance runs one operation, so a field
    node's coerced arguments (the variables are fixed for the operation) are
    kept for the whole of it.
    """

    __slots__ = ("_arguments", "budget")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._arguments: dict[int, dict[str, Any]] = {}
        self.budget: Budget | None = getattr(self.context_value, "budget", None)

    def execute_field(
        self,
        parent_type: GraphQLObjectType,
        source: Any,
        field_details_list: FieldDetailsList,
        path: Path,
        position_context: Any,
    ) -> Any:
        value = self._execute_field(parent_type, source, field_details_list, path, position_context)
        budget = self.budget
        if budget is not None:  # Budget.charge, inline: this runs for every field
            key: str = path.key  # type: ignore[assignment]  # a field's path ends in its key
            budget.spent += len(key) + (len(value) + 6 if type(value) is str else _size(value))
            budget.ticks -= 1
            if budget.ticks <= 0:
                budget.check()
        return value

    def _execute_field(
        self,
        parent_type: GraphQLObjectType,
        source: Any,
        field_details_list: FieldDetailsList,
        path: Path,
        position_context: Any,
    ) -> Any:
        details = field_details_list[0]
        field_def = parent_type.fields.get(details.node.name.value)  # None: __typename
        if field_def is not None and self.middleware_manager is None:
            resolve = field_def.resolve
            value: Any = Undefined
            if type(resolve) is Attribute and resolve.leaf is not None:
                value = _leaf(resolve, source)
            elif type(resolve) is Lookup and details.fragment_variable_values is None:
                value = self._lookup(
                    field_def, resolve, source, field_details_list, path, position_context
                )
            if value is not Undefined:
                return value
        return super().execute_field(
            parent_type, source, field_details_list, path, position_context
        )

    def _lookup(
        self,
        field_def: GraphQLField,
        resolve: Lookup,
        source: Any,
        field_details_list: FieldDetailsList,
        path: Path,
        position_context: Any,
    ) -> Any:
        """The object found, completed; Undefined where the full path must answer.

        The node's arguments are coerced once per operation. No object found, or an
        error on the way to it, is left to the full path, which says why.
        """
        if resolve.object_type is None:
            return Undefined
        node = field_details_list[0].node
        try:
            arguments = self._arguments.get(id(node))
            if arguments is None:
                arguments = get_argument_values(
                    field_def, node, self.variable_values, None, self.hide_suggestions
                )
                self._arguments[id(node)] = arguments
            found = resolve.function(None, source, **arguments)
        except Exception:
            return Undefined
        if found is None:
            return Undefined
        try:
            return self.collect_and_execute_subfields(
                resolve.object_type, field_details_list, path, found, position_context
            )
        except Exception as error:  # a non-null field below it failed: null here
            self.handle_field_error(error, field_def.type, field_details_list, path)
            return None


def _size(value: Any) -> int:
    """About the bytes a field of this value adds to the JSON answer, but for its key.

    That is ``"":value,``: objects and lists count their punctuation here, their
    contents as their own fields do; a list counts its items' strings and commas.
    """
    if type(value) is list:
        return 6 + sum(len(v) + 3 if type(v) is str else 2 for v in value)
    return 9


def _leaf(resolve: Attribute, source: Any) -> Any:
    """The serialized attribute, or Undefined where the full path must say why it is not."""
    value = getattr(source, resolve.name)
    if value is None:
        return None if resolve.nullable else Undefined
    leaf: Callable[[Any], Any] = resolve.leaf  # type: ignore[assignment]
    try:
        serialized = leaf(value)
    except Exception:
        return Undefined
    return Undefined if serialized is None else serialized
