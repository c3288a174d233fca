"""A soak run: the demo gateway as its own process, every load at once, its memory sampled."""

from __future__ import annotations

import dataclasses
import random
import time
from pathlib import Path
from typing import Any

import httpx

from bench.churn.phase import LIVE as CHURN_LIVE
from bench.churn.phase import QUERIES, Load, add_readers
from bench.soak import clients
from bench.soak.logs import errors
from bench.soak.samples import Sample, budgets, sample
from bench.stats import summarize
from harness.controlplane import free_port
from harness.crowd import Crowd, Window
from harness.processes import Server, memory_kib

__all__ = ["Soak", "soak"]


@dataclasses.dataclass(frozen=True)
class Soak:
    """How long, how large, and the load besides the churn readers (``readers``)."""

    size: int = 5000
    minutes: float = 30
    #: Minutes from the window's start that the RSS slope leaves out.
    warmup: float = 5
    #: Seconds between two changes of the demo fleet (``serve --demo-churn``).
    churn: float = 0.1
    #: Seconds between two samples of RSS and /metrics.
    every: float = 5
    #: The gateway's time limit per query (``serve --max-query-seconds``).
    query_seconds: float = 5
    #: Seconds between two failing queries, two over the time limit, two abusive ones.
    failing: float = 1
    timeouts: float = 30
    abuse: float = 2
    #: Subscribers coming and going at once, and the longest any stays (seconds).
    visitors: int = 10
    stay: float = 20
    #: RSS at which the gateway is stopped: a leak found, before it takes the machine.
    rss_limit_mib: float = 8192
    readers: Load = dataclasses.field(default_factory=Load)


def soak(plan: Soak, logs: Path, log: Any = print) -> dict[str, Any]:
    """Every figure of one soak run."""
    options = [
        "--demo",
        *("--demo-size", str(plan.size), "--demo-churn", str(plan.churn)),
        *("--max-query-seconds", str(plan.query_seconds), "--log-format", "json"),
    ]
    gateway = Server.gateway(free_port(), logs / f"soak-{plan.size}.log", *options)
    try:
        log(f"[soak {plan.size}] starting the gateway")
        ready = gateway.wait_ready()
        log(f"[soak {plan.size}] ready in {ready:.1f} s; {plan.minutes:g} minutes of load")
        names = _names(gateway.url, plan.size)
        with Crowd() as crowd:
            _add(crowd, gateway.url, names, plan)
            window = crowd.open(plan.minutes * 60)
            samples, named = _sampled(gateway.pid, gateway.url, window, plan)
            peak = memory_kib(gateway.pid)["VmHWM"]
            stopped = samples[-1].rss_kib > plan.rss_limit_mib * 1024
            if stopped:  # the clients go on, refused, to the window's end
                log(f"[soak {plan.size}] RSS over {plan.rss_limit_mib:g} MiB: gateway stopped")
                gateway.stop()
            log(f"[soak {plan.size}] collecting the clients")
            done = crowd.collect(timeout=window.end - time.monotonic() + 300)
    finally:
        gateway.stop()
    return {
        "plan": dataclasses.asdict(plan),
        "ready_seconds": ready,
        "peak_kib": peak,
        "stopped_over_limit": stopped,
        "samples": [dataclasses.asdict(s) for s in samples],
        "budgets": budgets(_scraped(samples)[-1], named),
        "log_errors": errors(logs / f"soak-{plan.size}.log"),
        "outcomes": _outcomes(done),
        "latencies": {
            kind: summarize(done[kind]["latencies"]) for kind in QUERIES if done[kind]["latencies"]
        },
        "subscriptions_ended": {kind: done[kind]["ended"] for kind in CHURN_LIVE},
    }


def _names(url: str, size: int) -> list[str]:
    query = "query All($n: Int!) { hypervisors(first: $n) { nodes { name } } }"
    body = {"query": query, "variables": {"n": size}}
    answer = httpx.post(url + "/graphql", json=body, timeout=60).json()
    return [node["name"] for node in answer["data"]["hypervisors"]["nodes"]]


def _add(crowd: Crowd, url: str, names: list[str], plan: Soak) -> None:
    watched = random.Random(0).sample(names, min(plan.readers.watched, len(names)))
    add_readers(crowd, url, [{"n": name} for name in watched], plan.readers)
    crowd.add("failing", clients.failing, url, plan.failing)
    crowd.add("timeouts", clients.timeouts, url, plan.timeouts, plan.size, plan.query_seconds)
    crowd.add("abuse", clients.abuse, url, plan.abuse)
    crowd.add("visitors", clients.visitors, url, plan.visitors, plan.stay, names)


def _sampled(
    pid: int, url: str, window: Window, plan: Soak
) -> tuple[list[Sample], dict[str, float]]:
    """A sample every ``plan.every`` seconds from the window's start to its stop, or
    until RSS passes ``plan.rss_limit_mib``."""
    samples: list[Sample] = []
    named: dict[str, float] = {}
    due = window.start
    while due < window.stop:
        time.sleep(max(0.0, due - time.monotonic()))
        taken, found = sample(pid, url, window.start)
        samples.append(taken)
        named |= found
        if taken.rss_kib > plan.rss_limit_mib * 1024:
            break
        due = max(due + plan.every, time.monotonic())
    return samples, named


def _scraped(samples: list[Sample]) -> list[Sample]:
    return [s for s in samples if s.gauges is not None] or samples[-1:]


def _outcomes(done: dict[str, Any]) -> dict[str, dict[str, int]]:
    """Every request kind's outcomes: the churn readers' (answered or not) and the soak's."""
    counts: dict[str, dict[str, int]] = {}
    for kind in QUERIES:
        result = done[kind]
        counts[f"{kind} over http"] = {"ok": len(result["latencies"]), "error": result["errors"]}
    for kind in CHURN_LIVE:
        result = done[kind]
        counts[f"{kind} subscribers"] = {
            "messages": result["messages"],
            "ended early": len(result["ended"]),
        }
    for role in ("failing", "timeouts", "abuse", "visitors"):
        counts |= done[role]
    return counts
