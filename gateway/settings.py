"""One settings object, from command-line flags or environment variables.

Every option has a flag and a ``GATEWAY_*`` environment variable (flags win), so
the same image runs from a terminal, a compose file or a Kubernetes Deployment.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import Mapping

__all__ = ["Settings", "add_arguments", "from_arguments"]


@dataclasses.dataclass(frozen=True, slots=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = 8080
    demo: bool = False
    demo_size: int = 200
    demo_seed: int = 0
    demo_churn: float = 0.0
    demo_tracked: float = 0.6
    from_path: str | None = None
    flavors: str | None = None
    kubeconfig: str | None = None
    context: str | None = None
    log_level: str = "info"
    log_format: str = "auto"
    graphiql: bool = True
    capacity_series: bool = True
    cache: str = "memory"
    cache_entries: int = 2000
    cache_bytes: int = 64 * 1024 * 1024
    redis_url: str | None = None
    cache_ttl: int = 300
    persisted_entries: int = 10_000
    persisted_bytes: int = 16 * 1024 * 1024
    views_bytes: int = 128 * 1024 * 1024
    completed_bytes: int = 32 * 1024 * 1024
    event_bytes: int = 8 * 1024 * 1024
    parse_memo_bytes: int = 16 * 1024 * 1024
    document_bytes: int = 16 * 1024 * 1024
    trusted_documents: str | None = None
    coalesce_interval: float = 1.0
    auth: str | None = None
    cors_origins: str = ""
    allowed_hosts: str = ""
    introspection: bool = True
    max_depth: int = 15
    max_page_size: int = 10_000
    max_query_seconds: float = 10.0
    max_query_cost: int = 1_000_000
    inline_query_cost: int = 1000
    max_response_bytes: int = 64 * 1024 * 1024
    max_concurrent_queries: int = 32
    max_running_queries: int = 2
    otlp_endpoint: str | None = None

    @property
    def source(self) -> str:
        if self.demo:
            return "demo"
        return "file" if self.from_path else "kubernetes"

    @property
    def auth_mode(self) -> str:
        """kubernetes or none; by default kubernetes exactly when serving a cluster."""
        return self.auth or ("kubernetes" if self.source == "kubernetes" else "none")

    def memory_budget(self, parse_memos: int) -> int:
        """The bytes every cache and memo may take in all, with ``parse_memos`` memos of
        parsed parts: what one client's queries can grow the gateway's memory by."""
        cached = self.cache_bytes if self.cache == "memory" else 0
        answers = self.completed_bytes + ANSWER_EVENT_MEMOS * self.event_bytes
        parsing = parse_memos * self.parse_memo_bytes + DOCUMENT_MEMOS * self.document_bytes
        return self.views_bytes + answers + parsing + cached + self.persisted_bytes


#: The memos each given --event-bytes: subscription results, payloads and totals.
ANSWER_EVENT_MEMOS = 3
#: The memos each given --document-bytes: documents parsed, validated, prepared
#: requests (gateway.http.operations), subscriptions' documents (gateway.api.schema),
#: and the judgments of their selections (gateway.api.judgments).
DOCUMENT_MEMOS = 5

_OPTIONS: list[tuple[str, str, type, str]] = [
    ("host", "GATEWAY_HOST", str, "address to bind (default 127.0.0.1)"),
    ("port", "GATEWAY_PORT", int, "port to bind (default 8080)"),
    ("demo_size", "GATEWAY_DEMO_SIZE", int, "hypervisors in the demo fleet (default 200)"),
    ("demo_seed", "GATEWAY_DEMO_SEED", int, "seed of the demo fleet (default 0)"),
    (
        "demo_churn",
        "GATEWAY_DEMO_CHURN",
        float,
        "create or delete a demo instance every this many seconds (default 0: never)",
    ),
    (
        "demo_tracked",
        "GATEWAY_DEMO_TRACKED",
        float,
        "share of demo hosts with spec.bookings, 0 (today's clusters) to 1 (default 0.6)",
    ),
    (
        "from_path",
        "GATEWAY_FROM",
        str,
        "serve Hypervisor objects from a YAML/JSON file or directory",
    ),
    (
        "flavors",
        "GATEWAY_FLAVORS",
        str,
        "flavor catalog (YAML/JSON, as openstack flavor show gives them) for slots(flavor:); "
        "default: none, the demo's own catalog with --demo",
    ),
    ("kubeconfig", "KUBECONFIG", str, "kubeconfig file (default: in-cluster, then ~/.kube/config)"),
    ("context", "GATEWAY_CONTEXT", str, "kubeconfig context to use"),
    ("log_level", "GATEWAY_LOG_LEVEL", str, "debug, info, warning or error (default info)"),
    ("log_format", "GATEWAY_LOG_FORMAT", str, "json, text or auto: json unless on a terminal"),
    ("cache", "GATEWAY_CACHE", str, "response cache: memory, redis or off (default memory)"),
    ("cache_entries", "GATEWAY_CACHE_ENTRIES", int, "responses kept in memory (default 2000)"),
    (
        "cache_bytes",
        "GATEWAY_CACHE_BYTES",
        int,
        "bytes of responses kept in memory, an eighth of them for what each read; one "
        "over an eighth of it is not kept (default 67108864: 64 MiB)",
    ),
    ("redis_url", "GATEWAY_REDIS_URL", str, "Redis for the shared cache, redis://host:6379/0"),
    ("cache_ttl", "GATEWAY_CACHE_TTL", int, "seconds a response lives in Redis (default 300)"),
    (
        "persisted_entries",
        "GATEWAY_PERSISTED_ENTRIES",
        int,
        "documents registered by automatic persisted queries kept (default 10000)",
    ),
    (
        "persisted_bytes",
        "GATEWAY_PERSISTED_BYTES",
        int,
        "bytes of registered documents kept (default 16777216: 16 MiB)",
    ),
    (
        "views_bytes",
        "GATEWAY_VIEWS_BYTES",
        int,
        "bytes of fleet views kept and carried per change: totals, filters' hosts, the "
        "consumer index (default 134217728: 128 MiB)",
    ),
    (
        "completed_bytes",
        "GATEWAY_COMPLETED_BYTES",
        int,
        "bytes of completed objects kept for reuse, as they take in memory "
        "(default 33554432: 32 MiB)",
    ),
    (
        "event_bytes",
        "GATEWAY_EVENT_BYTES",
        int,
        "bytes of each of: subscription results shared by subscribers, their payloads, "
        "and the totals they share (default 8388608: 8 MiB)",
    ),
    (
        "parse_memo_bytes",
        "GATEWAY_PARSE_MEMO_BYTES",
        int,
        "bytes each memo of parsed parts may take (default 16777216: 16 MiB)",
    ),
    (
        "document_bytes",
        "GATEWAY_DOCUMENT_BYTES",
        int,
        "bytes each of: documents parsed, validated, requests prepared, subscriptions' "
        "documents, charged by their length, and what is judged of their selections "
        "(default 16777216: 16 MiB)",
    ),
    (
        "trusted_documents",
        "GATEWAY_TRUSTED_DOCUMENTS",
        str,
        "JSON file of the only operations that run (hash -> document, or an Apollo "
        "persisted query manifest); default: any operation",
    ),
    (
        "coalesce_interval",
        "GATEWAY_COALESCE_INTERVAL",
        float,
        "seconds between fleetCapacityChanged messages under churn (default 1)",
    ),
    (
        "auth",
        "GATEWAY_AUTH",
        str,
        "kubernetes (bearer tokens checked by the cluster) or none; default: kubernetes "
        "for a cluster source, none for --demo and --from",
    ),
    ("cors_origins", "GATEWAY_CORS_ORIGINS", str, "comma-separated origins allowed by CORS"),
    (
        "allowed_hosts",
        "GATEWAY_ALLOWED_HOSTS",
        str,
        "comma-separated Host names served besides loopback and the bind address (* for "
        "all); checked with --auth none, or whenever given",
    ),
    ("max_depth", "GATEWAY_MAX_DEPTH", int, "deepest selection a query may have (default 15)"),
    ("max_page_size", "GATEWAY_MAX_PAGE_SIZE", int, "largest page, first: (default 10000)"),
    ("max_query_seconds", "GATEWAY_MAX_QUERY_SECONDS", float, "execution time limit (default 10)"),
    (
        "max_query_cost",
        "GATEWAY_MAX_QUERY_COST",
        int,
        "estimated cost a query may have: fields times the list sizes the fleet has "
        "(default 1000000)",
    ),
    (
        "inline_query_cost",
        "GATEWAY_INLINE_QUERY_COST",
        int,
        "estimated cost up to which a query runs on the event loop, not in a worker thread "
        "(default 1000)",
    ),
    (
        "max_response_bytes",
        "GATEWAY_MAX_RESPONSE_BYTES",
        int,
        "largest answer; a larger one is refused as it is built (default 67108864: 64 MiB)",
    ),
    (
        "max_concurrent_queries",
        "GATEWAY_MAX_CONCURRENT_QUERIES",
        int,
        "queries admitted at once, running or waiting their turn, before 429 (default 32)",
    ),
    (
        "max_running_queries",
        "GATEWAY_MAX_RUNNING_QUERIES",
        int,
        "queries running in worker threads at once; the others admitted wait their turn, "
        "at most the execution time limit, then 429 (default 2)",
    ),
    (
        "otlp_endpoint",
        "GATEWAY_OTLP_ENDPOINT",
        str,
        "OTLP/HTTP collector that gets a span per request and operation, e.g. "
        "http://otel-collector:4318 (default: no tracing)",
    ),
]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--demo", action="store_true", help="serve an embedded demo fleet")
    for name, env, kind, help_text in _OPTIONS:
        flag = "--from" if name == "from_path" else "--" + name.replace("_", "-")
        parser.add_argument(flag, dest=name, type=kind, help=f"{help_text} [{env}]")
    parser.add_argument("--no-graphiql", dest="graphiql", action="store_false", default=None)
    parser.add_argument(
        "--no-capacity-series",
        dest="capacity_series",
        action="store_false",
        default=None,
        help="serve no /metrics/capacity (rendered from its first scrape on) "
        "[GATEWAY_CAPACITY_SERIES=false]",
    )
    parser.add_argument(
        "--no-introspection",
        dest="introspection",
        action="store_false",
        default=None,
        help="refuse introspection queries (and GraphiQL) [GATEWAY_INTROSPECTION=false]",
    )


def from_arguments(args: argparse.Namespace, environ: Mapping[str, str] = os.environ) -> Settings:
    """Flags first, then the environment, then the defaults."""
    values: dict[str, object] = {}
    for name, env, kind, _ in _OPTIONS:
        flag = getattr(args, name, None)
        if flag is not None:
            values[name] = flag
        elif env in environ and environ[env] != "":
            try:
                values[name] = kind(environ[env])
            except ValueError as error:
                raise SystemExit(f"hypervisor-gateway: {env}={environ[env]!r}: {error}") from error
    values["demo"] = bool(args.demo) or _truthy(environ.get("GATEWAY_DEMO"))
    for switch, env in (
        ("graphiql", "GATEWAY_GRAPHIQL"),
        ("introspection", "GATEWAY_INTROSPECTION"),
        ("capacity_series", "GATEWAY_CAPACITY_SERIES"),
    ):
        if getattr(args, switch) is not None:
            values[switch] = getattr(args, switch)
        elif env in environ:
            values[switch] = _truthy(environ[env])
    return Settings(**values)  # type: ignore[arg-type]


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")
