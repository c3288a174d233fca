"""traceparent as the W3C Trace Context specification reads it, and in the access log."""

from __future__ import annotations

import logging

import pytest

from gateway.http.tracecontext import trace_id
from tests import fleet
from tests.support import serve

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
VALID = f"00-{TRACE}-00f067aa0ba902b7-01"


@pytest.mark.parametrize(
    "value",
    [
        VALID,
        f"00-{TRACE}-00f067aa0ba902b7-00",  # not sampled: still the caller's trace
        f" {VALID}\t",
        f"01-{TRACE}-00f067aa0ba902b7-01-what-a-later-version-adds",
    ],
)
def test_a_valid_traceparent_gives_its_trace_id(value: str) -> None:
    assert trace_id([(b"host", b"x"), (b"traceparent", value.encode())]) == TRACE


@pytest.mark.parametrize(
    "value",
    [
        f"ff-{TRACE}-00f067aa0ba902b7-01",  # version ff is invalid
        f"00-{TRACE}-00f067aa0ba902b7-01-more",  # version 00 ends at the flags
        f"00-{'0' * 32}-00f067aa0ba902b7-01",
        f"00-{TRACE}-{'0' * 16}-01",
        f"00-{TRACE.upper()}-00f067aa0ba902b7-01",
        f"00-{TRACE[:-1]}-00f067aa0ba902b7-01",
        "",
    ],
)
def test_an_invalid_traceparent_is_ignored(value: str) -> None:
    assert trace_id([(b"traceparent", value.encode())]) is None


def test_none_or_several_give_none() -> None:
    assert trace_id([(b"tracestate", b"a=b")]) is None
    assert trace_id([(b"traceparent", VALID.encode())] * 2) is None


async def test_the_access_log_carries_the_callers_trace_id(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="gateway.http.access")
    async with serve(fleet.objects()) as (client, _):
        query = {"query": "{ __typename }"}
        await client.post("/graphql", json=query, headers={"traceparent": VALID})
        await client.post("/graphql", json=query)
    traced, untraced = (r for r in caplog.records if r.name == "gateway.http.access")
    assert traced.trace_id == TRACE  # type: ignore[attr-defined]
    assert not hasattr(untraced, "trace_id")
