"""Churn: writers at a fixed rate and the issue's readers at the same time, on the real API server.

Real fleets are never quiet: every node agent patches its host's status about
once a minute, and Nova books and frees instances all day. Each phase writes
at one rate (status patches and booking changes, each through the API server,
the achieved rate measured) while readers ask the gateway what dashboards ask:
``fleetCapacity(groupBy: ZONE)`` and a 100-host page from each dashboard every
2 s, fit queries, host detail pages polling one host each every 2 s, and live
subscribers (``fleetCapacityChanged`` and ``hypervisorChanged``). A bare watch
on the API server sees the same writes: write-to-answer and write-to-message
delays are set against its own. Writers, each reader kind, the subscribers and
the watch run in processes of their own (:mod:`harness.crowd`), so that what
is measured is the gateway, not the load generator. The same dashboard
question answered from the API server directly (LIST, parse, compute free cpu
and memory per host) is timed under the same writes: the baseline.

``python -m bench.churn --sizes 1000,5000 --rates 10,100`` runs it on its own.
"""

from bench.churn.phase import Load
from bench.churn.report import markdown
from bench.churn.session import churn

__all__ = ["Load", "churn", "markdown"]
