"""The ASGI application: GraphQL, health and readiness, and the source's lifetime."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import AsyncIterator, Sequence

from graphql import NoSchemaIntrospectionCustomRule
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway.api.context import Context
from gateway.api.documents import DOCUMENT_BYTES, Documents
from gateway.api.limits import Limits
from gateway.api.memos import COMPLETED_BYTES, EVENT_BYTES, Answers
from gateway.api.schema import LIVE_FIELDS, SUBSCRIPTION_DOCUMENTS, schema
from gateway.domain import memo
from gateway.domain.flavors import NO_CATALOG, Catalog
from gateway.http.access import RequestObserver
from gateway.http.assets import routes as page_routes
from gateway.http.auth import AllowAll, Authorizer
from gateway.http.cache import ResponseCache
from gateway.http.capacity_metrics import CapacityExposition, capacity_route
from gateway.http.execution import Execution
from gateway.http.graphql import GraphQLEndpoint
from gateway.http.hosts import HostCheck
from gateway.http.metrics import Metrics, StateCollector
from gateway.http.operations import Operations
from gateway.http.persisted import PersistedQueries
from gateway.http.request import ALLOW
from gateway.http.tracing import Tracing
from gateway.http.websocket import SubscriptionServer
from gateway.store.feed import Feed
from gateway.store.source import Source
from gateway.store.store import Store
from gateway.store.views import MAX_BYTES as VIEWS_BYTES

__all__ = ["create_app"]

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True, slots=True)
class Budgets:
    """The bytes each memo may take (gateway.domain.bounded); the response cache and the
    persisted documents have their own."""

    #: The store's views of the fleet (gateway.store.views).
    views: int = VIEWS_BYTES
    #: Completed objects kept for the next answer (gateway.api.reuse).
    completed: int = COMPLETED_BYTES
    #: Each of: subscription events' results, their payloads, the totals subscribers
    #: share (gateway.api.memos).
    events: int = EVENT_BYTES
    #: Each parse memo of the process (gateway.domain.memo).
    parse_memo: int = memo.BUDGET
    #: Each memo of documents: parsed, validated, prepared, subscriptions' (gateway.api.documents),
    #: and what is judged of their selections (gateway.api.judgments).
    documents: int = DOCUMENT_BYTES


def create_app(
    source: Source,
    store: Store | None = None,
    *,
    graphiql: bool = True,
    coalesce_interval: float = 1.0,
    cache: ResponseCache | None = None,
    limits: Limits | None = None,
    introspection: bool = True,
    cors_origins: Sequence[str] = (),
    max_connections: int = 500,
    authorizer: Authorizer | None = None,
    auth_recheck_interval: float = 60.0,
    metrics: Metrics | None = None,
    allowed_hosts: Sequence[str] | None = None,
    catalog: Catalog = NO_CATALOG,
    capacity_series: bool = True,
    tracing: Tracing | None = None,
    persisted: PersistedQueries | None = None,
    budgets: Budgets | None = None,
) -> Starlette:
    """Build the app; the source runs for as long as the app does.

    ``allowed_hosts`` turns the Host check on (see :mod:`gateway.http.hosts`): loopback
    names and these are served, others refused; None serves every Host.

    ``metrics`` is given when something built before the app reports to it (the
    authorizer's decisions); otherwise the app has a registry of its own.

    Without ``capacity_series`` there is no ``/metrics/capacity`` (rendered from its
    first scrape on, and kept so while scrapes come).

    With ``tracing``, requests and operations are spans (gateway.http.tracing),
    sent until the app stops.

    ``persisted`` holds the documents clients name by hash (trusted documents, or
    those registered): by default a store of its own, registering any.

    ``budgets`` bound the memos the app keeps, and reports in /metrics: the store's
    views, the answers' memos (installed in the store), and the parse memos of the
    process.
    """
    store = store or Store()
    budgets = budgets or Budgets()
    store.views.max_bytes = budgets.views
    Answers.install(
        store.memos,
        completed_bytes=budgets.completed,
        event_bytes=budgets.events,
        judgment_bytes=budgets.documents,
    )
    memo.set_budget(budgets.parse_memo)
    for parsing in memo.PARSING:
        store.memos.add(parsing)
    persisted = persisted or PersistedQueries()
    limits = limits or Limits()
    feed = Feed(store)
    exposition = CapacityExposition(store, catalog) if capacity_series else None

    def context(request: Request) -> Context:
        return Context(
            store, source.status, feed, max_page_size=limits.max_page_size, catalog=catalog
        )

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request) -> Response:
        status = source.status
        body = {
            "ready": store.ready and status.synced,
            "hypervisors": len(store.snapshot),
            "generation": store.snapshot.generation,
            "error": status.error,
            # Whether a scrape of /metrics/capacity would wait for the fleet's rendering.
            "capacitySeriesRendered": None if exposition is None else exposition.primed,
        }
        return JSONResponse(body, status_code=200 if body["ready"] else 503)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        feed.start()
        task = asyncio.create_task(source.run(store), name="source")
        task.add_done_callback(_report_exit)
        tasks = [task]
        if exposition is not None:
            rendering = asyncio.create_task(exposition.run(coalesce_interval), name="capacity")
            rendering.add_done_callback(_report_exit)
            tasks.append(rendering)
        try:
            yield
        finally:
            for running in tasks:
                running.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await running
            feed.stop()
            if tracing is not None:
                await asyncio.to_thread(tracing.shutdown)  # sends what is batched

    # One policy for both transports: the same checks, slots, time and size limits.
    operations = Operations(
        schema._schema,
        limits,
        validation_rules=() if introspection else (NoSchemaIntrospectionCustomRule,),
        uncacheable=LIVE_FIELDS,
        persisted=persisted,
        memo_bytes=budgets.documents,
    )
    for kept in (*operations.memos, Documents(SUBSCRIPTION_DOCUMENTS, budgets.documents)):
        store.memos.add(kept)
    execution = Execution(schema._schema, limits, tracing)
    endpoint = GraphQLEndpoint(
        operations,
        execution,
        context,
        graphiql=graphiql and introspection,
        cache=cache,
        authorizer=authorizer,
    )
    subscriptions = SubscriptionServer(
        store,
        source.status,
        feed,
        schema=schema,
        operations=operations,
        execution=execution,
        allowed_origins=cors_origins,
        coalesce_interval=coalesce_interval,
        max_connections=max_connections,
        authorizer=authorizer,
        recheck_interval=auth_recheck_interval,
        catalog=catalog,
    )
    metrics = metrics or Metrics()
    metrics.register(StateCollector(store, source.status, feed, subscriptions, cache, persisted))

    capacity = [] if exposition is None else [capacity_route(exposition, authorizer or AllowAll())]

    app = Starlette(
        routes=[
            # Every method reaches the endpoint, whose 405 lists the methods that work.
            Route("/graphql", OptionsAnswered(endpoint)),
            WebSocketRoute("/graphql", subscriptions),
            Route("/healthz", healthz),
            Route("/readyz", readyz),
            Route("/metrics", metrics.endpoint),
            *capacity,
            *page_routes(),
        ],
        lifespan=lifespan,
        middleware=[
            Middleware(
                CORSMiddleware,
                allow_origins=list(cors_origins),
                allow_methods=["GET", "POST"],
                allow_headers=["authorization", "content-type", "accept", "if-none-match"],
                expose_headers=["etag"],
            )
        ]
        if cors_origins
        else [],
    )
    app.state.store = store
    app.state.source = source
    app.state.cache = cache
    app.state.metrics = metrics
    if allowed_hosts is not None:
        app.add_middleware(HostCheck, allowed=allowed_hosts)
    app.add_middleware(RequestObserver, metrics=metrics, tracing=tracing)
    return app


class OptionsAnswered:
    """Answers ``OPTIONS`` with the methods that work (204), passing the rest on."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] == "OPTIONS":
            await Response(status_code=204, headers={"allow": ALLOW})(scope, receive, send)
        else:
            await self.app(scope, receive, send)


def _report_exit(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("the %s task stopped", task.get_name(), exc_info=task.exception())
