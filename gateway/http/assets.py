"""The browser pages: the capacity dashboard at ``/`` and GraphiQL's page, from gateway/static.

Everything a page loads comes from this server, never from the internet: the
dashboard is plain ES modules that need no build step, and GraphiQL's libraries
are vendored under static/vendor (see scripts/vendor-assets). The pages use
relative URLs, so they keep working behind a proxy that adds a path prefix.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from starlette.middleware.gzip import GZipMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

__all__ = ["STATIC", "graphiql_html", "routes"]

STATIC = Path(__file__).parent.parent / "static"

# Vendored files live in directories named after their version, so a browser may
# keep them for good; the dashboard's own files must be revalidated after an upgrade.
_IMMUTABLE = "public, max-age=31536000, immutable"
_REVALIDATE = "no-cache"


class _StaticFiles(StaticFiles):
    def file_response(
        self,
        full_path: str | os.PathLike[str],
        stat_result: os.stat_result,
        scope: Scope,
        status_code: int = 200,
    ) -> Response:
        response = super().file_response(full_path, stat_result, scope, status_code)
        vendored = Path(full_path).is_relative_to(STATIC / "vendor")
        response.headers["cache-control"] = _IMMUTABLE if vendored else _REVALIDATE
        return response


async def dashboard(request: Request) -> Response:
    return FileResponse(STATIC / "index.html", headers={"cache-control": _REVALIDATE})


@functools.cache
def graphiql_html() -> str:
    """GraphiQL's page, which /graphql answers to a browser."""
    return (STATIC / "graphiql.html").read_text(encoding="utf-8")


def routes() -> list[BaseRoute]:
    """``/`` and ``/static/...``; GraphiQL's 3.5 MB script is why static files are gzipped."""
    return [
        Route("/", dashboard, methods=["GET", "HEAD"]),
        Mount("/static", app=GZipMiddleware(_StaticFiles(directory=STATIC)), name="static"),
    ]
