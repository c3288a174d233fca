"""The synthetic fleet in the API server, and what a script does without the gateway.

Objects are written as a controller writes them: the object first, then its
status through the status subresource (the main resource ignores status). Many
requests are in flight at once so that loading 20,000 objects takes a minute,
not an hour; loading time is not one of the measured figures.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import ssl
import time
from collections.abc import Callable
from decimal import ROUND_FLOOR, Decimal
from pathlib import Path
from typing import Any

import httpx
from kubernetes.utils import parse_quantity as _parse_quantity

from harness.controlplane import HYPERVISORS, ControlPlane

__all__ = [
    "Api",
    "async_client",
    "free_capacity",
    "list_all",
    "load",
    "resources_free",
    "stream_all",
]

#: The Kubernetes client's own quantity parser (exact, Decimal), as a script would use.
parse_quantity: Callable[[Any], Decimal] = _parse_quantity

_CONTINUE = re.compile(rb'"continue":"([^"]+)"')
MERGE_PATCH = {"Content-Type": "application/merge-patch+json"}


@dataclasses.dataclass(frozen=True)
class Api:
    """How to reach the API server as its admin: all a client in another process needs."""

    server: str
    ca_file: Path
    token: str

    @classmethod
    def of(cls, plane: ControlPlane) -> Api:
        return cls(plane.server, plane.ca_file, plane.tokens["admin"])

    def client(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.server,
            verify=ssl.create_default_context(cafile=self.ca_file),
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=300,
        )


def async_client(plane: ControlPlane | Api, connections: int = 32) -> httpx.AsyncClient:
    api = plane if isinstance(plane, Api) else Api.of(plane)
    return httpx.AsyncClient(
        base_url=api.server,
        verify=ssl.create_default_context(cafile=api.ca_file),
        headers={"Authorization": f"Bearer {api.token}"},
        timeout=120,
        limits=httpx.Limits(max_connections=connections),
    )


async def load(plane: ControlPlane, objects: list[dict[str, Any]], concurrency: int = 32) -> float:
    """Create every object with its status; returns the seconds it took."""
    started = time.perf_counter()
    queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    for obj in objects:
        queue.put_nowait(obj)

    async def worker(http: httpx.AsyncClient) -> None:
        while not queue.empty():
            obj = queue.get_nowait()
            await _create(http, obj)

    async with async_client(plane, concurrency) as http:
        await asyncio.gather(*(worker(http) for _ in range(concurrency)))
    return time.perf_counter() - started


#: What a cluster directory kept between runs says about the fleet loaded into it.
KEPT = "fleet.json"


def loaded_once(plane: ControlPlane, objects: list[dict[str, Any]], bookings: int) -> float | None:
    """Load ``objects`` (the demo fleet of seed 0, ``bookings`` a host) unless the
    cluster kept in ``plane.dir`` holds that fleet already: the seconds loading took,
    None if it was kept."""
    kept = plane.dir / KEPT
    fleet = {"size": len(objects), "seed": 0, "bookings": bookings}
    if kept.exists() and fleet.items() <= json.loads(kept.read_text()).items():
        _cache_loaded(plane)
        return None
    seconds = asyncio.run(load(plane, objects))
    kept.write_text(json.dumps(fleet | {"load_seconds": seconds}))
    return seconds


def _cache_loaded(plane: ControlPlane, timeout: float = 600) -> None:
    """Wait until the API server answers a whole LIST: started on a kept etcd (its CRD
    installed again), it reads every object into its watch cache first (a minute at
    20,000 hosts) and answers 429 "storage is (re)initializing" meanwhile; a LIST of
    one object, served from etcd, does not wait for that. The first whole LIST, slower
    than the next, is then not among the measured ones."""
    deadline = time.monotonic() + timeout
    with plane.client() as http:
        while http.get(HYPERVISORS, timeout=timeout).status_code != 200:
            if time.monotonic() > deadline:
                raise TimeoutError("the API server did not load the kept fleet")
            time.sleep(0.5)


async def _create(http: httpx.AsyncClient, obj: dict[str, Any]) -> None:
    body = {k: v for k, v in obj.items() if k != "status"}
    _check(await http.post(HYPERVISORS, content=json.dumps(body)))
    if "status" in obj:
        name = obj["metadata"]["name"]
        patch = json.dumps({"status": obj["status"]})
        _check(await http.patch(f"{HYPERVISORS}/{name}/status", content=patch, headers=MERGE_PATCH))


def _check(response: httpx.Response) -> None:
    if response.is_error:
        raise RuntimeError(f"HTTP {response.status_code}: {response.text[:300]}")


def list_all(http: httpx.Client, limit: int | None) -> list[bytes]:
    """Every Hypervisor as the API server sends it: pages of ``limit`` (kubectl: 500), or one.

    Returns the raw bodies, unparsed: the time is the API server's and the transfer's.
    """
    bodies: list[bytes] = []
    params: dict[str, Any] = {"limit": limit} if limit else {}
    while True:
        response = http.get(HYPERVISORS, params=params)
        response.raise_for_status()
        bodies.append(response.content)
        if not limit:
            return bodies
        # The list's metadata comes last (keys are sorted): no need to parse the page.
        match = _CONTINUE.search(response.content, max(0, len(response.content) - 4096))
        if match is None:
            return bodies
        params["continue"] = match.group(1).decode()


def stream_all(http: httpx.Client) -> int:
    """Every Hypervisor as a watch's initial events (what the gateway reads); their count.

    Read up to the bookmark that ends them, undecoded but for that bookmark.
    """
    params = {
        "watch": "true",
        "sendInitialEvents": "true",
        "resourceVersionMatch": "NotOlderThan",
        "allowWatchBookmarks": "true",
    }
    added = 0
    with http.stream("GET", HYPERVISORS, params=params) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if '"BOOKMARK"' in line[:32] and "initial-events-end" in line:
                return added
            added += 1
    raise RuntimeError("the stream ended before its initial events did")


def free_capacity(http: httpx.Client, limit: int | None) -> dict[str, tuple[Decimal, Decimal]]:
    """What a script computes by hand: LIST, parse, then every host's free cpu and memory."""
    free = {}
    for body in list_all(http, limit):
        for item in json.loads(body)["items"]:
            cpu, memory = resources_free(item)
            if cpu is not None and memory is not None:
                free[item["metadata"]["name"]] = (cpu, memory)
    return free


def resources_free(item: dict[str, Any]) -> tuple[Decimal | None, Decimal | None]:
    """free = floor((physical - reserved) x overcommit) - booked, for cpu and memory.

    Unknown (None) for a host without ``spec.bookings``: Placement's figures are not
    tracked there, whatever its status says.
    """
    spec, status = item.get("spec") or {}, item.get("status") or {}
    if "bookings" not in spec:
        return None, None
    physical = status.get("capacity") or {}
    overcommit = spec.get("overcommit") or {}
    reserved = {"cpu": Decimal(0), "memory": Decimal(0)}
    booked = {"cpu": Decimal(0), "memory": Decimal(0)}
    for booking in spec.get("bookings") or ():
        entry, sums = (
            (booking["consumer"], booked)
            if "consumer" in booking
            else (booking["reservation"], reserved)
        )
        for name, amount in (entry.get("resources") or {}).items():
            if name in sums:
                sums[name] += parse_quantity(amount)
    result: list[Decimal | None] = []
    for name in ("cpu", "memory"):
        if name not in physical:
            result.append(None)
            continue
        ratio = Decimal(str(overcommit.get(name, 1.0)))
        capacity = ((parse_quantity(physical[name]) - reserved[name]) * ratio).to_integral_value(
            ROUND_FLOOR
        )
        result.append(capacity - booked[name])
    return result[0], result[1]
