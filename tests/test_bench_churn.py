"""The churn benchmark at a tiny size, in its processes; and how writes meet arrivals."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.churn import Load, churn, markdown
from bench.churn.arrivals import delays


def test_a_write_is_matched_to_the_first_arrival_at_its_version_or_newer() -> None:
    bare = {"a": [(10, 1.5), (12, 2.5)], "b": [(11, 2.0)]}
    coalesced = {"a": [(12, 3.0)], "b": [(11, 2.25)]}
    stamps = [("a", 10, 1.0), ("b", 11, 1.75), ("a", 12, 2.0)]

    watched, served = delays(stamps, bare, [coalesced, bare])

    assert watched.seconds == [0.5, 0.25, 0.5]
    assert served.seconds == [2.0, 0.5, 0.5, 0.25, 1.0, 0.5]
    assert watched.missing == served.missing == 0


def test_a_write_the_watch_never_saw_at_its_version_is_not_counted() -> None:
    bare = {"a": [(10, 1.5)]}
    stamps = [("a", 10, 1.0), ("a", 9, 0.5), ("a", 11, 2.0), ("c", 5, 0.0)]

    watched, served = delays(stamps, bare, [{}])

    # 9 was a no-op (no event at 9), 11 and c never arrived.
    assert watched.seconds == [0.5] and watched.missing == 3
    assert served.seconds == [] and served.missing == 1


@pytest.mark.cluster
def test_a_tiny_churn_run_measures_every_figure_in_processes_of_its_own(tmp_path: Path) -> None:
    load = Load(
        dashboards=1, fits=1, watched=3, totals=2, hosts=2, writers=2, in_flight=4, probes=2, tail=2
    )
    run = churn(12, [8], 3, tmp_path, log=lambda message: None, readers=load)

    (phase,) = run["phases"]
    assert phase["achieved"] > 0 and phase["write_failures"] == 0
    assert set(phase["queries"]) == {"zones", "page", "fit", "host"}
    assert phase["errors"] == 0
    for kind in ("watch", "message", "answer", "answer_watch"):
        assert phase["delays"][kind] is not None, kind
    assert phase["messages"]["totals"] > 0 and phase["messages"]["hosts"] > 0
    assert phase["subscriptions_ended"] == {}
    assert phase["host_hit_rate"] is not None and 0 < phase["host_ceiling"] < 1
    assert phase["cpu_share"] > 0 and phase["rss_kib"] > 0
    assert phase["events_per_second"] > 0
    assert phase["baseline"].n >= 1
    assert phase["every_host"].n >= 1 and phase["every_host_errors"] == 0
    report = markdown([run])
    assert phase["floor"].n >= 1
    assert report.count("| 12 |") == 3  # a row in each table
