"""How long the informer waits between retries."""

from __future__ import annotations

import random
import time

__all__ = ["Backoff"]


class Backoff:
    """Exponential backoff with jitter, forgotten after a healthy period.

    The jitter spreads the reconnects of many gateway replicas after an API
    server restart; the reset makes a rare hiccup cost one short pause, not the
    long delay left over from an outage hours ago.
    """

    def __init__(self, initial: float = 0.8, cap: float = 30.0, reset_after: float = 60.0) -> None:
        self.initial, self.cap, self.reset_after = initial, cap, reset_after
        self._attempts = 0
        self._last_failure = float("-inf")

    def next_delay(self) -> float:
        now = time.monotonic()
        if now - self._last_failure > self.reset_after:
            self._attempts = 0
        self._last_failure = now
        delay = min(self.cap, self.initial * 2.0**self._attempts)
        self._attempts += 1
        return delay * random.uniform(0.75, 1.0)
