"""Completed records are reused while they are the store's, and only when the selection
reads nothing but the record."""

from __future__ import annotations

import gc
import tracemalloc
import weakref
from typing import Any

from graphql import (
    ExecutionResult,
    execute,
    parse,
)

from gateway.api.budget import Budget
from gateway.api.context import Context
from gateway.api.executor import Executor
from gateway.api.memos import Answers
from gateway.api.reuse import Completed, Kept, object_bytes, operation_bytes
from gateway.api.schema import build_schema, schema
from gateway.domain.flavors import load_catalog
from gateway.sources.demo.source import generate
from gateway.store.source import SyncStatus
from gateway.store.store import Store

PAGE_TEXT = (
    '{ hypervisors { nodes { name zone cpu: resource(name: "cpu") { free capacity }'
    " labels { key value } traits { name } } } }"
)
PAGE = parse(PAGE_TEXT)
#: ConsumerBooking.hypervisor reads the snapshot, not the record.
ACROSS = parse("{ hypervisors { nodes { name consumers { uuid hypervisor { name } } } } }")


def context(store: Store) -> Context:
    status = SyncStatus(source="test", synced=True)
    return Context(store, status, None, catalog=load_catalog(None))  # type: ignore[arg-type]


def run(
    store: Store,
    document: Any,
    variables: dict[str, Any] | None = None,
    budget: Budget | None = None,
) -> ExecutionResult:
    """``document`` executed on the store; with ``budget``, the objects kept are charged
    by it, as the gateway's executions charge them."""
    answering = context(store)
    answering.budget = budget
    result = execute(
        schema._schema,
        document,
        context_value=answering,
        variable_values=variables,
        executor_class=Executor,
    )
    assert isinstance(result, ExecutionResult) and not result.errors, result
    return result


def nodes(result: ExecutionResult) -> list[dict[str, Any]]:
    assert result.data is not None
    return result.data["hypervisors"]["nodes"]  # type: ignore[no-any-return]


def fleet(size: int = 6) -> tuple[Store, list[dict[str, Any]]]:
    objects = generate(size, seed=3, bookings_per_host=3)
    store = Store()
    store.replace(objects)
    store.mark_ready()
    return store, objects


def test_unchanged_hosts_are_reused_and_a_changed_one_is_made_again() -> None:
    store, objects = fleet()
    first = nodes(run(store, PAGE))
    again = nodes(run(store, PAGE))
    assert all(a is b for a, b in zip(first, again, strict=True))
    changed = dict(objects[2], metadata={**objects[2]["metadata"], "resourceVersion": "new"})
    changed["metadata"]["labels"] = {**changed["metadata"].get("labels", {}), "extra": "yes"}
    store.upsert(changed)
    after = nodes(run(store, PAGE))
    assert [a is b for a, b in zip(first, after, strict=True)] == [
        name != changed["metadata"]["name"] for name in (n["name"] for n in first)
    ]
    assert {"key": "extra", "value": "yes"} in after[2]["labels"]


def test_answers_equal_a_fresh_execution() -> None:
    store, _ = fleet()
    run(store, PAGE)
    reused = nodes(run(store, PAGE))
    plain = execute(build_schema(shortcuts=False)._schema, PAGE, context_value=context(store))
    assert isinstance(plain, ExecutionResult) and plain.data is not None
    assert reused == plain.data["hypervisors"]["nodes"]
    assert len(Answers.of(store.memos).completed) >= len(reused)


def test_each_store_keeps_the_objects_of_its_own_records() -> None:
    store, _ = fleet()
    other, _ = fleet()
    run(store, PAGE)
    assert len(Answers.of(store.memos).completed) > 0
    assert len(Answers.of(other.memos).completed) == 0


def test_a_selection_that_reads_beyond_the_record_is_not_kept() -> None:
    store, _ = fleet()
    first = nodes(run(store, ACROSS))
    again = nodes(run(store, ACROSS))
    assert first == again
    assert not any(a is b for a, b in zip(first, again, strict=True))


def test_other_variables_make_other_objects() -> None:
    store, _ = fleet()
    document = parse(
        "query($r: String!) { hypervisors { nodes { name resource(name: $r) { free } } } }"
    )
    cpu = nodes(run(store, document, {"r": "cpu"}))
    memory = nodes(run(store, document, {"r": "memory"}))
    assert not any(a is b for a, b in zip(cpu, memory, strict=True))
    again = nodes(run(store, document, {"r": "cpu"}))
    assert all(a is b for a, b in zip(cpu, again, strict=True))


class Thing:
    """A record as the memo sees it: anything it can refer to weakly."""


def test_kept_objects_are_bounded_oldest_first() -> None:
    kept = Kept(max_kept=2)
    operation = PAGE.definitions[0]
    records = [Thing() for _ in range(3)]
    for i in range(3):
        kept.put((i,), records[i], Completed(operation, {}, {}, 0))  # type: ignore[arg-type]
    assert len(kept) == 2
    assert kept.get((0,)) is None and kept.get((2,)) is not None


def test_kept_objects_are_bounded_in_bytes() -> None:
    """One client's large objects (15 MB answers of 200 hosts) cannot take the memory:
    the bytes held stay within the bound, the oldest going first."""
    operation = PAGE.definitions[0]
    held = operation_bytes(operation)  # once, for every object made by the operation

    def completed(spent: int) -> Completed:
        return Completed(operation, {}, {}, spent)  # type: ignore[arg-type]

    each = object_bytes(completed(75_000))
    kept = Kept(max_kept=1000, max_bytes=2 * each + each // 2 + held)
    record = Thing()
    for i in range(40):
        kept.put((i,), record, completed(75_000))
    assert (len(kept), kept.bytes, kept.evictions) == (2, 2 * each + held, 38)
    assert kept.get((39,)) is not None and kept.get((37,)) is None
    assert kept.hits == 1
    kept.put((99,), record, completed(300_000))
    assert kept.get((99,)) is None and kept.bytes == 2 * each + held  # larger than all
    kept.put((39,), record, completed(10))
    assert (len(kept), kept.bytes) == (2, each + object_bytes(completed(10)) + held)


def test_a_kept_object_is_charged_what_it_takes_in_memory() -> None:
    """Its dicts, lists, strings and bookkeeping, not its answer's bytes, which were a
    tenth of it for small objects: what an operation's objects add to the memory is
    what the memo counts for them."""
    store, _ = fleet(300)
    kept = Answers.of(store.memos).completed

    run(store, PAGE, budget=Budget(30.0, 2**30))  # whatever the process makes once
    gc.collect()
    tracemalloc.start()
    try:
        before, charged = tracemalloc.take_snapshot(), kept.bytes
        again = parse("query Again " + PAGE_TEXT)  # another operation: objects of its own
        run(store, again, budget=Budget(30.0, 2**30))
        gc.collect()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    grown = sum(d.size_diff for d in after.compare_to(before, "filename"))
    assert 0.8 * grown <= kept.bytes - charged <= 1.5 * grown


def test_the_operations_kept_objects_hold_count_once_each() -> None:
    """A query's text can make its operation larger than its answer: 20 distinct
    operations of a long argument each, one tiny object each, stay within the bound."""

    def operation(i: int, length: int) -> Any:
        text = '{ hypervisors { nodes { name r: resource(name: "%s") { free } } } }' % (
            f"{i:04d}" + "x" * length
        )
        return parse(text).definitions[0]

    kept = Kept(max_bytes=2_000_000)
    record = Thing()
    for i in range(20):
        kept.put((i,), record, Completed(operation(i, 1_000), {}, {}, 10))
        assert kept.bytes <= 2_000_000
    assert kept.evictions > 0
    kept.put((99,), record, Completed(operation(99, 100_000), {}, {}, 10))
    assert kept.get((99,)) is None  # its operation alone is larger than the bound
    while len(kept) > 0:
        kept._release(kept._kept.pop(next(iter(kept._kept))))
    assert kept.bytes == 0 and not kept._operations


def test_a_kept_object_goes_with_its_record() -> None:
    """A record the store replaced is never reached again: its objects are forgotten,
    and their bytes with them, instead of holding it till the bounds push them out."""
    store, objects = fleet()
    run(store, PAGE)
    kept = Answers.of(store.memos).completed
    before = (len(kept), kept.bytes)
    name = objects[2]["metadata"]["name"]
    replaced = weakref.ref(store.snapshot.by_name[name])
    # More changes than the store's journal of recent ones holds records of.
    for version in range(2_000):
        metadata = {**objects[2]["metadata"], "resourceVersion": str(version)}
        store.upsert(dict(objects[2], metadata=metadata))
    assert replaced() is None
    run(store, PAGE)  # keeps the new record's object, and forgets the old one's
    assert (len(kept), kept.bytes) == before
    assert kept.evictions == 0


def test_fragments_of_the_record_are_reused_and_others_are_not() -> None:
    store, _ = fleet()
    spread = parse(
        "{ hypervisors { nodes { ...Host } } } fragment Host on Hypervisor { name zone"
        ' ... on Hypervisor { cpu: resource(name: "cpu") { free } } }'
    )
    first = nodes(run(store, spread))
    assert all(a is b for a, b in zip(first, nodes(run(store, spread)), strict=True))
    assert first[0]["cpu"] is not None and "zone" in first[0]
    across = parse(
        "{ hypervisors { nodes { ...Host } } }"
        " fragment Host on Hypervisor { name consumers { hypervisor { name } } }"
    )
    first = nodes(run(store, across))
    assert not any(a is b for a, b in zip(first, nodes(run(store, across)), strict=True))
