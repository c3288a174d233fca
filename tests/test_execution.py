"""One execution policy: error masking, and the same limits over HTTP and WebSocket."""

from __future__ import annotations

import json
import threading

import pytest
from graphql import (
    GraphQLError,
    GraphQLField,
    GraphQLObjectType,
    GraphQLSchema,
    GraphQLString,
    parse,
)

from gateway.api.limits import Limits
from gateway.http.execution import Execution, mask


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


async def test_cheap_operations_run_on_the_loop_and_costly_ones_in_a_thread() -> None:
    """A worker thread's handoff takes longer than a lookup or the fleet's totals."""
    threads: list[int] = []

    def resolve(*_: object) -> str:
        threads.append(threading.get_ident())
        return "ok"

    query = GraphQLObjectType("Query", {"here": GraphQLField(GraphQLString, resolve=resolve)})
    execution = Execution(GraphQLSchema(query), Limits(inline_cost=10))
    document = parse("{ here }")

    class Holder:
        budget: object = None

    for cost in (10, 11):
        result = await execution.run(
            document,
            Holder(),  # type: ignore[arg-type]
            None,
            None,
            lambda r: r,
            cost,
        )
        assert result.data == {"here": "ok"}
    assert threads[0] == threading.get_ident()
    assert threads[1] != threading.get_ident()
    assert execution.running == 0
