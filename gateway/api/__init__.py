"""The GraphQL schema: object types, filters, pagination, subscriptions, the executor.

It reads :mod:`gateway.store` and :mod:`gateway.domain` and knows no transport:
no Starlette, uvicorn, Kubernetes or aiohttp here.
"""

from __future__ import annotations

from gateway.api.context import Context

__all__ = ["Context"]
