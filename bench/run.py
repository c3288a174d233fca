"""One benchmark run at one fleet size: control plane, fleet, gateways, every figure."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import re
import socket
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx

from bench.fleet import free_capacity, list_all, loaded_once, stream_all
from bench.latency import POLL, first_names, write_delays
from bench.stats import Summary, sample, summarize
from gateway.sources.demo.source import generate
from harness.controlplane import ControlPlane
from harness.processes import MemorySampler, Server, memory_kib
from harness.throughput import requests_per_second

__all__ = ["FLEET", "SMALL_QUERY", "ZONES", "Options", "run"]

FLEET = '{ hypervisors { nodes { name zone cpu: resource(name: "cpu") { free } memory: resource(name: "memory") { free } } } }'  # noqa: E501
ZONES = "{ fleetCapacity(groupBy: ZONE) { key resources { name capacity booked free } } }"
SMALL_QUERY = "query Small($name: String!) { hypervisor(name: $name) { name zone } }"


@dataclasses.dataclass(frozen=True)
class Options:
    size: int
    bookings: int = 40
    runs: int = 30
    cached_runs: int = 300
    writes: int = 300
    starts: int = 3
    clients: int = 32
    rps_seconds: int = 10
    workdir: Path = Path("/tmp")
    #: A directory to keep the loaded cluster in between runs (a temporary one if None).
    cluster: Path | None = None


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _post(http: httpx.Client, query: str, variables: dict[str, Any] | None = None) -> bytes:
    response = http.post("/graphql", json={"query": query, "variables": variables or {}})
    response.raise_for_status()
    return response.content


def _answer(http: httpx.Client, query: str) -> Any:
    payload = httpx.Response(200, content=_post(http, query)).json()
    if payload.get("errors"):
        raise RuntimeError(f"query failed: {payload['errors']}")
    return payload["data"]


def run(options: Options, log: Any = print) -> dict[str, Any]:
    """Everything measured at ``options.size`` hosts; times in seconds, sizes in bytes."""
    figures: dict[str, Any] = {"size": options.size, "bookings_per_host": options.bookings}
    empty = ControlPlane()
    plane = ControlPlane(workdir=options.cluster)
    servers: list[Server] = []
    try:
        log(f"[{options.size}] starting etcd and kube-apiserver")
        plane.start()
        logs = options.workdir
        gateway_args = _gateway_args(plane, options)
        objects = generate(options.size, seed=0, bookings_per_host=options.bookings)
        figures["bookings"] = sum(len(o["spec"].get("bookings") or ()) for o in objects)
        log(f"[{options.size}] loading, unless the cluster holds the fleet already")
        figures["load_seconds"] = loaded_once(plane, objects, options.bookings)
        log(f"[{options.size}] LIST baseline")
        figures |= _baseline(plane, options)
        expected = _free(plane)

        # The empty cluster runs for its own figures only, not beside the loading and LIST.
        log(f"[{options.size}] a gateway's queries on an empty cluster")
        empty.start()
        empty_args = _gateway_args(empty, options)
        figures["rss_empty_run"] = _after_the_queries(empty_args, options)
        log(f"[{options.size}] gateway starts, on the empty cluster and the loaded one in turn")
        figures |= _starts({"empty": empty_args, "loaded": gateway_args}, logs, options.starts)
        empty.stop()
        cached = Server.gateway(_port(), logs / "gateway.log", *gateway_args)
        servers.append(cached)
        cached.wait_ready()
        uncached = Server.gateway(
            _port(), logs / "gateway-uncached.log", *gateway_args, "--cache", "off"
        )
        servers.append(uncached)
        uncached.wait_ready()
        log(f"[{options.size}] gateway ready in {figures['ready_loaded'].median:.2f}s; queries")
        figures |= _queries(cached, uncached, expected, options)
        # From here on one gateway is measured: a second one following the same
        # watch would take CPU from it (two cores) for nothing.
        uncached.stop()

        log(f"[{options.size}] {options.writes} writes")
        names = first_names(objects)
        delays = asyncio.run(write_delays(plane, cached.url, names, options.writes))
        figures |= {f"delay_{reader}": summarize(d) for reader, d in delays.items()}

        log(f"[{options.size}] throughput, {options.clients} clients")
        small = {"query": SMALL_QUERY, "variables": {"name": names[0]}}
        figures["rps_gateway"] = requests_per_second(
            cached.url + "/graphql", small, options.clients, options.rps_seconds
        )
        bare = Server.bare(_port(), logs / "bare.log")
        servers.append(bare)
        bare.wait_ready()
        figures["rps_bare"] = requests_per_second(
            bare.url + "/graphql", small, options.clients, options.rps_seconds
        )
        bare.stop()

        log(f"[{options.size}] forced relist")
        figures |= _relist(plane, cached)
    finally:
        for server in servers:
            server.stop()
        plane.stop()
        empty.stop()
    return figures


def _gateway_args(plane: ControlPlane, options: Options) -> list[str]:
    max_page = str(max(options.size, 10_000))
    return ["--kubeconfig", str(plane.kubeconfig), "--max-page-size", max_page]


def _after_the_queries(gateway_args: list[str], options: Options) -> int:
    """RSS of a gateway with no fleet once it has answered a run's queries (as many of
    each, and the load of as many clients), measured as the loaded one's steady RSS is.

    Answering at all costs memory whatever the fleet: the documents parsed, the code
    paths' first use, the allocator's pools. At 1,000 hosts that is a third of what a
    run adds to a loaded gateway, and it is no more a cost per host than the imports.
    """
    gateway = Server.gateway(_port(), options.workdir / "gateway-empty-run.log", *gateway_args)
    try:
        gateway.wait_ready()
        with httpx.Client(base_url=gateway.url, timeout=60) as http:
            for query in (FLEET, ZONES):
                for _ in range(1 + options.cached_runs):
                    _post(http, query)
            for _ in range(options.writes):
                _post(http, POLL, {"name": "absent"})
        small = {"query": SMALL_QUERY, "variables": {"name": "absent"}}
        requests_per_second(gateway.url + "/graphql", small, options.clients, options.rps_seconds)
        time.sleep(1)
        return memory_kib(gateway.pid)["VmRSS"] * 1024
    finally:
        gateway.stop()


def _baseline(plane: ControlPlane, options: Options) -> dict[str, Any]:
    with plane.client() as http:
        http.timeout = httpx.Timeout(300)
        paged = sample(lambda: list_all(http, 500), options.runs)
        whole = sample(lambda: list_all(http, None), options.runs)
        stream = sample(lambda: stream_all(http), options.runs)
        script = sample(lambda: free_capacity(http, None), max(5, options.runs // 3))
        json_bytes = sum(len(body) for body in list_all(http, None))
    return {
        "list_paged": paged,
        "list_whole": whole,
        "list_stream": stream,
        "list_compute": script,
        "list_bytes": json_bytes,
    }


def _starts(fleets: dict[str, list[str]], logs: Path, count: int) -> dict[str, Any]:
    """Start the gateway ``count`` times on each cluster (its arguments by name), one
    after the other, the clusters in turn: time to ready, RSS at ready.

    A start is timed more than once because one start is one sample on a noisy
    machine. On the empty cluster the figures are the gateway's fixed cost (the
    interpreter, its libraries, the connection); what a start with the fleet
    takes beyond it is the fleet's share. Taken in turn, the two see the same
    machine: at 1,000 hosts the fleet's share is a third of a start, and the
    empty cluster's starts, timed minutes apart from the loaded one's, moved it
    by half its value (0.68-0.83 s, the same gateway).
    """
    ready: dict[str, list[float]] = {fleet: [] for fleet in fleets}
    rss: dict[str, list[int]] = {fleet: [] for fleet in fleets}
    for _ in range(count):
        for fleet, gateway_args in fleets.items():
            gateway = Server.gateway(_port(), logs / f"gateway-{fleet}.log", *gateway_args)
            try:
                ready[fleet].append(gateway.wait_ready())
                rss[fleet].append(memory_kib(gateway.pid)["VmRSS"] * 1024)
            finally:
                gateway.stop()
    figures: dict[str, Any] = {}
    for fleet in fleets:
        figures[f"ready_{fleet}"] = summarize(ready[fleet])
        figures[f"rss_{fleet}"] = sorted(rss[fleet])[len(rss[fleet]) // 2]
    return figures


def _free(plane: ControlPlane) -> dict[str, tuple[Decimal, Decimal]]:
    with plane.client() as http:
        http.timeout = httpx.Timeout(300)
        return free_capacity(http, None)


def _queries(
    cached: Server, uncached: Server, expected: dict[str, tuple[Decimal, Decimal]], options: Options
) -> dict[str, Summary]:
    with (
        httpx.Client(base_url=cached.url, timeout=60) as hot,
        httpx.Client(base_url=uncached.url, timeout=60) as cold,
    ):
        nodes = _answer(cold, FLEET)["hypervisors"]["nodes"]
        answered = {
            n["name"]: (Decimal(n["cpu"]["free"]), Decimal(n["memory"]["free"]))
            for n in nodes
            if n["cpu"]
            and n["memory"]
            and n["cpu"]["free"] is not None
            and n["memory"]["free"] is not None
        }
        if answered != expected or len(nodes) != options.size:
            raise RuntimeError("the gateway's free capacity differs from the script's")
        _answer(hot, ZONES)
        return {
            "fleet_uncached": sample(lambda: _post(cold, FLEET), options.runs),
            "fleet_cached": sample(lambda: _post(hot, FLEET), options.cached_runs),
            "zones_uncached": sample(lambda: _post(cold, ZONES), options.runs),
            "zones_cached": sample(lambda: _post(hot, ZONES), options.cached_runs),
        }


def _relist(plane: ControlPlane, gateway: Server) -> dict[str, Any]:
    """Compact etcd and restart the API server: the informer's resume position is gone (410)."""
    with httpx.Client(base_url=gateway.url, timeout=60) as http:
        time.sleep(1)
        steady = memory_kib(gateway.pid)["VmRSS"] * 1024
        before = _relists(http)
        with MemorySampler(gateway.pid) as sampler:
            started = time.perf_counter()
            plane.stop_apiserver(kill=True)
            # A write the informer cannot see, then compaction past it: the position the
            # informer resumes from is gone, and the restarted API server says 410.
            key = base64.b64encode(b"/bench/relist").decode()
            httpx.post(f"{plane.etcd_url}/v3/kv/put", json={"key": key, "value": key})
            plane.compact()
            plane.start_apiserver()
            while True:
                if _relists(http) > before and http.get("/readyz").status_code == 200:
                    break
                if time.perf_counter() - started > 120:
                    raise RuntimeError("the gateway did not relist")
                time.sleep(0.02)
            relisted = time.perf_counter() - started
            time.sleep(1)
    return {
        "rss_steady": steady,
        "rss_relist_peak": sampler.peak * 1024,
        "relist_seconds": relisted,
    }


def _relists(http: httpx.Client) -> float:
    """Relists so far, from /metrics (a cached syncStatus answer can lag behind it)."""
    match = re.search(r"^\w*relists_total (\S+)$", http.get("/metrics").text, re.MULTILINE)
    if match is None:
        raise RuntimeError("no relists_total in /metrics")
    return float(match.group(1))
