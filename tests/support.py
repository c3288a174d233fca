"""Test support: serve a fixed list of objects through the real app."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx

from gateway.http.app import create_app
from gateway.store.source import Source, SyncStatus
from gateway.store.store import Store


class StaticSource:
    """A source that loads a fixed list of objects once and keeps them."""

    def __init__(self, objects: list[dict[str, Any]], resource_version: str | None = None) -> None:
        self.objects = objects
        self.resource_version = resource_version
        self.status = SyncStatus("static")
        self.loaded = asyncio.Event()

    async def run(self, store: Store) -> None:
        store.replace(self.objects, self.resource_version)
        store.mark_ready()
        self.status.synced = True
        self.status.confirm()
        self.loaded.set()
        await asyncio.Event().wait()


@contextlib.asynccontextmanager
async def serve(
    objects: list[dict[str, Any]], **app_options: Any
) -> AsyncIterator[tuple[httpx.AsyncClient, Store]]:
    """The real ASGI app with its lifespan running, and an HTTP client for it."""
    store = Store()
    source = StaticSource(objects)
    app = create_app(source, store, **app_options)
    async with app.router.lifespan_context(app):
        await source.loaded.wait()
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
            yield client, store


async def query(client: httpx.AsyncClient, document: str, **variables: Any) -> dict[str, Any]:
    """POST a query, assert it succeeded without errors, return its data."""
    response = await client.post("/graphql", json={"query": document, "variables": variables})
    assert response.status_code == 200, response.text
    body = response.json()
    assert "errors" not in body, body["errors"]
    data: dict[str, Any] = body["data"]
    return data


@contextlib.asynccontextmanager
async def run_server(
    objects: list[dict[str, Any]] | Source, **app_options: Any
) -> AsyncIterator[tuple[str, Store]]:
    """The real app under uvicorn on a free loopback port; yields its base URL.

    Given objects, it serves them (and waits until they are loaded); given a
    source (an informer), it serves whatever that source delivers.
    """
    import uvicorn

    from gateway.http.server import config

    store = Store()
    source = StaticSource(objects) if isinstance(objects, list) else objects
    app = create_app(source, store, **app_options)
    server = uvicorn.Server(config(app, host="127.0.0.1", port=0, log_level="warning"))
    task = asyncio.create_task(server.serve())
    while not server.started:  # noqa: ASYNC110 - uvicorn only exposes a flag
        await asyncio.sleep(0.01)
    if isinstance(source, StaticSource):
        await source.loaded.wait()
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"127.0.0.1:{port}", store
    finally:
        server.should_exit = True
        await task
