"""Roles in processes of their own, one window for all, failures reported to the parent."""

from __future__ import annotations

import asyncio
import os
import time

import pytest

from harness.crowd import Crowd, Gate


async def whoami(gate: Gate, label: str) -> tuple[str, int, tuple[float, float, float]]:
    window = await gate.ready()
    await window.wait_start()
    return label, os.getpid(), (window.start, window.stop, window.end)


async def late(gate: Gate, delay: float) -> float:
    window = await gate.ready()
    await asyncio.sleep(max(0.0, window.start + delay - time.monotonic()))
    return delay


async def fails(gate: Gate) -> None:
    raise ValueError("this role cannot start")


async def exits(gate: Gate) -> None:
    os._exit(3)


def test_each_role_runs_in_its_own_process_within_one_window() -> None:
    with Crowd() as crowd:
        crowd.add("a", whoami, "first")
        crowd.add("b", whoami, "second")
        window = crowd.open(seconds=0.2, tail=0.1)
        results = crowd.collect()

    assert {label for label, _, _ in results.values()} == {"first", "second"}
    pids = {pid for _, pid, _ in results.values()}
    assert len(pids) == 2 and os.getpid() not in pids
    assert {times for _, _, times in results.values()} == {(window.start, window.stop, window.end)}
    assert window.stop - window.start == pytest.approx(0.2)
    assert window.end - window.stop == pytest.approx(0.1)
    assert time.monotonic() >= window.start  # the same clock in every process


def test_roles_ending_together_in_any_order_are_all_collected() -> None:
    with Crowd() as crowd:
        for n in range(6):  # the last added ends first, all within one poll of the parent
            crowd.add(f"late-{n}", late, (5 - n) * 0.01)
        window = crowd.open(seconds=0)
        time.sleep(max(0.0, window.start + 0.5 - time.monotonic()))  # every one has ended
        results = crowd.collect()

    assert sorted(results.values()) == [n * 0.01 for n in range(6)]


def test_a_role_that_fails_raises_its_traceback_in_the_parent() -> None:
    with Crowd() as crowd:
        crowd.add("ok", whoami, "fine")
        crowd.add("broken", fails)
        with pytest.raises(RuntimeError, match=r"(?s)role broken failed.*this role cannot start"):
            crowd.open(seconds=0.1, timeout=60)


def test_a_role_that_dies_without_a_word_is_reported() -> None:
    with Crowd() as crowd:
        crowd.add("gone", exits)
        with pytest.raises(RuntimeError, match="role gone exited with 3 before ready"):
            crowd.open(seconds=0.1, timeout=60)


def test_two_roles_cannot_share_a_name() -> None:
    with Crowd() as crowd:
        crowd.add("same", whoami, "one")
        with pytest.raises(ValueError, match="already in the crowd"):
            crowd.add("same", whoami, "two")
        crowd.open(seconds=0)
        crowd.collect()
