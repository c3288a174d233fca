"""From a request's bytes to an operation ready to execute, each step once per distinct input.

Clients repeat themselves: a dashboard sends the same few requests every few
seconds, byte for byte. What a request's method and payload decide (its
parameters, parsed document and operation, and the digest its cached answer is
filed under) is kept per distinct payload; parsing and validation results are
kept per distinct document text, so spellings of one payload share them. A
repeated request then goes from its bytes to its cached answer with a few
lookups, and a new one with the same document skips parsing and validation.
Each of the three is a memo bounded in bytes (:mod:`gateway.api.documents`),
which the app reports with its others.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from graphql import (
    ASTValidationRule,
    DocumentNode,
    FieldNode,
    GraphQLError,
    GraphQLSchema,
    OperationDefinitionNode,
    get_operation_ast,
    parse,
    print_ast,
    validate,
    visit,
)
from graphql.language import FragmentDefinitionNode, Visitor
from graphql.validation.rules.overlapping_fields_can_be_merged import MAX_COMPLEXITY_BUDGET
from graphql.validation.validate import ValidationAbortedError
from graphql.validation.validation_context import MAX_FRAGMENT_WORK

from gateway.api.codes import Code, coded
from gateway.api.cost import Cost, Profile, Profiles, estimate
from gateway.api.documents import DOCUMENT_BYTES, Documents
from gateway.api.limits import LimitError, Limits, check_document
from gateway.api.rules import argument_rules, check_with_variables
from gateway.api.validation import specified
from gateway.http.cache import digest
from gateway.http.persisted import PersistedQueries
from gateway.http.request import Params, RequestError, params_of
from gateway.store.snapshot import Snapshot

__all__ = ["Operations", "PreparedOperation"]

#: Validation errors reported before validation stops (graphql-core's default).
MAX_VALIDATION_ERRORS = 100


@dataclasses.dataclass(slots=True, eq=False)
class PreparedOperation:
    """What a request's method and payload decide, before any check of its document.

    One instance serves every request with the same bytes: nothing may change it
    (its digest is filled in once, its cost once per fleet profile).
    """

    params: Params
    document: DocumentNode
    operation: OperationDefinitionNode
    _digest: str | None = dataclasses.field(default=None, init=False)
    #: The estimated cost, and the fleet profile it was estimated on.
    cost: tuple[Profile, Cost] | None = dataclasses.field(default=None, init=False)
    #: Its arguments met the rules with its variables' values (gateway.api.rules).
    arguments_checked: bool = dataclasses.field(default=False, init=False)

    @property
    def name(self) -> str | None:
        return self.operation.name.value if self.operation.name else None

    def digest(self, text: str) -> str:
        """The request's cache digest, ``text`` being its document as validation printed it."""
        if self._digest is None:
            params = self.params
            self._digest = digest(text, params.operation_name, params.variables)
        return self._digest


class Operations:
    """Parses, checks and validates the requests of one schema, remembering the results.

    Each memo may take ``memo_bytes``; failures are never kept (a failing request
    pays its full price every time, as it should).
    """

    def __init__(
        self,
        schema: GraphQLSchema,
        limits: Limits,
        *,
        validation_rules: Sequence[type[ASTValidationRule]] = (),
        uncacheable: frozenset[str] = frozenset(),
        memo_bytes: int = DOCUMENT_BYTES,
        persisted: PersistedQueries | None = None,
    ) -> None:
        self.schema = schema
        self.limits = limits
        self.rules = (*specified(), argument_rules(), *validation_rules)
        #: Fields whose answers are not a function of the store snapshot alone.
        self.uncacheable = uncacheable
        #: Documents named by hash; a request so resolved is remembered with its payload.
        self.persisted = persisted or PersistedQueries()
        self._parsed: Documents[str, DocumentNode] = Documents("parsed documents", memo_bytes)
        self._validated: Documents[str, str | None] = Documents("validated documents", memo_bytes)
        self._prepared: Documents[tuple[str, bytes], PreparedOperation] = Documents(
            "prepared requests", memo_bytes
        )
        self._profiles = Profiles()

    @property
    def memos(self) -> tuple[Documents[Any, Any], ...]:
        """What it keeps, for the app to report."""
        return (self._parsed, self._validated, self._prepared)

    def prepare(self, method: str, payload: bytes) -> PreparedOperation:
        """What the request decides; remembered per distinct payload."""
        return self._prepared.get(
            (method, payload), len(payload), lambda: self._prepare(method, payload)
        )

    def parse(self, query: str) -> DocumentNode:
        return self._parsed.get(query, len(query), lambda: self._parse(query))

    def validate(self, query: str) -> str | None:
        """Check limits, then validate (see :meth:`_validate`); remembered per text."""
        return self._validated.get(query, len(query), lambda: self._validate(query))

    def _prepare(self, method: str, payload: bytes) -> PreparedOperation:
        return self.prepare_params(params_of(method, payload, self.limits.max_json_depth))

    def prepare_params(self, params: Params) -> PreparedOperation:
        """What parameters decide, however they came (an HTTP payload, a WebSocket message)."""
        params = self.persisted.resolve(params)
        document = self.parse(params.query)
        operation = get_operation_ast(document, params.operation_name)
        if operation is None:
            name = params.operation_name
            message = f"unknown operation {name!r}" if name else "operationName is required"
            code = Code.OPERATION_RESOLUTION_FAILURE.value
            raise RequestError([GraphQLError(message, extensions={"code": code})])
        return PreparedOperation(params, document, operation)

    def _parse(self, query: str) -> DocumentNode:
        try:
            return parse(query, max_tokens=self.limits.max_tokens)
        except GraphQLError as error:
            over = "tokens" in error.message  # the parser's own limit
            code = Code.TOO_MANY_TOKENS if over else Code.GRAPHQL_PARSE_FAILED
            raise RequestError([coded(error, code)]) from error

    def _validate(self, query: str) -> str | None:
        """Check limits, then validate.

        Returns the document as graphql-core prints it (same meaning, same text), for
        cache keys, or None when its answer must not be cached because it reads one
        of the ``uncacheable`` fields. Keyed by the query's text, whose hash Python
        keeps, rather than by its document: a document hashes node by node.
        """
        document = self.parse(query)
        try:
            check_document(document, self.limits)
        except LimitError as error:  # answered like any validation error
            raise RequestError([error]) from error
        errors = validate(self.schema, document, self.rules, max_errors=MAX_VALIDATION_ERRORS)
        if errors:
            failed = Code.GRAPHQL_VALIDATION_FAILED
            raise RequestError([coded(e, failed) for e in _limit_named(errors, document)])
        if _selects_any(document, self.uncacheable):
            return None
        return print_ast(document)

    def check_arguments(self, prepared: PreparedOperation) -> None:
        """The argument rules again, now that the variables' values are known.

        Called once the document is valid; checked once per distinct request.
        """
        if prepared.arguments_checked:
            return
        errors = check_with_variables(
            self.schema,
            prepared.document,
            prepared.operation,
            prepared.params.variables,
        )
        if errors:
            raise RequestError(errors)
        prepared.arguments_checked = True

    def check_cost(self, prepared: PreparedOperation, snapshot: Snapshot) -> Cost:
        """The operation's estimated cost on ``snapshot``; refused if over the limit.

        Called once the document is valid, and only when it is about to run: a cached
        answer costs nothing, and the same request may cost more as the fleet grows.
        Kept with the request for as long as the fleet's profile is the same.
        """
        params = prepared.params
        profile = self._profiles.of(snapshot)
        known = prepared.cost
        if known is not None and known[0] is profile:
            cost = known[1]
        else:
            cost = estimate(
                self.schema,
                prepared.document,
                prepared.operation,
                params.variables,
                profile,
                self.limits.max_page_size,
            )
            prepared.cost = (profile, cost)
        if cost.total > self.limits.max_cost:
            message = (
                f"query cost {cost.total} exceeds the limit of {self.limits.max_cost} "
                f"(estimated from the fleet's {len(snapshot)} hosts and its list sizes)"
            )
            code = Code.QUERY_TOO_COSTLY.value
            raise RequestError([LimitError(message, extensions={"code": code})], 400)
        return cost


def _selects_any(document: DocumentNode, names: frozenset[str]) -> bool:
    """Whether any selection in ``document`` (fragments included) is one of ``names``."""
    found = False

    class Finder(Visitor):
        def enter_field(self, node: FieldNode, *_: Any) -> None:
            nonlocal found
            found = found or node.name.value in names

    if names:
        visit(document, Finder())
    return found


def _limit_named(errors: list[GraphQLError], document: DocumentNode) -> list[GraphQLError]:
    """graphql-core's "Validation aborted." names no limit; say which one stopped it.

    It aborts after ``MAX_VALIDATION_ERRORS`` errors, and when comparing the
    selections of one response name pairwise (1,000 repeated selections) or
    following fragments would take more than its budgets.
    """
    if not errors or not isinstance(errors[-1], ValidationAbortedError):
        return errors
    if len(errors) > MAX_VALIDATION_ERRORS:
        message = (
            f"Validation stopped after {MAX_VALIDATION_ERRORS} errors, the limit: "
            "fix these and send the document again."
        )
    elif any(isinstance(d, FragmentDefinitionNode) for d in document.definitions):
        message = (
            "Validation aborted: the document's fragments and selections need more work to "
            f"check than the limits allow ({MAX_FRAGMENT_WORK:,} fragment spreads and "
            f"variables followed, {MAX_COMPLEXITY_BUDGET:,} comparisons of selections)."
        )
    else:
        message = (
            "Validation aborted: checking that the selections of each field can be merged "
            f"takes more than the limit of {MAX_COMPLEXITY_BUDGET:,} comparisons; select "
            "each field once instead of repeating it."
        )
    return [*errors[:-1], GraphQLError(message)]
