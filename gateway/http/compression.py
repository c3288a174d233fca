"""Compressed answers, by the client's ``Accept-Encoding``: zstd or gzip.

A whole-fleet GraphQL answer compresses about fourfold and the capacity series
some twentyfold (492 kB to 28 kB at 200 hosts), so a dashboard or a Prometheus
far from the gateway saves most of its transfer. Compressing costs CPU, which is
why the compressed bytes are kept with what they compress (the response cache's
entry, the capacity text of one rendering) and made at most once for each, and
why small answers, which compression barely shrinks, are sent as they are.
"""

from __future__ import annotations

import functools
import gzip
import itertools
import os
from collections.abc import Sequence

import anyio.to_thread
import zstandard

from gateway.http.request import weighted

__all__ = ["ENCODINGS", "MIN_BYTES", "KeptCompression", "choose", "compress", "compress_now"]

#: Answers smaller than this go uncompressed: headers and framing would eat the gain.
MIN_BYTES = 1024
#: Bodies larger than this are compressed in a worker thread, off the event loop.
THREAD_BYTES = 64 * 1024
#: What this gateway can send, best first.
ENCODINGS = ("zstd", "gzip")
GZIP_LEVEL = 5
ZSTD_LEVEL = 3


@functools.lru_cache(maxsize=64)
def choose(accept_encoding: str | None) -> str | None:
    """The encoding to answer with, None for none (RFC 9110, 12.5.3).

    The client's quality decides; at equal quality zstd goes first. ``identity``
    is always acceptable here, so a header refusing everything else still gets an
    answer (uncompressed). Remembered per header: clients send the same one each time.
    """
    if not accept_encoding:
        return None
    quality = dict(weighted(accept_encoding))
    wildcard = quality.get("*", 0.0)
    offered = [(quality.get(name, wildcard), -rank, name) for rank, name in enumerate(ENCODINGS)]
    best, _, name = max(offered)
    return name if best > 0 else None


def compress_now(body: bytes | Sequence[bytes], encoding: str) -> bytes:
    """``body`` (or its pieces, joined) compressed with ``encoding``, on this thread."""
    pieces = (body,) if isinstance(body, bytes) else body
    if encoding == "zstd":
        compressor = zstandard.ZstdCompressor(level=ZSTD_LEVEL).compressobj()
        return b"".join([*map(compressor.compress, pieces), compressor.flush()])
    if encoding == "gzip":
        return gzip.compress(b"".join(pieces), GZIP_LEVEL, mtime=0)
    raise ValueError(f"cannot encode {encoding!r}")


async def compress(body: bytes | Sequence[bytes], encoding: str) -> bytes:
    """:func:`compress_now`, in a worker thread for a large body."""
    size = len(body) if isinstance(body, bytes) else sum(map(len, body))
    if size <= THREAD_BYTES:
        return compress_now(body, encoding)
    return await anyio.to_thread.run_sync(compress_now, body, encoding)


class KeptCompression:
    """The compressed forms of the one text that is current, made once per encoding,
    and the tag that names it.

    For the capacity series: their text is the same object until it changes, and
    every scrape between two changes gets the bytes compressed for the first.
    The tag counts the texts this process has held, after a random prefix of its
    own: it changes with the text, costs no digest of 50 MB, and never names the
    text of another process (another replica, or this one restarted).
    """

    def __init__(self) -> None:
        self._text: object = None
        self._encoded: dict[str, bytes] = {}
        self._origin = os.urandom(6).hex()
        self._versions = itertools.count()
        self._tag = ""

    def tag(self, text: Sequence[bytes]) -> str:
        """What names ``text`` (hex digits and a dot) while it is the current one."""
        self._hold(text)
        return self._tag

    async def of(self, text: Sequence[bytes], encoding: str) -> bytes:
        self._hold(text)
        encoded = self._encoded.get(encoding)
        if encoded is None:
            encoded = await compress(text, encoding)
            if text is self._text:  # not replaced while this was compressed
                self._encoded[encoding] = encoded
        return encoded

    def _hold(self, text: Sequence[bytes]) -> None:
        if text is not self._text:
            self._text, self._encoded = text, {}
            self._tag = f"{self._origin}.{next(self._versions)}"
