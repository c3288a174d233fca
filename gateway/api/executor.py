"""Query execution with short paths for the fields and objects that make up large answers.

A fleet query reads a few fields of thousands of hypervisors, and graphql-core
runs the same steps for every field of every host: it builds a ResolveInfo,
coerces the arguments, calls the resolver (through Strawberry's wrappers, for a
plain attribute), checks whether the result is awaitable and completes it through
each wrapper of its type. At 5,000 hosts that was most of an uncached answer.

:class:`Executor` takes two short paths. For the resolvers of
:mod:`gateway.api.shortcuts` (an attribute, a per-host lookup) it calls them
directly when the answer is a plain value or an object of the field's type;
anything else, an error or a null where none is allowed, goes the full way
again, so every error reads exactly as graphql-core words it. And for an object
of a reusable type whose selection reads only the object, it reuses what an
earlier answer made of the same record (:mod:`gateway.api.reuse`): under churn,
only the hosts that changed cost work. What it completes of such an object, or of
any other whose selection has a plan (:mod:`gateway.api.plans`: attributes and
lookups, reading no variable), it completes by that plan: one walk over the
object, not graphql-core's steps for each field. Both are judged once per
operation and selection (:mod:`gateway.api.judgments`).
The results are the same field for field (``tests/test_executor.py`` compares
them with graphql-core's own executor).

Every field completed, by any path, is charged to the operation's
:class:`gateway.api.budget.Budget` (the context's ``budget``, when it has one): the
bytes it adds to the answer, and now and then a look at the clock, so that an
operation over its time or size ends itself instead of running on unseen. A
reused object is charged what it cost when it was made, a planned one its JSON's
bytes at once.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any, Literal, cast

import msgspec
from graphql import (
    ExecutionResult,
    GraphQLField,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLResolveInfo,
    OperationType,
    Undefined,
    get_nullable_type,
)
from graphql.execution.collect_fields import FieldDetailsList
from graphql.execution.incremental.incremental_executor import IncrementalExecutor
from graphql.execution.values import get_argument_values
from graphql.pyutils import Path, RefMap

from gateway.api.budget import Budget
from gateway.api.context import Context
from gateway.api.judgments import UNJUDGED, Judgment, judge
from gateway.api.memos import Answers
from gateway.api.plans import Plan, plan
from gateway.api.reuse import REUSABLE, Completed, Kept
from gateway.api.shortcuts import Attribute, Lookup
from gateway.domain.bounded import Memos
from gateway.store.snapshot import Snapshot

__all__ = ["Executor"]


class Executor(IncrementalExecutor):
    """graphql-core's executor, with the short paths for :class:`Attribute` and :class:`Lookup`.

    Pass it as ``executor_class`` to ``graphql.execute``; every resolver below a
    lookup must be synchronous. One instance runs one operation, so a field
    node's coerced arguments (the variables are fixed for the operation) are
    kept for the whole of it.
    """

    __slots__ = (
        "_arguments",
        "_plan",
        "_variables_json",
        "answers",
        "budget",
        "kept",
        "remembers",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Strawberry's subscriptions pass their operation's extensions; no resolver reads them.
        kwargs.pop("operation_extensions", None)
        super().__init__(*args, **kwargs)
        self._arguments: dict[int, dict[str, Any]] = {}
        self._variables_json: str | None = None
        self.budget: Budget | None = getattr(self.context_value, "budget", None)
        answers = getattr(self.context_value, "answers", None)
        #: The store's memos of answers (records are shared by every answer, whichever
        #: thread runs it); without a store's context, memos of this operation's own.
        self.answers: Answers = answers if isinstance(answers, Answers) else _own()
        self.kept: Kept = self.answers.completed
        #: Whether what it makes is kept for others: not by an operation that is run once
        #: for all its subscribers (gateway.http.broadcast), as no one else could take it.
        self.remembers = True
        #: Its events' plan (gateway.api.plans), once made; False where it has none.
        self._plan: Plan | Literal[False] | None = None

    def execute_operation(self, serially: bool | None = None) -> Any:
        """graphql-core's; a subscription event's result shared by every subscriber of
        the same operation (:mod:`gateway.api.recent`)."""
        if self.operation.operation is not OperationType.SUBSCRIPTION or not self.remembers:
            return self._execute_operation(serially)
        same, variables = self._event(self.root_value)
        result = self.answers.results.get(same, variables)
        if result is None:
            result = self._execute_operation(serially)
            if not self.is_awaitable(result):
                self.answers.results.put(same, result, variables)
        return result

    def build_per_event_executor(self, payload: Any) -> Executor:
        """graphql-core's copy for one event, with the variables' text made once for all
        the events (a json.dumps per event and subscriber cost more than executing it)
        and the memos of collected fields its own; none when an earlier subscriber's
        result for the event is kept, nor where the operation's plan answers it
        (:mod:`gateway.api.plans`): the copy, and its context, were most of what a
        kept result cost the next subscriber.

        A payload that names its snapshot (a host's change, a consumer) is executed
        in it: its links lead to the fleet it is part of, not to the store's by then.
        """
        event = self._event(payload) if self.remembers else None
        kept = self.answers.results.get(*event) if event is not None else None
        if kept is None:
            kept = self._planned(payload)
            if kept is not None and event is not None:
                self.answers.results.put(event[0], kept, event[1])
        if kept is not None:
            return cast("Executor", _Answered(kept))
        executor: Executor = super().build_per_event_executor(payload)  # type: ignore[assignment]
        # Memos of this event's own: graphql-core's copy shares the subscription's, which
        # are keyed by the identity of field lists each event makes anew, so every event
        # added entries (~26 objects) that lived as long as the subscription did.
        executor._relevant_sub_fields = {}
        executor._stream_usages = RefMap()
        snapshot = getattr(payload, "snapshot", None)
        if isinstance(snapshot, Snapshot) and isinstance(self.context_value, Context):
            executor.context_value = self.context_value.pinned_to(snapshot)
        return executor

    def _planned(self, payload: Any) -> ExecutionResult | None:
        """The event's result by the operation's plan, where it has one that answers it
        (gateway.api.plans): with no budget to charge and no middleware to run."""
        made = self._plan
        if made is None:
            plannable = self.budget is None and self.middleware_manager is None
            found = plannable and plan(
                self.schema, self.fragments, self.variable_values, self.operation
            )
            made = self._plan = found or False
        if made is False:
            return None
        data = made.data(payload)
        return None if data is None else ExecutionResult(data)

    def _event(self, payload: Any) -> tuple[tuple[object, ...], str]:
        """What a subscription event's result is kept under: the operation, the event's
        payload and the flavor catalog (by identity), and the variables' text."""
        catalog = getattr(self.context_value, "catalog", None)
        return (self.operation, payload, catalog), self._variables_text()

    def _execute_operation(self, serially: bool | None) -> Any:
        """graphql-core's, leaving nothing that keeps the executor alive once answered.

        graphql-core's executor refers to itself (``async_helpers`` holds its bound
        methods), so without this an answered operation, and the snapshot its
        context holds, lived on until the cyclic collector found it, and a
        ``gc.freeze`` (the store's settle) in between kept it for good: under
        churn, a pinned old snapshot per freeze, whose replaced records were never
        freed. Every resolver here is synchronous, so once a result is made, or the
        operation ended midway (its budget overrun, an offload), nothing asks for
        the helpers again.
        """
        try:
            result = super().execute_operation(serially)
        except BaseException:
            del self.async_helpers
            raise
        if not self.is_awaitable(result):
            del self.async_helpers
        return result

    def execute_field(
        self,
        parent_type: GraphQLObjectType,
        source: Any,
        field_details_list: FieldDetailsList,
        path: Path,
        position_context: Any,
    ) -> Any:
        value = self._execute_field(parent_type, source, field_details_list, path, position_context)
        budget = self.budget
        if budget is not None:  # Budget.charge, inline: this runs for every field
            key: str = path.key  # type: ignore[assignment]  # a field's path ends in its key
            budget.spent += len(key) + (len(value) + 6 if type(value) is str else _size(value))
            budget.ticks -= 1
            if budget.ticks <= 0:
                budget.check()
        return value

    def _execute_field(
        self,
        parent_type: GraphQLObjectType,
        source: Any,
        field_details_list: FieldDetailsList,
        path: Path,
        position_context: Any,
    ) -> Any:
        details = field_details_list[0]
        field_def = parent_type.fields.get(details.node.name.value)  # None: __typename
        if field_def is not None and self.middleware_manager is None:
            resolve = field_def.resolve
            value: Any = Undefined
            if type(resolve) is Attribute:
                if resolve.leaf is not None:
                    value = _leaf(resolve, source)
                elif resolve.object_type is not None:
                    value = self._attribute_object(
                        field_def, resolve, source, field_details_list, path, position_context
                    )
            elif type(resolve) is Lookup and details.fragment_variable_values is None:
                value = self._lookup(
                    field_def, resolve, source, field_details_list, path, position_context
                )
            if value is not Undefined:
                return value
        return super().execute_field(
            parent_type, source, field_details_list, path, position_context
        )

    def _lookup(
        self,
        field_def: GraphQLField,
        resolve: Lookup,
        source: Any,
        field_details_list: FieldDetailsList,
        path: Path,
        position_context: Any,
    ) -> Any:
        """The object found, completed; Undefined where the full path must answer.

        The node's arguments are coerced once per operation. No object found, or an
        error on the way to it, is left to the full path, which says why.
        """
        if resolve.object_type is None:
            return Undefined
        node = field_details_list[0].node
        try:
            arguments = self._arguments.get(id(node))
            if arguments is None:
                arguments = get_argument_values(
                    field_def, node, self.variable_values, None, self.hide_suggestions
                )
                self._arguments[id(node)] = arguments
            found = resolve.function(None, source, **arguments)
        except Exception:
            return Undefined
        if found is None:
            return Undefined
        return self._completed(
            field_def, resolve.object_type, found, field_details_list, path, position_context
        )

    def _attribute_object(
        self,
        field_def: GraphQLField,
        resolve: Attribute,
        source: Any,
        field_details_list: FieldDetailsList,
        path: Path,
        position_context: Any,
    ) -> Any:
        """The object an attribute holds, completed; Undefined where the full path must
        answer (no object, or one that is not of its type: the full path says why)."""
        object_type: GraphQLObjectType = resolve.object_type  # type: ignore[assignment]
        found = getattr(source, resolve.name)
        if found is None:
            return None if resolve.nullable else Undefined
        # Strawberry's is_type_of checks read only the object, never the info; any
        # answer but True (an awaitable among them) is the full path's to judge.
        is_type_of = object_type.is_type_of
        if is_type_of is not None and is_type_of(found, None) is not True:  # type: ignore[arg-type]
            return Undefined
        return self._completed(
            field_def, object_type, found, field_details_list, path, position_context
        )

    def _completed(
        self,
        field_def: GraphQLField,
        object_type: GraphQLObjectType,
        found: Any,
        field_details_list: FieldDetailsList,
        path: Path,
        position_context: Any,
    ) -> Any:
        """``found``'s fields, as graphql-core completes an object: a non-null field
        below that failed makes it null (or fails it too, where it may not be null)."""
        try:
            return self.collect_and_execute_subfields(
                object_type, field_details_list, path, found, position_context
            )
        except Exception as error:
            self.handle_field_error(error, field_def.type, field_details_list, path)
            return None

    def collect_and_execute_subfields(
        self,
        return_type: GraphQLObjectType,
        field_details_list: FieldDetailsList,
        path: Path,
        result: Any,
        position_context: Any,
    ) -> Any:
        """An object's fields: what an earlier answer made of the same record, when it
        may be reused; else completed here (by the selection's plan, where it has one),
        and kept when it may be."""
        judgment = self._judgment(return_type, field_details_list)
        reusable = self._reusable(return_type, judgment)
        budget = self.budget
        if reusable:
            key = (id(result), *self._selection(field_details_list))
            kept = self.kept.get(key)
            if kept is not None and kept.matches(
                result, self.operation, self.variable_values.coerced
            ):
                if budget is not None:
                    budget.charge(kept.spent)
                return kept.value
        errors = len(self.collected_errors.errors)
        spent = budget.spent if budget is not None else 0
        value = self._planned_object(judgment, result)
        if value is Undefined:
            value = super().collect_and_execute_subfields(
                return_type, field_details_list, path, result, position_context
            )
        if reusable and type(value) is dict and len(self.collected_errors.errors) == errors:
            cost = budget.spent - spent if budget is not None else 0
            completed = Completed(self.operation, self.variable_values.coerced, value, cost)
            self.kept.put(key, result, completed)
        return value

    def _planned_object(self, judgment: Judgment, result: Any) -> Any:
        """``result`` completed by its selection's plan (gateway.api.plans) and charged as
        the full path would; Undefined where it has none (or middleware must see every
        field), or the plan cannot answer."""
        planned = judgment.plan
        if planned is None or self.middleware_manager is not None:
            return Undefined
        value = planned(result)
        if value is not Undefined and self.budget is not None:
            _charge(self.budget, value)
        return value

    def _judgment(
        self, object_type: GraphQLObjectType, field_details_list: FieldDetailsList
    ) -> Judgment:
        """What this operation's selection of ``object_type`` is (gateway.api.judgments),
        judged once for the operation."""
        if any(d.fragment_variable_values is not None for d in field_details_list):
            return UNJUDGED  # one selection of the fragment, its values another each time
        nodes = tuple(d.node for d in field_details_list)
        key = (id(object_type), *map(id, nodes))
        judgments = self.answers.judgments
        found = judgments.get(self.operation, key, nodes)
        if found is None:
            found = judge(
                self.schema,
                self.fragments,
                self.variable_values,
                self.operation,
                object_type,
                field_details_list,
            )
            judgments.put(self.operation, key, nodes, found)
        return found

    def _selection(self, field_details_list: FieldDetailsList) -> tuple[int, ...]:
        """What, besides the record, a kept object is filed under: the operation, the
        variables' values and the field nodes."""
        nodes = (id(d.node) for d in field_details_list)
        return (id(self.operation), hash(self._variables_text()), *nodes)

    def _variables_text(self) -> str:
        """The variables' values as one canonical text (kept for the operation)."""
        if self._variables_json is None:
            coerced = self.variable_values.coerced
            self._variables_json = json.dumps(coerced, sort_keys=True, default=repr)
        return self._variables_json

    def _reusable(self, object_type: GraphQLObjectType, judgment: Judgment) -> bool:
        """Whether what a selection judged so makes of an ``object_type`` record may be
        kept and reused."""
        return (
            self.remembers
            and bool((object_type.extensions or {}).get(REUSABLE))
            and judgment.record_only
        )

    def complete_iterable_value(
        self,
        item_type: GraphQLOutputType,
        field_details_list: FieldDetailsList,
        info: GraphQLResolveInfo[Any],
        path: Path,
        items: Iterable[Any],
        position_context: Any,
    ) -> Any:
        """A list of records: each one's completed object reused where it may be, the
        rest completed as graphql-core does (and kept)."""
        object_type = get_nullable_type(item_type)
        if not (
            isinstance(object_type, GraphQLObjectType)
            and self._reusable(object_type, self._judgment(object_type, field_details_list))
        ) or self.get_stream_usage(field_details_list, path):
            return super().complete_iterable_value(
                item_type, field_details_list, info, path, items, position_context
            )
        operation, variables = self.operation, self.variable_values.coerced
        suffix = self._selection(field_details_list)
        get = self.kept.get
        budget = self.budget
        completed: list[Any] = []
        for index, item in enumerate(items):
            kept = get((id(item), *suffix))
            if kept is not None and kept.matches(item, operation, variables):
                completed.append(kept.value)
                if budget is not None:
                    budget.charge(kept.spent)
            elif self.complete_list_item_value(
                item,
                completed,
                item_type,
                field_details_list,
                info,
                path.add_key(index, None),
                position_context,
            ):
                raise TypeError(f"{object_type.name} objects must complete synchronously")
        return completed


def _charge(budget: Budget, data: dict[str, Any]) -> None:
    """Charge a planned object: the bytes of its JSON, a tick per field of its own."""
    budget.spent += len(msgspec.json.encode(data))
    budget.ticks -= len(data)
    if budget.ticks <= 0:
        budget.check()


def _size(value: Any) -> int:
    """About the bytes a field of this value adds to the JSON answer, but for its key.

    That is ``"":value,``: objects and lists count their punctuation here, their
    contents as their own fields do; a list counts its items' strings and commas.
    """
    if type(value) is list:
        return 6 + sum(len(v) + 3 if type(v) is str else 2 for v in value)
    return 9


def _leaf(resolve: Attribute, source: Any) -> Any:
    """The serialized attribute, or Undefined where the full path must say why it is not."""
    value = getattr(source, resolve.name)
    if value is None:
        return None if resolve.nullable else Undefined
    leaf: Callable[[Any], Any] = resolve.leaf  # type: ignore[assignment]
    try:
        serialized = leaf(value)
    except Exception:
        return Undefined
    return Undefined if serialized is None else serialized


def _own() -> Answers:
    return Answers.install(Memos())


class _Answered:
    """An event's executor whose result an earlier subscriber made: all that
    graphql-core asks of it (``execute_subscription_event``) is that result."""

    __slots__ = ("result",)

    def __init__(self, result: ExecutionResult) -> None:
        self.result = result

    def execute_operation(self, serially: bool | None = None) -> ExecutionResult:
        return self.result
