"""Completed objects kept per record, so that an answer costs only the hosts that changed.

Under churn every change makes a new snapshot, and a cached answer that read
the fleet is gone with it; but of a 5,000-host page only the changed host is
new. Records are immutable and replaced on every change, so what a selection
makes of a record is the same for as long as that record is the one in the
store, provided the selection reads nothing but the record: every field in it
an attribute or a lookup (:mod:`gateway.api.shortcuts`), down to its leaves
(judged once per operation, :mod:`gateway.api.judgments`). Such a selection's
completed object is kept, keyed by the record, the operation and the variables,
and reused by the next answer that reaches the same record with the same
selection.

Only types marked reusable (:func:`mark_reusable`: types whose objects are
store records, not built per request) are kept; a completion that added an
error is not. A kept object holds its record weakly, and goes with it: a
record the store replaced is never reached again, and held, it would stay in
memory that no budget counts. Shared by the worker threads: lookups are plain
dictionary reads, which the GIL keeps whole; stores and evictions take a lock.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping
from typing import Any

from graphql import GraphQLObjectType, GraphQLSchema, OperationDefinitionNode

from gateway.domain.bounded import Figures

__all__ = ["REUSABLE", "Completed", "Kept", "mark_reusable", "object_bytes", "operation_bytes"]

#: The key in a GraphQL type's ``extensions`` that marks it reusable.
REUSABLE = "gateway.reusable"
#: Objects kept at most, over all operations: a few selections of a 20,000-host fleet.
MAX_KEPT = 65_536
#: Bytes the kept objects may take, over all: a client asking for large objects (50
#: aliases of every instance of 200 hosts is 75 kB a host) fills this, not the count.
MAX_BYTES = 32 * 2**20
#: What a kept object takes beside its answer's: its Completed, the weak reference to
#: its record, its key, its place in the memo, its dict.
OBJECT_BYTES = 800
#: What an answer's byte takes in a completed object: the dicts, lists and strings of
#: its values. Measured (tracemalloc, the same objects kept twice): 1,190 bytes for an
#: object of 116 answer bytes, 1,680 for 258, 253,538 for 64,873; counted by the answer
#: bytes alone, the memo held 4 to 10 times its budget.
BYTES_PER_ANSWER_BYTE = 4
#: What a parsed operation takes per character of its text, beside the text: 111
#: bytes measured for a document of aliases only, the densest in nodes.
AST_BYTES_PER_CHAR = 128
#: What an operation parsed without locations is taken to take.
UNMEASURED_OPERATION_BYTES = 64 * 1024


def mark_reusable(schema: GraphQLSchema, *type_names: str) -> None:
    """Mark object types whose objects are immutable store records."""
    for name in type_names:
        graphql_type = schema.type_map[name]
        if not isinstance(graphql_type, GraphQLObjectType):
            raise TypeError(f"{name} is not an object type")
        graphql_type.extensions = {**(graphql_type.extensions or {}), REUSABLE: True}


class Completed:
    """A completed object, with what it was made of and what it added to the answer;
    the record it was made of once kept (:meth:`Kept.put`)."""

    __slots__ = ("operation", "record", "spent", "value", "variables")

    def __init__(
        self,
        operation: OperationDefinitionNode,
        variables: Mapping[str, Any],
        value: dict[str, Any],
        spent: int,
    ) -> None:
        self.record: _Record | None = None
        self.operation = operation
        self.variables = variables
        self.value = value
        self.spent = spent

    def matches(
        self, record: Any, operation: OperationDefinitionNode, variables: Mapping[str, Any]
    ) -> bool:
        """Whether this was made of the same record, by the same selection and variables
        (identity first: keys hold ids, which are reused once their objects are gone)."""
        return (
            self.record is not None
            and self.record() is record
            and self.operation is operation
            and (self.variables is variables or self.variables == variables)
        )


class _Record(weakref.ref[Any]):
    """A kept object's record, and the key the object is kept under."""

    __slots__ = ("key",)
    key: tuple[int, ...]


class Kept:
    """Completed objects per (record, selection), oldest evicted first, bounded in
    count and in bytes: what they take in memory (:func:`object_bytes`), and once per
    operation the operation they hold, which a query's own text can make larger than
    its answer."""

    name = "completed objects"

    def __init__(self, max_kept: int = MAX_KEPT, max_bytes: int = MAX_BYTES) -> None:
        self.max_kept = max_kept
        self.max_bytes = max_bytes
        #: The bytes the objects kept take, estimated (:func:`object_bytes`).
        self.bytes = 0
        #: Lookups that found an object, and objects evicted (counted without the lock:
        #: a figure for /metrics, which a lost increment under a race does not mislead).
        self.hits = 0
        self.evictions = 0
        self._kept: dict[tuple[int, ...], Completed] = {}
        #: The records gone since the last store, appended by the interpreter in
        #: whichever thread let go of one (a list's append needs no lock).
        self._gone: list[_Record] = []
        #: The operations the kept objects hold, by id: (operation, objects holding it).
        self._operations: dict[int, tuple[OperationDefinitionNode, int]] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._kept)

    def figures(self) -> Figures:
        return Figures(len(self._kept), self.bytes, self.hits, self.evictions)

    def get(self, key: tuple[int, ...]) -> Completed | None:
        found = self._kept.get(key)
        if found is not None:
            self.hits += 1
        return found

    def put(self, key: tuple[int, ...], record: Any, completed: Completed) -> None:
        """Keep ``completed``, made of ``record``, under ``key``; for as long as the
        record lives and the budgets allow."""
        if object_bytes(completed) + operation_bytes(completed.operation) > self.max_bytes:
            return
        completed.record = _Record(record, self._gone.append)
        completed.record.key = key
        with self._lock:
            self._drop_gone()
            replaced = self._kept.pop(key, None)
            if replaced is not None:
                self._release(replaced)
            self._kept[key] = completed
            self._hold(completed)
            while len(self._kept) > self.max_kept or self.bytes > self.max_bytes:
                self._release(self._kept.pop(next(iter(self._kept))))
                self.evictions += 1

    def _drop_gone(self) -> None:
        """Forget the objects whose records are gone (a key may hold a newer one)."""
        while self._gone:
            gone = self._gone.pop()
            completed = self._kept.get(gone.key)
            if completed is not None and completed.record is gone:
                del self._kept[gone.key]
                self._release(completed)

    def _hold(self, completed: Completed) -> None:
        self.bytes += object_bytes(completed)
        operation = completed.operation
        held = self._operations.get(id(operation))
        if held is None:
            self.bytes += operation_bytes(operation)
        self._operations[id(operation)] = (operation, 1 if held is None else held[1] + 1)

    def _release(self, completed: Completed) -> None:
        self.bytes -= object_bytes(completed)
        operation = completed.operation
        _, holding = self._operations[id(operation)]
        if holding == 1:
            del self._operations[id(operation)]
            self.bytes -= operation_bytes(operation)
        else:
            self._operations[id(operation)] = (operation, holding - 1)


def object_bytes(completed: Completed) -> int:
    """What a kept object takes in memory, estimated from the answer bytes it added."""
    return OBJECT_BYTES + BYTES_PER_ANSWER_BYTE * completed.spent


def operation_bytes(operation: OperationDefinitionNode) -> int:
    """What a parsed operation takes, estimated from its text (held by its nodes too)."""
    loc = operation.loc
    if loc is None:
        return UNMEASURED_OPERATION_BYTES
    return AST_BYTES_PER_CHAR * (loc.end - loc.start) + len(loc.source.body)
