"""Refusing a request before it reaches an endpoint, with a reason the client can read.

A WebSocket handshake closed before it is accepted reaches the client as a bare
HTTP 403, whatever the reason: a refused origin, a full server and a wrong Host
would all read like an authentication failure. Servers that offer the ASGI
WebSocket Denial Response extension (uvicorn does) can answer the handshake with
a status and a body instead; elsewhere the close frame carries the reason.
"""

from __future__ import annotations

from starlette.responses import PlainTextResponse
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket

__all__ = ["refuse", "refuse_websocket"]

#: WebSocket close codes for the HTTP statuses a refusal uses (4000 + status, as
#: graphql-transport-ws does for 4403), for servers without denial responses.
_CLOSE_CODE_BASE = 4000


async def refuse(scope: Scope, receive: Receive, send: Send, status: int, reason: str) -> None:
    """Answer an HTTP request or a WebSocket handshake with ``status`` and ``reason``."""
    if scope["type"] == "websocket":
        await refuse_websocket(WebSocket(scope, receive, send), status, reason)
    else:
        await PlainTextResponse(reason + "\n", status_code=status)(scope, receive, send)


async def refuse_websocket(websocket: WebSocket, status: int, reason: str) -> None:
    """Refuse a handshake not yet accepted: a denial response if possible, else a close."""
    if "websocket.http.response" in websocket.scope.get("extensions", {}):
        await websocket.send_denial_response(PlainTextResponse(reason + "\n", status_code=status))
    else:
        # A close reason may hold 123 bytes.
        await websocket.close(
            _CLOSE_CODE_BASE + status, reason.encode()[:123].decode(errors="ignore")
        )
