"""Spans per request and operation, sent to a real OTLP/HTTP endpoint, in the caller's trace."""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from gateway.http.tracing import Tracing
from tests import fleet
from tests.support import serve

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"


class Collector(BaseHTTPRequestHandler):
    """An OTLP/HTTP receiver: keeps every span posted to /v1/traces."""

    spans: list[Any]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                self.spans.extend(scope.spans)
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *_: Any) -> None:
        """Quiet."""


@pytest.fixture
def collector() -> Iterator[tuple[str, list[Any]]]:
    spans: list[Any] = []
    handler = type("Handler", (Collector,), {"spans": spans})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", spans
    server.shutdown()
    server.server_close()


async def test_a_request_and_its_operation_are_spans_of_the_callers_trace(
    collector: tuple[str, list[Any]], caplog: pytest.LogCaptureFixture
) -> None:
    endpoint, spans = collector
    caplog.set_level(logging.INFO, logger="gateway.http.access")
    tracing = Tracing(endpoint)
    async with serve(fleet.objects(), tracing=tracing) as (client, _):
        await client.post(
            "/graphql",
            json={"query": "query Names { hypervisors { totalCount } }"},
            headers={"traceparent": f"00-{TRACE}-{PARENT}-01"},
        )
        await client.post("/graphql", json={"query": "{ hypervisors { totalCount } }"})
    [request, untraced] = sorted(
        (s for s in spans if s.name == "POST /graphql"), key=lambda s: s.trace_id.hex() != TRACE
    )
    [operation] = [s for s in spans if s.name == "query Names"]
    assert request.trace_id.hex() == TRACE and request.parent_span_id.hex() == PARENT
    assert operation.trace_id == request.trace_id
    assert operation.parent_span_id == request.span_id
    attributes = {a.key: a.value for a in request.attributes}
    assert attributes["graphql.operation.name"].string_value == "Names"
    assert attributes["http.response.status_code"].int_value == 200
    assert untraced.trace_id != request.trace_id and not untraced.parent_span_id  # a new trace
    lines = [r for r in caplog.records if r.name == "gateway.http.access"]
    logged = [line.trace_id for line in lines]  # type: ignore[attr-defined]
    assert logged == [TRACE, untraced.trace_id.hex()]


def test_without_an_endpoint_no_tracer_is_even_loaded() -> None:
    """Tracing off costs nothing: a fresh interpreter serves a traced caller without
    loading OpenTelemetry's SDK tracer or exporter (redis alone loads its API)."""
    program = f"""
import asyncio, sys
from tests import fleet
from tests.support import serve
async def main():
    async with serve(fleet.objects()) as (client, _):
        await client.post("/graphql", json={{"query": "{{ __typename }}"}},
                          headers={{"traceparent": "00-{TRACE}-{PARENT}-01"}})
asyncio.run(main())
print(sorted(m for m in sys.modules if m.startswith(("opentelemetry.sdk.trace",
                                                      "opentelemetry.exporter"))))
"""
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip().splitlines()[-1] == "[]"
