"""A watch stream split into its JSON lines."""

from __future__ import annotations

import asyncio

import aiohttp
from aiohttp.base_protocol import BaseProtocol

from gateway.sources.kubernetes.lines import lines


async def test_lines_are_joined_across_chunks_whatever_their_length() -> None:
    loop = asyncio.get_running_loop()
    stream = aiohttp.StreamReader(BaseProtocol(loop), 2**22, loop=loop)
    large = b'{"object": "' + b"x" * 500_000 + b'"}'
    for chunk in (b'{"a": 1}\n{"b"', b": 2}\n\n" + large[:1000], large[1000:] + b"\n", b'{"c": 3}'):
        stream.feed_data(chunk)
    stream.feed_eof()
    assert [line async for line in lines(stream)] == [b'{"a": 1}', b'{"b": 2}', large, b'{"c": 3}']
