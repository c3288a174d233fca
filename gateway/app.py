"""The ASGI application: GraphQL, health and readiness, and the source's lifetime."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from gateway.context import Context
from gateway.http import GraphQLEndpoint
from gateway.pages import routes as page_routes
from gateway.schema import schema
from gateway.source import Source
from gateway.store import Store

__all__ = ["create_app"]

log = logging.getLogger(__name__)


def create_app(source: Source, store: Store | None = None, *, graphiql: bool = True) -> Starlette:
    """Build the app; the source runs for as long as the app does."""
    store = store or Store()

    def context(request: Request) -> Context:
        return Context(store=store, snapshot=store.snapshot, status=source.status)

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request) -> Response:
        status = source.status
        body = {
            "ready": store.ready and status.synced,
            "hypervisors": len(store.snapshot),
            "generation": store.snapshot.generation,
            "error": status.error,
        }
        return JSONResponse(body, status_code=200 if body["ready"] else 503)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        task = asyncio.create_task(source.run(store), name="source")
        task.add_done_callback(_report_exit)
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    endpoint = GraphQLEndpoint(schema._schema, context, graphiql=graphiql)
    app = Starlette(
        routes=[
            Route("/graphql", endpoint.handle, methods=["GET", "POST", "PUT", "PATCH", "DELETE"]),
            Route("/healthz", healthz),
            Route("/readyz", readyz),
            *page_routes(),
        ],
        lifespan=lifespan,
    )
    app.state.store = store
    app.state.source = source
    return app


def _report_exit(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("the source stopped", exc_info=task.exception())
