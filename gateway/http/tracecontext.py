"""W3C Trace Context: the trace a request belongs to, as its caller says.

A proxy, a router or a client that traces sends ``traceparent``
(``00-<trace id>-<parent span id>-<flags>``). Its trace id in the access log
ties the gateway's line to the caller's trace, with nothing to configure and
nothing to pay when the header is absent. A header that breaks the
specification's rules is ignored, as the specification asks: a malformed id must
not become the key of somebody else's trace.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["trace_id"]

# version (not ff) - trace id - parent id - flags, then what a later version may add.
_TRACEPARENT = re.compile(rb"(?!ff)([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}(-.*)?")
_ZERO_TRACE, _ZERO_PARENT = b"0" * 32, b"0" * 16


def trace_id(headers: Iterable[tuple[bytes, bytes]]) -> str | None:
    """The trace id of a request's valid ``traceparent`` header (ASGI headers), or None."""
    values = [value for key, value in headers if key == b"traceparent"]
    if len(values) != 1:  # none, or several: the specification ignores them all
        return None
    match = _TRACEPARENT.fullmatch(values[0].strip(b" \t"))
    if match is None:
        return None
    version, trace, parent, rest = match.groups()
    if version == b"00" and rest is not None:  # version 00 has nothing after the flags
        return None
    if trace == _ZERO_TRACE or parent == _ZERO_PARENT:
        return None
    return trace.decode()
