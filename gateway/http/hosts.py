"""The Host check: without authentication, only names the operator chose are served.

With ``--auth none`` anyone who can reach the port reads the fleet, which is fine
on a developer's loopback, except that a web page can reach loopback too: DNS
rebinding points the page's own name at 127.0.0.1, and the browser then sends
the gateway requests (and reads the answers) under that name. Refusing every
Host that is not a loopback name, the bind address or one listed with
``--allowed-hosts`` closes that hole, on HTTP and WebSocket alike. The probes
(/healthz, /readyz) are exempt: a kubelet sends the pod's IP as Host, and they
tell a page nothing about the fleet.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway.http.refusal import refuse

__all__ = ["HostCheck", "host_name", "parse_allowed_hosts"]

#: 421 Misdirected Request: this server does not answer for that name.
STATUS = 421
_PROBES = frozenset({"/healthz", "/readyz"})


def parse_allowed_hosts(text: str) -> tuple[str, ...]:
    """``--allowed-hosts``: comma-separated names (ports are ignored); ``*`` allows all."""
    names = (host_name(part.strip()) for part in text.split(","))
    return tuple(name for name in names if name)


def host_name(host: str) -> str:
    """The name in a Host header, lower case, without port, brackets or final dot."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host[1:]
    name, colon, port = host.rpartition(":")
    if colon and port.isdigit() and ":" not in name:
        host = name
    return host.rstrip(".")


def _loopback(name: str) -> bool:
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class HostCheck:
    """ASGI middleware: answer 421, with the reason, for a Host not allowed."""

    def __init__(self, app: ASGIApp, allowed: Iterable[str]) -> None:
        self.app = app
        self.allowed = frozenset(host_name(name) for name in allowed)

    def allows(self, host: str) -> bool:
        name = host_name(host)
        return "*" in self.allowed or name in self.allowed or _loopback(name)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket") and scope["path"] not in _PROBES:
            host = Headers(scope=scope).get("host", "")
            if not self.allows(host):
                reason = (
                    f"Host {host!r} is not served: without authentication the gateway answers "
                    "only for loopback names and those given with --allowed-hosts"
                )
                await refuse(scope, receive, send, STATUS, reason)
                return
        await self.app(scope, receive, send)
