"""The GraphQL schema: object types, filters, pagination, subscriptions, the executor.

It reads :mod:`gateway.store` and :mod:`gateway.domain` and knows no transport:
no Starlette, uvicorn, Kubernetes or aiohttp here.
"""

from __future__ import annotations

from gateway.api.budget import TIMEOUT, TOO_LARGE, Budget, Overrun
from gateway.api.context import Context
from gateway.api.cost import Profile, Profiles, estimate
from gateway.api.executor import Executor
from gateway.api.limits import LimitError, Limits, check_document
from gateway.api.schema import LIVE_FIELDS, schema, sdl

__all__ = [
    "LIVE_FIELDS",
    "TIMEOUT",
    "TOO_LARGE",
    "Budget",
    "Context",
    "Executor",
    "LimitError",
    "Limits",
    "Overrun",
    "Profile",
    "Profiles",
    "check_document",
    "estimate",
    "schema",
    "sdl",
]
