"""Steps on a clock: the demo's churn keeps the rate it was asked for."""

from __future__ import annotations

import math
import time
from collections.abc import Callable

__all__ = ["Pace"]

#: Steps later than this are not caught up on: a process stopped for a while
#: (a debugger, a suspended laptop) resumes at the rate, not with a burst.
CATCH_UP = 1.0


class Pace:
    """Step ``k`` is due at ``start + k * interval``, whatever the steps before cost.

    A sleep of ``interval`` after each step carried every step's own time and
    every late wake-up into all later steps: at 20,000 hosts, 0.003 s asked
    333 changes a second and made 205. Here a late step is taken as soon as
    the loop is back, and those more than :data:`CATCH_UP` late are skipped.
    """

    def __init__(self, interval: float, clock: Callable[[], float] = time.monotonic) -> None:
        if interval <= 0:
            raise ValueError(f"a pace needs a positive interval, got {interval}")
        self.interval = interval
        self._clock = clock
        self.start = clock()
        #: Steps taken, and steps skipped as too late.
        self.taken = 0
        self.skipped = 0

    def wait(self) -> float:
        """Seconds until the next step is due (0 if it is due already)."""
        due = self.start + (self.taken + self.skipped + 1) * self.interval
        return max(0.0, due - self._clock())

    def due(self) -> int:
        """How many steps are due now; they count as taken from here on."""
        elapsed = self._clock() - self.start
        # A wait of exactly wait() must find its step due, rounding or not.
        due = math.floor(elapsed / self.interval + 1e-9) - self.taken - self.skipped
        late = max(0, due - math.ceil(CATCH_UP / self.interval))
        self.skipped += late
        self.taken += due - late
        return max(0, due - late)

    def achieved(self) -> float:
        """Steps taken per second since the start."""
        elapsed = self._clock() - self.start
        return self.taken / elapsed if elapsed > 0 else 0.0
