"""Global object identification: an ``id`` per object, the same in every answer.

Normalized client caches (Apollo Client, urql's graphcache, Relay) store each
object once, under a key they find without being told: its ``id``. Hypervisors,
consumers and flavors have natural keys (a name, a UUID) under fields of other
names, so each gets an ``id`` as Relay's Global Object Identification specifies
it: opaque, unique across types (base64 of ``Type:key``), and resolvable by
``Query.node(id:)``.
"""

from __future__ import annotations

import base64
import binascii

import strawberry

__all__ = ["KINDS", "Node", "global_id", "parse_global_id"]

#: The types that are nodes.
KINDS = frozenset({"Hypervisor", "Consumer", "Flavor"})


@strawberry.interface(
    description="An object with a global id: unique across types, stable while the object "
    "exists, and resolvable by Query.node (Relay's Global Object Identification)."
)
class Node:
    id: strawberry.ID = strawberry.field(
        description="Opaque global id (base64 of Type:key); key normalized caches by it."
    )


def global_id(kind: str, key: str) -> strawberry.ID:
    return strawberry.ID(base64.b64encode(f"{kind}:{key}".encode()).decode())


def parse_global_id(value: str) -> tuple[str, str] | None:
    """The type and key a global id names, or None if it is not one this server made."""
    try:
        text = base64.b64decode(value, validate=True).decode()
    except (binascii.Error, ValueError):
        return None
    kind, colon, key = text.partition(":")
    return (kind, key) if colon and kind in KINDS and key else None
