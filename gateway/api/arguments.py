"""The custom scalars of the API's inputs: arguments judged by their shape alone.

A value that cannot be a cursor, a label selector, an amount, a UUID or a
resource name is refused while the request is validated (literals) or its
variables coerced, so the client gets a 400 that names the argument and no
resolver ever runs on it. graphql-core reports what ``parse`` raises as the
reason; only what execution can know (a cursor past the end, an unknown flavor)
is left to the resolvers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, NewType

import strawberry
from graphql import GraphQLError

from gateway.api import pagination
from gateway.api.codes import Code
from gateway.api.pagination import Cursor, CursorError
from gateway.api.scalars import QUANTITY_DESCRIPTION, Count, Quantity
from gateway.domain.quantity import QuantityError, format_quantity, parse_quantity, respelled
from gateway.domain.selector import Matcher, SelectorError, parse_selector

__all__ = ["SCALARS", "UUID", "LabelSelector", "ResourceName"]

UUID = NewType("UUID", str)
ResourceName = NewType("ResourceName", str)


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A label selector as given, and the predicate it compiles to.

    Its text is its identity (equality, hash, repr): two subscribers who give the
    same selector ask the same question, and share its answers.
    """

    text: str
    matches: Matcher = field(compare=False, repr=False)


_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
# A Kubernetes qualified name (cpu, ephemeral-storage, nvidia.com/gpu, hugepages-2Mi)
# or a Placement resource class (VCPU, DISK_GB, CUSTOM_FPGA_X_).
_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_K8S_NAME = re.compile(
    rf"(?=[^/]{{1,253}}/|[^/]*$)({_DNS_LABEL}(\.{_DNS_LABEL})*/)?"
    r"(?=[^/]{1,63}$)[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?"
)
_PLACEMENT_CLASS = re.compile(r"[A-Z0-9_]{1,255}")
BAD = Code.BAD_QUANTITY
QUANTITY_NOTATION = (
    "Kubernetes quantity notation is digits with an optional suffix: Ki Mi Gi Ti Pi Ei "
    '(powers of 1024), k M G T P E (powers of 1000), m (thousandths), or an exponent ("1e3")'
)


def _refused(message: str, code: Code) -> GraphQLError:
    """A value refused by a scalar: graphql-core adds where (argument, variable, path)."""
    return GraphQLError(message, extensions={"code": code.value})


def _text(value: object, scalar: str, code: Code) -> str:
    if not isinstance(value, str):
        raise _refused(f"{scalar} must be a string, got {value!r}", code)
    return value


def parse_uuid(value: object) -> str:
    text = _text(value, "UUID", Code.BAD_UUID)
    if not _UUID.fullmatch(text):
        raise _refused(
            f"invalid UUID {text!r}: expected 8-4-4-4-12 hexadecimal digits", Code.BAD_UUID
        )
    return text.lower()


def parse_resource_name(value: object) -> str:
    text = _text(value, "ResourceName", Code.BAD_RESOURCE_NAME)
    if not (_K8S_NAME.fullmatch(text) or _PLACEMENT_CLASS.fullmatch(text)):
        raise _refused(
            f"invalid resource name {text!r}: expected a Kubernetes resource name (cpu, "
            "memory, nvidia.com/gpu) or a Placement resource class (DISK_GB, CUSTOM_X)",
            Code.BAD_RESOURCE_NAME,
        )
    return text


def parse_label_selector(value: object) -> LabelSelector:
    text = _text(value, "LabelSelector", Code.BAD_LABEL_SELECTOR)
    try:
        return LabelSelector(text, parse_selector(text))
    except SelectorError as error:
        raise _refused(str(error), Code.BAD_LABEL_SELECTOR) from error


def parse_amount(value: object) -> Decimal:
    """A requested amount: a finite Kubernetes quantity, never negative.

    A refusal says what the notation expects, and the likely intended spelling of a
    near miss (``16GiB``: ``16Gi``), since units are where people go wrong.
    """
    if not isinstance(value, (str, int)) or isinstance(value, bool):
        raise _refused(f"Quantity must be a string (or an integer), got {value!r}", BAD)
    try:
        amount = parse_quantity(value)
    except QuantityError as error:
        hint = respelled(value) if isinstance(value, str) else None
        advice = f"did you mean {hint}? " if hint else ""
        raise _refused(f"{error}: {advice}{QUANTITY_NOTATION}", BAD) from error
    if amount < 0:
        raise _refused(f"invalid quantity {value!r}: an amount asked for is never negative", BAD)
    return amount


def parse_cursor(value: object) -> pagination.Position:
    try:
        return pagination.decode_cursor(_text(value, "Cursor", Code.BAD_CURSOR))
    except CursorError as error:
        raise _refused(str(error), Code.BAD_CURSOR) from error


def _same(value: Any) -> Any:
    return value


def parse_count(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _refused(f"Count must be a whole number >= 0, got {value!r}", Code.BAD_COUNT)
    return value


#: The schema's ``scalar_map``.
SCALARS: dict[object, Any] = {
    Quantity: strawberry.scalar(
        name="Quantity",
        description=QUANTITY_DESCRIPTION,
        serialize=format_quantity,
        parse_value=parse_amount,
    ),
    Count: strawberry.scalar(
        name="Count",
        description="A count of instances or hosts, as a JSON integer of any size: slot counts "
        "of a large fleet exceed Int's 32 bits. Clients should map it to a type that holds "
        "integers exactly beyond 2^53 (JavaScript: bigint, or number while below 2^53).",
        serialize=int,
        parse_value=parse_count,
    ),
    Cursor: strawberry.scalar(
        name="Cursor",
        description="An opaque position in a paged list: an edge's cursor or pageInfo's "
        "endCursor, passed back as after. Refused in validation unless it has a cursor's "
        "encoding; a cursor past the end gives an empty page.",
        serialize=pagination.encode_cursor,
        parse_value=parse_cursor,
    ),
    UUID: strawberry.scalar(
        name="UUID",
        description="A UUID in its 8-4-4-4-12 hexadecimal form, any case "
        '("6f1c2a9e-0b7d-4c35-9d6e-5a8f7e2b1c40"); read in lower case.',
        serialize=_same,
        parse_value=parse_uuid,
    ),
    ResourceName: strawberry.scalar(
        name="ResourceName",
        description="A resource key: a Kubernetes resource name (cpu, memory, "
        "ephemeral-storage, nvidia.com/gpu) or a Placement resource class (VCPU, DISK_GB, "
        "CUSTOM_X).",
        serialize=_same,
        parse_value=parse_resource_name,
    ),
    LabelSelector: strawberry.scalar(
        name="LabelSelector",
        description='A Kubernetes label selector, as kubectl get -l takes it: "a=b,c in '
        '(d,e),!f". Refused in validation unless it parses.',
        serialize=lambda selector: selector.text,
        parse_value=parse_label_selector,
    ),
}
