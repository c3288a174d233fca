"""The middleware every HTTP request passes: it times it, counts it, and logs it.

The GraphQL endpoint tells what only it knows through ``request.state``:
``operation`` (the operation's name, None when it has none; absent when the
request was refused before an operation was identified) and ``outcome`` (ok,
error, rejected or failed; absent for anything that is not a GraphQL request, such
as GraphiQL, probes or ``/metrics``).

One log line per request, with method, path, status, operation, outcome,
duration, request id, and the trace id: the request's span's when tracing is on
(gateway.http.tracing), else the caller's if it sent a W3C ``traceparent``
(gateway.http.tracecontext). Never the query string (GET requests carry variables
there), never a header: tokens cannot reach the log by this route. Probes and
scrapes, which arrive every few seconds, and the page assets under ``/static/``
log at debug level.
"""

from __future__ import annotations

import contextlib
import logging
import time
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.http.metrics import Metrics
from gateway.http.tracecontext import trace_id
from gateway.http.tracing import Tracing, trace_id_of

__all__ = ["RequestObserver"]

log = logging.getLogger("gateway.http.access")

QUIET_PATHS = frozenset({"/healthz", "/readyz", "/metrics", "/metrics/capacity"})
QUIET_PREFIX = "/static/"


class RequestObserver:
    """Pure ASGI middleware (no request body buffering, WebSockets pass untouched)."""

    def __init__(self, app: ASGIApp, metrics: Metrics, tracing: Tracing | None = None) -> None:
        self.app = app
        self.metrics = metrics
        self.tracing = tracing

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        response: dict[str, Any] = {"status": 500, "request_id": None}

        async def observed_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                response["status"] = message["status"]
                for key, value in message.get("headers", ()):
                    if key == b"x-request-id":
                        response["request_id"] = value.decode("latin-1")
            await send(message)

        started = time.perf_counter()
        self.metrics.in_flight.inc()
        traced = self.tracing.request(scope) if self.tracing else contextlib.nullcontext()
        with traced as span:
            try:
                await self.app(scope, receive, observed_send)
            finally:
                self.metrics.in_flight.dec()
                seconds = time.perf_counter() - started
                outcome = state.get("outcome")
                if outcome is not None:
                    known = "operation" in state
                    self.metrics.observe(state.get("operation"), known, outcome, seconds)
                if span is not None:
                    _annotate(span, state, response)
                _log(scope, state, response, seconds, span)


def _annotate(span: Any, state: dict[str, Any], response: dict[str, Any]) -> None:
    span.set_attribute("http.response.status_code", response["status"])
    if (operation := state.get("operation")) is not None:
        span.set_attribute("graphql.operation.name", operation)
    if (outcome := state.get("outcome")) is not None:
        span.set_attribute("graphql.outcome", outcome)


def _log(
    scope: Scope,
    state: dict[str, Any],
    response: dict[str, Any],
    seconds: float,
    span: Any,
) -> None:
    path = scope["path"]
    level = logging.DEBUG if path in QUIET_PATHS or path.startswith(QUIET_PREFIX) else logging.INFO
    if not log.isEnabledFor(level):
        return
    fields = {
        "method": scope["method"],
        "path": path,
        "status": response["status"],
        "operation": state.get("operation"),
        "outcome": state.get("outcome"),
        "duration_ms": round(seconds * 1000, 2),
        "request_id": response["request_id"],
        "trace_id": trace_id_of(span) if span is not None else trace_id(scope["headers"]),
    }
    extra = {key: value for key, value in fields.items() if value is not None}
    log.log(
        level,
        "%s %s %s",
        scope["method"],
        path,
        response["status"],
        extra=extra,
    )
