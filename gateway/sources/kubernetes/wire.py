"""The API server's side of the conversation, as the informer needs it.

Requests on the client's own machinery, watch streams split into lines, error
``Status`` objects turned into the exceptions the informer acts on, and the
backoff between retries.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
from kubernetes.aio.client import ApiClient

__all__ = [
    "ApiError",
    "Backoff",
    "Expired",
    "NoStreaming",
    "Unauthorized",
    "describe",
    "get",
    "lines",
    "raise_status",
    "read_json",
    "status_of",
]


class Backoff:
    """Exponential backoff with jitter, forgotten after a healthy period.

    The jitter spreads the reconnects of many gateway replicas after an API
    server restart; the reset makes a rare hiccup cost one short pause, not the
    long delay left over from an outage hours ago.
    """

    def __init__(self, initial: float = 0.8, cap: float = 30.0, reset_after: float = 60.0) -> None:
        self.initial, self.cap, self.reset_after = initial, cap, reset_after
        self._attempts = 0
        self._last_failure = float("-inf")

    def next_delay(self) -> float:
        now = time.monotonic()
        if now - self._last_failure > self.reset_after:
            self._attempts = 0
        self._last_failure = now
        delay = min(self.cap, self.initial * 2.0**self._attempts)
        self._attempts += 1
        return delay * random.uniform(0.75, 1.0)


class Expired(Exception):
    """The resourceVersion (or continue token) is no longer available: relist."""


class Unauthorized(Exception):
    """401/403: waiting helps only once someone fixes credentials or RBAC."""


class ApiError(Exception):
    """Any other refusal by the API server; retried with backoff.

    ``retry_after`` is how long the server asked the client to wait (seconds),
    when it did: API Priority and Fairness answers an overloaded server's
    requests with 429 and a ``Retry-After``, and retrying sooner only adds load.
    """

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class NoStreaming(Exception):
    """The server cannot stream the initial state; a paginated LIST will do."""


async def get(
    client: ApiClient, path: str, query: dict[str, str], request_timeout: float
) -> aiohttp.ClientResponse:
    """GET ``path`` with ``query``, the body unread.

    The generated ``CustomObjectsApi`` has no ``sendInitialEvents``, so the request
    is built from the client's own parts, as every generated call is (server, TLS,
    credentials and their refresh).
    """
    request = await client.param_serialize(
        method="GET",
        resource_path=path,
        query_params=list(query.items()),
        header_params={"Accept": "application/json"},
        auth_settings=["BearerToken"],
    )
    answer = await client.call_api(
        *request, _request_timeout=request_timeout, _preload_content=False
    )
    response: aiohttp.ClientResponse = answer.response
    return response


def describe(error: BaseException) -> str:
    if isinstance(error, ApiError):
        return str(error)
    return f"{type(error).__name__}: {error}".rstrip(": ")


async def lines(stream: aiohttp.StreamReader) -> AsyncIterator[bytes]:
    """Split the chunked watch stream into JSON lines, however large an object is.

    ``StreamReader.readline`` fails on a line longer than the reader's high-water
    mark, a setting of the HTTP session (128 KiB by aiohttp's default), and a
    Hypervisor with thousands of bookings reaches a megabyte; so lines are joined
    here, whatever the session's settings.
    """
    pending = bytearray()
    async for chunk in stream.iter_any():
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            pending += chunk[start:end]
            if pending.strip():
                yield bytes(pending)
            pending.clear()
            start = end + 1
        pending += chunk[start:]
    if pending.strip():
        yield bytes(pending)


async def read_json(response: aiohttp.ClientResponse) -> dict[str, Any]:
    """The response body as JSON; a non-2xx answer raises the matching error."""
    raw = await response.read()
    if response.status >= 300:
        raise_status(status_of(raw), response.status, response.headers.get("Retry-After"))
    body = json.loads(raw)
    if not isinstance(body, dict):
        raise ApiError(f"expected a JSON object, got {type(body).__name__}")
    return body


def status_of(raw: bytes) -> dict[str, Any]:
    """The ``Status`` object of an error body (made up when the body is not one)."""
    try:
        status = json.loads(raw)
    except ValueError:  # not from the API server itself (a proxy, a load balancer)
        return {"message": raw[:200].decode(errors="replace")}
    return status if isinstance(status, dict) else {}


def raise_status(
    status: Any, http_status: int | None = None, retry_after: str | None = None
) -> None:
    """Raise the error a ``Status`` object (or a bare HTTP status) stands for.

    ``retry_after`` is the response's header; as for client-go, it wins over
    the ``retryAfterSeconds`` of the Status's details.
    """
    code = http_status or status.get("code")
    message = f"HTTP {code} {status.get('reason') or ''}: {status.get('message') or ''}"
    if code == 410:
        raise Expired(message)
    if code in (401, 403):
        raise Unauthorized(message)
    # A resourceVersion newer than the server's (etcd restored from a backup)
    # can never be served either; client-go relists in this case too.
    details = status.get("details") or {}
    causes = details.get("causes") or ()
    if code == 504 and any(c.get("reason") == "ResourceVersionTooLarge" for c in causes):
        raise Expired(message)
    if retry_after is None:
        retry_after = details.get("retryAfterSeconds")
    raise ApiError(message, _seconds(retry_after))


def _seconds(value: Any) -> float | None:
    """A Retry-After in whole seconds (the API server's form); None for anything else."""
    try:
        seconds = int(value)
    except (TypeError, ValueError):
        return None
    return float(seconds) if seconds > 0 else None
