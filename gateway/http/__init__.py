"""The ASGI app: GraphQL over HTTP and WebSocket, auth, response cache, metrics,
static pages and the server.

It builds on :mod:`gateway.api` and :mod:`gateway.store`; only the CLI imports it.
"""

from __future__ import annotations

from gateway.http.app import create_app
from gateway.http.auth import AllowAll, Authorizer, KubernetesAuthorizer
from gateway.http.cache import BoundedMemoryCache, ResponseCache, redis_backend
from gateway.http.graceful import serve
from gateway.http.hosts import parse_allowed_hosts
from gateway.http.metrics import Metrics

__all__ = [
    "AllowAll",
    "Authorizer",
    "BoundedMemoryCache",
    "KubernetesAuthorizer",
    "Metrics",
    "ResponseCache",
    "create_app",
    "parse_allowed_hosts",
    "redis_backend",
    "serve",
]
