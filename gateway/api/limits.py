"""Limits on what one request may ask, checked before the document is validated.

Validation itself can be made expensive (overlapping-fields checks on a fragment
bomb are quadratic or worse), so the shape of a document is measured first, with
fragments expanded once each (memoized) and cycles refused:

* depth: the longest chain of nested selections;
* aliases: how many fields are renamed (alias bombs repeat one costly field);
* selections: how many field selections the document has once every fragment
  is spread where it is used. A fragment used twice counts twice: that is what
  execution will do.

The token limit is the parser's own (``max_tokens``), applied while parsing. What
the query will cost to run, given the fleet, is estimated after validation
(gateway.api.cost) and bounded by ``max_cost``; what it may spend while it runs, by
``max_seconds`` and ``max_response_bytes`` (gateway.api.budget).
"""

from __future__ import annotations

import dataclasses

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
)

from gateway.api.codes import Code

__all__ = ["LimitError", "Limits", "check_document"]


@dataclasses.dataclass(frozen=True, slots=True)
class Limits:
    """Per-request limits; defaults suit dashboards and tooling."""

    max_depth: int = 15
    max_aliases: int = 50
    max_selections: int = 5000
    max_tokens: int = 10_000
    max_body_bytes: int = 1_000_000
    max_body_seconds: float = 10.0
    #: Deepest nesting of arrays and objects in a JSON body or WebSocket message.
    max_json_depth: int = 64
    max_page_size: int = 10_000
    #: Estimated cost (gateway.api.cost): every README, dashboard and benchmark query
    #: passes at 20,000 hosts, a chain of hosts and consumers 12 deep does not.
    max_cost: int = 1_000_000
    max_seconds: float = 10.0
    #: Operations estimated at most this cost run on the event loop: for them a worker
    #: thread's handoff takes longer than the work (a 100-host page costs about 600).
    inline_cost: int = 1000
    max_response_bytes: int = 64 * 1024 * 1024
    #: Operations admitted at once (running or waiting their turn); past them, 429.
    max_concurrent: int = 32
    #: Operations running in worker threads at once (gateway.http.execution).
    max_running: int = 2


class LimitError(GraphQLError):
    """A request over one of the :class:`Limits`."""


def _over(message: str, code: Code) -> LimitError:
    return LimitError(message, extensions={"code": code.value})


@dataclasses.dataclass(slots=True)
class _Shape:
    depth: int = 0
    aliases: int = 0
    selections: int = 0


def check_document(document: DocumentNode, limits: Limits) -> None:
    """Raise :class:`LimitError` if any operation of ``document`` is over a limit."""
    fragments = {
        d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
    }
    measure = _Measure(fragments, limits)
    for definition in document.definitions:
        if isinstance(definition, OperationDefinitionNode):
            shape = measure.selections(definition.selection_set, ())
            _check(shape, limits)


def _check(shape: _Shape, limits: Limits) -> None:
    if shape.depth > limits.max_depth:
        message = f"query depth {shape.depth} exceeds the limit of {limits.max_depth}"
        raise _over(message, Code.QUERY_TOO_DEEP)
    if shape.aliases > limits.max_aliases:
        message = f"query has {shape.aliases} aliases; the limit is {limits.max_aliases}"
        raise _over(message, Code.TOO_MANY_ALIASES)
    if shape.selections > limits.max_selections:
        message = (
            f"query selects {shape.selections} fields once fragments are expanded; "
            f"the limit is {limits.max_selections}"
        )
        raise _over(message, Code.TOO_MANY_SELECTIONS)


class _Measure:
    def __init__(self, fragments: dict[str, FragmentDefinitionNode], limits: Limits) -> None:
        self.fragments = fragments
        self.limits = limits
        self.memo: dict[str, _Shape] = {}

    def selections(self, selection_set: SelectionSetNode | None, path: tuple[str, ...]) -> _Shape:
        total = _Shape()
        if selection_set is None:
            return total
        for selection in selection_set.selections:
            if isinstance(selection, FieldNode):
                inner = self.selections(selection.selection_set, path)
                part = _Shape(
                    inner.depth + 1,
                    inner.aliases + (selection.alias is not None),
                    inner.selections + 1,
                )
            elif isinstance(selection, InlineFragmentNode):
                part = self.selections(selection.selection_set, path)
            else:
                assert isinstance(selection, FragmentSpreadNode)
                part = self.fragment(selection.name.value, path)
            total = _Shape(
                max(total.depth, part.depth),
                total.aliases + part.aliases,
                total.selections + part.selections,
            )
            # Stop early: a fragment bomb must not be expanded to the end to be refused.
            if (
                total.selections > self.limits.max_selections
                or total.aliases > self.limits.max_aliases
            ):
                _check(total, self.limits)
        return total

    def fragment(self, name: str, path: tuple[str, ...]) -> _Shape:
        if name in path:
            cycle = " -> ".join((*path, name))
            raise _over(f"fragment cycle: {cycle}", Code.GRAPHQL_VALIDATION_FAILED)
        if name not in self.memo:
            definition = self.fragments.get(name)
            if definition is None:
                return _Shape()  # validation reports the unknown fragment
            self.memo[name] = self.selections(definition.selection_set, (*path, name))
        return self.memo[name]
