"""Prometheus metrics, served at ``/metrics``.

Two kinds. What happens per request (count, latency, in flight, auth decisions)
is recorded as it happens. What describes the gateway's state (objects in the
store, sync age, relists, cache and subscription figures) is read when Prometheus
scrapes, by :class:`StateCollector`, from the objects that already keep it: no
module has to remember to update a gauge, and a scrape always sees the truth.

Every app has its own registry, never prometheus-client's global one, so that
several apps (tests, one process serving two) never share or collide.

Label values that clients choose (GraphQL operation names) are bounded: a
client inventing a new operation name per request must not be able to create
series without end and exhaust Prometheus.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Protocol, TypeVar

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
)
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.requests import Request
from starlette.responses import Response

from gateway import __version__
from gateway.api.memos import Answers
from gateway.domain import fleet
from gateway.domain.bounded import Memos
from gateway.domain.lenient import STRINGS
from gateway.domain.memo import PARSING, Memo
from gateway.domain.quantity import SPELLINGS
from gateway.http.cache import BoundedMemoryCache, ResponseCache
from gateway.http.persisted import PersistedQueries
from gateway.store.collector import Spacing
from gateway.store.feed import Feed
from gateway.store.snapshot import Snapshot
from gateway.store.source import SyncStatus
from gateway.store.store import Store

__all__ = [
    "AUTH_DECISIONS",
    "OUTCOMES",
    "Metrics",
    "OperationNames",
    "StateCollector",
]

PREFIX = "hypervisor_gateway_"
#: ok: executed without errors; error: executed, with errors; rejected: never executed;
#: failed: no answer, a server error (500).
OUTCOMES = ("ok", "error", "rejected", "failed")
AUTH_DECISIONS = ("allowed", "denied", "invalid", "error")
WATCH_EVENTS = ("ADDED", "MODIFIED", "DELETED", "BOOKMARK")
#: A count of the frozen objects stands for this many times what counting took.
FROZEN_COUNT_SPACING = 1000
#: Seconds; from a cache hit (sub-millisecond) to a query near the time limit.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)

# A ``_created`` series per counter doubles the output and no query here needs it.
disable_created_metrics()  # type: ignore[no-untyped-call]


class OperationNames:
    """Turns operation names into label values, at most ``limit`` distinct ones.

    ``anonymous`` stands for an operation without a name, ``unknown`` for a request
    refused before its operation was known, ``other`` for every name after the
    first ``limit``; names are cut to ``length`` characters.
    """

    def __init__(self, limit: int = 50, length: int = 64) -> None:
        self.limit = limit
        self.length = length
        self.seen: set[str] = set()

    def label(self, name: str | None, known: bool = True) -> str:
        if not known:
            return "unknown"
        if not name:
            return "anonymous"
        name = name[: self.length]
        if name not in self.seen:
            if len(self.seen) >= self.limit:
                return "other"
            self.seen.add(name)
        return name


class Connections(Protocol):
    """What the collector needs of the WebSocket server: how many are open, and their
    subscriptions of every change."""

    @property
    def connections(self) -> int: ...

    @property
    def streams(self) -> int: ...

    @property
    def broadcasts(self) -> Broadcasting: ...


class Broadcasting(Protocol):
    """What the collector reads of the broadcasts running."""

    def __len__(self) -> int: ...

    @property
    def pending_bytes(self) -> int: ...


class StateCollector(Collector):
    """Reads the gateway's state at scrape time."""

    def __init__(
        self,
        store: Store,
        status: SyncStatus,
        feed: Feed,
        websockets: Connections,
        cache: ResponseCache | None,
        persisted: PersistedQueries | None = None,
    ) -> None:
        self.store = store
        self.status = status
        self.feed = feed
        self.websockets = websockets
        self.cache = cache
        self.persisted = persisted
        # gc.get_freeze_count() walks every frozen object: 25 ms at 20,000 hosts.
        self._frozen = 0
        self._frozen_spacing = Spacing(FROZEN_COUNT_SPACING)

    def collect(self) -> Iterator[Metric]:
        yield _gauge("build_info", "Version of the gateway.", 1, version=__version__)
        yield from self._source()
        yield from self._store()
        yield _gauge(
            "websocket_connections",
            "Open WebSocket connections (subscription clients).",
            self.websockets.connections,
        )
        yield _gauge(
            "subscription_streams",
            "Subscriptions receiving every change (hypervisorChanged, consumerChanged).",
            self.websockets.streams,
        )
        yield _gauge(
            "subscription_broadcasts",
            "hypervisorChanged operations run once for all their subscribers.",
            len(self.websockets.broadcasts),
        )
        yield _gauge(
            "subscription_pending_bytes",
            "Message text the broadcasts' subscribers have yet to send, as each counts it "
            "(one past 1,000 messages or 32 MiB is cut off).",
            self.websockets.broadcasts.pending_bytes,
        )
        yield _gauge(
            "subscription_latest_readers",
            "Subscriptions receiving the latest totals (fleetCapacityChanged).",
            self.feed.latest_readers,
        )
        if self.cache is not None:
            yield from self._cache(self.cache)
        if self.persisted is not None:
            yield from _persisted(self.persisted)
        yield from _memos(self.store.memos)
        yield from _completed(Answers.of(self.store.memos))
        yield from _parsing()
        yield _gauge(
            "frozen_objects",
            "Objects alive that the store's settles took out of the cyclic collector "
            "(gc.get_freeze_count()): the long-lived heap, by count. Under churn it stays "
            "level unless something keeps what the changes make. Counted again once the "
            "last count is a thousand times its own duration old (a walk of the heap).",
            self._frozen_count(),
        )
        yield _gauge(
            "snapshots_live",
            "The store's snapshots still referenced (by queries, subscribers, the store).",
            self.store.views.snapshots_live,
        )
        yield _counter(
            "views_made_total",
            "Views of the fleet made afresh (a pass over every host), not carried.",
            self.store.views.made,
        )

    def _source(self) -> Iterator[Metric]:
        status = self.status
        yield _gauge(
            "ready",
            "1 once the source delivered a complete view of the fleet (as /readyz).",
            int(self.store.ready and status.synced),
        )
        yield _gauge(
            "source_error", "1 while the source reports an error.", int(status.error is not None)
        )
        age = status.seconds_since_confirmed()
        yield _gauge(
            "seconds_since_last_sync",
            "Seconds since the source last showed the store current (+Inf: never).",
            float("inf") if age is None else age,
        )
        yield _counter("relists_total", "Complete relists of the fleet.", status.relists)
        yield _counter("watch_restarts_total", "Watches started again.", status.watch_restarts)
        events = CounterMetricFamily(
            PREFIX + "watch_events", "Watch events received, by type.", labels=("type",)
        )
        for kind in sorted({*WATCH_EVENTS, *status.events}):
            events.add_metric((kind,), status.events[kind])
        yield events

    def _store(self) -> Iterator[Metric]:
        snapshot = self.store.snapshot
        yield _gauge("hypervisors", "Hypervisor objects in the store.", len(snapshot))
        yield _gauge(
            "rejected_objects",
            "Objects that could not be represented and are left out.",
            len(self.store.rejected),
        )
        yield _gauge(
            "parse_warnings",
            "Warnings over all hypervisors in the store (fields ignored or doubtful).",
            self._warning_count(snapshot),
        )

    def _frozen_count(self) -> int:
        """The frozen objects as last counted, counted again when the spacing allows."""
        if self._frozen_spacing.due():
            with self._frozen_spacing.spaced():
                self._frozen = gc.get_freeze_count()
        return self._frozen

    def _warning_count(self, snapshot: Snapshot) -> int:
        """Kept per change by the store's views: a scrape reads it, whatever the fleet's size."""
        return fleet.warning_count(self.store.views.ledger(snapshot, fleet.warning_tally))

    def _cache(self, cache: ResponseCache) -> Iterator[Metric]:
        stats = cache.stats
        yield _counter("response_cache_hits_total", "Answers served from the cache.", stats.hits)
        yield _counter("response_cache_misses_total", "Answers not in the cache.", stats.misses)
        yield _counter("response_cache_stores_total", "Answers stored.", stats.stores)
        yield _counter(
            "response_cache_errors_total", "Failed cache operations (Redis down).", stats.errors
        )
        yield _gauge(
            "response_cache_degraded",
            "1 while the cache is unavailable and answers are computed uncached.",
            int(stats.degraded),
        )
        memory = cache.backend
        if isinstance(memory, BoundedMemoryCache):  # Redis holds its answers, and bounds them
            yield _gauge("response_cache_entries", "Answers held in memory.", len(memory))
            yield _gauge("response_cache_bytes", "Bytes of the answers held.", memory.bytes)
            yield _gauge(
                "response_cache_budget_bytes", "Bytes the answers may take.", memory.max_bytes
            )
            yield _gauge(
                "response_cache_reads_bytes",
                "Bytes of what the answers held read, checked before each is served.",
                cache.reads_bytes,
            )
            yield _gauge(
                "response_cache_reads_budget_bytes",
                "Bytes what the answers held read may take.",
                cache.max_reads_bytes,
            )


def _memos(memos: Memos) -> Iterator[Metric]:
    """Every memo and cache of the store and the app (gateway.domain.bounded), by name."""
    entries = _by_memo(GaugeMetricFamily, "memo_entries", "Entries a memo holds.")
    size = _by_memo(GaugeMetricFamily, "memo_bytes", "Bytes a memo's entries take (estimated).")
    budget = _by_memo(GaugeMetricFamily, "memo_budget_bytes", "Bytes a memo's entries may take.")
    hits = _by_memo(CounterMetricFamily, "memo_hits", "Lookups that found what a memo kept.")
    evictions = _by_memo(
        CounterMetricFamily, "memo_evictions", "Entries let go to stay within the bounds."
    )
    for memo in memos:
        figures = memo.figures()
        entries.add_metric([memo.name], figures.entries)
        size.add_metric([memo.name], figures.bytes)
        budget.add_metric([memo.name], memo.max_bytes)
        hits.add_metric([memo.name], figures.hits)
        evictions.add_metric([memo.name], figures.evictions)
    yield from (entries, size, budget, hits, evictions)


Family = TypeVar("Family", GaugeMetricFamily, CounterMetricFamily)


def _by_memo(kind: type[Family], name: str, help: str) -> Family:
    return kind(PREFIX + name, help, labels=["memo"])


def _parsing() -> Iterator[Metric]:
    """What parsing keeps for what repeats across a fleet, as named before the memo
    family (gateway.domain.memo, lenient, quantity): held for the life of the process."""
    spellings = SPELLINGS.figures()
    yield _gauge(
        "quantity_spellings", "Quantity spellings remembered with their values.", spellings.entries
    )
    yield _gauge(
        "quantity_spellings_bytes",
        "Bytes the remembered spellings and values take.",
        spellings.bytes,
    )
    yield _gauge(
        "shared_strings", "Strings shared across the fleet's records.", len(STRINGS.strings)
    )
    family = GaugeMetricFamily(
        PREFIX + "parse_memo_entries",
        "Parts parsed once per spelling and kept (or waiting for a second sighting).",
        labels=["memo"],
    )
    for memo in PARSING:
        if isinstance(memo, Memo):
            family.add_metric([memo.name], len(memo))
    yield family


def _completed(answers: Answers) -> Iterator[Metric]:
    """The completed objects the executor keeps for reuse (gateway.api.reuse), as named
    before the memo family."""
    kept = answers.completed
    yield _gauge("completed_objects", "Completed objects kept for reuse.", len(kept))
    yield _gauge(
        "completed_objects_bytes",
        "Answer bytes of the completed objects kept, and of the operations they hold "
        f"(at most {kept.max_bytes}).",
        kept.bytes,
    )
    yield _counter(
        "completed_objects_hits_total", "Objects of an answer reused, not made.", kept.hits
    )
    yield _counter(
        "completed_objects_evictions_total", "Kept objects evicted for room.", kept.evictions
    )


def _persisted(persisted: PersistedQueries) -> Iterator[Metric]:
    stats = persisted.stats
    yield _gauge(
        "persisted_queries",
        "Documents known by hash (registered by clients, or trusted).",
        persisted.entries,
    )
    yield _gauge("persisted_query_bytes", "Bytes the registered documents take.", persisted.bytes)
    yield _counter(
        "persisted_query_hits_total",
        "Requests whose document was found by its hash (a repeated request skips the lookup).",
        stats.hits,
    )
    yield _counter(
        "persisted_query_misses_total",
        "Requests naming a document by a hash not known (or not trusted).",
        stats.misses,
    )
    yield _counter(
        "persisted_query_registrations_total",
        "Documents registered by a client sending one with its hash.",
        stats.registered,
    )
    yield _counter(
        "persisted_query_evictions_total",
        "Registered documents dropped to stay within the entry and byte bounds.",
        stats.evictions,
    )


def _gauge(name: str, help: str, value: float, **labels: str) -> GaugeMetricFamily:
    family = GaugeMetricFamily(PREFIX + name, help, labels=list(labels))
    family.add_metric(list(labels.values()), value)
    return family


def _counter(name: str, help: str, value: float) -> CounterMetricFamily:
    return CounterMetricFamily(PREFIX + name, help, value=value)


class Metrics:
    """The registry of one app, its per-request metrics, and the ``/metrics`` endpoint."""

    def __init__(self, operations: int = 50) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.operations = OperationNames(limit=operations)
        self.requests = Counter(
            PREFIX + "graphql_requests",
            "GraphQL requests over HTTP, by operation name and outcome.",
            ("operation", "outcome"),
            registry=self.registry,
        )
        self.latency = Histogram(
            PREFIX + "graphql_request_duration_seconds",
            "Time to answer a GraphQL request over HTTP, by operation name and outcome.",
            ("operation", "outcome"),
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.in_flight = Gauge(
            PREFIX + "http_requests_in_flight",
            "HTTP requests being answered.",
            registry=self.registry,
        )
        self.auth = Counter(
            PREFIX + "auth_decisions",
            "Authentication and authorization decisions, by result.",
            ("decision",),
            registry=self.registry,
        )
        for decision in AUTH_DECISIONS:
            self.auth.labels(decision)
        #: (operation label, outcome) -> its two series; labels() is a locked lookup each call.
        self._series: dict[tuple[str, str], tuple[Counter, Histogram]] = {}

    def register(self, collector: Collector) -> None:
        """Add a collector read at every scrape (the app's :class:`StateCollector`)."""
        self.registry.register(collector)

    def observe(self, operation: str | None, known: bool, outcome: str, seconds: float) -> None:
        """One GraphQL request answered (``known``: its operation was identified)."""
        labels = (self.operations.label(operation, known), outcome)
        series = self._series.get(labels)
        if series is None:
            if outcome not in OUTCOMES:
                raise ValueError(f"outcome {outcome!r}: expected one of {OUTCOMES}")
            series = self._series[labels] = (
                self.requests.labels(*labels),
                self.latency.labels(*labels),
            )
        count, latency = series
        count.inc()
        latency.observe(seconds)

    def auth_decision(self, decision: str) -> None:
        """Count one decision: allowed, denied, invalid (credentials) or error (reviewing).

        Meant as the authorizer's ``on_decision`` callback.
        """
        if decision not in AUTH_DECISIONS:
            raise ValueError(f"decision {decision!r}: expected one of {AUTH_DECISIONS}")
        self.auth.labels(decision).inc()

    async def endpoint(self, request: Request) -> Response:
        """Text exposition format, or OpenMetrics when the scraper asks for it."""
        encode, media_type = choose_encoder(request.headers.get("accept", ""))
        return Response(encode(self.registry), headers={"content-type": media_type})
