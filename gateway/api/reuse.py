"""Completed objects kept per record, so that an answer costs only the hosts that changed.

Under churn every change makes a new snapshot, and a cached answer that read
the fleet is gone with it; but of a 5,000-host page only the changed host is
new. Records are immutable and replaced on every change, so what a selection
makes of a record is the same for as long as that record is the one in the
store, provided the selection reads nothing but the record: every field in it
an attribute or a lookup (:mod:`gateway.api.shortcuts`), down to its leaves.
Such a selection's completed object is kept, keyed by the record, the
operation and the variables, and reused by the next answer that reaches the
same record with the same selection.

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
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

from graphql import (
    FieldNode,
    FragmentSpreadNode,
    GraphQLObjectType,
    GraphQLSchema,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
    get_named_type,
)
from graphql.execution.collect_fields import FragmentDetails

from gateway.api.shortcuts import Attribute, Lookup
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
_T = TypeVar("_T")
#: Directives that only select; any other (defer, stream) is left to execute.
_SELECTING = frozenset({"include", "skip"})


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
        #: What is judged of a selection (by type and field nodes) of an operation: whether
        #: it reads only its record, its plan; while the operation lives. The nodes are
        #: held with the judgment, so that their ids are not reused meanwhile. By the
        #: operation's id, beside a weak reference to it: a node's hash is its whole
        #: tree's, 4-6 us a lookup of bench.churn's queries, where a mapping weak by key
        #: hashes it at every one.
        self._judged: dict[int, _Judged] = {}

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

    def pure(
        self,
        operation: OperationDefinitionNode,
        fragments: Mapping[str, FragmentDetails],
        object_type: GraphQLObjectType,
        nodes: tuple[FieldNode, ...],
    ) -> bool:
        """Whether every field the ``nodes`` select on ``object_type`` reads only the object."""

        def judge() -> bool:
            walk = _Purity(fragments)
            return all(
                n.selection_set is not None and walk.selections(object_type, n.selection_set)
                for n in nodes
            )

        return self.judged(operation, ("pure", id(object_type)), nodes, judge)

    def judged(
        self,
        operation: OperationDefinitionNode,
        kind: tuple[str, int],
        nodes: tuple[FieldNode, ...],
        judge: Callable[[], _T],
    ) -> _T:
        """What ``judge`` says of a selection of ``operation`` (the field ``nodes``, and
        ``kind``: what is judged, of which type's id), judged once while the operation lives.

        Judgments take a few objects per field of the operation's text, and go with
        it: the documents' memos bound them with the operation.
        """
        key = (*kind, *map(id, nodes))
        judged = self._judged.get(id(operation))
        if judged is None or judged.operation() is not operation:
            judged = None
        known = None if judged is None else judged.selections.get(key)
        if known is not None and known[0] == nodes:
            return cast("_T", known[1])
        found = judge()
        with self._lock:
            if judged is None:
                judged = self._judged[id(operation)] = _Judged(operation, self._judged)
            judged.selections[key] = (nodes, found)
        return found


class _Judged:
    """The selections of one operation judged pure or not, filed in ``judged`` by the
    operation's id until the operation goes. A weak reference's callback runs as the
    operation is freed, before its id can name another; it takes no lock, since that
    may be in a thread holding one."""

    __slots__ = ("operation", "selections")

    def __init__(self, operation: OperationDefinitionNode, judged: dict[int, _Judged]) -> None:
        key = id(operation)

        def forget(reference: weakref.ref[OperationDefinitionNode]) -> None:
            if (found := judged.get(key)) is not None and found.operation is reference:
                del judged[key]

        self.operation = weakref.ref(operation, forget)
        #: (kind, type, field node ids) -> (the field nodes, the judgment).
        self.selections: dict[tuple[object, ...], tuple[tuple[FieldNode, ...], object]] = {}


def object_bytes(completed: Completed) -> int:
    """What a kept object takes in memory, estimated from the answer bytes it added."""
    return OBJECT_BYTES + BYTES_PER_ANSWER_BYTE * completed.spent


def operation_bytes(operation: OperationDefinitionNode) -> int:
    """What a parsed operation takes, estimated from its text (held by its nodes too)."""
    loc = operation.loc
    if loc is None:
        return UNMEASURED_OPERATION_BYTES
    return AST_BYTES_PER_CHAR * (loc.end - loc.start) + len(loc.source.body)


class _Purity:
    def __init__(self, fragments: Mapping[str, FragmentDetails]) -> None:
        self.fragments = fragments
        self.seen: set[str] = set()

    def selections(self, parent: GraphQLObjectType, selection_set: SelectionSetNode) -> bool:
        for selection in selection_set.selections:
            if any(d.name.value not in _SELECTING for d in selection.directives or ()):
                return False
            if isinstance(selection, FieldNode):
                if not self.field(parent, selection):
                    return False
            elif isinstance(selection, InlineFragmentNode):
                condition = selection.type_condition
                if condition is not None and condition.name.value != parent.name:
                    return False
                if not self.selections(parent, selection.selection_set):
                    return False
            elif isinstance(selection, FragmentSpreadNode) and not self.spread(
                parent, selection.name.value
            ):
                return False
        return True

    def spread(self, parent: GraphQLObjectType, name: str) -> bool:
        details = self.fragments.get(name)
        if details is None or details.variable_signatures:  # fragment arguments: left alone
            return False
        fragment = details.definition
        if fragment.type_condition.name.value != parent.name:
            return False
        if name in self.seen:  # validation refuses cycles; a repeat was judged already
            return True
        self.seen.add(name)
        return self.selections(parent, fragment.selection_set)

    def field(self, parent: GraphQLObjectType, node: FieldNode) -> bool:
        if node.name.value == "__typename":
            return True
        definition = parent.fields.get(node.name.value)
        if definition is None or type(definition.resolve) not in (Attribute, Lookup):
            return False
        if node.selection_set is None:  # a leaf, or a list of them
            return True
        named = get_named_type(definition.type)
        return isinstance(named, GraphQLObjectType) and self.selections(named, node.selection_set)
