"""How retries space out: exponential, jittered, forgotten after a healthy period."""

from __future__ import annotations

import itertools

from gateway.sources.kubernetes.backoff import Backoff


def test_backoff_grows_to_its_cap_and_resets_after_a_healthy_period() -> None:
    now = [1000.0]
    backoff = Backoff(initial=0.8, cap=30.0, reset_after=60.0, clock=lambda: now[0])
    delays = [backoff.next_delay() for _ in range(10)]
    assert 0.6 <= delays[0] <= 0.8
    assert all(b > a for a, b in itertools.pairwise(delays[:6]))
    assert 22.5 <= delays[-1] <= 30.0
    now[0] += 60.0  # within the healthy period: still backing off
    assert backoff.next_delay() >= 22.5
    now[0] += 60.5
    assert backoff.next_delay() <= 0.8
