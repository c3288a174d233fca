"""When each written version reached a reader, and the delays that makes per write.

The bare watch is as small a client as can follow the fleet: one HTTP stream
from the API server, each event's name and resourceVersion noted with the
time it arrived. It is the reference: the gateway is a watch too, so what a
gateway reader waits for beyond the bare watch is the gateway's.

Writes and arrivals are matched by (name, resourceVersion). Only writes the
bare watch saw at exactly their version count (every write changes its
object, so that is every write the API server applied); a gateway reader's
arrival is its first for that host at that version or newer (a reader may
see two quick writes to one host as one change).
"""

from __future__ import annotations

import asyncio
import bisect
import json
import time
from collections.abc import Iterable
from typing import Any

from bench.fleet import Api, async_client
from harness.controlplane import HYPERVISORS
from harness.crowd import Gate

__all__ = ["Arrivals", "Delays", "delays", "watch"]

#: Per host, the (resourceVersion, monotonic time) of each arrival, in arrival order.
Arrivals = dict[str, list[tuple[int, float]]]


async def watch(gate: Gate, api: Api) -> Arrivals:
    """Every Hypervisor event from the window's opening until its end."""
    arrivals: Arrivals = {}
    async with async_client(api, 1) as http:
        listed = await http.get(HYPERVISORS, params={"limit": 1})
        listed.raise_for_status()
        version = listed.json()["metadata"]["resourceVersion"]
        params = {"watch": "true", "resourceVersion": version, "timeoutSeconds": "3600"}
        async with http.stream("GET", HYPERVISORS, params=params, timeout=None) as response:
            response.raise_for_status()
            window = await gate.ready()
            try:
                async with asyncio.timeout_at(window.end):
                    async for line in response.aiter_lines():
                        if line.strip():
                            _note(arrivals, json.loads(line), time.monotonic())
            except TimeoutError:
                pass
    return arrivals


def _note(arrivals: Arrivals, event: dict[str, Any], at: float) -> None:
    metadata = event["object"]["metadata"]
    if event["type"] in ("ADDED", "MODIFIED"):
        arrivals.setdefault(metadata["name"], []).append((int(metadata["resourceVersion"]), at))


class Delays:
    """Seconds from each write to its arrival at one kind of reader, and writes never seen."""

    def __init__(self) -> None:
        self.seconds: list[float] = []
        self.missing = 0


def delays(
    stamps: Iterable[tuple[str, int, float]], bare: Arrivals, readers: Iterable[Arrivals]
) -> tuple[Delays, Delays]:
    """For the writes in ``stamps``: the bare watch's delays, and every reader's."""
    readers = list(readers)
    watched, served = Delays(), Delays()
    for name, version, sent in stamps:
        seen = _first(bare.get(name, ()), version)
        if seen is None or seen[0] != version:
            watched.missing += 1
            continue
        watched.seconds.append(seen[1] - sent)
        for reader in readers:
            arrived = _first(reader.get(name, ()), version)
            if arrived is None:
                served.missing += 1
            else:
                served.seconds.append(arrived[1] - sent)
    return watched, served


def _first(arrivals: Any, version: int) -> tuple[int, float] | None:
    """The first arrival at ``version`` or newer (a host's versions only grow)."""
    index = bisect.bisect_left(arrivals, (version, float("-inf")))
    return arrivals[index] if index < len(arrivals) else None
