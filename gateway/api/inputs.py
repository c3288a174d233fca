"""Input objects built from their GraphQL values in one pass over a table.

Strawberry converts an input object field by field, working out each field's type
and GraphQL name again at every request: 140 us for bench.churn's canFit filter,
whose twenty fields graphql-core fills in with their published defaults, some 40%
of answering it after a change. An input type's fields do not change once the
schema is built, so :func:`built_once` gives the type a ``from_input`` hook (the
one Strawberry offers integrations that build their own values) that works them
out on its first call and keeps, per field, how its value becomes the Python one:

- **as it is**: scalars and enums, which graphql-core has parsed already;
- **copied**: a list of those, since graphql-core hands every request that omits
  it the same default list;
- **each built** by its own table: a list of input types built so;
- **converted** by Strawberry, as before: anything else (a nested input, a
  ``Maybe``, a ``GlobalID``), a nested type with the hook building itself.

A type with the hook is not checked for a null in a ``Maybe`` field by
Strawberry's validation: its conversion refuses one instead (none of the
schema's inputs has such a field).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import MISSING
from typing import Any, TypeVar

from strawberry.relay.types import GlobalID
from strawberry.scalars import is_scalar
from strawberry.types.arguments import InputContext
from strawberry.types.base import (
    StrawberryList,
    StrawberryMaybe,
    StrawberryObjectDefinition,
    StrawberryOptional,
    get_object_definition,
)
from strawberry.types.enum import StrawberryEnumDefinition, has_enum_definition
from strawberry.types.unset import UNSET

__all__ = ["built_once"]

T = TypeVar("T", bound=type)


class _How(enum.Enum):
    AS_IS = "as is"
    COPIED = "copied"
    EACH_BUILT = "each built"
    CONVERTED = "converted"


#: Per field: its GraphQL name, its Python name, how its value is made, its type.
_Field = tuple[str, str, _How, Any]


def built_once(cls: T) -> T:
    """Build the Strawberry input type ``cls`` from a table of its fields (see above)."""
    definition = get_object_definition(cls, strict=True)
    definition.from_input = _Builder(definition)
    return cls


class _Builder:
    """``from_input`` for one input type: the same values as Strawberry's conversion."""

    def __init__(self, definition: StrawberryObjectDefinition) -> None:
        self._definition = definition
        self._fields: list[_Field] | None = None
        # Strawberry's implicit default: None for a field declared without one.
        self._nones: dict[str, object] = {
            field.python_name: None
            for field in definition.fields
            if field.default_value is MISSING and field.default_factory is MISSING
        }

    def __call__(self, cls: type, value: Mapping[str, Any], context: InputContext) -> Any:
        return self.build(cls, value, context, ())

    def build(
        self, cls: type, value: Mapping[str, Any], context: InputContext, at: tuple[str | int, ...]
    ) -> Any:
        """``cls`` from its input ``value``, found ``at`` these keys within ``context``'s."""
        fields = self._fields if self._fields is not None else self._table(context)
        kwargs = dict(self._nones)
        for name, python_name, how, type_ in fields:
            if name not in value:
                continue
            given = value[name]
            if how is _How.AS_IS:
                kwargs[python_name] = given
            elif how is _How.CONVERTED:  # a null too: a Maybe's is Some(None), or refused
                kwargs[python_name] = context.convert(given, type_, *at, name)
            elif given is None or given is UNSET:
                kwargs[python_name] = given
            elif how is _How.COPIED:
                kwargs[python_name] = list(given)
            else:
                builder, origin = type_
                kwargs[python_name] = [
                    None if item is None else builder.build(origin, item, context, (*at, name, i))
                    for i, item in enumerate(given)
                ]
        return cls(**kwargs)

    def _table(self, context: InputContext) -> list[_Field]:
        definition, registry = self._definition, context.scalar_registry
        fields = []
        for field in definition.fields:
            type_ = field.resolve_type(type_definition=definition)
            name = context.config.name_converter.from_field(field)
            how, type_ = _how(type_, registry)
            fields.append((name, field.python_name, how, type_))
        self._fields = fields
        return fields


def _how(type_: Any, registry: Mapping[object, Any]) -> tuple[_How, Any]:
    """How a value of ``type_`` becomes the Python one, as Strawberry's conversion does,
    and what that takes: the type to convert to, or what builds the items (their hook
    and class)."""
    if isinstance(type_, StrawberryMaybe):  # wrapped in Some()
        return _How.CONVERTED, type_
    inner = type_.of_type if isinstance(type_, StrawberryOptional) else type_
    if _leaf(inner, registry):
        return _How.AS_IS, type_
    if isinstance(inner, StrawberryList):
        item = _item(inner)
        if _leaf(item, registry):
            return _How.COPIED, type_
        definition = get_object_definition(item)
        if definition is not None and isinstance(definition.from_input, _Builder):
            return _How.EACH_BUILT, (definition.from_input, definition.origin)
    return _How.CONVERTED, type_


def _item(list_type: StrawberryList) -> Any:
    """The type of a list's items, null or not (a ``Maybe`` item is no plain one)."""
    item = list_type.of_type
    if isinstance(item, StrawberryOptional) and not isinstance(item, StrawberryMaybe):
        return item.of_type
    return item


def _leaf(type_: Any, registry: Mapping[object, Any]) -> bool:
    """A scalar or an enum, whose value graphql-core has made already; not a GlobalID,
    which Strawberry parses from its text."""
    if type_ is GlobalID:
        return False
    return (
        is_scalar(type_, registry)
        or isinstance(type_, StrawberryEnumDefinition)
        or has_enum_definition(type_)
    )
