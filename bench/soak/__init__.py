"""Soak: the demo gateway under every kind of load at once for half an hour, its memory watched.

A gateway that is fast for thirty seconds can still fail after a day: a memo
keyed by what clients send, a view carried for a filter nobody asks again, a
snapshot pinned by a subscriber that went away. None shows in a short
benchmark; each shows as RSS that keeps climbing. The soak serves the demo
fleet (``serve --demo``, changing every ``churn`` seconds) and, all at once
and each in a process of its own (:mod:`harness.crowd`), the churn readers of
:mod:`bench.churn`, failing queries, queries over the time limit, subscribers
that come and go on both WebSocket protocols (some dropping the connection
mid-stream), and the abuse that once took the gateway's memory: distinct
200-host pages with 50 aliases of ``instances`` and filters never asked
before, in a loop. RSS and every byte figure in ``/metrics`` are sampled
every few seconds; after a warm-up RSS must stay flat and the live snapshots
bounded.

``python -m bench.soak --minutes 30`` runs it.
"""

from bench.soak.report import figures, markdown
from bench.soak.session import Soak, soak

__all__ = ["Soak", "figures", "markdown", "soak"]
