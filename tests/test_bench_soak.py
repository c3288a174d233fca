"""The soak at a tiny size, in its processes; and how its figures are read from the samples."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from bench.churn import Load
from bench.soak import Soak, figures, markdown, soak
from bench.soak.documents import FAILING
from bench.soak.logs import NOT_JSON, errors
from bench.soak.samples import FROZEN_OBJECTS, LIVE_SNAPSHOTS, Sample, budgets
from bench.soak.sockets import PROTOCOLS

MIB = 1024


def _run(
    rss_mib: list[float],
    live: list[float] | None = None,
    warmup: float = 1,
    frozen: list[float] | None = None,
) -> dict[str, Any]:
    """A run sampled once a minute, ``warmup`` minutes of warm-up."""
    samples = []
    for minute, rss in enumerate(rss_mib):
        gauges = {
            "hypervisor_gateway_memo_bytes": 100.0,
            "hypervisor_gateway_memo_max_bytes": 400.0,
        }
        if live is not None:
            gauges[LIVE_SNAPSHOTS] = live[minute]
        if frozen is not None:
            gauges[FROZEN_OBJECTS] = frozen[minute]
        samples.append({"at": minute * 60.0, "rss_kib": int(rss * MIB), "gauges": gauges})
    return {
        "plan": dataclasses.asdict(Soak(minutes=len(rss_mib), warmup=warmup, every=60)),
        "ready_seconds": 1.0,
        "peak_kib": int(max(rss_mib) * MIB),
        "samples": samples,
        "budgets": {"hypervisor_gateway_memo_bytes": 400.0},
        "outcomes": {"zones over http": {"ok": 3}},
        "latencies": {},
        "log_errors": {},
        "stopped_over_limit": False,
    }


def test_the_slope_leaves_the_warm_up_out_and_is_per_hour() -> None:
    # A jump while warming up, then 1 MiB a minute: 60 MiB an hour, 60% of 100 MiB.
    run = _run([50, 100, 101, 102, 103, 104])

    f = figures(run)

    assert f["rss_warm_mib"] == 100 and f["rss_end_mib"] == 104
    assert f["slope_mib_per_hour"] == pytest.approx(60)
    assert f["slope_share"] == pytest.approx(0.6)
    assert "- RSS NOT flat after warm-up: slope +60.0 MiB/h" in markdown(run)


def test_rss_that_only_wobbles_after_warm_up_is_flat() -> None:
    f = figures(_run([50, 100, 101, 100, 101, 100, 101, 100]))

    assert abs(f["slope_share"]) < 0.05
    assert f["rss_max_mib"] == 101 and f["peak_mib"] == 101


def test_live_snapshots_are_bounded_unless_the_later_half_holds_more() -> None:
    rss = [100.0] * 9
    bounded = figures(_run(rss, live=[1, 1, 3, 2, 1, 3, 2, 1, 2]))
    rising = figures(_run(rss, live=[1, 1, 2, 3, 4, 5, 6, 7, 8]))

    assert bounded["live"] == (1, 2, 3) and bounded["live_bounded"] is True
    assert rising["live"] == (1, 4.5, 8) and rising["live_bounded"] is False
    assert "- live snapshots NOT bounded: max 8" in markdown(_run(rss, [1, 1, 2, 3, 4, 5, 6, 7, 8]))


def test_without_the_live_snapshots_gauge_the_report_says_it_is_absent() -> None:
    report = markdown(_run([100, 100, 100]))

    assert f"- live snapshots: absent (`{LIVE_SNAPSHOTS}` not in /metrics)" in report
    assert "| `hypervisor_gateway_memo_bytes` | 100 | 400 (25% used) |" in report
    assert "memo_max_bytes" not in report  # a budget, not a memo of its own


def test_frozen_objects_are_shown_from_warm_up_end_with_their_slope_an_hour() -> None:
    """A count, not a memo: 500 more objects a minute after warm-up is 30,000 an hour."""
    run = _run([100.0] * 5, frozen=[10, 1000, 1500, 2000, 2500])

    assert figures(run)["frozen"] == (1000, 2500, pytest.approx(30_000))
    report = markdown(run)
    assert "- frozen objects after warm-up: 1,000 -> 2,500 (+30,000 an hour)" in report
    assert "frozen_objects` |" not in report  # not listed among the bytes
    assert f"- frozen objects: absent (`{FROZEN_OBJECTS}`" in markdown(_run([100.0] * 3))


def test_a_budget_is_read_from_the_help_or_from_a_limit_gauge_beside_the_bytes() -> None:
    gauges = {
        "hypervisor_gateway_a_bytes": 1.0,
        'hypervisor_gateway_memo_bytes{memo="b"}': 2.0,
        'hypervisor_gateway_memo_max_bytes{memo="b"}': 20.0,
        'hypervisor_gateway_memo_bytes{memo="c"}': 3.0,
        'hypervisor_gateway_memo_budget_bytes{memo="c"}': 30.0,
        "hypervisor_gateway_d_bytes": 4.0,
    }
    named = {"hypervisor_gateway_a_bytes": 10.0}

    found = budgets(Sample(0.0, 1, gauges), named)

    assert found == {
        "hypervisor_gateway_a_bytes": 10.0,
        'hypervisor_gateway_memo_bytes{memo="b"}': 20.0,
        'hypervisor_gateway_memo_bytes{memo="c"}': 30.0,
    }


def test_error_lines_of_one_cause_count_as_one_kind(tmp_path: Path) -> None:
    def line(level: str, message: str, exception: str | None = None) -> str:
        entry = {"level": level, "logger": "asyncio", "message": message}
        return json.dumps(entry | ({"exception": exception} if exception else {}))

    never = "Task exception was never retrieved\nfuture: <Task finished name='Task-{}' coro=<H.run() done, defined at h.py:1> exception=Gone()>"
    log = tmp_path / "gateway.log"
    log.write_text(
        "\n".join(
            [
                line("error", never.format(12), "Traceback ...\n  ...\nmodule.Gone"),
                line("error", never.format(345), "Traceback ...\nmodule.Gone"),
                line("info", "started"),
                line("critical", "out of memory"),
                "Traceback (most recent call last):",
            ]
        )
    )

    assert errors(log) == {
        "asyncio: Task exception was never retrieved future: <Task finished name='Task-N' run()"
        " exception=Gone()> (module.Gone)": 2,
        "asyncio: out of memory": 1,
        NOT_JSON: 1,
    }


def test_a_short_soak_drives_every_kind_and_samples_the_gateway(tmp_path: Path) -> None:
    readers = Load(dashboards=1, fits=1, watched=2, totals=1, hosts=1)
    plan = Soak(
        size=30,
        minutes=0.2,
        warmup=0.05,
        every=1,
        failing=0.1,
        timeouts=2,
        abuse=1,
        visitors=2,
        stay=1,
        readers=readers,
    )

    run = soak(plan, tmp_path, log=lambda message: None)

    samples = run["samples"]
    assert len(samples) >= 3 and all(s["rss_kib"] > 0 for s in samples)
    assert run["peak_kib"] >= max(s["rss_kib"] for s in samples)
    assert "hypervisor_gateway_completed_objects_bytes" in samples[-1]["gauges"]
    assert samples[-1]["gauges"][FROZEN_OBJECTS] > 0
    assert "hypervisor_gateway_completed_objects_bytes" in run["budgets"]
    outcomes = run["outcomes"]
    for kind, (code, _) in FAILING.items():
        for transport in ("http", *PROTOCOLS):
            assert set(outcomes[f"{kind} over {transport}"]) == {code}, (kind, transport)
    for kind in ("aliased page", "new filter", "over time"):
        assert sum(outcomes[f"{kind} over http"].values()) >= 1, kind
    for protocol in PROTOCOLS:
        visits = outcomes[f"visit over {protocol}"]
        assert sum(n for ended, n in visits.items() if ended != "messages") >= 1, visits
    assert outcomes["zones over http"]["ok"] >= 1 and outcomes["zones over http"]["error"] == 0
    report = markdown(run)
    assert "Soak of 30 demo hosts" in report and "- RSS " in report


def test_a_gateway_over_the_rss_limit_is_stopped_and_the_clients_still_end(
    tmp_path: Path,
) -> None:
    readers = Load(dashboards=1, fits=1, watched=1, totals=1, hosts=1)
    plan = Soak(size=20, minutes=0.1, every=1, visitors=1, rss_limit_mib=1, readers=readers)

    run = soak(plan, tmp_path, log=lambda message: None)

    assert run["stopped_over_limit"] is True and len(run["samples"]) == 1
    assert run["outcomes"]["zones over http"]["error"] >= 1
    assert "- stopped early: RSS over 1 MiB" in markdown(run)
