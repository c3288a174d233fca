"""Cursor connections (``totalCount``, ``pageInfo``, ``edges { cursor node }``, ``nodes``).

Cursors are keyset cursors: they carry the sort key of the last item seen, not an
offset, so paging through a fleet that changes between requests neither skips nor
repeats a hypervisor that did not move in the ordering.
"""

import base64
import binascii
import bisect
import json
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

import strawberry
from graphql import GraphQLError

__all__ = ["Connection", "paginate"]

T = TypeVar("T")
Key = tuple[Any, ...]


@strawberry.type(description="Where a page sits in the whole list.")
class PageInfo:
    has_next_page: bool = strawberry.field(description="More items follow this page.")
    has_previous_page: bool = strawberry.field(description="Items precede this page.")
    start_cursor: str | None = strawberry.field(description="Cursor of the first item.")
    end_cursor: str | None = strawberry.field(description="Cursor of the last item; pass as after.")


@strawberry.type(description="An item with its cursor.")
class Edge(Generic[T]):
    cursor: str = strawberry.field(description="Opaque position of this item.")
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
    #: The page's cursors, encoded only if edges are asked for: most clients read nodes.
    cursors: strawberry.Private[Callable[[], list[str]]]


def encode_cursor(key: Key) -> str:
    return base64.urlsafe_b64encode(json.dumps(key, separators=(",", ":")).encode()).decode()


def decode_cursor(cursor: str) -> list[Any]:
    try:
        key = json.loads(base64.urlsafe_b64decode(cursor.encode()))
    except (binascii.Error, ValueError, UnicodeError) as error:
        raise GraphQLError(f"invalid cursor {cursor!r}") from error
    if not isinstance(key, list):
        raise GraphQLError(f"invalid cursor {cursor!r}")
    return key


def paginate(
    items: Sequence[Any],
    keys: Sequence[Key],
    first: int | None,
    after: str | None,
    cursor_key: Callable[[Key], Key],
    parse_key: Callable[[list[Any]], Key],
    max_page: int,
) -> Connection[Any]:
    """Slice ``items`` (sorted ascending by ``keys``) after the ``after`` cursor.

    ``cursor_key`` turns a sort key into JSON-safe parts, ``parse_key`` back.
    """
    if first is not None and first < 0:
        raise GraphQLError("first must not be negative")
    if first is not None and first > max_page:
        raise GraphQLError(f"first is {first}; the page size limit is {max_page}")
    start = 0
    if after is not None:
        try:
            start = bisect.bisect_right(keys, parse_key(decode_cursor(after)))
        except (TypeError, ValueError, IndexError) as error:
            raise GraphQLError(f"cursor {after!r} does not belong to this ordering") from error
    end = min(len(items), start + (max_page if first is None else first))

    def cursor(index: int) -> str:
        return encode_cursor(cursor_key(keys[index]))

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
