"""How retries space out: exponential, jittered, forgotten after a healthy period."""

from __future__ import annotations

import itertools
import time

from gateway.sources.kubernetes.backoff import Backoff


def test_backoff_grows_to_its_cap_and_resets_after_a_healthy_period() -> None:
    backoff = Backoff(initial=0.8, cap=30.0, reset_after=0.2)
    delays = [backoff.next_delay() for _ in range(10)]
    assert 0.6 <= delays[0] <= 0.8
    assert all(b > a for a, b in itertools.pairwise(delays[:6]))
    assert 22.5 <= delays[-1] <= 30.0
    time.sleep(0.25)
    assert backoff.next_delay() <= 0.8
