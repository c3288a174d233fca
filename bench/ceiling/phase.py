"""One replayed phase: the recording played at one rate, under bench.churn's readers.

The replay server says when each change left it, which is the change's arrival
for every figure here: a subscription message is timed from it, and so is an
answer, polled for the changed host's resourceVersion by a prober that follows
a sample of the feed (as many a second as bench.churn's prober writes). The
readers, the floor and the gateway's own figures are bench.churn's.
"""

from __future__ import annotations

import asyncio
import math
import statistics
import time
from pathlib import Path
from typing import Any

import httpx

from bench.churn import arrivals, readers
from bench.churn.phase import (
    HOST,
    LIVE,
    PERIOD,
    QUERIES,
    Load,
    add_readers,
    cpu_seconds,
    gateway_figures,
)
from bench.churn.writers import answered
from bench.latency import Poller
from bench.stats import Summary, summarize
from harness.crowd import Crowd, Gate
from harness.processes import Server

__all__ = ["KEPT_UP_GROWTH", "kept_up", "replayed"]

#: A phase kept up if its lag grew by less than this over the window (seconds), and
#: the replay server sent nearly all it was asked to on time.
KEPT_UP_GROWTH = 0.1
_ON_TIME = 0.95
#: Seconds a phase waits for the backlog of the one before to be sent.
DRAIN = 120.0

#: A change to follow: (host, resourceVersion, seconds after the window's start it is due).
Planned = tuple[str, int, float]


async def _prober(gate: Gate, url: str, plan: list[Planned], connections: int) -> dict[str, Any]:
    """For each planned change, from when it is due: polls until the gateway answers the
    host at its version or newer. A change due while every connection polls is skipped."""
    pollers = [Poller(url) for _ in range(connections)]
    for poller in pollers:
        await poller.__aenter__()
    idle = list(pollers)
    answers: list[tuple[str, int, float]] = []
    polls = skipped = unanswered = 0
    window = await gate.ready()

    async def one(name: str, version: int) -> None:
        nonlocal polls, unanswered
        poller = idle.pop()
        try:
            at, asked = await answered(poller, name, version, window.end + 30)
            answers.append((name, version, at))
            polls += asked
        except TimeoutError:  # not even sent by then: the gateway fell far behind
            unanswered += 1
        finally:
            idle.append(poller)

    async with asyncio.TaskGroup() as group:
        for name, version, due in plan:
            await asyncio.sleep(max(0.0, window.start + due - time.monotonic()))
            if idle:
                group.create_task(one(name, version))
            else:
                skipped += 1
    for poller in pollers:
        await poller.__aexit__()
    return {"answers": answers, "polls": polls, "skipped": skipped, "unanswered": unanswered}


def replayed(
    replay: Server,
    gateway: Server,
    bare: Server,
    names: list[str | None],
    rate: float,
    seconds: float,
    load: Load,
) -> dict[str, Any]:
    """Every figure of one phase at ``rate`` changes a second.

    ``names`` are the recording's changes, in order (None for a bookmark).
    """
    with httpx.Client(base_url=replay.url, timeout=60) as control:
        position = _drained(control)
        first, count = position["scheduled"], math.floor(rate * seconds)
        base = position["version"] - first  # change k carries base + k + 1
        plan = _sample(names, first, count, base, rate, load.probes)
        watched = [{"n": n} for n in sorted({n for n in names if n})[: load.watched]]
        with Crowd() as crowd:
            crowd.add("probe", _prober, gateway.url, plan, 8)
            add_readers(crowd, gateway.url, watched, load)
            crowd.add("floor", readers.ask, bare.url, HOST, watched, PERIOD)
            window = crowd.open(seconds, load.tail)
            control.post(
                "/replay/play", json={"rate": rate, "start": window.start, "seconds": seconds}
            )
            replay_cpu, waited = cpu_seconds(replay.pid), _waiting(gateway.pid)
            figures = gateway_figures(gateway, window)
            figures["replay_cpu_share"] = (cpu_seconds(replay.pid) - replay_cpu) / seconds
            figures["gateway_waiting_share"] = (_waiting(gateway.pid) - waited) / seconds
            done = crowd.collect()
        sent = control.get("/replay/sent", params={"first": first, "count": count}).json()
    stamps = [
        (name, base + k + 1, at)
        for k, at in zip(range(first, first + count), sent, strict=True)
        if at is not None and (name := names[k % len(names)]) is not None
    ]
    on_time = sum(1 for at in sent if at is not None and at < window.stop)
    return (
        figures
        | _lags(stamps, done)
        | {
            "rate": rate,
            "seconds": seconds,
            "achieved": on_time / seconds,
            "unsent": sum(1 for at in sent if at is None),
            "queries": {
                kind: summarize(done[kind]["latencies"])
                for kind in QUERIES
                if done[kind]["latencies"]
            },
            "floor": summarize(done["floor"]["latencies"]) if done["floor"]["latencies"] else None,
            "errors": sum(done[kind]["errors"] for kind in QUERIES),
            "messages": {kind: done[kind]["messages"] for kind in LIVE},
            "subscriptions_ended": {kind: len(done[kind]["ended"]) for kind in LIVE},
            "probe_skipped": done["probe"]["skipped"],
            "unanswered": done["probe"]["unanswered"],
        }
    )


def _waiting(pid: int) -> float:
    """Seconds the process's threads have waited for a CPU while runnable (schedstat):
    a gateway that waits for the machine, not for its own work."""
    total = 0
    for stat in Path(f"/proc/{pid}/task").glob("*/schedstat"):
        total += int(stat.read_text().split()[1])
    return total / 1e9


def _drained(control: httpx.Client) -> dict[str, Any]:
    """The feed's position once every change scheduled before has been sent (a phase the
    gateway fell behind in leaves a backlog), or after :data:`DRAIN` seconds."""
    deadline = time.monotonic() + DRAIN
    while True:
        position: dict[str, Any] = control.get("/replay/position").json()
        if position["sent"] >= position["scheduled"] or time.monotonic() > deadline:
            return position
        time.sleep(0.5)


def _sample(
    names: list[str | None], first: int, count: int, base: int, rate: float, per_second: float
) -> list[Planned]:
    """Every ``rate / per_second``-th change of the next ``count`` (no bookmark)."""
    step = max(1, round(rate / per_second))
    plan = []
    for k in range(first, first + count, step):
        name = names[k % len(names)]
        if name is not None:
            plan.append((name, base + k + 1, (k - first) / rate))
    return plan


def _lags(stamps: list[tuple[str, int, float]], done: dict[str, Any]) -> dict[str, Any]:
    """Send to message and send to answer, and how the message lag moved over the window."""
    sent = {(name, version): at for name, version, at in stamps}
    bare: arrivals.Arrivals = {}
    for name, version, at in stamps:
        bare.setdefault(name, []).append((version, at))
    for versions in bare.values():
        versions.sort()
    _, served = arrivals.delays(stamps, bare, done["hosts"]["arrivals"])
    answers = [
        (sent[(name, version)], at - sent[(name, version)])
        for name, version, at in done["probe"]["answers"]
        if (name, version) in sent
    ]
    return {
        "message": summarize(served.seconds) if served.seconds else None,
        "unseen": served.missing,
        "answer": summarize([lag for _, lag in answers]) if answers else None,
        "growth": _growth(answers),
    }


def _growth(samples: list[tuple[float, float]]) -> float | None:
    """How much the lag grew from the first sample to the last, by least squares."""
    if len(samples) < 3:
        return None
    times, lags = zip(*samples, strict=True)
    slope = statistics.linear_regression(times, lags).slope
    return float(slope * (max(times) - min(times)))


def kept_up(phase: dict[str, Any]) -> bool:
    """Whether the gateway kept up: the changes left on time (a gateway that reads too
    slowly holds the replay's sends back, once the socket buffers are full), it applied
    them as fast, every probed change was answered, its lag did not keep growing, and
    it cut no subscriber off for falling behind (a gateway that sheds its subscribers
    keeps up with the rest)."""
    growth = phase["growth"]
    answer: Summary | None = phase["answer"]
    return (
        not any(phase["subscriptions_ended"].values())
        and phase["achieved"] >= _ON_TIME * phase["rate"]
        and phase["events_per_second"] >= _ON_TIME * phase["rate"]
        and not phase["unanswered"]
        and answer is not None
        and growth is not None
        and growth < KEPT_UP_GROWTH
    )
