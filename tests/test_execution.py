"""One execution policy: error masking, and the same limits over HTTP and WebSocket."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from typing import Any

import pytest
from graphql import (
    GraphQLError,
    GraphQLField,
    GraphQLObjectType,
    GraphQLSchema,
    GraphQLString,
    OperationDefinitionNode,
    parse,
)

from gateway.api.cost import Cost
from gateway.api.limits import Limits
from gateway.http.execution import Execution, mask
from gateway.http.request import HttpError, RequestError
from gateway.store.feed import Lagging
from tests.support import eventually


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


def test_a_subscriber_behind_the_store_reads_its_code_and_nothing_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    lagging = Lagging("subscriber fell more than 1000 updates behind")
    with caplog.at_level("WARNING"):
        masked = mask(GraphQLError(str(lagging), original_error=lagging), "req-125")
    assert masked.message == str(lagging)
    assert masked.extensions == {"code": "SUBSCRIBER_TOO_SLOW"}
    assert caplog.records == []


class _Holder:
    """The one attribute of a context these schemas' execution reads: its budget."""

    budget: object = None


async def test_cheap_operations_run_on_the_loop_and_costly_ones_in_a_thread() -> None:
    """A worker thread's handoff takes longer than a lookup or the fleet's totals."""
    threads: list[int] = []

    def resolve(*_: object) -> str:
        threads.append(threading.get_ident())
        return "ok"

    query = GraphQLObjectType("Query", {"here": GraphQLField(GraphQLString, resolve=resolve)})
    execution = Execution(GraphQLSchema(query), Limits(inline_cost=10))
    document = parse("{ here }")
    for cost in (Cost(10), Cost(11), Cost(5_010, kept=5_000)):
        result = await execution.run(
            document,
            _Holder(),  # type: ignore[arg-type]
            None,
            None,
            lambda r: r,
            cost,
        )
        assert result.data == {"here": "ok"}
    assert threads[0] == threading.get_ident()
    assert threads[1] != threading.get_ident()
    assert threads[2] == threading.get_ident()  # cheap but for scans the store may keep
    assert execution.running == 0


async def test_a_query_estimated_cheap_that_meets_a_huge_host_goes_to_a_thread() -> None:
    """The estimate knows the fleet's usual list lengths; one host of 20,000 instances
    answered on the loop stalled every other request (30 such lookups: /healthz
    answered after 19 s). Past the loop's share it runs again in a worker thread,
    where the concurrency slots and the time limit hold, and answers the same."""
    from gateway.api.context import Context
    from gateway.api.schema import schema
    from gateway.domain.flavors import load_catalog
    from gateway.sources.demo.source import generate
    from gateway.store.source import SyncStatus
    from gateway.store.store import Store

    objects = generate(3, seed=1, bookings_per_host=2)
    huge = objects[0]
    huge["status"]["instances"] = [
        {"id": f"{i:08d}-0000-4000-8000-000000000000", "name": f"vm-{i}", "active": True}
        for i in range(20_000)
    ]
    store = Store()
    store.replace(objects)
    execution = Execution(schema._schema, Limits())
    status = SyncStatus(source="test", synced=True)
    answered_on = []
    for name in (objects[1]["metadata"]["name"], huge["metadata"]["name"]):
        document = parse(f'{{ hypervisor(name: "{name}") {{ instances {{ id name active }} }} }}')
        context = Context(store, status, None, catalog=load_catalog(None))  # type: ignore[arg-type]

        def finish(result: Any) -> Any:
            answered_on.append(threading.get_ident())
            return result

        result = await execution.run(document, context, None, None, finish, Cost(10))
        assert result.errors is None
    assert len(result.data["hypervisor"]["instances"]) == 20_000
    assert answered_on[0] == threading.get_ident()  # the usual host: on the loop
    assert answered_on[1] != threading.get_ident()


async def test_a_cheap_query_that_must_count_the_fleet_counts_in_a_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The fleet's totals are cheap once the store keeps them; their first count is a
    pass over every host, which must not stall the event loop."""
    from gateway.api.context import Context
    from gateway.api.schema import schema
    from gateway.domain.flavors import load_catalog
    from gateway.domain.ledger import Ledger
    from gateway.sources.demo.source import generate
    from gateway.store.source import SyncStatus
    from gateway.store.store import Store

    counted_on: list[int] = []
    count = Ledger.of.__func__  # type: ignore[attr-defined]

    def spied(cls: type[Ledger], *args: object) -> Ledger:
        counted_on.append(threading.get_ident())
        return count(cls, *args)  # type: ignore[no-any-return]

    monkeypatch.setattr(Ledger, "of", classmethod(spied))
    store = Store()
    store.replace(generate(30, seed=1, bookings_per_host=2))
    execution = Execution(schema._schema, Limits())
    document = parse("{ fleetCapacity(groupBy: ZONE) { key resources { name free } } }")
    status = SyncStatus(source="test", synced=True)
    for _ in range(2):
        context = Context(store, status, None, catalog=load_catalog(None))  # type: ignore[arg-type]
        result = await execution.run(document, context, None, None, lambda r: r, Cost(10))
        assert result.errors is None and result.data is not None
    assert len(counted_on) == 1 and counted_on[0] != threading.get_ident()


async def test_a_filter_whose_hosts_are_kept_is_counted_on_the_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """canFit's count: its first selection is a pass over the fleet, in a thread; the
    store keeps it, and the next count is answered on the loop, no thread's handoff."""
    from gateway.api import filters
    from gateway.api.context import Context
    from gateway.api.cost import Profile, estimate
    from gateway.api.schema import schema
    from gateway.domain import fleet
    from gateway.domain.flavors import load_catalog
    from gateway.sources.demo.source import generate
    from gateway.store.source import SyncStatus
    from gateway.store.store import Store

    filtered_on: list[int] = []
    compile_filter = filters.compile_filter

    def spied(*args: Any) -> Any:
        filtered_on.append(threading.get_ident())
        return compile_filter(*args)

    monkeypatch.setattr(filters, "compile_filter", spied)
    store = Store()
    store.replace(generate(1_500, seed=1, bookings_per_host=2))
    store.views.ledger(store.snapshot, fleet.resource_tally)  # the names it checks, kept
    limits = Limits()
    execution = Execution(schema._schema, limits)
    document = parse(
        '{ hypervisors(filter: {canFit: [{resource: "cpu", amount: "8"}]}) { totalCount } }'
    )
    operation = document.definitions[0]
    assert isinstance(operation, OperationDefinitionNode)
    profile = Profile.measure(store.snapshot)
    cost = estimate(schema._schema, document, operation, None, profile, limits.max_page_size)
    assert cost.total > limits.inline_cost >= cost.total - cost.kept
    status = SyncStatus(source="test", synced=True)
    counts = []
    for _ in range(2):
        context = Context(store, status, None, catalog=load_catalog(None))  # type: ignore[arg-type]
        result = await execution.run(document, context, None, None, lambda r: r, cost)
        assert result.errors is None and result.data is not None
        counts.append(result.data["hypervisors"]["totalCount"])
    loop = threading.get_ident()
    # On the loop, offloaded at the unkept selection, in a thread; then on the loop.
    assert filtered_on[0] == loop and filtered_on[1] != loop and filtered_on[2:] == [loop]
    assert counts[0] == counts[1] > 0


class _Gated:
    """A schema whose first run blocks until ``gate`` is set; each run records when it
    began and its budget's deadline."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.runs: list[tuple[float, float]] = []

        def resolve(_: object, info: Any) -> str:
            self.runs.append((time.monotonic(), info.context.budget.at))
            if len(self.runs) == 1:
                self.gate.wait(30)
            return "ok"

        def count(_: object, info: Any) -> str:
            info.context.budget.scan()  # a count over the fleet: offloaded from the loop
            return "counted"

        fields = {
            "here": GraphQLField(GraphQLString, resolve=resolve),
            "count": GraphQLField(GraphQLString, resolve=count),
        }
        self.schema = GraphQLSchema(GraphQLObjectType("Query", fields))

    async def run(self, execution: Execution, query: str = "{ here }", cost: int = 11) -> Any:
        holder: Any = _Holder()
        return await execution.run(parse(query), holder, None, None, lambda r: r, Cost(cost))


async def test_operations_past_the_running_ones_wait_their_turn() -> None:
    """The interpreter runs one thread at a time: operations beyond ``max_running`` take
    turns instead of sharing it, and each one's time counts from its turn."""
    gated = _Gated()
    execution = Execution(gated.schema, Limits(inline_cost=10, max_running=1, max_seconds=30))
    first = asyncio.create_task(gated.run(execution))
    await eventually(lambda: len(gated.runs) == 1)
    submitted = time.monotonic()
    second = asyncio.create_task(gated.run(execution))
    await eventually(lambda: execution.running == 2)
    assert len(gated.runs) == 1  # admitted, waiting its turn
    # One estimated cheap (run on the loop, offloaded at its count) takes no turn.
    assert (await gated.run(execution, "{ count }", cost=5)).data == {"count": "counted"}
    assert not first.done()
    gated.gate.set()
    assert (await first).data == (await second).data == {"here": "ok"}
    turn, deadline = gated.runs[1]
    assert submitted + 30 < deadline <= turn + 30
    assert execution.running == 0


async def test_an_operation_whose_turn_does_not_come_in_time_is_refused_429() -> None:
    gated = _Gated()
    execution = Execution(gated.schema, Limits(inline_cost=10, max_running=1, max_seconds=0.2))
    first = asyncio.create_task(gated.run(execution))
    await eventually(lambda: len(gated.runs) == 1)
    with pytest.raises(HttpError) as refused:
        await gated.run(execution)
    assert (refused.value.status, refused.value.code) == (429, "TOO_MANY_REQUESTS")
    assert refused.value.headers == {"retry-after": "1"}
    assert len(gated.runs) == 1  # it never ran
    gated.gate.set()
    with contextlib.suppress(RequestError):  # the first may have reached its own limit
        await first
    assert execution.running == 0
