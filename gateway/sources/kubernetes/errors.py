"""What the API server's refusals mean to the informer.

An error ``Status`` object (or a bare HTTP status) becomes the exception the
informer acts on: relist, wait for someone to fix credentials, or retry later
(as soon as the server allows).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "ApiError",
    "Expired",
    "NoStreaming",
    "NotFound",
    "Unauthorized",
    "describe",
    "raise_status",
    "status_of",
]


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


class NotFound(ApiError):
    """404: the server does not serve the resource at all (its CRD is not installed)."""


class NoStreaming(Exception):
    """The server cannot stream the initial state; a paginated LIST will do."""


def describe(error: BaseException) -> str:
    if isinstance(error, ApiError):
        return str(error)
    return f"{type(error).__name__}: {error}".rstrip(": ")


def status_of(raw: bytes) -> dict[str, Any]:
    """The ``Status`` object of an error body (made up when the body is not one)."""
    try:
        status = json.loads(raw)
    except ValueError:  # not from the API server itself (a proxy, a load balancer)
        return {"message": raw[:200].decode(errors="replace").strip()}
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
    if code == 404:
        raise NotFound(message)
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
