"""The ceiling benchmark at a tiny size, and what keeping up means."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.ceiling import Options, ceiling, markdown
from bench.ceiling.phase import kept_up
from bench.churn import Load
from bench.stats import summarize


def _phase(rate: float, achieved: float, growth: float | None) -> dict[str, Any]:
    answer = summarize([0.01])
    return {
        "rate": rate,
        "achieved": achieved,
        "events_per_second": achieved,
        "growth": growth,
        "answer": answer,
        "unanswered": 0,
        "subscriptions_ended": {"totals": 0, "hosts": 0},
    }


def test_a_phase_kept_up_if_its_changes_left_on_time_and_its_lag_did_not_grow() -> None:
    assert kept_up(_phase(1000, 990, 0.02))
    assert not kept_up(_phase(1000, 990, 0.5))  # the lag grew by half a second
    assert not kept_up(_phase(1000, 700, 0.0))  # the gateway held the replay back
    assert not kept_up(_phase(1000, 1000, None))  # nothing was answered
    assert not kept_up(_phase(1000, 990, 0.02) | {"unanswered": 1})  # one change never was
    assert not kept_up(_phase(1000, 990, 0.02) | {"events_per_second": 500})  # buffered, unread
    cut_off = {"subscriptions_ended": {"totals": 0, "hosts": 1}}
    assert not kept_up(_phase(1000, 990, 0.02) | cut_off)  # a subscriber shed to keep up


@pytest.mark.cluster
def test_a_tiny_ceiling_run_records_replays_and_steps_the_rate(tmp_path: Path) -> None:
    load = Load(dashboards=1, fits=1, watched=3, totals=2, hosts=2, writers=1, probes=4, tail=2)
    options = Options(record_rate=8, record_seconds=2, max_rate=32, quiet=2)
    run = ceiling(12, [8], 3, tmp_path, log=lambda message: None, readers=load, options=options)

    assert run["recorded"]["writes"] > 0 and run["recorded"]["apiserver_cpu_per_write"] > 0
    # The readers alone first: no change sent, none to keep up with.
    quiet, *rated = run["phases"]
    assert quiet["rate"] == 0 and quiet["kept_up"] is None and quiet["achieved"] == 0
    assert quiet["message"] is None and quiet["answer"] is None
    assert set(quiet["queries"]) == {"zones", "page", "fit", "host"} and quiet["cpu_share"] > 0
    # The asked rate, then doubled for as long as the phase before kept up (a tiny
    # fleet on a loaded machine may not keep up even at 8 a second).
    rates, kept_ups = [p["rate"] for p in rated], [p["kept_up"] for p in rated]
    assert rates == [8 * 2**n for n in range(len(rates))] and rates[-1] <= 32
    assert all(kept_ups[:-1]) and (not kept_ups[-1] or rates[-1] * 2 > 32)
    for phase in rated:
        assert phase["achieved"] > 0 and phase["unsent"] == 0
        assert phase["message"] is not None and phase["answer"] is not None
        assert set(phase["queries"]) == {"zones", "page", "fit", "host"}
        assert phase["floor"] is not None and phase["errors"] == 0
        assert phase["cpu_share"] > 0 and phase["events_per_second"] > 0
    kept = [p["rate"] for p in run["phases"] if p["kept_up"]]
    assert run["ceiling"] == (max(kept) if kept else None)
    report = markdown([run])
    assert report.count("| 12 |") == len(run["phases"]) * 2 + 1  # two tables by phase, one by size
