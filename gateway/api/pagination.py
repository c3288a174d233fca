"""Cursor connections (``totalCount``, ``pageInfo``, ``edges { cursor node }``, ``nodes``).

Cursors are keyset cursors: they carry the sort key of the last item seen, not an
offset, so paging through a fleet that changes between requests neither skips nor
repeats a hypervisor that did not move in the ordering. Every ordering's key has
the same shape, a :class:`Position`, so any well-formed cursor is a position in any
list: one past the end (or from another ordering) gives a page, never an error.
"""

import base64
import binascii
import bisect
import decimal
import json
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any, Generic, NamedTuple, TypeVar

import strawberry

from gateway.api.codes import Code

__all__ = ["Connection", "Cursor", "CursorError", "Position", "paginate"]

T = TypeVar("T")
Key = tuple[Any, ...]

#: The longest cursor read: a Kubernetes name is at most 253 characters.
MAX_CURSOR_LENGTH = 1024


class Position(NamedTuple):
    """Where an item sits: ``(rank, value, name)``, compared in that order.

    ``rank`` 0 for an item with a known sort value, 1 for one without (last);
    ``value`` the sort value (0 when the list is ordered by name only); ``name``
    the item's name (its UUID for a consumer), which breaks ties.
    """

    rank: int
    value: Decimal
    name: str


#: The GraphQL type of cursors (gateway.api.arguments): a Position on the wire.
Cursor = Position


class CursorError(ValueError):
    """A string that is not a cursor this server could have issued."""


@strawberry.type(description="Where a page sits in the whole list.")
class PageInfo:
    has_next_page: bool = strawberry.field(description="More items follow this page.")
    has_previous_page: bool = strawberry.field(description="Items precede this page.")
    start_cursor: Cursor | None = strawberry.field(description="Cursor of the first item.")
    end_cursor: Cursor | None = strawberry.field(
        description="Cursor of the last item; pass as after."
    )


@strawberry.type(description="An item with its cursor.")
class Edge(Generic[T]):
    cursor: Cursor = strawberry.field(description="Opaque position of this item.")
    node: T = strawberry.field(description="The item.")


def _edges(root: strawberry.Parent["Connection[T]"]) -> list[Edge[T]]:
    return [Edge(cursor=c, node=n) for c, n in zip(root.cursors(), root.nodes, strict=True)]


@strawberry.type(description="A page of a list, with the total and cursors to go on.")
class Connection(Generic[T]):
    total_count: int = strawberry.field(description="Items matching, over all pages.")
    page_info: PageInfo = strawberry.field(description="Paging state.")
    edges: list[Edge[T]] = strawberry.field(
        resolver=_edges, description="Items with their cursors."
    )
    nodes: list[T] = strawberry.field(description="Items of this page.")
    #: The page's cursors, made only if edges are asked for: most clients read nodes.
    cursors: strawberry.Private[Callable[[], list[Position]]]


def encode_cursor(position: Position) -> str:
    parts = [position.rank, str(position.value), position.name]
    return base64.urlsafe_b64encode(json.dumps(parts, separators=(",", ":")).encode()).decode()


def decode_cursor(cursor: str) -> Position:
    """The position a cursor encodes; raises :class:`CursorError` for anything else."""
    if len(cursor) > MAX_CURSOR_LENGTH:
        raise CursorError(f"invalid cursor: longer than {MAX_CURSOR_LENGTH} characters")
    try:
        parts = json.loads(base64.b64decode(cursor, altchars=b"-_", validate=True))
    except (binascii.Error, ValueError, UnicodeError, RecursionError) as error:
        raise CursorError(f"invalid cursor {cursor!r}: not a cursor's encoding") from error
    if (
        not isinstance(parts, list)
        or len(parts) != 3
        or type(parts[0]) is not int
        or parts[0] not in (0, 1)
        or not isinstance(parts[1], str)
        or not isinstance(parts[2], str)
    ):
        raise CursorError(f"invalid cursor {cursor!r}: not a position")
    try:
        value = Decimal(parts[1])
    except decimal.InvalidOperation as error:
        raise CursorError(f"invalid cursor {cursor!r}: not a position") from error
    if not value.is_finite():
        raise CursorError(f"invalid cursor {cursor!r}: not a position")
    return Position(parts[0], value, parts[2])


def paginate(
    items: Sequence[Any],
    keys: Sequence[Key],
    first: int | None,
    after: Position | None,
    position: Callable[[Key], Position],
    key: Callable[[Position], Key],
    max_page: int,
    warn: Callable[[str, str], None],
) -> Connection[Any]:
    """Slice ``items`` (sorted ascending by ``keys``) after the ``after`` position.

    ``position`` turns a sort key into the position its cursor carries, ``key``
    back. ``first`` outside 0..max_page (a range GraphQL's Int cannot state) is
    answered as its nearest bound, with a warning (``warn``, code PAGE_SIZE_CLAMPED):
    the page asked for, as far as the server gives one.
    """
    if first is not None and not 0 <= first <= max_page:
        clamped = min(max(first, 0), max_page)
        warn(
            Code.PAGE_SIZE_CLAMPED,
            f"first is {first}; answered with {clamped} (first runs from 0 to the page size "
            f"limit, {max_page})",
        )
        first = clamped
    start = 0 if after is None else bisect.bisect_right(keys, key(after))
    end = min(len(items), start + (max_page if first is None else first))

    def cursor(index: int) -> Position:
        return position(keys[index])

    return Connection(
        total_count=len(items),
        page_info=PageInfo(
            has_next_page=end < len(items),
            has_previous_page=start > 0,
            start_cursor=cursor(start) if start < end else None,
            end_cursor=cursor(end - 1) if start < end else None,
        ),
        nodes=list(items[start:end]),
        cursors=lambda: [cursor(i) for i in range(start, end)],
    )
