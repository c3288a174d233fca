"""HTTP caching of GraphQL answers: entity tags, revalidation, and what caches may keep.

A GET answer carries an ``ETag``; a client (a browser, a client library, a
proxy) that sends it back in ``If-None-Match`` gets ``304 Not Modified`` while
the answer is still the same, and reuses the body it has. ``Cache-Control:
no-cache`` makes every reuse a revalidation: the fleet changes at any moment,
so no answer may be served unchecked. With authentication on, answers are also
``private``: one user's answer must never be served to another by a shared
cache. ``Vary`` names every header the answer depends on. A POST answer is
``no-store``, as GraphQL over HTTP has POST for what is not to be cached.

The tag of a GraphQL answer is a digest of the answer itself, not of the store's
generation or the records it read: those restart with the process and differ
between replicas, and a tag must never match an answer that says something else.
It is computed once per answer kept in the response cache, and kept there with
it, so a revalidation costs a cache lookup. The capacity series, too large to
digest per change, are tagged by the process and the rendering
(gateway.http.compression.KeptCompression), and revalidated the same way.
"""

from __future__ import annotations

import functools
import hashlib

__all__ = ["NOT_MODIFIED", "cache_headers", "etag", "matches", "tag_of"]

NOT_MODIFIED = 304
#: The request headers an answer of /graphql depends on, besides its URL and body.
VARY = "Accept, Accept-Encoding, Authorization"


def tag_of(body: bytes) -> str:
    """What an answer says, in 32 hex digits (the uncompressed answer's)."""
    return hashlib.blake2b(body, digest_size=16).hexdigest()


def etag(tag: str, encoding: str | None) -> str:
    """The ``ETag`` of an answer in one encoding: each encoding is its own representation."""
    return f'"{tag}-{encoding}"' if encoding else f'"{tag}"'


@functools.lru_cache(maxsize=256)
def matches(if_none_match: str | None, tag: str) -> bool:
    """Whether ``If-None-Match`` names the answer ``tag`` in any encoding (RFC 9110, 13.1.2:
    weak comparison); a client that has it in one encoding need not get it in another."""
    if not if_none_match:
        return False
    for candidate in if_none_match.split(","):
        candidate = candidate.strip().removeprefix("W/")
        if candidate == "*" or candidate.strip('"').split("-", 1)[0] == tag:
            return True
    return False


def cache_headers(method: str, private: bool, vary: str = VARY) -> tuple[tuple[str, str], ...]:
    """``Cache-Control`` and ``Vary`` (``vary``: the headers the answer depends on) of an
    answer to ``method``."""
    if method != "GET":
        return (("cache-control", "no-store"), ("vary", vary))
    control = "private, no-cache" if private else "no-cache"
    return (("cache-control", control), ("vary", vary))
