"""Resolvers that say what they are, so the executor can take a short path for them.

A fleet query reads a few fields of thousands of hypervisors, and two kinds of
fields carry almost all of its weight while needing almost none of what
graphql-core does per field (a ResolveInfo, argument coercion, Strawberry's
wrappers, an awaitable check):

- a scalar read from an attribute (``name``, ``free``): the value's attribute,
  serialized; and an object read from one (a change's ``hypervisor``), completed;
- a per-host lookup (``resource(name: "cpu")``): a function of the host and
  String arguments, whose arguments are the same for every host the query reaches.

:func:`shortcut_resolvers` gives those fields resolvers that say so
(:class:`Attribute`, :class:`Lookup`); they stay ordinary resolvers for any
executor, and :mod:`gateway.api.executor` recognises them. Both read nothing but
their parent, which is also what lets :mod:`gateway.api.reuse` keep what they make
of a record.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from graphql import (
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    get_nullable_type,
    is_leaf_type,
)
from strawberry import Schema
from strawberry.types.base import StrawberryObjectDefinition

__all__ = ["Attribute", "Lookup", "shortcut_resolvers"]


class Attribute:
    """The resolver of a field that is an attribute of its parent, nothing more."""

    __slots__ = ("leaf", "name", "nullable", "object_type")

    def __init__(self, name: str, type_: GraphQLOutputType) -> None:
        self.name = name
        self.nullable = not isinstance(type_, GraphQLNonNull)
        inner = get_nullable_type(type_)
        #: The scalar's or enum's serializer; None for a list or an object.
        self.leaf: Callable[[Any], Any] | None = (
            inner.coerce_output_value if is_leaf_type(inner) else None
        )
        #: The object type it is, when it is one (not a list, an interface or a union).
        self.object_type = inner if isinstance(inner, GraphQLObjectType) else None

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
    if field.base_resolver.info_parameter is not None:
        raise TypeError(f"{where}: reads info, so more than its parent")
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
