"""A scripted stand-in for the Hypervisor endpoint, for replies a real server gives only rarely.

Bookmarks come at the server's discretion, an in-band ``ERROR`` 410 needs a
watch that outlives etcd's history, and an expired continue token needs a
compaction between two pages of one LIST. Here each reply is written down in
the test. Only these cases use it; everything else runs on the real API server.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from typing import Any

from aiohttp import web
from kubernetes.aio.client import Configuration

from tests.objects import hypervisor

#: A watch script: events to stream (or raw lines), then ``None`` to keep the stream open.
Watch = list[dict[str, Any] | bytes | None]


class FakeHypervisorAPI:
    def __init__(self) -> None:
        self.lists: deque[tuple[int, dict[str, Any], dict[str, str]]] = deque()
        self.watches: deque[Watch] = deque()
        #: Query parameters of every request, in order, and when each arrived.
        self.requests: list[dict[str, str]] = []
        self.arrivals: list[float] = []
        #: Whether a watch may start with the initial state (sendInitialEvents);
        #: if not, it is refused as by an API server without the WatchList feature.
        self.streaming = False
        self._runner: web.AppRunner | None = None
        self.port = 0
        self.clients: list[asyncio.Task[None]] = []

    def page(self, items: list[Any], version: str, token: str | None = None) -> None:
        metadata = {"resourceVersion": version, **({"continue": token} if token else {})}
        self.lists.append((200, {"items": items, "metadata": metadata}, {}))

    def fail_list(self, code: int, reason: str, headers: dict[str, str] | None = None) -> None:
        status = {"kind": "Status", "code": code, "reason": reason}
        self.lists.append((code, status, headers or {}))

    async def start(self) -> Configuration:
        app = web.Application()
        app.router.add_get("/apis/kvm.cloud.sap/v1/hypervisors", self._handle)
        # Cancel a handler when its client goes: scripted watches otherwise hang on.
        self._runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        configuration = Configuration()
        configuration.host = f"http://127.0.0.1:{self.port}"
        return configuration

    async def close(self) -> None:
        for task in self.clients:
            task.cancel()
        await asyncio.gather(*self.clients, return_exceptions=True)
        if self._runner is not None:
            await self._runner.cleanup()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(dict(request.query))
        self.arrivals.append(time.monotonic())
        if request.query.get("watch") != "true":
            status, body, headers = self.lists.popleft() if self.lists else (500, {"code": 500}, {})
            return web.json_response(body, status=status, headers=headers)
        if "sendInitialEvents" in request.query and not self.streaming:
            message = "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"
            return web.json_response(
                {"kind": "Status", "code": 422, "message": message}, status=422
            )
        response = web.StreamResponse()
        await response.prepare(request)
        for event in self.watches.popleft() if self.watches else [None]:
            if event is None:
                await asyncio.sleep(3600)
                break
            line = event if isinstance(event, bytes) else json.dumps(event).encode()
            await response.write(line + b"\n")
        return response


def event(kind: str, name: str, version: str) -> dict[str, Any]:
    return {"type": kind, "object": hypervisor(name, resource_version=version)}


def bookmark(version: str) -> dict[str, Any]:
    """An ordinary bookmark: the stream's position, no object."""
    return {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": version}}}


def initial_events_end(version: str) -> dict[str, Any]:
    """The bookmark that ends a stream's initial state."""
    metadata = {"resourceVersion": version, "annotations": {"k8s.io/initial-events-end": "true"}}
    return {"type": "BOOKMARK", "object": {"metadata": metadata}}
