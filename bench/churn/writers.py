"""The writers: status patches and booking changes at a fixed rate, each write stamped.

Every write changes its object (a value no earlier write gave it), so each one
is an event every watcher sees, at the resourceVersion the PATCH answered.
A write is stamped with ``time.monotonic()`` just before it is sent: the
watch, the subscriptions and the answers are all timed from that moment.

The prober writes too (a share of the rate) and, after each of its writes,
asks the gateway for the host until the answer carries that version: the
write-to-answer delay of a client that reads after writing.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Callable, Coroutine
from typing import Any

import httpx

from bench.fleet import MERGE_PATCH, Api, async_client
from bench.latency import POLL, Poller
from harness.controlplane import HYPERVISORS
from harness.crowd import Gate, Window

__all__ = ["Target", "answered", "paced", "probe", "targets", "write"]

JSON_PATCH = {"Content-Type": "application/json-patch+json"}

#: A host to write to, and the index of a consumer booking it can change (-1: none).
Target = tuple[str, int]

#: A write done: (name, resourceVersion, monotonic time sent).
Stamp = tuple[str, int, float]


def targets(objects: list[dict[str, Any]]) -> list[Target]:
    """Every host, with the first consumer booking whose memory a change can resize."""
    found = []
    for obj in objects:
        bookings = obj["spec"].get("bookings") or []
        index = next(
            (
                i
                for i, b in enumerate(bookings)
                if "memory" in ((b.get("consumer") or {}).get("resources") or {})
            ),
            -1,
        )
        found.append((obj["metadata"]["name"], index))
    return found


def _change(target: Target, booking: bool) -> tuple[str, str, dict[str, str]]:
    """A status patch (instances, cpu allocation) or a resize of one consumer's memory.

    The values come from the clock in microseconds: unique, so never a no-op.
    """
    name, index = target
    unique = time.monotonic_ns() // 1000
    if booking and index >= 0:
        path = f"/spec/bookings/{index}/consumer/resources/memory"
        body = [{"op": "add", "path": path, "value": f"{4096 + unique % 4096}Mi"}]
        return f"{HYPERVISORS}/{name}", json.dumps(body), JSON_PATCH
    status = {"numInstances": unique % (1 << 31), "allocation": {"cpu": str(unique % 64)}}
    return f"{HYPERVISORS}/{name}/status", json.dumps({"status": status}), MERGE_PATCH


async def _send(http: httpx.AsyncClient, target: Target, booking: bool) -> Stamp | None:
    """One change, stamped; None if the API server refused it."""
    path, body, headers = _change(target, booking)
    sent = time.monotonic()
    response = await http.patch(path, content=body, headers=headers)
    if response.status_code != 200:
        return None
    metadata = response.json()["metadata"]
    return metadata["name"], int(metadata["resourceVersion"]), sent


async def paced(
    window: Window,
    rate: float,
    offset: float,
    limit: int,
    until: float,
    call: Callable[[int], Coroutine[Any, Any, None]],
) -> int:
    """``call(i)`` ``rate`` times a second from the window's start until ``until``, at most
    ``limit`` at once; returns the calls skipped because ``limit`` were in flight."""
    pending: set[asyncio.Task[None]] = set()
    failures: list[BaseException] = []
    skipped, i = 0, 0
    if rate <= 0:
        return 0

    def finished(task: asyncio.Task[None]) -> None:
        pending.discard(task)
        error = None if task.cancelled() else task.exception()
        if error is not None:
            failures.append(error)

    while (due := window.start + (i + offset) / rate) < until:
        await asyncio.sleep(max(0.0, due - time.monotonic()))
        i += 1
        if len(pending) >= limit:  # the API server is behind: this write is not sent
            skipped += 1
            continue
        task = asyncio.create_task(call(i))
        pending.add(task)
        task.add_done_callback(finished)
    await asyncio.gather(*pending)
    if failures:
        raise failures[0]
    return skipped


async def write(
    gate: Gate, api: Api, hosts: list[Target], rate: float, offset: float, in_flight: int
) -> dict[str, Any]:
    """Writes at ``rate`` per second until the window's end, to random hosts, alternating
    status patches and booking changes; ``offset`` (0 to 1) interleaves writer processes."""
    rng = random.Random(f"{gate.name}-{offset}")
    stamps: list[Stamp] = []
    failed = 0
    async with async_client(api, in_flight) as http:
        (await http.get(HYPERVISORS, params={"limit": 1})).raise_for_status()
        window = await gate.ready()

        async def one(i: int) -> None:
            nonlocal failed
            stamp = await _send(http, rng.choice(hosts), booking=i % 2 == 0)
            if stamp is None:
                failed += 1
            else:
                stamps.append(stamp)

        skipped = await paced(window, rate, offset, in_flight, window.end, one)
    return {"stamps": stamps, "failed": failed, "skipped": skipped}


async def probe(
    gate: Gate, api: Api, gateway: str, hosts: list[Target], rate: float, connections: int
) -> dict[str, Any]:
    """Status patches at ``rate`` per second in the window, each followed by polls of
    ``hypervisor(name:) { resourceVersion }`` until the gateway answers with it (or newer).

    Each poll follows the previous one at once: the delay's resolution is one
    round trip. A write waits for a free connection; none free, it is skipped.
    """
    rng = random.Random(gate.name)
    stamps: list[Stamp] = []
    answers: list[tuple[str, int, float, float]] = []
    failed = polls = 0
    async with async_client(api, connections) as http:
        (await http.get(HYPERVISORS, params={"limit": 1})).raise_for_status()
        pollers = [Poller(gateway) for _ in range(connections)]
        for poller in pollers:
            await poller.__aenter__()
        idle = list(pollers)
        window = await gate.ready()

        async def one(i: int) -> None:
            nonlocal failed, polls
            poller = idle.pop()
            try:
                stamp = await _send(http, rng.choice(hosts), booking=False)
                if stamp is None:
                    failed += 1
                    return
                stamps.append(stamp)
                name, version, sent = stamp
                seen, asked = await answered(poller, name, version, window.end + 30)
                answers.append((name, version, sent, seen))
                polls += asked
            finally:
                idle.append(poller)

        skipped = await paced(window, rate, 0, connections, window.stop, one)
        for poller in pollers:
            await poller.__aexit__()
    return {
        "stamps": stamps,
        "answers": answers,
        "polls": polls,
        "failed": failed,
        "skipped": skipped,
    }


async def answered(poller: Poller, name: str, version: int, deadline: float) -> tuple[float, int]:
    """When the gateway first answered ``name`` at ``version`` or newer, and the polls."""
    body = json.dumps({"query": POLL, "variables": {"name": name}}).encode()
    polls = 0
    while time.monotonic() < deadline:
        polls += 1
        try:
            answer = await poller.ask(body)
        except RuntimeError:  # refused (a 429 when the gateway sheds load): ask again soon
            await asyncio.sleep(0.01)
            continue
        seen = (answer.get("data") or {}).get("hypervisor") or {}
        if int(seen.get("resourceVersion") or 0) >= version:
            return time.monotonic(), polls
    raise TimeoutError(f"the gateway never answered {name} at {version} or newer")
