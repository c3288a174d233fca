"""Compressed answers: chosen by Accept-Encoding, kept with the cached answer, small ones not."""

from __future__ import annotations

import gzip
from unittest import mock

import httpx
import pytest
import zstandard

from gateway.http import compression
from gateway.http.cache import BoundedMemoryCache, ResponseCache
from gateway.http.compression import MIN_BYTES, KeptCompression, choose, compress_now
from gateway.sources.demo.source import generate
from tests import fleet
from tests.support import serve

NAMES = "{ hypervisors { nodes { name zone } } }"
ONE = '{ hypervisor(name: "node-a") { name } }'


@pytest.mark.parametrize(
    ("header", "chosen"),
    [
        (None, None),
        ("", None),
        ("gzip", "gzip"),
        ("gzip, deflate, br, zstd", "zstd"),
        ("zstd;q=0.5, gzip", "gzip"),
        ("br", None),
        ("*", "zstd"),
        ("gzip;q=0, *;q=0", None),
        ("GZIP;q=0.8, identity", "gzip"),
        ("gzip;q=nonsense", None),
    ],
)
def test_the_encoding_follows_the_clients_preference(header: str | None, chosen: str) -> None:
    assert choose(header) == chosen


def decode(raw: bytes, encoding: str | None) -> bytes:
    if encoding == "gzip":
        return gzip.decompress(raw)
    if encoding == "zstd":
        return zstandard.ZstdDecompressor().decompressobj().decompress(raw)
    return raw


async def raw(
    client: httpx.AsyncClient, document: str, encoding: str
) -> tuple[httpx.Headers, bytes]:
    """The answer's headers and bytes as sent, undecoded."""
    headers = {"accept-encoding": encoding}
    async with client.stream("POST", "/graphql", json={"query": document}, headers=headers) as r:
        assert r.status_code == 200
        return r.headers, b"".join([chunk async for chunk in r.aiter_raw()])


@pytest.mark.parametrize("encoding", ["gzip", "zstd"])
async def test_a_large_answer_is_compressed_and_decodes_to_the_plain_one(encoding: str) -> None:
    async with serve(generate(200)) as (client, _):
        plain_headers, plain = await raw(client, NAMES, "identity")
        headers, sent = await raw(client, NAMES, encoding)
    assert "content-encoding" not in plain_headers
    assert headers["content-encoding"] == encoding
    assert "Accept-Encoding" in headers["vary"]
    assert int(headers["content-length"]) == len(sent) < len(plain) / 4
    assert decode(sent, encoding) == plain


async def test_a_small_answer_stays_uncompressed() -> None:
    async with serve(fleet.objects()) as (client, _):
        headers, sent = await raw(client, ONE, "gzip")
    assert len(sent) < MIN_BYTES
    assert "content-encoding" not in headers
    assert sent.startswith(b'{"data"')


async def test_the_cached_answer_keeps_its_compressed_bytes() -> None:
    cache = ResponseCache(BoundedMemoryCache())
    with mock.patch.object(compression, "compress_now", wraps=compress_now) as compressing:
        async with serve(generate(200), cache=cache) as (client, _):
            _, first = await raw(client, NAMES, "gzip")  # executed, kept, compressed, kept
            _, plain = await raw(client, NAMES, "identity")  # from the cache
            _, again = await raw(client, NAMES, "gzip")  # from the cache, compressed
            _, other = await raw(client, NAMES, "zstd")  # compressed once for zstd
            _, other_again = await raw(client, NAMES, "zstd")
    assert [c.args[1] for c in compressing.call_args_list] == ["gzip", "zstd"]
    assert again == first and other_again == other
    assert decode(other, "zstd") == decode(first, "gzip") == plain
    assert (cache.stats.stores, cache.stats.hits) == (1, 4)


async def test_the_capacity_series_are_compressed_once_per_rendering() -> None:
    kept = KeptCompression()
    text = (b"a" * 5000, b"b" * 5000)
    with mock.patch.object(compression, "compress_now", wraps=compress_now) as compressing:
        first = await kept.of(text, "gzip")
        assert await kept.of(text, "gzip") is first
        changed = (b"c" * 5000,)
        assert gzip.decompress(await kept.of(changed, "gzip")) == b"c" * 5000
    assert compressing.call_count == 2
    async with serve(generate(50)) as (client, _):
        plain = await client.get("/metrics/capacity", headers={"accept-encoding": "identity"})
        headers = {"accept-encoding": "gzip"}  # what Prometheus sends
        async with client.stream("GET", "/metrics/capacity", headers=headers) as response:
            sent = b"".join([chunk async for chunk in response.aiter_raw()])
    assert response.headers["content-encoding"] == "gzip"
    assert response.headers["vary"] == "Accept-Encoding"
    assert gzip.decompress(sent) == plain.content
    assert len(sent) < len(plain.content) / 10
