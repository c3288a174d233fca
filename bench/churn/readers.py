"""The readers: dashboards and fit queries over HTTP, live subscribers, the LIST baseline.

Each kind runs in a process of its own and reports raw samples: latencies of
requests started in the window, message counts, and for ``hypervisorChanged``
the arrival of every host version (matched against the writes afterwards).
HTTP readers are clients of one keep-alive connection each, written to
directly (:class:`bench.latency.Poller`): through httpx each request cost the
client more than a cached answer costs the gateway.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from typing import Any

import websockets

from bench.churn.arrivals import Arrivals
from bench.fleet import Api, free_capacity
from bench.latency import Poller
from harness.crowd import Gate, Window

__all__ = ["ask", "baseline", "subscribe"]

PROTOCOLS = [websockets.Subprotocol("graphql-transport-ws")]


async def ask(
    gate: Gate, url: str, query: str, loops: list[dict[str, Any]], period: float
) -> dict[str, Any]:
    """One client per entry of ``loops`` (its variables), each asking ``query`` every
    ``period`` seconds from a random phase, through the window."""
    clients = [Poller(url) for _ in loops]
    for client in clients:
        await client.__aenter__()
    window = await gate.ready()
    latencies: list[float] = []
    errors = 0
    reasons: list[str] = []

    async def client_loop(client: Poller, variables: dict[str, Any]) -> None:
        nonlocal errors
        body = json.dumps({"query": query, "variables": variables}).encode()
        due = window.start + random.uniform(0, period)
        while due < window.stop:
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            started = time.monotonic()
            try:
                answer = await client.ask(body)
                reason = json.dumps(answer["errors"]) if answer.get("errors") else None
            except (RuntimeError, OSError, asyncio.IncompleteReadError) as error:
                reason = str(error)
            if reason is None:
                latencies.append(time.monotonic() - started)
            else:
                errors += 1
                del reasons[:-2]  # the last three are kept
                reasons.append(reason[:200])
            due = max(due + period, time.monotonic())  # a late answer delays the next

    await asyncio.gather(*(client_loop(c, v) for c, v in zip(clients, loops, strict=True)))
    for client in clients:
        await client.__aexit__()
    return {"latencies": latencies, "errors": errors, "reasons": reasons}


async def subscribe(gate: Gate, url: str, query: str, count: int, field: str) -> dict[str, Any]:
    """``count`` subscribers of ``query``; the messages each got in the window, and for
    ``hypervisorChanged`` (``field``) the arrival of every (host, resourceVersion).

    A subscription the gateway ends (one too far behind) is counted, not retried:
    its arrivals stop there, and its later writes count as unseen.
    """
    async with asyncio.TaskGroup() as group:
        sockets = [group.create_task(_open(url, query, field)) for _ in range(count)]
    opened = [task.result() for task in sockets]
    window = await gate.ready()
    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(_listen(ws, field, window)) for ws in opened]
    results = [task.result() for task in tasks]
    for ws in opened:
        await ws.close()
    return {
        "messages": sum(messages for messages, _, _ in results),
        "arrivals": [got for _, got, _ in results] if field == "hypervisorChanged" else [],
        "ended": [reason for _, _, reason in results if reason is not None],
    }


async def _open(url: str, query: str, field: str) -> Any:
    ws = await websockets.connect(url, subprotocols=PROTOCOLS, max_size=None)
    await ws.send(json.dumps({"type": "connection_init"}))
    if json.loads(await ws.recv())["type"] != "connection_ack":
        raise RuntimeError("the gateway did not acknowledge the connection")
    await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": {"query": query}}))
    if field == "fleetCapacityChanged":  # its first message is the totals now: subscribed
        await ws.recv()
    return ws


async def _listen(ws: Any, field: str, window: Window) -> tuple[int, Arrivals, str | None]:
    """Messages in the window, arrivals, and why the subscription ended early (if it did)."""
    messages, arrivals = 0, Arrivals()
    try:
        async with asyncio.timeout_at(window.end):
            async for raw in ws:
                at = time.monotonic()
                message = json.loads(raw)
                if message["type"] != "next" or message["payload"].get("data") is None:
                    return messages, arrivals, str(message)[:200]  # ended, or failed
                if window.start <= at < window.stop:
                    messages += 1
                if field == "hypervisorChanged":
                    _arrived(arrivals, message["payload"]["data"][field]["hypervisor"], at)
    except TimeoutError:
        return messages, arrivals, None
    except websockets.ConnectionClosed as closed:
        return messages, arrivals, f"closed: {closed}"
    return messages, arrivals, "closed by the gateway"


def _arrived(arrivals: Arrivals, host: dict[str, Any], at: float) -> None:
    """Note a host's version arriving (a fleet of no API server, the demo's, has none)."""
    if host["resourceVersion"] is not None:
        arrivals.setdefault(host["name"], []).append((int(host["resourceVersion"]), at))


async def baseline(gate: Gate, api: Api) -> list[float]:
    """The dashboard's question from the API server: LIST, parse, free cpu and memory per
    host, one after the other through the window (at least once)."""
    times: list[float] = []
    with api.client() as http:
        window = await gate.ready()
        await window.wait_start()
        while time.monotonic() < window.stop or not times:
            started = time.monotonic()
            free_capacity(http, None)
            times.append(time.monotonic() - started)
    return times
