"""What answers keep for the next ones: one set per store, made by the app, reported.

An answer under churn costs only the hosts that changed because what earlier
answers made of the same records is kept: the completed objects of records
(:mod:`gateway.api.reuse`), a subscription event's result for every subscriber of
the same operation, and the payload of a host's change for all its subscribers
(:mod:`gateway.api.recent`). Each is bounded in bytes, by a budget the app sets
when it starts, and reported in /metrics with every other memo: they live in the
store's :class:`~gateway.domain.bounded.Memos`, beside its views, and each
request's context finds them there.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from typing import Any

from gateway.api.recent import MAX_BYTES as EVENT_BYTES
from gateway.api.recent import Recent
from gateway.api.reuse import MAX_BYTES as COMPLETED_BYTES
from gateway.api.reuse import Kept
from gateway.domain.bounded import Memos

__all__ = ["COMPLETED_BYTES", "EVENT_BYTES", "PAYLOADS", "RESULTS", "Answers"]

RESULTS = "subscription results"
PAYLOADS = "subscription payloads"


@dataclasses.dataclass(frozen=True, slots=True)
class Answers:
    """The memos of one store's answers."""

    completed: Kept
    #: Subscription events' results, shared by their subscribers (on the event loop).
    results: Recent[Any]
    #: Each change's message payload, one per kind, for all its subscribers.
    payloads: Recent[Any]

    @classmethod
    def install(
        cls,
        memos: Memos,
        *,
        completed_bytes: int = COMPLETED_BYTES,
        event_bytes: int = EVENT_BYTES,
    ) -> Answers:
        """New memos with these budgets, reported by ``memos`` from now on."""
        return cls(
            memos.add(Kept(max_bytes=completed_bytes)),
            memos.add(Recent(RESULTS, _result_bytes, max_bytes=event_bytes)),
            memos.add(Recent(PAYLOADS, sys.getsizeof, max_bytes=event_bytes)),
        )

    @classmethod
    def of(cls, memos: Memos) -> Answers:
        """The memos ``memos`` reports, installed with the default budgets if the app
        installed none (a store used without an app: tests, tools)."""
        completed, results, payloads = (memos.get(n) for n in (Kept.name, RESULTS, PAYLOADS))
        if (
            isinstance(completed, Kept)
            and isinstance(results, Recent)
            and isinstance(payloads, Recent)
        ):
            return cls(completed, results, payloads)
        return cls.install(memos)


def _result_bytes(result: Any) -> int:
    """What an execution result takes, as its JSON's length (once per event, not per
    subscriber: every subscriber of the operation takes the same result)."""
    return len(json.dumps([result.data, result.errors], default=str))
