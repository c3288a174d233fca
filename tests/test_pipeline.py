"""Parsing a fleet as it arrives: every batch counted once, and only so many waiting."""

from __future__ import annotations

import asyncio
import gc
import threading
from typing import Any

import pytest

from gateway.sources.kubernetes.pipeline import Batches, parsing
from gateway.store.store import Batch, Store
from tests.objects import hypervisor


async def test_batches_add_up_to_the_whole_set_with_positions_across_batches() -> None:
    batches = Batches(Store())
    await batches.add([hypervisor("a"), hypervisor("b")])
    await batches.add([])
    await batches.add([hypervisor("c"), {"metadata": {}}])
    prepared = await batches.finish()
    assert set(prepared.hypervisors) == {"a", "b", "c"}
    assert list(prepared.rejected) == ["#3"]  # its place in the whole set, not in its batch
    assert batches.count == 4


async def test_objects_are_read_in_the_worker_one_at_a_time_as_they_are_parsed() -> None:
    store, reads = Store(), []
    parsed = Store.prepare

    def prepare(objects: Any, start: int = 0) -> Batch:
        reads.append(("prepare", threading.get_ident()))
        return parsed(store, objects, start)

    def read(name: str) -> dict[str, Any]:
        reads.append((name, threading.get_ident()))
        return hypervisor(name)

    store.prepare = prepare  # type: ignore[method-assign]
    batches = Batches(store, read)
    await batches.add(["a", "b"])
    assert set((await batches.finish()).hypervisors) == {"a", "b"}
    assert [what for what, _ in reads] == ["prepare", "a", "b"]  # read lazily, in order
    assert len({thread for _, thread in reads}) == 1
    assert reads[0][1] != threading.get_ident()  # in the worker, not on the loop


class _HeldStore(Store):
    """Parses only when let go, to see how far the reader may run ahead."""

    def __init__(self) -> None:
        super().__init__()
        self.go = threading.Event()

    def prepare(self, objects: Any, start: int = 0) -> Batch:
        self.go.wait(5)
        return super().prepare(objects, start)


async def test_no_more_than_two_batches_wait_for_the_parser() -> None:
    store = _HeldStore()
    batches = Batches(store)
    await batches.add([hypervisor("a")])
    await batches.add([hypervisor("b")])
    third = asyncio.ensure_future(batches.add([hypervisor("c")]))
    await asyncio.sleep(0)  # one turn of the loop: the add runs until it waits, or returns
    assert not third.done() and batches.count == 2  # c is not handed to the held parser
    store.go.set()
    await third
    assert set((await batches.finish()).hypervisors) == {"a", "b", "c"}


async def test_parsing_pauses_the_collector_and_cancels_what_is_left_on_the_way_out() -> None:
    store = _HeldStore()
    assert gc.isenabled()
    with pytest.raises(RuntimeError, match="the stream broke"), parsing(store) as batches:
        assert not gc.isenabled()
        await batches.add([hypervisor("a")])
        raise RuntimeError("the stream broke")
    assert gc.isenabled()
    await asyncio.sleep(0)  # one turn of the loop: a cancelled task ends at its next step
    pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task() and not t.done()]
    assert pending == []
    store.go.set()
