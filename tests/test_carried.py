"""Passes over the fleet made once for every question asking at the same time."""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Iterable

import pytest

from gateway.domain.records import Hypervisor
from gateway.store.carried import Journal, Making
from tests.support import eventually


class Count:
    """A stand-in for a ledger: how many records a change set took out and put in."""

    def __init__(self, value: int) -> None:
        self.value = value

    def apply(self, removed: Iterable[Hypervisor], added: Iterable[Hypervisor]) -> Count:
        return Count(self.value - len(list(removed)) + len(list(added)))


def waiting(threads: list[threading.Thread]) -> bool:
    """Whether every thread is blocked waiting for another's pass."""
    frames = sys._current_frames()
    for thread in threads:
        frame = frames.get(thread.ident or -1)
        names = []
        while frame is not None:
            names.append(frame.f_code.co_name)
            frame = frame.f_back
        if "once" not in names or "wait" not in names:
            return False
    return True


async def test_askers_meanwhile_share_the_first_pass() -> None:
    making = Making(Journal())
    release = threading.Event()
    passes: list[int] = []

    def make() -> Count:
        passes.append(1)
        release.wait()
        return Count(7)

    results: list[int] = []

    def ask() -> None:
        results.append(making.once("zone", 5, make).value)

    first = threading.Thread(target=ask)
    first.start()
    await eventually(lambda: passes == [1])
    others = [threading.Thread(target=ask) for _ in range(5)]
    for thread in others:
        thread.start()
    await eventually(lambda: waiting(others))
    release.set()
    for thread in [first, *others]:
        await asyncio.to_thread(thread.join)
    assert passes == [1]
    assert results == [7] * 6


async def test_an_asker_of_a_later_snapshot_gets_the_pass_carried_to_it() -> None:
    journal = Journal()
    making = Making(journal)
    release = threading.Event()
    host = object()
    journal.record(6, ([], [host]))  # type: ignore[list-item]
    journal.record(7, ([], [host]))  # type: ignore[list-item]

    def make() -> Count:
        release.wait()
        return Count(10)

    got: dict[str, int] = {}
    first = threading.Thread(target=lambda: got.update(at5=making.once("k", 5, make).value))
    first.start()
    await eventually(lambda: bool(making._passes))
    later = threading.Thread(target=lambda: got.update(at7=making.once("k", 7, make).value))
    later.start()
    await eventually(lambda: waiting([later]))
    release.set()
    for thread in (first, later):
        await asyncio.to_thread(thread.join)
    assert got == {"at5": 10, "at7": 12}


def test_an_asker_of_an_earlier_snapshot_makes_its_own() -> None:
    making = Making(Journal())
    inner: list[int] = []

    def outer() -> Count:
        # Asked while the pass over generation 5 runs: generation 3 cannot be carried to.
        inner.append(making.once("k", 3, lambda: Count(3)).value)
        return Count(5)

    assert making.once("k", 5, outer).value == 5
    assert inner == [3]


def test_a_failed_pass_leaves_the_askers_to_make_their_own() -> None:
    making = Making(Journal())

    def broken() -> Count:
        raise ValueError("cannot count")

    with pytest.raises(ValueError):
        making.once("k", 1, broken)
    assert making.once("k", 1, lambda: Count(1)).value == 1  # not left waiting
    assert not making._passes
