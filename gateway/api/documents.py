"""What the gateway makes of a document's text, kept within a budget of bytes.

Clients repeat their documents, so parsing, validating and preparing one are
kept per distinct text. Distinct texts are client input, and what they make is
large: a document of 50 aliases parses to some 110 bytes per character of its
text, so a bound in entries bounds nothing (1,024 parsed documents of 8 KB are
most of a gigabyte). :class:`Documents` charges every entry by its text's
length and keeps the most recently used within its budget.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from gateway.domain.bounded import Figures

__all__ = ["BYTES_PER_CHARACTER", "DOCUMENT_BYTES", "Documents"]

#: What an entry is charged per character of its text: a parsed document of dense
#: aliases measured 111 bytes a character; a validation result or a prepared
#: request keeps its document too.
BYTES_PER_CHARACTER = 128
#: The default budget of each memo of documents.
DOCUMENT_BYTES = 16 * 2**20
#: The share of the budget one entry may take at most: a larger one is made, not kept.
_LARGEST = 16

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Documents(Generic[K, V]):
    """An LRU memo of what ``make`` makes of a text, bounded by the texts' charge.

    Thread-safe: requests are prepared on the event loop and in worker threads.
    A failure (``make`` raising) is not kept.
    """

    def __init__(self, name: str, max_bytes: int = DOCUMENT_BYTES) -> None:
        self.name = name
        self.max_bytes = max_bytes
        self._kept: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._lock = threading.Lock()
        self._bytes = 0
        self._hits = 0
        self._evictions = 0

    def get(self, key: K, length: int, make: Callable[[], V]) -> V:
        """The value kept for ``key`` (a text of ``length`` characters), or ``make()``'s."""
        with self._lock:
            found = self._kept.get(key)
            if found is not None:
                self._kept.move_to_end(key)
                self._hits += 1
                return found[0]
        value = make()
        charge = length * BYTES_PER_CHARACTER
        if charge <= self.max_bytes // _LARGEST:
            self._keep(key, value, charge)
        return value

    def _keep(self, key: K, value: V, charge: int) -> None:
        with self._lock:
            if key in self._kept:  # made meanwhile by another thread
                return
            self._kept[key] = (value, charge)
            self._bytes += charge
            while self._bytes > self.max_bytes:
                _, (_, dropped) = self._kept.popitem(last=False)
                self._bytes -= dropped
                self._evictions += 1

    def figures(self) -> Figures:
        with self._lock:
            return Figures(len(self._kept), self._bytes, self._hits, self._evictions)
