"""The demo churn's clock: steps due at start + k x interval, whatever each one cost."""

from __future__ import annotations

import pytest

from gateway.sources.demo.pace import CATCH_UP, Pace


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_step_that_takes_time_does_not_delay_the_steps_after_it() -> None:
    clock = Clock()
    pace = Pace(0.01, clock)
    taken = 0
    for _ in range(100):
        clock.now += pace.wait()
        for _ in range(pace.due()):
            taken += 1
            clock.now += 0.004  # the step's own cost
    # A sleep after each step would have taken 100 x 0.014 s.
    assert pace.wait() <= 0.01
    assert clock.now - 100.0 == pytest.approx(100 * 0.01 + 0.004)
    assert taken == pace.taken == 100 and pace.skipped == 0
    assert pace.achieved() == pytest.approx(100 / (100 * 0.01 + 0.004))


def test_late_steps_are_caught_up_on_at_once() -> None:
    clock = Clock()
    pace = Pace(0.01, clock)
    clock.now += 0.05
    assert pace.wait() == 0.0
    assert pace.due() == 5
    assert pace.due() == 0
    assert pace.wait() == pytest.approx(0.01)


def test_steps_later_than_the_catch_up_are_skipped() -> None:
    clock = Clock()
    pace = Pace(0.01, clock)
    clock.now += 3.0
    assert pace.due() == round(CATCH_UP / 0.01)
    assert pace.skipped == 300 - round(CATCH_UP / 0.01)
    assert pace.wait() == pytest.approx(0.01)


def test_a_pace_needs_a_positive_interval() -> None:
    with pytest.raises(ValueError, match="positive interval"):
        Pace(0)
