"""Issue figures for the demo fleet, in one process: ``python -m bench.live [--size 5000]``.

The gateway's app is served by uvicorn (the project's settings) on a thread of
its own, twice over one store: once with the response cache, once without. The
script then times a fleet-wide ``fleetCapacity`` query on each, and the delay
from a change applied to the store (on the server's loop) to the
``hypervisorChanged`` message a WebSocket subscriber receives.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import socket
import sys
import threading
import time
from typing import Any

import httpx
import uvicorn
import websockets

from bench.stats import Summary, sample
from gateway.http import server
from gateway.http.app import create_app
from gateway.http.cache import BoundedMemoryCache, ResponseCache
from gateway.sources.demo.source import DemoSource, generate
from gateway.store.source import SyncStatus
from gateway.store.store import Store

__all__ = ["measure"]

CAPACITY = "{ fleetCapacity { hypervisorCount resources { name capacity booked free } } }"
CHANGES = "subscription Changes($name: String!) { hypervisorChanged(filter: {names: [$name]}) { type hypervisor { name numInstances } } }"  # noqa: E501


class _Alongside:
    """The source of the second app: the first app's source fills the shared store."""

    def __init__(self, status: SyncStatus) -> None:
        self.status = status

    async def run(self, store: Store) -> None:
        await asyncio.Event().wait()


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class _Servers(threading.Thread):
    """Both apps under uvicorn on one event loop in a thread; ``loop`` runs store changes."""

    def __init__(self, size: int) -> None:
        super().__init__(daemon=True)
        self.store = Store()
        source = DemoSource(size=size)
        cache = ResponseCache(BoundedMemoryCache(max_entries=2000))
        apps = {
            "cached": create_app(source, self.store, cache=cache),
            "uncached": create_app(_Alongside(source.status), self.store),
        }
        self.urls = {}
        self.servers = []
        for name, app in apps.items():
            port = _port()
            self.urls[name] = f"http://127.0.0.1:{port}"
            config = server.config(app, host="127.0.0.1", port=port, log_level="warning")
            self.servers.append(uvicorn.Server(config))
        self.loop = asyncio.new_event_loop()

    def run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(asyncio.gather(*(s.serve() for s in self.servers)))

    def stop(self) -> None:
        for s in self.servers:
            s.should_exit = True
        self.join(timeout=30)


async def _subscription_delays(
    servers: _Servers, objects: list[dict[str, Any]], changes: int
) -> list[float]:
    target = copy.deepcopy(next(o for o in objects if "status" in o))
    name = target["metadata"]["name"]
    url = servers.urls["cached"].replace("http", "ws") + "/graphql"
    applied: dict[int, float] = {}
    delays = []

    def change(number: int) -> None:
        target["status"]["numInstances"] = number
        applied[number] = time.perf_counter()
        servers.store.upsert(copy.deepcopy(target))

    async with websockets.connect(
        url, subprotocols=[websockets.Subprotocol("graphql-transport-ws")], max_size=None
    ) as ws:
        await ws.send(json.dumps({"type": "connection_init"}))
        await ws.recv()
        payload = {"query": CHANGES, "variables": {"name": name}}
        await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": payload}))
        await asyncio.sleep(0.2)  # the subscription is registered once its first step has run
        for number in range(1_000_000, 1_000_000 + changes):
            servers.loop.call_soon_threadsafe(change, number)
            while True:
                message = json.loads(await asyncio.wait_for(ws.recv(), 10))
                hypervisor = message["payload"]["data"]["hypervisorChanged"]["hypervisor"]
                if hypervisor["numInstances"] == number:
                    delays.append(time.perf_counter() - applied[number])
                    break
            await asyncio.sleep(0.01)
    return delays


def measure(
    size: int = 5000, runs: int = 30, cached_runs: int = 300, changes: int = 100
) -> dict[str, Summary]:
    """fleetCapacity uncached and cached, and store change to subscription message."""
    servers = _Servers(size)
    servers.start()
    try:
        with (
            httpx.Client(base_url=servers.urls["cached"], timeout=60) as hot,
            httpx.Client(base_url=servers.urls["uncached"], timeout=60) as cold,
        ):
            deadline = time.perf_counter() + 600
            while not _ready(hot):
                if time.perf_counter() > deadline:
                    raise RuntimeError("the demo fleet did not load")
                time.sleep(0.05)

            def query(http: httpx.Client) -> None:
                body = http.post("/graphql", json={"query": CAPACITY}).raise_for_status().json()
                if "errors" in body:
                    raise RuntimeError(body["errors"])

            figures = {
                "capacity_uncached": sample(lambda: query(cold), runs),
                "capacity_cached": sample(lambda: query(hot), cached_runs),
            }
        objects = generate(size)
        figures["change_to_message"] = Summary(
            asyncio.run(_subscription_delays(servers, objects, changes))
        )
        return figures
    finally:
        servers.stop()


def _ready(http: httpx.Client) -> bool:
    try:
        return http.get("/readyz").status_code == 200
    except httpx.HTTPError:
        return False


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.live", description=__doc__)
    parser.add_argument("--size", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--cached-runs", type=int, default=300)
    parser.add_argument("--changes", type=int, default=100)
    args = parser.parse_args()
    figures = measure(args.size, args.runs, args.cached_runs, args.changes)
    print(f"demo fleet of {args.size:,} hypervisors (python -m bench.live --size {args.size})")
    print("| Measurement | median | p99 | runs |\n|---|---|---|---|")
    labels = {
        "capacity_uncached": "fleetCapacity, uncached",
        "capacity_cached": "fleetCapacity, cached",
        "change_to_message": "store change -> hypervisorChanged message",
    }
    for key, label in labels.items():
        s = figures[key]
        print(f"| {label} | {s.median * 1000:.2f} ms | {s.p99 * 1000:.2f} ms | {s.n} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
