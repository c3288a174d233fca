"""The benchmark's code at a tiny size, so that it keeps working (its figures are not checked)."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from bench import answers, apply, capacity_metrics
from bench.fleet import loaded_once
from bench.latency import Poller
from bench.live import measure
from bench.report import TARGETS, markdown
from bench.run import Options, run
from gateway.sources.demo.source import generate
from harness.controlplane import HYPERVISORS, ControlPlane


@pytest.mark.cluster
def test_a_tiny_run_measures_every_figure_and_reports_every_target(tmp_path: Path) -> None:
    if shutil.which("wrk") is None:
        pytest.skip("wrk is not installed (apt-get install wrk)")
    options = Options(
        size=50,
        bookings=5,
        runs=2,
        cached_runs=3,
        writes=3,
        starts=2,
        rps_seconds=1,
        workdir=tmp_path,
        cluster=tmp_path / "cluster",
    )
    # run() itself fails when the gateway's free capacity differs from the script's.
    figures = run(options, log=lambda message: None)
    assert figures["load_seconds"] > 0

    assert figures["size"] == 50
    assert figures["delay_answer"].n == figures["delay_watch"].n == 3
    assert figures["ready_loaded"].n == figures["ready_empty"].n == 2
    assert figures["rss_loaded"] > 0 and figures["rss_empty"] > 0
    assert figures["rss_empty_run"] > 0
    assert figures["list_bytes"] > 0
    assert figures["rps_gateway"] > 0 and figures["rps_bare"] > 0
    assert figures["rss_relist_peak"] > 0
    report = markdown([figures, figures], "python -m bench --sizes 50")
    assert report.count("PASS") + report.count("FAIL") == 2 * len(TARGETS)
    assert "Growth with fleet size" in report
    assert report.count("| start to ready |") == 2  # the fixed cost and the cost per host
    assert report.count("| resident memory after the run's queries |") == 2

    # The cluster kept: the next run finds the fleet loaded, and says so.
    plane = ControlPlane(workdir=options.cluster)
    try:
        plane.start()
        assert loaded_once(plane, generate(50, seed=0, bookings_per_host=5), 5) is None
        with plane.client() as http:
            assert len(http.get(HYPERVISORS).json()["items"]) == 50
    finally:
        plane.stop()
    kept = markdown([figures | {"load_seconds": None}], "python -m bench --sizes 50")
    assert "kept from an earlier run" in kept


def test_the_live_figures_come_from_a_real_websocket() -> None:
    figures = measure(size=20, runs=2, cached_runs=3, changes=3)

    assert figures["change_to_message"].n == 3
    assert figures["capacity_cached"].n == 3
    assert figures["capacity_uncached"].median > 0


def test_the_apply_figures_come_from_a_loaded_store() -> None:
    parse, applied = apply.measure(size=30, bookings=3, events=4)

    assert parse.n == applied.n == 4
    assert parse.median > 0 and applied.median > 0


async def test_the_answers_figures_time_every_query_kind_through_the_app() -> None:
    figures = await answers.measure(size=30, bookings=3, runs=3)
    assert set(figures) == {"zones", "page", "fit", "host", "bare"}
    for read, elsewhere, unchanged, _ in figures.values():
        assert read.n == elsewhere.n == unchanged.n == 3
        assert read.median > 0 and elsewhere.median > 0 and unchanged.median > 0
    # The lookup reads the first host only: a change of the last is no change to it.
    assert figures["host"].kept == 1


def test_the_capacity_scrape_figures_come_from_a_loaded_store() -> None:
    figures = capacity_metrics.measure(size=40, runs=3)
    assert figures["samples"] > 40 * 2 * 5  # every host, both resources, most figures
    for name in ("list_decode", "prime", "cold", "event_median", "status_round", "relist"):
        assert figures[name] > 0, name
    assert figures["unchanged"] < figures["prime"]  # the same snapshot is not rendered again


async def test_the_poller_reads_a_refusal_whole_and_reopens_a_closed_connection() -> None:
    answers = [
        b"HTTP/1.1 429 Too Many Requests\r\nContent-Length: 7\r\n\r\nbusy!!!",
        b'HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\n{"n": 1}',
        b"HTTP/1.1 408 Request Timeout\r\nContent-Length: 4\r\n\r\nslow",
    ]
    connections = 0

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        while answers:
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            await reader.readexactly(length)
            writer.write(answers.pop(0))
            await writer.drain()
            if not answers:  # then a fresh connection answers
                answers.append(b'HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\n{"n": 2}')
                break
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server, Poller(f"http://127.0.0.1:{port}") as poller:
        with pytest.raises(RuntimeError, match="429 Too Many Requests from the gateway"):
            await poller.ask(b"{}")
        assert await poller.ask(b"{}") == {"n": 1}  # the refusal's body was not left behind
        assert await poller.ask(b"{}") == {"n": 2}  # the 408 closed it: asked again anew
    assert connections == 2
