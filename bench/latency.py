"""From a write acknowledged by the API server to the moment each reader reflects it.

Three readers follow the same writes: a bare watch (one HTTP stream, as small a
client as can be), the gateway's ``hypervisorChanged`` subscription over
graphql-transport-ws, and a client that polls a GraphQL query until the answer
carries the written resourceVersion. Writes are one at a time, each a merge
patch of a host's status; every delay is counted from the moment the PATCH
response arrived (which the watch may beat: then the delay is negative).

The poller is as small a client as the watch, one keep-alive HTTP/1.1
connection written to directly: a poll's round trip is the resolution of the
answer's delay, and through httpx each took ~1.5 ms of the client's own time
(against ~0.2 ms of the gateway's, at 5,000 hosts), more than the gateway
needs to apply a write.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx
import websockets

from bench.fleet import MERGE_PATCH, async_client
from harness.controlplane import HYPERVISORS, ControlPlane

__all__ = ["Arrivals", "Poller", "write_delays"]

POLL = "query Version($name: String!) { hypervisor(name: $name) { resourceVersion } }"
SUBSCRIBE = "subscription Changes($names: [String!]) { hypervisorChanged(filter: {names: $names}) { type hypervisor { name resourceVersion } } }"  # noqa: E501


class Arrivals:
    """When each resourceVersion was first seen by one reader."""

    def __init__(self) -> None:
        self._seen: dict[str, asyncio.Future[float]] = {}

    def _future(self, version: str) -> asyncio.Future[float]:
        return self._seen.setdefault(version, asyncio.get_running_loop().create_future())

    def seen(self, version: str) -> None:
        future = self._future(version)
        if not future.done():
            future.set_result(time.perf_counter())

    async def wait(self, version: str, within: float = 30) -> float:
        return await asyncio.wait_for(asyncio.shield(self._future(version)), within)


async def _bare_watch(http: httpx.AsyncClient, start: str, arrivals: Arrivals) -> None:
    params = {"watch": "true", "resourceVersion": start, "timeoutSeconds": "3600"}
    async with http.stream("GET", HYPERVISORS, params=params, timeout=None) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if line.strip():
                event = json.loads(line)
                arrivals.seen(event["object"]["metadata"]["resourceVersion"])


async def _subscription(
    ws_url: str, names: list[str], arrivals: Arrivals, subscribed: asyncio.Event
) -> None:
    async with websockets.connect(
        ws_url, subprotocols=[websockets.Subprotocol("graphql-transport-ws")], max_size=None
    ) as ws:
        await ws.send(json.dumps({"type": "connection_init"}))
        assert json.loads(await ws.recv())["type"] == "connection_ack"
        message = {"query": SUBSCRIBE, "variables": {"names": names}}
        await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": message}))
        subscribed.set()
        async for raw in ws:
            message = json.loads(raw)
            if message["type"] == "next":
                change = message["payload"]["data"]["hypervisorChanged"]
                arrivals.seen(change["hypervisor"]["resourceVersion"])
            elif message["type"] in ("error", "complete"):
                raise RuntimeError(f"subscription ended: {message}")


class Poller:
    """One keep-alive HTTP/1.1 connection that POSTs GraphQL requests to ``/graphql``."""

    def __init__(self, url: str) -> None:
        address = httpx.URL(url)
        self._host, self._port = address.host, address.port or 80
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def __aenter__(self) -> Poller:
        await self._connect()
        return self

    async def _connect(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self._reader, self._writer = await asyncio.open_connection(self._host, self._port)

    async def __aexit__(self, *exc: object) -> None:
        if self._writer is not None:
            self._writer.close()

    async def ask(self, body: bytes) -> Any:
        """The JSON answer to one request; anything but a 200 with a length raises.

        A connection the server closed while idle (its keep-alive timeout, or a
        408 for headers it waited for too long) is opened again, once: a client
        polling every few seconds meets that.
        """
        try:
            return await self._ask(body)
        except (asyncio.IncompleteReadError, ConnectionError):
            await self._connect()
            return await self._ask(body)

    async def _ask(self, body: bytes) -> Any:
        assert self._reader is not None and self._writer is not None
        self._writer.write(
            b"POST /graphql HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (self._host.encode(), len(body), body)
        )
        head = (await self._reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        fields = dict(line.lower().split(": ", 1) for line in head[1:] if line)
        if "content-length" not in fields:
            await self._connect()  # the rest of this answer could not be told from the next
            raise RuntimeError(f"unexpected answer from the gateway: {head}")
        answer = await self._reader.readexactly(int(fields["content-length"]))
        status = head[0].split(" ")[1]
        if status == "408":  # sent on an idle connection, before this request arrived
            raise ConnectionResetError("the gateway closed an idle connection")
        if status != "200":  # read first: the connection stays usable
            raise RuntimeError(f"{head[0]} from the gateway: {answer[:200]!r}")
        return json.loads(answer)


async def _poll(gateway: Poller, name: str, version: str, within: float = 30) -> float:
    deadline = time.perf_counter() + within
    body = json.dumps({"query": POLL, "variables": {"name": name}}).encode()
    while time.perf_counter() < deadline:
        answer = await gateway.ask(body)
        if answer["data"]["hypervisor"]["resourceVersion"] == version:
            return time.perf_counter()
    raise TimeoutError(f"the gateway never answered with {name} at {version}")


async def write_delays(
    plane: ControlPlane, gateway_url: str, names: list[str], writes: int, warmup: int = 3
) -> dict[str, list[float]]:
    """Seconds from each write's acknowledgement to each reader: watch, answer, subscription."""
    watch, subscription = Arrivals(), Arrivals()
    delays: dict[str, list[float]] = {"watch": [], "answer": [], "subscription": []}
    subscribed = asyncio.Event()
    async with async_client(plane) as api, Poller(gateway_url) as gateway:
        start = (await api.get(HYPERVISORS, params={"limit": 1})).json()["metadata"]
        readers = [
            asyncio.create_task(_bare_watch(api, start["resourceVersion"], watch)),
            asyncio.create_task(
                _subscription(
                    gateway_url.replace("http", "ws") + "/graphql", names, subscription, subscribed
                )
            ),
        ]
        try:
            await asyncio.wait_for(subscribed.wait(), 30)
            for i in range(warmup + writes):
                name = names[i % len(names)]
                patch = {"status": {"numInstances": 100_000 + i}}
                response = await api.patch(
                    f"{HYPERVISORS}/{name}/status", content=json.dumps(patch), headers=MERGE_PATCH
                )
                acknowledged = time.perf_counter()
                response.raise_for_status()
                version = response.json()["metadata"]["resourceVersion"]
                answered = await _poll(gateway, name, version)
                watched = await watch.wait(version)
                notified = await subscription.wait(version)
                if i >= warmup:
                    delays["answer"].append(answered - acknowledged)
                    delays["watch"].append(watched - acknowledged)
                    delays["subscription"].append(notified - acknowledged)
                await asyncio.sleep(0.01)
        finally:
            for task in readers:
                task.cancel()
            await asyncio.gather(*readers, return_exceptions=True)
    return delays


def first_names(objects: list[dict[str, Any]], count: int = 10) -> list[str]:
    """Hosts to write to: ones with a status (a status patch on the others works too)."""
    return [o["metadata"]["name"] for o in objects if "status" in o][:count]
