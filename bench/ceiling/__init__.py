"""The replica's ceiling: the change rates one gateway absorbs, without the API server's limit.

A real kube-apiserver on this kind of machine writes a few dozen objects a
second, far below a large region's rate (20,000 hosts: ~333 status patches a
second). So the stream is recorded once from the real API server, under
bench.churn's writers (:mod:`bench.ceiling.recording`, which also times the API
server's CPU per write), and served again to the gateway by a replay server
(:mod:`harness.replay`) at each rate asked, under bench.churn's readers. Each
phase measures the lag from a change leaving the replay server to its being
served (subscription messages, and answers polled for the host's version),
every query kind's p99 against the bare floor, and the gateway's CPU per
change; then the rate is doubled while the gateway keeps up, and the last rate
it kept up with is its ceiling (:mod:`bench.ceiling.phase` says what keeping
up means). A phase of the readers alone comes first: what they cost without a
change, set apart from each rate's CPU per change.

``python -m bench.ceiling --sizes 20000 --rates 100,333,1000`` runs it.
"""

from bench.ceiling.report import markdown
from bench.ceiling.session import Options, ceiling

__all__ = ["Options", "ceiling", "markdown"]
