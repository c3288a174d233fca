"""The budget: bytes counted as the answer is built, time looked at between fields."""

from __future__ import annotations

import json

import pytest
from graphql import parse

from gateway.api.budget import CLOCK_EVERY, INLINE_BYTES, INLINE_SECONDS, Budget, Offload, Overrun
from gateway.api.context import Context
from gateway.api.limits import Limits
from gateway.api.schema import schema
from gateway.http.execution import execute_document
from gateway.sources.demo.source import generate
from gateway.store.feed import Feed
from gateway.store.store import Store
from tests.support import Clock, StaticSource, serve
from tests.test_limits import HEAVY


def test_time_is_looked_at_between_fields() -> None:
    clock = Clock()
    budget = Budget(1.0, 10**9, clock)
    for _ in range(1000):
        budget.charge(1)
    clock.now += 1.5
    with pytest.raises(Overrun, match="took longer than the limit of 1 s"):
        for _ in range(1000):
            budget.charge(1)


def test_work_on_the_event_loop_offloads_past_its_share() -> None:
    """Estimated small, an operation runs on the loop; its answer's bytes or its time
    there past the loop's share send it to a worker thread, before any limit."""
    clock = Clock()
    by_bytes = Budget(60.0, 10**9, clock)
    by_bytes.run_inline()
    by_bytes.charge(INLINE_BYTES)
    with pytest.raises(Offload):
        for _ in range(CLOCK_EVERY):
            by_bytes.charge(1)
    by_time = Budget(60.0, 10**9, clock)
    by_time.run_inline()
    for _ in range(2 * CLOCK_EVERY):
        by_time.charge(1)
    clock.now += INLINE_SECONDS * 2
    with pytest.raises(Offload):
        for _ in range(CLOCK_EVERY):
            by_time.charge(1)
    threaded = Budget(60.0, 10**9, clock)  # in a thread: only the limits hold
    threaded.charge(INLINE_BYTES)
    clock.now += 1
    for _ in range(2 * CLOCK_EVERY):
        threaded.charge(1)


def test_a_stopped_budget_ends_the_work() -> None:
    budget = Budget(60.0, 10**9)
    budget.stop()
    with pytest.raises(Overrun):
        budget.check()


def test_bytes_counted_are_about_the_answer_size() -> None:
    """The count stops a large answer early; it must not be far from the real size."""
    store = Store()
    store.replace(generate(50), None)
    context = Context(store, StaticSource([]).status, Feed(store))
    context.budget = budget = Budget(60.0, 10**9)
    document = parse(HEAVY)
    result = execute_document(schema._schema, document, context, None, None)
    size = len(json.dumps({"data": result.data}, separators=(",", ":")))
    assert 0.9 * size <= budget.spent <= 1.1 * size


async def test_a_response_over_the_limit_is_refused_while_it_is_built() -> None:
    fleet = generate(300, bookings_per_host=40)
    limits = Limits(max_response_bytes=100_000, max_seconds=120)
    async with serve(fleet, limits=limits) as (client, _):
        response = await client.post("/graphql", json={"query": HEAVY})
        small = await client.post("/graphql", json={"query": "{ hypervisors { totalCount } }"})
    assert response.status_code == 400
    assert response.json() == {
        "errors": [
            {
                "message": "response larger than the limit of 100000 bytes",
                "extensions": {"code": "RESPONSE_TOO_LARGE"},
            }
        ]
    }
    assert small.status_code == 200
