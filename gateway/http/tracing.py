"""Spans per request and per operation, with OpenTelemetry, exported over OTLP.

Routers and gateways that operators compare this one with trace each request and
operation; a slow dashboard is then found in the same trace as the proxy and
client in front of it. Tracing is off unless an OTLP endpoint is configured
(``--otlp-endpoint``): then OpenTelemetry is not even imported, and a request
pays one ``None`` check. On, the caller's W3C ``traceparent`` (and
``tracestate``) is the parent of the request's span, whose trace id the access
log carries, and each GraphQL operation gets a child span while it executes.
Spans per resolved field are left out on purpose: on a fleet's list they would
cost several times the query.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from starlette.types import Scope

__all__ = ["Tracing"]

#: The headers W3C Trace Context reads.
_CONTEXT_HEADERS = (b"traceparent", b"tracestate")


class Tracing:
    """A tracer provider that sends spans to an OTLP/HTTP collector in batches."""

    def __init__(self, endpoint: str, service_name: str = "hypervisor-gateway") -> None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        self.provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
        exporter = OTLPSpanExporter(endpoint=endpoint.rstrip("/") + "/v1/traces")
        self.provider.add_span_processor(BatchSpanProcessor(exporter))
        self.tracer = self.provider.get_tracer("gateway")
        self.propagator = TraceContextTextMapPropagator()

    @contextlib.contextmanager
    def request(self, scope: Scope) -> Iterator[Any]:
        """The span of one HTTP request, a child of the caller's span if it sent one."""
        from opentelemetry.trace import SpanKind

        carrier = {
            key.decode("latin-1"): value.decode("latin-1")
            for key, value in scope["headers"]
            if key in _CONTEXT_HEADERS
        }
        attributes = {"http.request.method": scope["method"], "url.path": scope["path"]}
        with self.tracer.start_as_current_span(
            f"{scope['method']} {scope['path']}",
            context=self.propagator.extract(carrier),
            kind=SpanKind.SERVER,
            attributes=attributes,
        ) as span:
            yield span

    @contextlib.contextmanager
    def operation(self, name: str | None) -> Iterator[Any]:
        """The span of one GraphQL operation's execution, in the current request's trace."""
        attributes = {"graphql.operation.name": name} if name else {}
        with self.tracer.start_as_current_span(
            f"query {name}" if name else "query", attributes=attributes
        ) as span:
            yield span

    def shutdown(self) -> None:
        """Send what is still batched, and stop."""
        self.provider.shutdown()


def trace_id_of(span: Any) -> str:
    """A span's trace id as the access log and W3C write it: 32 lowercase hex digits."""
    return format(span.get_span_context().trace_id, "032x")
