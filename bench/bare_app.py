"""A bare Starlette JSON endpoint, served exactly as the gateway is: the yardstick for throughput.

It reads and decodes the JSON request as the gateway does, and answers a fixed
document of the same shape as the gateway's answer to the small query.
"""

from __future__ import annotations

import argparse

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from gateway.http import server

ANSWER = {"data": {"hypervisor": {"name": "node-0001", "zone": "qa-de-1a"}}}


async def graphql(request: Request) -> Response:
    await request.json()
    return JSONResponse(ANSWER)


async def readyz(request: Request) -> Response:
    return JSONResponse({"ready": True})


app = Starlette(routes=[Route("/graphql", graphql, methods=["POST"]), Route("/readyz", readyz)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    # The gateway's own uvicorn settings (gateway.http.graceful.serve), one worker.
    config = server.config(
        app,
        host="127.0.0.1",
        port=args.port,
        log_level="warning",
        log_config=None,
        access_log=False,
    )
    uvicorn.Server(config).run()


if __name__ == "__main__":
    main()
