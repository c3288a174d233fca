"""Churn: writers at a fixed rate and dashboard readers at the same time, on the real API server.

Real fleets are never quiet: every node agent patches its host's status about
once a minute, and Nova books and frees instances all day. Each phase here
writes at one rate (status patches and booking changes alternating, each a
merge patch through the API server, the achieved rate measured) while readers
ask the gateway what dashboards ask: ``fleetCapacity(groupBy: ZONE)`` and a
100-host table page from each dashboard every 2 s, fit queries, single-host
lookups, and live subscribers (``fleetCapacityChanged`` and
``hypervisorChanged``). The same dashboard question answered from the API
server directly (LIST, parse, compute free cpu and memory per host) is timed
in the same phase: the baseline every ratio is against. The gateway's CPU share
comes from /proc (user + system time over the phase), its RSS likewise, and the
cache's hit rate from its /metrics counters.

``python -m bench.churn --sizes 1000,5000 --rates 10,100`` runs it on its own.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import random
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import websockets

from bench.fleet import MERGE_PATCH, async_client, free_capacity, load
from bench.stats import Summary, summarize
from gateway.sources.demo.source import generate
from harness.controlplane import HYPERVISORS, ControlPlane
from harness.processes import Server, memory_kib

__all__ = ["churn", "main"]

ZONES = "{ fleetCapacity(groupBy: ZONE) { key resources { name capacity booked free } } }"
PAGE = '{ hypervisors(first: 100) { nodes { name zone cpu: resource(name: "cpu") { free } memory: resource(name: "memory") { free } } } }'  # noqa: E501
FIT = '{ hypervisors(filter: {canFit: [{resource: "cpu", amount: "8"}, {resource: "memory", amount: "17179869184"}]}, first: 1) { totalCount } }'  # noqa: E501
HOST = (
    'query Host($n: String!) { hypervisor(name: $n) { name zone resource(name: "cpu") { free } } }'
)
#: Writes in flight at most; beyond, the rate asked for is not achieved (and says so).
IN_FLIGHT = 32
LIVE_TOTALS = "subscription { fleetCapacityChanged(groupBy: ZONE) { key resources { name free } } }"
LIVE_HOSTS = "subscription { hypervisorChanged { type hypervisor { name } } }"


class Readers:
    """Latencies per query kind, and messages per subscription kind."""

    def __init__(self) -> None:
        self.latencies: dict[str, list[float]] = {}
        self.messages: dict[str, int] = {"totals": 0, "hosts": 0}
        self.errors = 0

    async def ask(self, http: httpx.AsyncClient, kind: str, query: str, **variables: Any) -> None:
        started = time.perf_counter()
        response = await http.post("/graphql", json={"query": query, "variables": variables})
        elapsed = time.perf_counter() - started
        if response.status_code != 200 or "errors" in response.json():
            self.errors += 1
            return
        self.latencies.setdefault(kind, []).append(elapsed)


async def _every(period: float, stop: float, call: Any) -> None:
    """``call()`` every ``period`` seconds (from a random phase) until ``stop``."""
    await asyncio.sleep(random.uniform(0, period))
    while (now := time.perf_counter()) < stop:
        await call()
        await asyncio.sleep(max(0.0, period - (time.perf_counter() - now)))


async def _subscriber(url: str, query: str, kind: str, readers: Readers, stop: float) -> None:
    protocols = [websockets.Subprotocol("graphql-transport-ws")]
    async with websockets.connect(url, subprotocols=protocols, max_size=None) as ws:
        await ws.send(json.dumps({"type": "connection_init"}))
        await ws.recv()
        await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": {"query": query}}))
        while time.perf_counter() < stop:
            try:
                raw = await asyncio.wait_for(ws.recv(), max(0.01, stop - time.perf_counter()))
            except TimeoutError:
                break
            if json.loads(raw)["type"] == "next":
                readers.messages[kind] += 1


async def _writer(
    api: httpx.AsyncClient, objects: list[dict[str, Any]], rate: float, stop: float
) -> int:
    """Writes at ``rate`` per second until ``stop``, alternating a status patch (instances,
    cpu allocation) and a booking change (one consumer's cpu); returns the writes done."""
    done = 0
    started = time.perf_counter()
    pending: set[asyncio.Task[None]] = set()

    async def write(i: int) -> None:
        nonlocal done
        obj = objects[i % len(objects)]
        name = obj["metadata"]["name"]
        if i % 2:
            patch: dict[str, Any] = {
                "status": {"numInstances": i, "allocation": {"cpu": str(i % 64)}}
            }
            path = f"{HYPERVISORS}/{name}/status"
        else:
            bookings = obj["spec"].get("bookings") or []
            consumer = next((b["consumer"] for b in bookings if "consumer" in b), None)
            if consumer is not None:
                consumer["resources"]["cpu"] = str(1 + i % 4)
            patch, path = {"spec": {"bookings": bookings}}, f"{HYPERVISORS}/{name}"
        response = await api.patch(path, content=json.dumps(patch), headers=MERGE_PATCH)
        if response.status_code == 200:
            done += 1

    i = 0
    while (now := time.perf_counter()) < stop:
        due = started + i / rate
        if due > now:
            await asyncio.sleep(due - now)
        i += 1
        if len(pending) >= IN_FLIGHT:  # the API server is behind: this write is skipped
            continue
        task = asyncio.create_task(write(random.randrange(1 << 30)))
        pending.add(task)
        task.add_done_callback(pending.discard)
    await asyncio.gather(*pending, return_exceptions=True)
    return done


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _cache_counts(http: httpx.Client) -> tuple[float, float]:
    text = http.get("/metrics").text
    found = {
        m.group(1): float(m.group(2))
        for m in re.finditer(r"^\w*response_cache_(hits|misses)_total (\S+)$", text, re.M)
    }
    return found.get("hits", 0.0), found.get("misses", 0.0)


async def _phase(
    plane: ControlPlane,
    gateway: Server,
    objects: list[dict[str, Any]],
    rate: float,
    seconds: float,
    *,
    dashboards: int = 20,
    fits: float = 10,
    lookups: float = 20,
    total_subscribers: int = 100,
    host_subscribers: int = 20,
) -> dict[str, Any]:
    readers = Readers()
    names = [o["metadata"]["name"] for o in objects][:200]
    ws_url = gateway.url.replace("http", "ws") + "/graphql"
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    with httpx.Client(base_url=gateway.url, timeout=30) as sync:
        hits0, misses0 = _cache_counts(sync)
    cpu0, wall0 = _cpu_seconds(gateway.pid), time.perf_counter()
    stop = wall0 + seconds
    async with (
        httpx.AsyncClient(base_url=gateway.url, timeout=60, limits=limits) as http,
        async_client(plane) as api,
    ):
        tasks: list[asyncio.Task[Any]] = [asyncio.create_task(_writer(api, objects, rate, stop))]
        for _ in range(dashboards):
            tasks.append(
                asyncio.create_task(_every(2, stop, lambda: readers.ask(http, "zones", ZONES)))
            )
            tasks.append(
                asyncio.create_task(_every(2, stop, lambda: readers.ask(http, "page", PAGE)))
            )
        tasks.append(
            asyncio.create_task(_every(1 / fits, stop, lambda: readers.ask(http, "fit", FIT)))
        )
        tasks.append(
            asyncio.create_task(
                _every(
                    1 / lookups,
                    stop,
                    lambda: readers.ask(http, "host", HOST, n=random.choice(names)),
                )
            )
        )
        for n in range(total_subscribers + host_subscribers):
            query, kind = (
                (LIVE_TOTALS, "totals") if n < total_subscribers else (LIVE_HOSTS, "hosts")
            )
            tasks.append(asyncio.create_task(_subscriber(ws_url, query, kind, readers, stop)))
        results = await asyncio.gather(*tasks, return_exceptions=True)
    wall = time.perf_counter() - wall0
    cpu = _cpu_seconds(gateway.pid) - cpu0
    with httpx.Client(base_url=gateway.url, timeout=30) as sync:
        hits1, misses1 = _cache_counts(sync)
    looked = (hits1 - hits0) + (misses1 - misses0)
    failures = [r for r in results if isinstance(r, BaseException)]
    return {
        "rate": rate,
        "achieved": (results[0] if isinstance(results[0], int) else 0) / seconds,
        "seconds": wall,
        "queries": {kind: summarize(times) for kind, times in readers.latencies.items()},
        "messages": dict(readers.messages),
        "errors": readers.errors + len(failures),
        "hit_rate": (hits1 - hits0) / looked if looked else None,
        "cpu_share": cpu / wall,
        "rss_kib": memory_kib(gateway.pid)["VmRSS"],
    }


async def _baseline(
    plane: ControlPlane, objects: list[dict[str, Any]], rate: float, seconds: float
) -> Summary:
    """The dashboard's question from the API server (LIST, parse, free per host), repeated
    under the same writes. Its own phase: the parsing holds the client's GIL, which
    would stall the gateway's readers and count against the gateway."""
    stop = time.perf_counter() + seconds

    def lists() -> list[float]:
        times: list[float] = []
        with plane.client() as http:
            http.timeout = httpx.Timeout(300)
            while time.perf_counter() < stop or not times:
                started = time.perf_counter()
                free_capacity(http, None)
                times.append(time.perf_counter() - started)
        return times

    async with async_client(plane) as api:
        times, _ = await asyncio.gather(asyncio.to_thread(lists), _writer(api, objects, rate, stop))
    return summarize(times)


async def _host_hits(
    gateway: Server, plane: ControlPlane, objects: list[dict[str, Any]], rate: float, seconds: float
) -> float | None:
    """The hit rate of single-host lookups alone (the writers still writing)."""
    names = [o["metadata"]["name"] for o in objects][:200]
    readers = Readers()
    with httpx.Client(base_url=gateway.url, timeout=30) as sync:
        hits0, misses0 = _cache_counts(sync)
    stop = time.perf_counter() + seconds
    async with (
        httpx.AsyncClient(base_url=gateway.url, timeout=60) as http,
        async_client(plane) as api,
    ):
        await asyncio.gather(
            _writer(api, objects, rate, stop),
            _every(0.02, stop, lambda: readers.ask(http, "host", HOST, n=random.choice(names))),
        )
    with httpx.Client(base_url=gateway.url, timeout=30) as sync:
        hits1, misses1 = _cache_counts(sync)
    looked = (hits1 - hits0) + (misses1 - misses0)
    return (hits1 - hits0) / looked if looked else None


def churn(
    size: int,
    rates: list[float],
    seconds: float,
    logs: Path,
    log: Any = print,
    subscribers: tuple[int, int] = (100, 20),
) -> dict[str, Any]:
    """Every phase at ``size`` hosts: one per write rate."""
    plane = ControlPlane()
    gateway: Server | None = None
    try:
        plane.start()
        objects = generate(size, seed=0, bookings_per_host=40)
        log(f"[churn {size}] loading")
        asyncio.run(load(plane, objects))
        port = _free_port()
        args = ["--kubeconfig", str(plane.kubeconfig), "--max-page-size", str(max(size, 10_000))]
        gateway = Server.gateway(port, logs / f"churn-{size}.log", *args)
        gateway.wait_ready()
        phases = []
        for rate in rates:
            log(f"[churn {size}] {rate:g} changes/s for {seconds:g} s")
            phase = asyncio.run(
                _phase(
                    plane,
                    gateway,
                    objects,
                    rate,
                    seconds,
                    total_subscribers=subscribers[0],
                    host_subscribers=subscribers[1],
                )
            )
            phase["host_hit_rate"] = asyncio.run(_host_hits(gateway, plane, objects, rate, 10))
            phase["baseline"] = asyncio.run(_baseline(plane, objects, rate, min(seconds, 20)))
            phases.append(phase)
        return {"size": size, "phases": phases}
    finally:
        if gateway is not None:
            gateway.stop()
        plane.stop()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def markdown(runs: list[dict[str, Any]]) -> str:
    """One table row per size and rate."""
    lines = [
        "| Hosts | changes/s asked / achieved | fleetCapacity(ZONE) p50 / p99 "
        "| 100-host page p50 / p99 | canFit p50 / p99 | hypervisor(name:) p50 / p99 "
        "| LIST + compute p50 | ZONE p50 : LIST "
        "| cache hits (all / lookups alone) | gateway CPU | RSS "
        "| messages (totals / hosts) |",
        "|" + "---|" * 12,
    ]
    for run in runs:
        for p in run["phases"]:
            q: dict[str, Summary] = p["queries"]
            cell = functools.partial(_cell, q)

            base = p["baseline"]
            ratio = f"1/{base.median / q['zones'].median:,.0f}" if base and "zones" in q else "-"
            hosts_alone = p.get("host_hit_rate")
            lines.append(
                f"| {run['size']:,} | {p['rate']:g} / {p['achieved']:.1f} | {cell('zones')} "
                f"| {cell('page')} | {cell('fit')} | {cell('host')} "
                f"| {base.median * 1e3:,.0f} ms | {ratio} "
                f"| {_percent(p['hit_rate'])} / {_percent(hosts_alone)} "
                f"| {p['cpu_share'] * 100:.0f}% of a core | {p['rss_kib'] / 1024:.0f} MiB "
                f"| {p['messages']['totals']} / {p['messages']['hosts']} |"
            )
    return "\n".join(lines)


def _cell(queries: dict[str, Summary], kind: str) -> str:
    s = queries.get(kind)
    return "-" if s is None else f"{s.median * 1e3:.2f} / {s.p99 * 1e3:.2f} ms"


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.churn", description=__doc__)
    parser.add_argument("--sizes", default="1000,5000", help="comma-separated fleet sizes")
    parser.add_argument("--rates", default="10,100", help="comma-separated changes per second")
    parser.add_argument("--seconds", type=float, default=30, help="seconds per phase")
    parser.add_argument(
        "--subscribers",
        default="100,20",
        help="fleetCapacityChanged and hypervisorChanged subscribers (default 100,20)",
    )
    args = parser.parse_args()
    runs = []
    with tempfile.TemporaryDirectory(prefix="hgw-churn-") as tmp:
        for size in (int(s) for s in args.sizes.split(",")):
            rates = [float(r) for r in args.rates.split(",")]
            totals, hosts = (int(n) for n in args.subscribers.split(","))
            log = functools.partial(print, file=sys.stderr)
            runs.append(churn(size, rates, args.seconds, Path(tmp), log, (totals, hosts)))
            print(markdown(runs), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
