"""The ``extensions.code`` of every error the gateway answers, in one place.

Clients branch on codes, never on messages: messages say what went wrong in
words and may be improved, codes are a contract (README, "Error codes"). Where
Apollo Server names a case (GRAPHQL_PARSE_FAILED, GRAPHQL_VALIDATION_FAILED,
BAD_USER_INPUT, PERSISTED_QUERY_NOT_FOUND...), the gateway uses its name, so a
client written against Apollo's conventions reads these answers too.
"""

from __future__ import annotations

import enum

from graphql import GraphQLError

__all__ = ["Code", "coded", "for_status"]


class Code(enum.StrEnum):
    """Every code, each with the cases it names (README lists them all)."""

    # The request itself.
    BAD_REQUEST = "BAD_REQUEST"
    METHOD_NOT_ALLOWED = "METHOD_NOT_ALLOWED"
    NOT_ACCEPTABLE = "NOT_ACCEPTABLE"
    UNSUPPORTED_MEDIA_TYPE = "UNSUPPORTED_MEDIA_TYPE"
    PAYLOAD_TOO_LARGE = "PAYLOAD_TOO_LARGE"
    REQUEST_TIMEOUT = "REQUEST_TIMEOUT"
    # The document.
    GRAPHQL_PARSE_FAILED = "GRAPHQL_PARSE_FAILED"
    GRAPHQL_VALIDATION_FAILED = "GRAPHQL_VALIDATION_FAILED"
    OPERATION_RESOLUTION_FAILURE = "OPERATION_RESOLUTION_FAILURE"
    MUTATIONS_NOT_SUPPORTED = "MUTATIONS_NOT_SUPPORTED"
    SUBSCRIPTION_NEEDS_WEBSOCKET = "SUBSCRIPTION_NEEDS_WEBSOCKET"
    TOO_MANY_TOKENS = "TOO_MANY_TOKENS"
    QUERY_TOO_DEEP = "QUERY_TOO_DEEP"
    TOO_MANY_ALIASES = "TOO_MANY_ALIASES"
    TOO_MANY_SELECTIONS = "TOO_MANY_SELECTIONS"
    # Argument values: literals in validation, variables in coercion.
    BAD_USER_INPUT = "BAD_USER_INPUT"
    BAD_QUANTITY = "BAD_QUANTITY"
    BAD_CURSOR = "BAD_CURSOR"
    BAD_UUID = "BAD_UUID"
    BAD_RESOURCE_NAME = "BAD_RESOURCE_NAME"
    BAD_LABEL_SELECTOR = "BAD_LABEL_SELECTOR"
    BAD_COUNT = "BAD_COUNT"
    BAD_SLOTS_REQUEST = "BAD_SLOTS_REQUEST"
    UNKNOWN_FLAVOR = "UNKNOWN_FLAVOR"
    UNKNOWN_HYPERVISOR = "UNKNOWN_HYPERVISOR"
    BAD_DRAIN = "BAD_DRAIN"
    EVICTIONS_UNAVAILABLE = "EVICTIONS_UNAVAILABLE"
    # Documents named by hash (automatic persisted queries, trusted documents).
    PERSISTED_QUERY_NOT_FOUND = "PERSISTED_QUERY_NOT_FOUND"
    PERSISTED_QUERY_HASH_MISMATCH = "PERSISTED_QUERY_HASH_MISMATCH"
    PERSISTED_QUERY_VERSION_NOT_SUPPORTED = "PERSISTED_QUERY_VERSION_NOT_SUPPORTED"
    PERSISTED_QUERY_NOT_IN_LIST = "PERSISTED_QUERY_NOT_IN_LIST"
    # Running it.
    QUERY_TOO_COSTLY = "QUERY_TOO_COSTLY"
    QUERY_TIMEOUT = "QUERY_TIMEOUT"
    RESPONSE_TOO_LARGE = "RESPONSE_TOO_LARGE"
    SUBSCRIBER_TOO_SLOW = "SUBSCRIBER_TOO_SLOW"
    TOO_MANY_REQUESTS = "TOO_MANY_REQUESTS"
    INTERNAL_SERVER_ERROR = "INTERNAL_SERVER_ERROR"
    # Who asks.
    UNAUTHENTICATED = "UNAUTHENTICATED"
    FORBIDDEN = "FORBIDDEN"
    UNAVAILABLE = "UNAVAILABLE"
    # Warnings (the response's extensions.warnings), not errors.
    UNKNOWN_RESOURCE = "UNKNOWN_RESOURCE"
    PAGE_SIZE_CLAMPED = "PAGE_SIZE_CLAMPED"


_BY_STATUS = {
    400: Code.BAD_REQUEST,
    405: Code.METHOD_NOT_ALLOWED,
    406: Code.NOT_ACCEPTABLE,
    408: Code.REQUEST_TIMEOUT,
    413: Code.PAYLOAD_TOO_LARGE,
    415: Code.UNSUPPORTED_MEDIA_TYPE,
}


def for_status(status: int) -> Code:
    """The code of a refusal made before GraphQL is involved, by its HTTP status."""
    return _BY_STATUS.get(status, Code.BAD_REQUEST)


def coded(error: GraphQLError, code: Code) -> GraphQLError:
    """``error`` if it has a code already (a scalar's, a rule's), else a copy with ``code``."""
    if "code" in (error.extensions or {}):
        return error
    return GraphQLError(
        error.message,
        error.nodes,
        error.source,
        error.positions,
        error.path,
        error.original_error,
        {**(error.extensions or {}), "code": code.value},
    )
