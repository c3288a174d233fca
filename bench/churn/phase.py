"""One churn phase: every role in its own process, the gateway's figures over one window.

The window is ``seconds`` of the whole load. The writers, the bare watch and
the subscribers go on for a tail after it, so that the window's last writes
arrive under the same load. Then a second window: the writers again, with
the LIST + compute baseline (in a process of its own) and the host pages
alone, whose cache hits are counted there: the response cache's counters are
the gateway's, not per query.
"""

from __future__ import annotations

import dataclasses
import math
import os
import random
import re
import time
from pathlib import Path
from typing import Any

import httpx

from bench.churn import arrivals, readers, writers
from bench.fleet import Api
from bench.stats import summarize
from harness.crowd import Crowd, Window
from harness.processes import Server, memory_kib

__all__ = [
    "EVERY_HOST",
    "HOST",
    "LIVE",
    "PERIOD",
    "QUERIES",
    "Load",
    "add_readers",
    "add_writers",
    "cpu_seconds",
    "gateway_figures",
    "measure",
]

ZONES = "{ fleetCapacity(groupBy: ZONE) { key resources { name capacity booked free } } }"
PAGE = '{ hypervisors(first: 100) { nodes { name zone cpu: resource(name: "cpu") { free } memory: resource(name: "memory") { free } } } }'  # noqa: E501
FIT = '{ hypervisors(filter: {canFit: [{resource: "cpu", amount: "8"}, {resource: "memory", amount: "17179869184"}]}, first: 1) { totalCount } }'  # noqa: E501
HOST = (
    'query Host($n: String!) { hypervisor(name: $n) { name zone resource(name: "cpu") { free } } }'
)
#: Every host's name, zone, free cpu and memory: the question a script answers by LIST.
EVERY_HOST = 'query Every($n: Int!) { hypervisors(first: $n) { nodes { name zone cpu: resource(name: "cpu") { free } memory: resource(name: "memory") { free } } } }'  # noqa: E501
#: Query kinds, as the report names them.
QUERIES = {"zones": ZONES, "page": PAGE, "fit": FIT, "host": HOST}
LIVE = {
    "totals": "subscription { fleetCapacityChanged(groupBy: ZONE) { key resources { name free } } }",  # noqa: E501
    "hosts": "subscription { hypervisorChanged { type hypervisor { name resourceVersion } } }",
}
#: Seconds between two polls of one dashboard, or of one host's detail page.
PERIOD = 2.0


@dataclasses.dataclass(frozen=True)
class Load:
    """The readers and writers of a phase (the issue's load by default)."""

    #: Dashboards, each polling the zone totals and a 100-host page every 2 s.
    dashboards: int = 20
    #: canFit clients, each asking once a second.
    fits: int = 10
    #: Host detail pages, each polling one host every 2 s.
    watched: int = 50
    #: ``fleetCapacityChanged`` and ``hypervisorChanged`` subscribers.
    totals: int = 100
    hosts: int = 20
    #: Writer processes, and the writes each has in flight at most.
    writers: int = 2
    in_flight: int = 8
    #: The prober's writes per second at most (half the rate at most).
    probes: float = 10
    #: Seconds the writers, the watch and the subscribers go on after the window.
    tail: float = 10


def measure(
    api: Api,
    gateway: Server,
    bare: Server,
    hosts: list[writers.Target],
    rate: float,
    seconds: float,
    load: Load,
) -> dict[str, Any]:
    """Every figure of one phase at ``rate`` changes per second.

    ``bare`` is the bare Starlette app (bench.bare_app), polled like the dashboards
    through the same window: what any request costs on this machine under the load,
    the floor under every query's figures.
    """
    names = [name for name, _ in hosts]
    watched = random.Random(0).sample(names, min(load.watched, len(names)))
    lookups = [{"n": name} for name in watched]
    probes = min(load.probes, rate / 2)
    with Crowd() as crowd:
        add_writers(crowd, api, hosts, rate - probes, load)
        crowd.add("probe", writers.probe, api, gateway.url, hosts, probes, 8)
        crowd.add("watch", arrivals.watch, api)
        add_readers(crowd, gateway.url, lookups, load)
        crowd.add("floor", readers.ask, bare.url, HOST, lookups, PERIOD)
        window = crowd.open(seconds, load.tail)
        figures = gateway_figures(gateway, window)
        done = crowd.collect()
    figures |= _rates(done, window, rate, load.writers)
    alone = max(2 * PERIOD, min(seconds, 20))  # a page polls twice at least
    figures |= _lookups(api, gateway, hosts, lookups, rate, alone, load)
    figures |= _every_host(api, gateway, hosts, rate, alone, load)
    return figures


def add_readers(crowd: Crowd, url: str, lookups: list[dict[str, Any]], load: Load) -> None:
    """The load's readers of the gateway at ``url``, each kind a role named as the report
    names it: the subscribers, the dashboards, the fit clients and the host pages (one
    per entry of ``lookups``, its variables)."""
    ws = url.replace("http", "ws") + "/graphql"
    for kind, field in (("totals", "fleetCapacityChanged"), ("hosts", "hypervisorChanged")):
        count = load.totals if kind == "totals" else load.hosts
        crowd.add(kind, readers.subscribe, ws, LIVE[kind], count, field)
    loops: dict[str, list[dict[str, Any]]] = {
        "zones": [{}] * load.dashboards,
        "page": [{}] * load.dashboards,
    }
    loops |= {"fit": [{}] * load.fits, "host": lookups}
    for kind, query in QUERIES.items():
        period = 1.0 if kind == "fit" else PERIOD
        crowd.add(kind, readers.ask, url, query, loops[kind], period)


def add_writers(
    crowd: Crowd, api: Api, hosts: list[writers.Target], rate: float, load: Load
) -> None:
    for n in range(load.writers):
        share, offset = rate / load.writers, n / load.writers
        crowd.add(f"writer-{n}", writers.write, api, hosts, share, offset, load.in_flight)


def _achieved(done: dict[str, Any], window: Window, roles: list[str]) -> tuple[list[Any], float]:
    """The writes of ``roles`` sent in the window, and how many that was per second."""
    stamps = [s for role in roles for s in done[role]["stamps"]]
    measured = [s for s in stamps if window.start <= s[2] < window.stop]
    return measured, len(measured) / (window.stop - window.start)


def gateway_figures(gateway: Server, window: Window) -> dict[str, Any]:
    """The gateway's CPU share, RSS, cache hit rate and events applied over the window."""
    with httpx.Client(base_url=gateway.url, timeout=30) as http:
        _sleep_until(window.start)
        cpu, counts = cpu_seconds(gateway.pid), _counts(http)
        _sleep_until(window.stop)
        cpu, counts = cpu_seconds(gateway.pid) - cpu, _counts(http) - counts
        rss = memory_kib(gateway.pid)["VmRSS"]
    seconds = window.stop - window.start
    return {
        "cpu_share": cpu / seconds,
        "rss_kib": rss,
        "hit_rate": counts.hit_rate,
        "events_per_second": counts.events / seconds,
    }


def _rates(done: dict[str, Any], window: Window, rate: float, writer_count: int) -> dict[str, Any]:
    roles = [f"writer-{n}" for n in range(writer_count)] + ["probe"]
    measured, achieved = _achieved(done, window, roles)
    bare, served = arrivals.delays(measured, done["watch"], done["hosts"]["arrivals"])
    answers = done["probe"]["answers"]
    answered = [a - sent for _, _, sent, a in answers]
    probe_watch, _ = arrivals.delays([(n, v, s) for n, v, s, _ in answers], done["watch"], [])
    seconds = window.stop - window.start
    return {
        "rate": rate,
        "achieved": achieved,
        "seconds": seconds,
        "write_failures": sum(done[role]["failed"] for role in roles),
        "writes_skipped": sum(done[role]["skipped"] for role in roles),
        "probe_polls": done["probe"]["polls"] / seconds,
        "queries": {
            kind: summarize(done[kind]["latencies"]) for kind in QUERIES if done[kind]["latencies"]
        },
        "floor": _summary(done["floor"]["latencies"]),
        "errors": sum(done[kind]["errors"] for kind in QUERIES),
        "error_reasons": {kind: done[kind]["reasons"] for kind in QUERIES if done[kind]["reasons"]},
        "messages": {"totals": done["totals"]["messages"], "hosts": done["hosts"]["messages"]},
        "subscriptions_ended": {kind: done[kind]["ended"] for kind in LIVE if done[kind]["ended"]},
        "delays": {
            "watch": _summary(bare.seconds),
            "message": _summary(served.seconds),
            "answer": _summary(answered),
            "answer_watch": _summary(probe_watch.seconds),
        },
        "unseen": {"watch": bare.missing, "message": served.missing},
    }


def _summary(samples: list[float]) -> Any:
    return summarize(samples) if samples else None


def _lookups(
    api: Api,
    gateway: Server,
    hosts: list[writers.Target],
    lookups: list[dict[str, Any]],
    rate: float,
    seconds: float,
    load: Load,
) -> dict[str, Any]:
    """The writers again, with the host pages alone: their cache hits.

    They are counted here, where the host pages are the gateway's only HTTP
    queries (its counters are not per query), from each page's second poll on
    (the first follows the changes since the last window). The ceiling is the
    share of 2 s polls that no write to the host precedes, were any write to a
    host to make its answer stale: exp(-2 s x writes/s / hosts).
    """
    with Crowd() as crowd, httpx.Client(base_url=gateway.url, timeout=30) as http:
        add_writers(crowd, api, hosts, rate, load)
        crowd.add("host", readers.ask, gateway.url, HOST, lookups, PERIOD)
        window = crowd.open(seconds)
        _sleep_until(window.start + PERIOD)  # every page has asked once: the cache is warm
        counts = _counts(http)
        done = crowd.collect()
        counts = _counts(http) - counts
    _, achieved = _achieved(done, window, [f"writer-{n}" for n in range(load.writers)])
    return {
        "host_hit_rate": counts.hit_rate,
        "host_ceiling": math.exp(-PERIOD * achieved / len(hosts)),
        "host_window_achieved": achieved,
    }


def _every_host(
    api: Api, gateway: Server, hosts: list[writers.Target], rate: float, seconds: float, load: Load
) -> dict[str, Any]:
    """The writers again, with the LIST + compute baseline and one client asking the
    gateway for every host's name, zone, free cpu and memory: the same question, both
    ways, in one window."""
    with Crowd() as crowd:
        add_writers(crowd, api, hosts, rate, load)
        crowd.add("baseline", readers.baseline, api)
        crowd.add("every", readers.ask, gateway.url, EVERY_HOST, [{"n": len(hosts)}], PERIOD)
        crowd.open(seconds)
        done = crowd.collect()
    return {
        "baseline": summarize(done["baseline"]),
        "every_host": _summary(done["every"]["latencies"]),
        "every_host_errors": done["every"]["errors"],
    }


@dataclasses.dataclass(frozen=True)
class _Counts:
    hits: float
    misses: float
    events: float

    def __sub__(self, other: _Counts) -> _Counts:
        return _Counts(
            self.hits - other.hits, self.misses - other.misses, self.events - other.events
        )

    @property
    def hit_rate(self) -> float | None:
        looked = self.hits + self.misses
        return self.hits / looked if looked else None


def _counts(http: httpx.Client) -> _Counts:
    """Cache hits and misses, and watch events applied, from the gateway's /metrics."""
    text = http.get("/metrics").text
    cache = {
        m.group(1): float(m.group(2))
        for m in re.finditer(r"^\w*response_cache_(hits|misses)_total (\S+)$", text, re.M)
    }
    events = sum(
        float(m.group(1))
        for m in re.finditer(
            r'^\w*watch_events_total\{type="(?:ADDED|MODIFIED|DELETED)"\} (\S+)$', text, re.M
        )
    )
    return _Counts(cache.get("hits", 0.0), cache.get("misses", 0.0), events)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _sleep_until(at: float) -> None:
    time.sleep(max(0.0, at - time.monotonic()))
