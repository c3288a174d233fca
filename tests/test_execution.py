"""One execution policy: error masking, and the same limits over HTTP and WebSocket."""

from __future__ import annotations

import json

import pytest
from graphql import GraphQLError

from gateway.http.execution import mask


def test_our_own_bugs_are_masked_with_a_request_id(caplog: pytest.LogCaptureFixture) -> None:
    """An exception that is not a GraphQLError is a bug: the client sees a request id,
    the log has the traceback under the same id."""
    error = GraphQLError("boom", path=["hypervisors"], original_error=KeyError("secret detail"))
    with caplog.at_level("ERROR", logger="gateway.http.execution"):
        formatted = mask(error, "req-123").formatted
    assert formatted["message"] == "internal error (request id req-123)"
    assert formatted["path"] == ["hypervisors"]
    assert "secret detail" not in json.dumps(formatted)
    assert "req-123" in caplog.records[0].getMessage()
    assert caplog.records[0].exc_info is not None
    deliberate = GraphQLError("first must not be negative", original_error=GraphQLError("x"))
    assert mask(deliberate, "req-124").message == "first must not be negative"
