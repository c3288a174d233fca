"""A watch stream, split into its JSON lines."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp

__all__ = ["lines"]


async def lines(stream: aiohttp.StreamReader) -> AsyncIterator[bytes]:
    """Split the chunked watch stream into JSON lines, however large an object is.

    ``StreamReader.readline`` fails on a line longer than the reader's high-water
    mark, a setting of the HTTP session (128 KiB by aiohttp's default), and a
    Hypervisor with thousands of bookings reaches a megabyte; so lines are joined
    here, whatever the session's settings.
    """
    pending = bytearray()
    async for chunk in stream.iter_any():
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            pending += chunk[start:end]
            if pending.strip():
                yield bytes(pending)
            pending.clear()
            start = end + 1
        pending += chunk[start:]
    if pending.strip():
        yield bytes(pending)
