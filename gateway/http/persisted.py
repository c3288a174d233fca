"""Persisted queries: Apollo's automatic persisted queries, and trusted documents.

A client speaking automatic persisted queries (Apollo Client's and urql's
persisted-queries links) sends ``extensions.persistedQuery = {version: 1,
sha256Hash}`` and, optimistically, no document. A hash the server knows runs its
document; an unknown one is answered ``PERSISTED_QUERY_NOT_FOUND`` (status 200,
message ``PersistedQueryNotFound``, as Apollo Server answers), on which the client
sends the document with its hash, and the server registers it once the hash is
the document's SHA-256. The store is the app's, bounded in entries and in bytes:
any client can register documents, so an entry bound alone would bound nothing.

With trusted documents (``--trusted-documents FILE``) only the documents listed
run, named by their hash or sent in full; nothing is registered. A request for
any other document is refused ``PERSISTED_QUERY_NOT_IN_LIST``, the code Apollo
Router and GraphQL Yoga use for their safelists.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path

from graphql import GraphQLError

from gateway.api.codes import Code
from gateway.http.request import Params, RequestError

__all__ = [
    "HASH_MISMATCH",
    "NOT_FOUND",
    "NOT_IN_LIST",
    "PersistedQueries",
    "PersistedStats",
    "load_trusted",
    "sha256",
]

NOT_FOUND = Code.PERSISTED_QUERY_NOT_FOUND.value
NOT_IN_LIST = Code.PERSISTED_QUERY_NOT_IN_LIST.value
HASH_MISMATCH = Code.PERSISTED_QUERY_HASH_MISMATCH.value
#: The manifest format Apollo's tools write (generate-persisted-query-manifest, rover).
APOLLO_MANIFEST = "apollo-persisted-query-manifest"
#: What an entry costs beyond its document: the key, the dict slot, the link.
ENTRY_OVERHEAD = 200


def sha256(document: str) -> str:
    return hashlib.sha256(document.encode()).hexdigest()


@dataclasses.dataclass(slots=True)
class PersistedStats:
    #: Hash-only requests answered from the store, and those it did not know.
    hits: int = 0
    misses: int = 0
    registered: int = 0
    evictions: int = 0


class PersistedQueries:
    """The documents known by hash: registered by clients, or a fixed trusted list."""

    def __init__(
        self,
        *,
        max_entries: int = 10_000,
        max_bytes: int = 16 * 1024 * 1024,
        trusted: Mapping[str, str] | None = None,
    ) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        #: The trusted documents by hash; None: any document runs, and may be registered.
        self.trusted = dict(trusted) if trusted is not None else None
        self.stats = PersistedStats()
        #: Bytes the registered documents take (UTF-8, and the overhead of each entry).
        self.bytes = 0
        self._documents: OrderedDict[str, str] = OrderedDict()

    @property
    def entries(self) -> int:
        return len(self._documents) if self.trusted is None else len(self.trusted)

    def resolve(self, params: Params) -> Params:
        """``params`` with the document its hash names; raises :class:`RequestError`
        for a hash that names none, or does not match the document sent with it."""
        hash_ = params.persisted
        if hash_ is not None and params.query and sha256(params.query) != hash_:
            raise _refused(HASH_MISMATCH, "provided sha256Hash does not match the query", 400)
        if self.trusted is not None:
            return self._trusted(params, self.trusted)
        if hash_ is None:
            return params
        if params.query:
            self._register(hash_, params.query)
            return params
        document = self._documents.get(hash_)
        if document is None:
            self.stats.misses += 1
            raise _refused(NOT_FOUND, "PersistedQueryNotFound", 200)
        self._documents.move_to_end(hash_)
        self.stats.hits += 1
        return dataclasses.replace(params, query=document)

    def _trusted(self, params: Params, trusted: Mapping[str, str]) -> Params:
        hash_ = params.persisted or sha256(params.query)
        document = trusted.get(hash_)
        if document is None:
            self.stats.misses += 1
            message = f"operation {hash_} is not one of the trusted documents"
            raise _refused(NOT_IN_LIST, message, 400)
        self.stats.hits += 1
        return dataclasses.replace(params, query=document)

    def _register(self, hash_: str, document: str) -> None:
        if hash_ in self._documents:
            self._documents.move_to_end(hash_)
            return
        size = len(document.encode()) + ENTRY_OVERHEAD
        if size > self.max_bytes or self.max_entries < 1:
            return
        self._documents[hash_] = document
        self.bytes += size
        self.stats.registered += 1
        while len(self._documents) > self.max_entries or self.bytes > self.max_bytes:
            _, evicted = self._documents.popitem(last=False)
            self.bytes -= len(evicted.encode()) + ENTRY_OVERHEAD
            self.stats.evictions += 1


def load_trusted(path: str | Path) -> dict[str, str]:
    """The trusted documents in a file: hash -> document.

    Two shapes are read: a JSON object mapping each SHA-256 to its document (what
    GraphQL Code Generator's persisted documents and Relay's persisted queries
    write), or Apollo's persisted query manifest (``{"format":
    "apollo-persisted-query-manifest", "version": 1, "operations": [{"id", "body",
    ...}]}``). Every hash must be its document's SHA-256: that is how clients name it.
    """
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    if isinstance(raw, dict) and raw.get("format") == APOLLO_MANIFEST:
        pairs = [(op.get("id"), op.get("body")) for op in raw.get("operations", [])]
    elif isinstance(raw, dict):
        pairs = list(raw.items())
    else:
        raise ValueError(
            f"{path}: expected a JSON object of hash -> document, or {APOLLO_MANIFEST}"
        )
    trusted = {}
    for hash_, document in pairs:
        if not isinstance(hash_, str) or not isinstance(document, str):
            raise ValueError(f"{path}: every entry needs a string hash and a string document")
        if sha256(document) != hash_:
            raise ValueError(f"{path}: {hash_} is not the SHA-256 of its document")
        trusted[hash_] = document
    return trusted


def _refused(code: str, message: str, status: int) -> RequestError:
    return RequestError([GraphQLError(message, extensions={"code": code})], status)
