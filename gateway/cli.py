"""``hypervisor-gateway``: serve the gateway, or export its schema."""

from __future__ import annotations

import argparse
import asyncio
import functools
import logging
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gateway import __version__
from gateway.api.limits import Limits
from gateway.domain.flavors import NO_CATALOG, Catalog, load_catalog
from gateway.domain.memo import PARSING
from gateway.http.auth import AllowAll, Authorizer, KubernetesAuthorizer
from gateway.http.cache import BoundedMemoryCache, ResponseCache, redis_backend
from gateway.http.hosts import parse_allowed_hosts
from gateway.http.metrics import Metrics
from gateway.http.persisted import PersistedQueries, load_trusted
from gateway.logs import configure as configure_logging
from gateway.settings import Settings, add_arguments, from_arguments
from gateway.store import heap
from gateway.store.source import Source

if TYPE_CHECKING:
    from kubernetes.aio.client import Configuration

__all__ = ["main"]

log = logging.getLogger("gateway")


class StartupError(Exception):
    """The gateway cannot start with these settings; the message says what to do."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="hypervisor-gateway",
        description="GraphQL gateway over kvm.cloud.sap/v1 Hypervisor resources.",
    )
    parser.add_argument("--version", action="version", version=__version__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser(
        "serve",
        help="serve the GraphQL API",
        description="Serve the GraphQL API. "
        + _memory(Settings(), "with the defaults; each flag below named -bytes sets one part"),
    )
    add_arguments(serve)
    export = commands.add_parser("export-schema", help="print the schema (SDL)")
    export.add_argument("--output", "-o", help="write to this file instead of stdout")
    args = parser.parse_args(argv)

    if args.command == "export-schema":
        return _export_schema(args.output)
    settings = from_arguments(args)
    metrics = Metrics()
    try:
        configure_logging(settings.log_level, settings.log_format)
        source = build_source(settings)
        cache = build_cache(settings)
        authorizer = build_authorizer(settings, metrics)
        catalog = build_catalog(settings)
        persisted = build_persisted(settings)
    except (StartupError, ValueError, OSError) as error:
        print(f"hypervisor-gateway: {error}", file=sys.stderr)
        return 2
    log.info("%s", _memory(settings, "as configured"))
    heap.map_large_blocks()  # before the first large answer moves glibc's threshold
    _serve(settings, source, cache, authorizer, metrics, catalog, persisted)
    return 0


def _memory(settings: Settings, how: str) -> str:
    """What caches and memos may take in all: the sum of their byte budgets."""
    total = settings.memory_budget(len(list(PARSING)))
    return f"Memory for caches and memos: at most {total / 2**20:.0f} MiB in all, {how}."


def build_source(settings: Settings) -> Source:
    """The source the settings ask for; raises StartupError with a clear message."""
    if settings.demo:
        from gateway.sources.demo.source import DemoSource

        return DemoSource(
            size=settings.demo_size,
            seed=settings.demo_seed,
            churn=settings.demo_churn,
            tracked=settings.demo_tracked,
        )
    if settings.from_path:
        from gateway.sources.files import FileSource, FileSourceError

        source = FileSource(settings.from_path)
        try:
            source.check()
        except FileSourceError as error:
            raise StartupError(str(error)) from error
        return source
    from gateway.sources.kubernetes.cluster import ClusterSource
    from gateway.sources.kubernetes.evictions import EvictionInformer
    from gateway.sources.kubernetes.informer import HypervisorInformer

    configuration = cluster_configuration(settings)
    credentials = _credentials(settings, configuration)
    return ClusterSource(
        HypervisorInformer(configuration, credentials=credentials),
        EvictionInformer(configuration, credentials=credentials),
    )


def _credentials(settings: Settings, configuration: Configuration) -> Callable[[], Awaitable[None]]:
    """What loads the credentials into ``configuration`` again, when the server refuses them."""
    from gateway.sources.kubernetes.credentials import reload_credentials

    return functools.partial(
        reload_credentials, configuration, settings.kubeconfig, settings.context
    )


def cluster_configuration(settings: Settings) -> Configuration:
    """The cluster's client configuration, or a StartupError naming every option."""
    from gateway.sources.kubernetes.credentials import KubeConfigError, load_client_config

    try:
        configuration = asyncio.run(load_client_config(settings.kubeconfig, settings.context))
        asyncio.run(_reach(configuration))
    except (KubeConfigError, OSError, TimeoutError) as error:
        raise StartupError(
            f"no cluster ({error}): pass --demo for the embedded demo fleet, --from PATH "
            "for objects read from files, or --kubeconfig FILE (or KUBECONFIG, or run in a "
            "pod) for a cluster"
        ) from error
    return configuration


async def _reach(configuration: Configuration) -> None:
    """Fail fast when the API server cannot be reached at all at start-up.

    Any HTTP answer will do (even 401: credentials are the informer's to report);
    only a server that does not answer stops the start.
    """
    import aiohttp
    from kubernetes.aio.client import ApiClient, ApiException, VersionApi

    async with ApiClient(configuration) as api:
        try:
            await VersionApi(api).get_code(_request_timeout=10)
        except ApiException:
            return
        except aiohttp.ClientError as error:
            raise OSError(f"cannot reach {configuration.host}: {error}") from error


def build_catalog(settings: Settings) -> Catalog:
    """The flavor catalog: --flavors, else the demo's with --demo, else none.

    A catalog that cannot be read raises FlavorError (a ValueError) with the reason:
    the gateway does not start with a catalog it silently emptied.
    """
    if settings.flavors:
        return load_catalog(Path(settings.flavors))
    return load_catalog(None) if settings.demo else NO_CATALOG


def build_persisted(settings: Settings) -> PersistedQueries:
    """The persisted documents: only the trusted ones with --trusted-documents, whose
    file must read and check (ValueError, OSError) for the gateway to start."""
    trusted = load_trusted(settings.trusted_documents) if settings.trusted_documents else None
    return PersistedQueries(
        max_entries=settings.persisted_entries,
        max_bytes=settings.persisted_bytes,
        trusted=trusted,
    )


def build_authorizer(settings: Settings, metrics: Metrics) -> Authorizer:
    """Who may ask: the cluster's RBAC (kubernetes), or everyone (none)."""
    if settings.auth_mode == "none":
        if settings.host not in ("127.0.0.1", "localhost", "::1"):
            log.warning(
                "AUTHENTICATION IS OFF and the gateway listens on %s: anyone who can reach "
                "it reads every hypervisor, project and user ID. Use --auth kubernetes, or "
                "bind to 127.0.0.1.",
                settings.host,
            )
        return AllowAll()
    if settings.auth_mode != "kubernetes":
        raise StartupError(f"--auth {settings.auth_mode!r}: expected kubernetes or none")
    from kubernetes.aio.client import ApiClient

    from gateway.sources.kubernetes.credentials import renewal

    api = ApiClient(cluster_configuration(settings))
    return KubernetesAuthorizer(
        api,
        on_decision=metrics.auth_decision,
        credentials=renewal(api, settings.kubeconfig, settings.context),
    )


def allowed_hosts(settings: Settings) -> tuple[str, ...] | None:
    """The Host names to serve (besides loopback), or None for every Host.

    Without authentication the check is on by default (DNS rebinding, see
    gateway.http.hosts); with it, only when names are given.
    """
    listed = parse_allowed_hosts(settings.allowed_hosts)
    if not listed and settings.auth_mode != "none":
        return None
    return (*listed, settings.host)


def build_cache(settings: Settings) -> ResponseCache | None:
    """The response cache the settings ask for; None turns caching off."""
    if settings.cache == "off":
        return None
    if settings.cache == "redis":
        if not settings.redis_url:
            raise StartupError("--cache redis needs --redis-url (or GATEWAY_REDIS_URL)")
        return ResponseCache(redis_backend(settings.redis_url), shared=True, ttl=settings.cache_ttl)
    if settings.cache == "memory":
        # An eighth of the bytes for what the answers read, checked before each is served.
        reads = settings.cache_bytes // 8
        backend = BoundedMemoryCache(
            max_entries=settings.cache_entries, max_bytes=settings.cache_bytes - reads
        )
        return ResponseCache(
            backend, max_entry_bytes=settings.cache_bytes // 8, max_reads_bytes=reads
        )
    raise StartupError(f"--cache {settings.cache!r}: expected memory, redis or off")


def _serve(
    settings: Settings,
    source: Source,
    cache: ResponseCache | None,
    authorizer: Authorizer,
    metrics: Metrics,
    catalog: Catalog,
    persisted: PersistedQueries,
) -> None:
    from gateway.http.app import Budgets, create_app
    from gateway.http.graceful import serve
    from gateway.http.tracing import Tracing

    app = create_app(
        source,
        graphiql=settings.graphiql,
        capacity_series=settings.capacity_series,
        cache=cache,
        coalesce_interval=settings.coalesce_interval,
        limits=Limits(
            max_depth=settings.max_depth,
            max_page_size=settings.max_page_size,
            max_seconds=settings.max_query_seconds,
            max_cost=settings.max_query_cost,
            inline_cost=settings.inline_query_cost,
            max_response_bytes=settings.max_response_bytes,
            max_concurrent=settings.max_concurrent_queries,
            max_running=settings.max_running_queries,
        ),
        introspection=settings.introspection,
        cors_origins=[o.strip() for o in settings.cors_origins.split(",") if o.strip()],
        authorizer=authorizer,
        metrics=metrics,
        allowed_hosts=allowed_hosts(settings),
        catalog=catalog,
        tracing=Tracing(settings.otlp_endpoint) if settings.otlp_endpoint else None,
        persisted=persisted,
        budgets=Budgets(
            views=settings.views_bytes,
            completed=settings.completed_bytes,
            events=settings.event_bytes,
            parse_memo=settings.parse_memo_bytes,
            documents=settings.document_bytes,
        ),
    )
    log.info(
        "serving %s source on http://%s:%d/graphql", settings.source, settings.host, settings.port
    )
    serve(app, host=settings.host, port=settings.port, log_level=settings.log_level)


def _export_schema(output: str | None) -> int:
    from gateway.api.schema import sdl

    text = sdl()
    if output:
        Path(output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0
