"""Pausing the cyclic collector restores whatever state it found."""

from __future__ import annotations

import gc
import sys
import weakref

import pytest

from gateway.store.collector import Spacing, collector_paused, freeze, settle


def test_collector_is_paused_inside_and_restored_after() -> None:
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_collector_is_restored_when_the_block_fails() -> None:
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_a_collector_disabled_by_the_caller_stays_disabled() -> None:
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_settle_freezes_what_is_alive_and_keeps_collecting_new_objects() -> None:
    gc.unfreeze()
    try:
        settle()
        assert gc.get_freeze_count() > 0
        assert gc.isenabled()
    finally:
        gc.unfreeze()


class Cycle:
    """An object that refers to itself: only the cyclic collector frees it."""

    def __init__(self) -> None:
        self.me = self


def test_a_thorough_settle_freezes_no_cyclic_garbage_of_the_oldest_generation() -> None:
    """Garbage that lived long enough to reach the oldest generation (the executor
    of a long query that ended in an error) is collected, not kept for good."""
    gc.unfreeze()
    try:
        with collector_paused():  # no collection but the ones here
            garbage = Cycle()
            gone = weakref.ref(garbage)
            gc.collect()  # it survives one: it is in the oldest generation now
            del garbage
            settle(thorough=False)
            assert gone() is not None  # frozen as it was ...
            settle()
        assert gone() is None  # ... until the next thorough settle
    finally:
        gc.unfreeze()


def test_a_settle_that_is_not_thorough_keeps_the_interpreters_free_lists() -> None:
    """A whole collection empties them (40,000 blocks of tuples alone, freed to be
    asked for again): 2 ms at every settle, however little was new."""

    def fill_the_tuples_free_lists() -> None:
        made = [(*range(size), object()) for size in range(20) for _ in range(2000)]
        del made

    gc.unfreeze()
    try:
        with collector_paused():
            fill_the_tuples_free_lists()
            before = sys.getallocatedblocks()
            settle(thorough=False)
            kept = before - sys.getallocatedblocks()
            fill_the_tuples_free_lists()
            before = sys.getallocatedblocks()
            settle()
            emptied = before - sys.getallocatedblocks()
        assert kept < 1000 < 20_000 < emptied
    finally:
        gc.unfreeze()


def test_a_cycle_alive_at_one_settle_is_collected_at_the_next_thorough_one() -> None:
    """A request in flight when the store settles (its executor, error and traceback
    refer to each other) becomes garbage later: frozen, it was never freed. A settle
    that is not thorough collects only what was made since the last one."""
    gc.unfreeze()
    try:
        in_flight = Cycle()
        gone = weakref.ref(in_flight)
        settle()  # frozen while alive
        del in_flight
        gc.collect()
        assert gone() is not None  # out of the collector's reach until the next settle
        settle(thorough=False)
        assert gone() is not None  # ... the next thorough one
        settle()
        assert gone() is None
    finally:
        gc.unfreeze()


def test_a_freeze_collects_nothing_and_a_thorough_settle_frees_its_cycles() -> None:
    """The first settle, after a whole new set, only freezes: a collection would walk
    every new record for nothing. A cycle that was garbage all the same is kept until
    the next thorough settle, not for good."""
    gc.unfreeze()
    try:
        with collector_paused():
            garbage = Cycle()
            gone = weakref.ref(garbage)
            del garbage
            freeze()
            assert gone() is not None and gc.get_freeze_count() > 0
            settle(thorough=False)
            assert gone() is not None
            settle()
        assert gone() is None
    finally:
        gc.unfreeze()


def test_a_spaced_pause_is_due_again_after_a_thousand_times_its_duration() -> None:
    now = [0.0]
    spacing = Spacing(1000, lambda: now[0])
    assert spacing.due()  # never timed: due at once
    with spacing.spaced():
        now[0] += 0.002  # it takes 2 ms
    assert not spacing.due()
    now[0] += 1.99  # it ended at 2 ms: the next is due at 2.002 s
    assert not spacing.due()
    now[0] += 0.01
    assert spacing.due()
