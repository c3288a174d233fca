"""What the executor judges of an operation's selections, once while the operation lives.

Of every object it completes, the executor asks whether what the selection makes
of the record may be kept and reused (it reads only the record: attributes and
lookups down to its leaves, gateway.api.reuse), and for the selection's plan, a
walk that completes the object at once (gateway.api.plans). Both depend on the
selection alone, and the answer of 20,000 hosts asks them 20,000 times: a
selection is judged once per operation (:func:`judge`) and the judgment kept in
:class:`Judgments` while the operation lives.

A plan answers for every run of its operation, whatever its variables, so a
selection that reads a variable (in an argument or a directive, its own or a
fragment's) has none. Plans are closures, a few per field they walk, which a
long operation makes many of: judgments are bounded in bytes like every memo.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping
from typing import Any, NamedTuple

from graphql import (
    FieldNode,
    FragmentSpreadNode,
    GraphQLObjectType,
    GraphQLSchema,
    InlineFragmentNode,
    ListValueNode,
    ObjectValueNode,
    OperationDefinitionNode,
    SelectionSetNode,
    ValueNode,
    VariableNode,
    get_named_type,
)
from graphql.execution.collect_fields import FieldDetailsList, FragmentDetails
from graphql.execution.values import VariableValues

from gateway.api.documents import DOCUMENT_BYTES
from gateway.api.plans import Complete, object_plan
from gateway.api.shortcuts import Attribute, Lookup
from gateway.domain.bounded import Figures

__all__ = ["JUDGMENT_BYTES", "PLANNED_FIELD_BYTES", "UNJUDGED", "Judgment", "Judgments", "judge"]

#: What a judgment takes beside its plan: its key and nodes, its place in the memo.
JUDGMENT_BYTES = 400
#: What a plan takes per field it walks: its closures and their cells, measured
#: (tracemalloc, tests/test_judgments.py) at 880-1,070 bytes.
PLANNED_FIELD_BYTES = 1100
#: Directives that only select; any other (defer, stream) is left to execute.
_SELECTING = frozenset({"include", "skip"})

#: (the object type's id, the field nodes' ids): a selection of one operation.
Key = tuple[int, ...]


class Judgment(NamedTuple):
    """What a selection of an object type is."""

    #: Whether every field it selects reads only the object, down to its leaves.
    record_only: bool
    #: The walk that completes the object, where the selection reads no variable.
    plan: Complete | None
    #: What the judgment takes in memory, estimated.
    bytes: int


#: The judgment of a selection that is neither kept nor planned (fragment arguments).
UNJUDGED = Judgment(False, None, 0)


def judge(
    schema: GraphQLSchema,
    fragments: dict[str, FragmentDetails],
    variable_values: VariableValues,
    operation: OperationDefinitionNode,
    object_type: GraphQLObjectType,
    details: FieldDetailsList,
) -> Judgment:
    """Judge the selection ``details`` make of ``object_type`` in ``operation``."""
    reading = _Reading(fragments)
    for field in details:
        if field.node.selection_set is None:
            reading.record_only = False
        else:
            reading.selections(object_type, field.node.selection_set)
    planned = (
        None
        if reading.variables
        else object_plan(schema, fragments, variable_values, operation, object_type, details)
    )
    if planned is None:
        return Judgment(reading.record_only, None, JUDGMENT_BYTES)
    plan, fields = planned
    return Judgment(reading.record_only, plan, JUDGMENT_BYTES + PLANNED_FIELD_BYTES * fields)


class Judgments:
    """Judgments per operation and selection, while their operation lives and the
    budget allows: the operations judged first are let go first.

    By the operation's id, beside a weak reference to it: a node's hash is its
    whole tree's, 4-6 us a lookup of bench.churn's queries, where a mapping weak by
    key hashes it at every one. Lookups are plain dictionary reads, which the GIL
    keeps whole; judging and letting go take a lock.
    """

    name = "selection judgments"

    def __init__(self, max_bytes: int = DOCUMENT_BYTES) -> None:
        self.max_bytes = max_bytes
        self._judged: dict[int, _Judged] = {}
        #: Operations gone since the last put: filed by the interpreter in whichever
        #: thread let go of one (a list's append needs no lock), forgotten under it.
        self._gone: list[int] = []
        self._lock = threading.Lock()
        self._bytes = 0
        self._hits = 0
        self._evictions = 0

    def get(
        self, operation: OperationDefinitionNode, key: Key, nodes: tuple[FieldNode, ...]
    ) -> Judgment | None:
        """The judgment kept for the selection ``nodes`` (filed under ``key``)."""
        judged = self._judged.get(id(operation))
        if judged is None or judged.operation() is not operation:
            return None
        found = judged.selections.get(key)
        # The nodes are held with the judgment, so their ids name them still.
        if found is None or found[0] != nodes:
            return None
        self._hits += 1  # unlocked: a lost increment under a race misleads no one
        return found[1]

    def put(
        self,
        operation: OperationDefinitionNode,
        key: Key,
        nodes: tuple[FieldNode, ...],
        judgment: Judgment,
    ) -> None:
        """Keep ``judgment`` of the selection ``nodes`` while ``operation`` lives."""
        if judgment.bytes > self.max_bytes:
            return
        with self._lock:
            self._forget_gone()
            judged = self._judged.get(id(operation))
            if judged is None or judged.operation() is not operation:
                if judged is not None:  # a gone operation's, whose id is taken again
                    self._drop(id(operation))
                judged = self._judged[id(operation)] = _Judged(operation, self._gone.append)
            replaced = judged.selections.get(key)
            if replaced is not None:
                judged.bytes -= replaced[1].bytes
                self._bytes -= replaced[1].bytes
            judged.selections[key] = (nodes, judgment)
            judged.bytes += judgment.bytes
            self._bytes += judgment.bytes
            while self._bytes > self.max_bytes:
                self._drop(next(iter(self._judged)))
                self._evictions += 1

    def figures(self) -> Figures:
        with self._lock:
            self._forget_gone()
            entries = sum(len(judged.selections) for judged in self._judged.values())
            return Figures(entries, self._bytes, self._hits, self._evictions)

    def _forget_gone(self) -> None:
        while self._gone:
            key = self._gone.pop()
            judged = self._judged.get(key)
            if judged is not None and judged.operation() is None:
                self._drop(key)

    def _drop(self, key: int) -> None:
        self._bytes -= self._judged.pop(key).bytes


class _Judged:
    """The judgments of one operation's selections, and what they take."""

    __slots__ = ("bytes", "operation", "selections")

    def __init__(self, operation: OperationDefinitionNode, gone: Any) -> None:
        key = id(operation)
        # Called as the operation is freed, before its id can name another.
        self.operation = weakref.ref(operation, lambda _: gone(key))
        self.selections: dict[Key, tuple[tuple[FieldNode, ...], Judgment]] = {}
        self.bytes = 0


class _Reading:
    """What a selection reads, through the fragments it spreads: whether only its
    object (an attribute or a lookup for every field, down to its leaves, and no
    directive but @skip and @include), and whether any variable."""

    def __init__(self, fragments: Mapping[str, FragmentDetails]) -> None:
        self.fragments = fragments
        self.seen: set[str] = set()
        self.record_only = True
        self.variables = False

    def selections(self, parent: GraphQLObjectType | None, selection_set: SelectionSetNode) -> None:
        """Read a selection of ``parent`` (None: of a type it cannot read only its object of)."""
        for selection in selection_set.selections:
            for directive in selection.directives or ():
                if directive.name.value not in _SELECTING:
                    self.record_only = False
                self.arguments(directive.arguments)
            if isinstance(selection, FieldNode):
                self.field(parent, selection)
            elif isinstance(selection, InlineFragmentNode):
                condition = selection.type_condition
                within = parent
                if parent is not None and condition is not None:
                    within = self.within(parent, condition.name.value)
                self.selections(within, selection.selection_set)
            elif isinstance(selection, FragmentSpreadNode):
                self.spread(parent, selection.name.value)

    def spread(self, parent: GraphQLObjectType | None, name: str) -> None:
        details = self.fragments.get(name)
        if details is None:
            self.record_only, self.variables = False, True  # the full path will say
            return
        if details.variable_signatures:  # fragment arguments: left alone
            self.record_only = False
        if name in self.seen:  # validation refuses cycles; a repeat was read already
            return
        self.seen.add(name)
        fragment = details.definition
        within = parent
        if parent is not None:
            within = self.within(parent, fragment.type_condition.name.value)
        self.selections(within, fragment.selection_set)

    def within(self, parent: GraphQLObjectType, condition: str) -> GraphQLObjectType | None:
        """``parent``, where a fragment on ``condition`` is on it exactly."""
        if condition == parent.name:
            return parent
        self.record_only = False
        return None

    def field(self, parent: GraphQLObjectType | None, node: FieldNode) -> None:
        self.arguments(node.arguments)
        if node.name.value == "__typename":
            return
        definition = parent.fields.get(node.name.value) if parent is not None else None
        named = None if definition is None else get_named_type(definition.type)
        if definition is None or type(definition.resolve) not in (Attribute, Lookup):
            self.record_only = False
            named = None
        elif node.selection_set is not None and not isinstance(named, GraphQLObjectType):
            self.record_only = False
        if node.selection_set is not None:
            within = named if isinstance(named, GraphQLObjectType) else None
            self.selections(within, node.selection_set)

    def arguments(self, arguments: Any) -> None:
        if any(_reads_variable(argument.value) for argument in arguments or ()):
            self.variables = True


def _reads_variable(value: ValueNode) -> bool:
    if isinstance(value, VariableNode):
        return True
    if isinstance(value, ListValueNode):
        return any(map(_reads_variable, value.values))
    if isinstance(value, ObjectValueNode):
        return any(_reads_variable(f.value) for f in value.fields)
    return False
