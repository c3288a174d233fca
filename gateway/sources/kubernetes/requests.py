"""Requests to the API server on the client's own machinery, and their JSON answers."""

from __future__ import annotations

from typing import Any

import aiohttp
from kubernetes.aio.client import ApiClient

from gateway.sources.kubernetes.decoding import decode
from gateway.sources.kubernetes.errors import ApiError, raise_status, status_of

__all__ = ["get", "read_json"]


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


async def read_json(response: aiohttp.ClientResponse) -> dict[str, Any]:
    """The response body as JSON; a non-2xx answer raises the matching error."""
    raw = await response.read()
    if response.status >= 300:
        raise_status(status_of(raw), response.status, response.headers.get("Retry-After"))
    body = decode(raw)
    if not isinstance(body, dict):
        raise ApiError(f"expected a JSON object, got {type(body).__name__}")
    return body
