"""The response cache: hits, never stale, and a real Redis that may go away."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.api.schema import schema
from gateway.http.cache import BoundedMemoryCache, Entry, ResponseCache, redis_backend
from gateway.store.reads import Reads
from gateway.store.store import Store
from harness.controlplane import free_port
from tests import fleet
from tests.support import Clock, StaticSource, serve

ONE_HOST = 'query($n: String!) { hypervisor(name: $n) { name resource(name: "cpu") { free } } }'
#: A lookup whose answer reaches beyond its host: the consumers' other hosts.
REACHING = (
    '{ hypervisor(name: "node-a") { bookings { ... on ConsumerBooking { hypervisor { name } '
    "consumer { bookings { resources { name amount } } } } } } }"
)
QUERY = '{ fleetCapacity { resource(name: "cpu") { free booked } } hypervisors { nodes { name resource(name: "cpu") { free } } } }'
#: The first two hosts in name order (node-a, node-b), and how many there are.
PAGE = '{ hypervisors(first: 2) { totalCount pageInfo { hasNextPage endCursor } nodes { name resource(name: "cpu") { free } } } }'
#: The hosts with 20 cpus available: node-a and node-d (node-b is overbooked, node-c has no status).
FIT = '{ hypervisors(filter: {canFit: [{resource: "cpu", amount: "20"}]}, first: 1) { totalCount edges { cursor node { name } } } }'
ZONES = "{ fleetCapacity(groupBy: ZONE) { key resources { name capacity booked free } } }"
#: Sorted by a figure: every host's figure decides the page.
BY_FREE = '{ hypervisors(orderBy: {field: FREE, resource: "cpu"}, first: 2) { nodes { name } } }'


def with_cpu(name: str, cpu: int, rv: str) -> dict[str, Any]:
    obj = next(o for o in fleet.objects() if o["metadata"]["name"] == name)
    obj["metadata"]["resourceVersion"] = rv
    obj["spec"]["bookings"][-1]["consumer"]["resources"]["cpu"] = str(cpu)
    return obj


class Gateway:
    """The real app with a given cache, and a client for it."""

    def __init__(self, cache: ResponseCache, resource_version: str | None = None) -> None:
        self.source = StaticSource(fleet.objects(), resource_version)
        self.cache = cache
        self._running = serve(self.source, cache=cache)

    async def __aenter__(self) -> Gateway:
        self.client, self.store = await self._running.__aenter__()
        await self.source.loaded.wait()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._running.__aexit__(None, None, None)

    async def ask(self, document: str = QUERY, **variables: Any) -> bytes:
        response = await self.client.post(
            "/graphql", json={"query": document, "variables": variables}
        )
        assert response.status_code == 200
        return response.content

    def truth(self, document: str = QUERY, **variables: Any) -> Any:
        """The answer computed directly from the store, bypassing HTTP and the cache."""
        from gateway.api.context import Context
        from gateway.store.feed import Feed

        context = Context(self.store, self.source.status, Feed(self.store))
        result = schema.execute_sync(document, variable_values=variables, context_value=context)
        assert result.errors is None
        return result.data


async def test_repeated_queries_are_hits_and_identical() -> None:
    async with Gateway(ResponseCache(BoundedMemoryCache())) as gateway:
        first = await gateway.ask()
        second = await gateway.ask(" " + QUERY.replace(" { ", "{"))  # same meaning, other text
        assert first == second
        assert (gateway.cache.stats.hits, gateway.cache.stats.misses) == (1, 1)


async def test_a_cached_answer_is_the_computed_one_byte_for_byte() -> None:
    async with Gateway(ResponseCache(BoundedMemoryCache())) as gateway:
        accept = {"accept": "application/graphql-response+json"}
        computed, cached = [
            await gateway.client.post("/graphql", json={"query": QUERY}, headers=accept)
            for _ in range(2)
        ]
        assert (gateway.cache.stats.misses, gateway.cache.stats.hits) == (1, 1)
        assert (cached.status_code, cached.content) == (computed.status_code, computed.content)
        for header in ("content-type", "content-length"):
            assert cached.headers[header] == computed.headers[header]
        assert cached.headers["content-type"] == "application/graphql-response+json; charset=utf-8"
        assert cached.headers["x-request-id"] != computed.headers["x-request-id"]


async def test_a_store_change_is_seen_at_once() -> None:
    async with Gateway(ResponseCache(BoundedMemoryCache())) as gateway:
        before = json.loads(await gateway.ask())
        gateway.store.upsert(with_cpu("node-b", 10, "2"))  # node-b booked 4 + 10 = 14, free 50
        after = json.loads(await gateway.ask())
        assert before != after
        assert after["data"] == gateway.truth()
        assert after["data"]["hypervisors"]["nodes"][1]["resource"]["free"] == "50"


async def test_an_answer_about_one_host_outlives_changes_of_others() -> None:
    async with Gateway(ResponseCache(BoundedMemoryCache())) as gateway:
        first = await gateway.ask(ONE_HOST, n="node-a")
        await gateway.ask(ONE_HOST, n="node-x")  # not there: valid while it is not
        gateway.store.upsert(with_cpu("node-b", 10, "2"))
        assert await gateway.ask(ONE_HOST, n="node-a") == first
        await gateway.ask(ONE_HOST, n="node-x")
        assert gateway.cache.stats.hits == 2
        gateway.store.upsert(with_cpu("node-a", 10, "3"))
        assert await gateway.ask(ONE_HOST, n="node-a") != first
        assert gateway.cache.stats.hits == 2


async def test_an_answer_that_read_the_fleet_ends_with_any_change() -> None:
    async with Gateway(ResponseCache(BoundedMemoryCache())) as gateway:
        before = await gateway.ask(REACHING)
        migrating = with_cpu("node-b", 10, "2")  # C3, booked on node-a too, grows on node-b
        migrating["spec"]["bookings"][0]["consumer"]["resources"]["cpu"] = "5"
        gateway.store.upsert(migrating)
        assert await gateway.ask(REACHING) != before
        assert gateway.cache.stats.hits == 0


async def test_a_page_in_name_order_outlives_changes_beyond_it() -> None:
    async with Gateway(ResponseCache(BoundedMemoryCache())) as gateway:
        first = await gateway.ask(PAGE)
        gateway.store.upsert(with_cpu("node-c", 10, "2"))  # third in name order
        assert await gateway.ask(PAGE) == first
        assert gateway.cache.stats.hits == 1
        gateway.store.upsert(with_cpu("node-b", 10, "3"))  # on the page
        second = await gateway.ask(PAGE)
        assert second != first
        gateway.store.delete("node-d")  # beyond the page, but one host fewer
        third = await gateway.ask(PAGE)
        assert third != second
        assert json.loads(third)["data"] == gateway.truth(PAGE)
        assert gateway.cache.stats.hits == 1


async def test_a_filters_page_outlives_changes_that_select_the_same_hosts() -> None:
    async with Gateway(ResponseCache(BoundedMemoryCache())) as gateway:
        first = await gateway.ask(FIT)
        assert json.loads(first)["data"]["hypervisors"]["totalCount"] == 2
        gateway.store.upsert(with_cpu("node-c", 100, "2"))  # no status: fits nowhere
        gateway.store.upsert(with_cpu("node-b", 100, "3"))  # still overbooked
        assert await gateway.ask(FIT) == first
        assert gateway.cache.stats.hits == 1
        gateway.store.upsert(with_cpu("node-b", 1, "4"))  # 59 cpus free: it fits now
        second = json.loads(await gateway.ask(FIT))
        assert second["data"] == gateway.truth(FIT)
        assert second["data"]["hypervisors"]["totalCount"] == 3
        assert gateway.cache.stats.hits == 1


async def test_fleet_totals_outlive_changes_that_move_no_sum() -> None:
    async with Gateway(ResponseCache(BoundedMemoryCache())) as gateway:
        first = await gateway.ask(ZONES)
        gateway.store.upsert(with_cpu("node-a", 4, "2"))  # a new version, the same figures
        assert await gateway.ask(ZONES) == first
        assert gateway.cache.stats.hits == 1
        gateway.store.upsert(with_cpu("node-a", 5, "3"))
        second = json.loads(await gateway.ask(ZONES))
        assert second["data"] == gateway.truth(ZONES)
        assert gateway.cache.stats.hits == 1


async def test_a_page_sorted_by_a_figure_ends_with_any_change() -> None:
    async with Gateway(ResponseCache(BoundedMemoryCache())) as gateway:
        await gateway.ask(BY_FREE)
        gateway.store.upsert(with_cpu("node-c", 10, "2"))
        await gateway.ask(BY_FREE)
        assert gateway.cache.stats.hits == 0


async def test_errors_are_never_cached() -> None:
    async with Gateway(ResponseCache(BoundedMemoryCache())) as gateway:
        for _ in range(2):
            await gateway.ask('{ hypervisors(after: "!!") { totalCount } }')
        assert gateway.cache.stats.stores == 0


async def test_memory_cache_is_bounded() -> None:
    backend = BoundedMemoryCache(max_entries=5)
    async with Gateway(ResponseCache(backend)) as gateway:
        for n in range(20):
            await gateway.ask("query($n: String!) { hypervisor(name: $n) { name } }", n=f"x{n}")
        assert len(backend._cache) == 5


async def test_memory_cache_is_bounded_in_bytes() -> None:
    """Forty distinct answers of several KB each: what is held stays within the bound."""
    backend = BoundedMemoryCache(max_entries=2000, max_bytes=50_000)
    cache = ResponseCache(backend, max_entry_bytes=20_000)
    async with Gateway(cache) as gateway:
        sizes = []
        for n in range(40):
            aliases = " ".join(
                f"a{n}x{k}: hypervisors {{ nodes {{ name zone }} }}" for k in range(40)
            )
            sizes.append(len(await gateway.ask(f"{{ {aliases} }}")))
        assert min(sizes) > 5000 and sum(sizes) > 4 * backend.max_bytes
        assert cache.stats.stores == 40
        held = sum(len(value) for value in backend._cache.values())
        assert held == backend.bytes <= backend.max_bytes
        assert len(backend._cache) < 40


async def test_what_the_answers_read_is_bounded_in_bytes_the_least_recent_let_go() -> None:
    """A page's reads are its hosts': those of the answers kept stay within their bound,
    and an answer whose reads were let go is made again."""
    cache = ResponseCache(BoundedMemoryCache(), max_reads_bytes=1500)
    pages = [f"{{ hypervisors(first: {n}) {{ nodes {{ name }} }} }}" for n in (4, 3, 2, 1)]
    async with Gateway(cache) as gateway:
        for page in pages:
            await gateway.ask(page)
            assert 0 < cache.reads_bytes <= cache.max_reads_bytes
        assert len(cache._reads) < len(pages)  # the first let go for the others
        await gateway.ask(pages[-1])
        assert cache.stats.hits == 1
        await gateway.ask(pages[0])
        assert cache.stats.hits == 1
        assert cache.reads_bytes == sum(size for _, size in cache._reads.values())


async def test_an_answer_whose_reads_alone_pass_their_bound_is_not_cached() -> None:
    cache = ResponseCache(BoundedMemoryCache(), max_reads_bytes=200)
    async with Gateway(cache) as gateway:
        await gateway.ask(PAGE)
        await gateway.ask(PAGE)
        assert (cache.stats.stores, cache.stats.hits, cache.reads_bytes) == (0, 0, 0)


async def test_an_answer_over_the_entry_limit_is_not_cached() -> None:
    backend = BoundedMemoryCache()
    async with Gateway(ResponseCache(backend, max_entry_bytes=100)) as gateway:
        assert len(await gateway.ask()) > 100
        assert len(await gateway.ask("{ hypervisors { totalCount } }")) <= 100
        assert gateway.cache.stats.stores == 1 and len(backend._cache) == 1


async def test_memory_cache_reads_what_aiocache_stores() -> None:
    backend = BoundedMemoryCache(max_entries=2, namespace="ns:")
    await backend.set("a", b"1")
    await backend.set("b", b"2")
    assert await backend.get("a") == b"1"  # a is now the most recently used
    await backend.set("c", b"3")
    assert list(backend._cache) == ["ns:a", "ns:c"]
    assert await backend.get("b", default=b"gone") == b"gone"
    assert await backend.get("c", namespace="other:") is None


#: Every kind of answer the cache keeps: reading the fleet, hosts by name, a page of
#: a kept list (the fleet's, a filter's), a ledger, and some of each at once.
EVERY_KIND = [QUERY, "{ consumers { totalCount } }", REACHING, PAGE, FIT, ZONES, BY_FREE]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.tuples(
                st.just("change"),
                st.sampled_from(["node-a", "node-b", "node-c"]),
                st.integers(1, 300),
            ),
            st.tuples(st.just("delete"), st.sampled_from(["node-a", "node-b", "node-c"])),
        ),
        max_size=12,
    )
)
def test_cache_never_answers_older_than_the_store(steps: list[tuple[Any, ...]]) -> None:
    """Every kind of answer, and a lookup of each host, asked after every change."""

    async def run() -> None:
        async with Gateway(ResponseCache(BoundedMemoryCache())) as gateway:
            for version, step in enumerate([("start",), *steps], start=10):
                if step[0] == "change":
                    gateway.store.upsert(with_cpu(step[1], step[2], str(version)))
                elif step[0] == "delete":
                    gateway.store.delete(step[1])
                for query in EVERY_KIND:
                    answer = json.loads(await gateway.ask(query))
                    assert answer["data"] == gateway.truth(query)
                for name in ("node-a", "node-b", "node-c"):
                    answer = json.loads(await gateway.ask(ONE_HOST, n=name))
                    assert answer["data"] == gateway.truth(ONE_HOST, n=name)

    asyncio.run(run())


# A real Redis server on loopback.


class RedisServer:
    def __init__(self) -> None:
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            if os.environ.get("CI"):
                pytest.fail("redis-server is not installed (scripts/test installs it)")
            pytest.skip("redis-server is not installed (apt-get install redis-server)")
        self.process = subprocess.Popen(
            [
                binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.05)  # polls the state waited on: the port accepts
        pytest.fail("redis-server did not start")

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    server = RedisServer()
    server.start()
    yield server
    server.stop()


async def test_replicas_share_answers_through_redis(redis_server: RedisServer) -> None:
    one = ResponseCache(redis_backend(redis_server.url), shared=True, ttl=60)
    two = ResponseCache(redis_backend(redis_server.url), shared=True, ttl=60)
    async with Gateway(one, "100") as first, Gateway(two, "100") as second:
        # Both listed the same objects at the same resourceVersion.
        answer = await first.ask()
        assert await second.ask() == answer
        assert (one.stats.misses, two.stats.hits) == (1, 1)
        # A replica that has seen one more change computes its own answer.
        second.store.upsert(with_cpu("node-b", 10, "101"), "101")
        changed = await second.ask()
        assert changed != answer and two.stats.misses == 1


async def test_redis_going_away_degrades_to_uncached(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    clock = Clock()
    cache = ResponseCache(
        redis_backend(redis_server.url), shared=True, ttl=60, retry_after=5, clock=clock
    )
    async with Gateway(cache) as gateway:
        expected = await gateway.ask()
        await gateway.ask()
        assert cache.stats.hits == 1
        redis_server.stop()
        with caplog.at_level(logging.WARNING, logger="gateway.http.cache"):
            for _ in range(20):
                assert await gateway.ask() == expected
        # One failure, then the backend is skipped until retry_after has passed.
        assert cache.stats.degraded and cache.stats.errors == 1
        assert sum("response cache unavailable" in r.message for r in caplog.records) == 1
        redis_server.start()
        await gateway.ask()
        assert cache.stats.degraded
        clock.now += 5
        await gateway.ask()
        await gateway.ask()
        assert not cache.stats.degraded


async def test_source_status_is_never_answered_from_the_cache() -> None:
    """syncStatus reads the source, not the snapshot: a relist that changes no object
    (same generation) must still show in the next answer."""
    import json

    document = "{ syncStatus { relists } hypervisors { totalCount } }"
    fragment = "{ ...S } fragment S on Query { status: syncStatus { relists } }"
    async with Gateway(ResponseCache(BoundedMemoryCache())) as gateway:
        first = json.loads(await gateway.ask(document))
        gateway.source.status.relists += 1  # the informer relisted; the store did not change
        second = json.loads(await gateway.ask(document))
        assert second["data"]["syncStatus"]["relists"] == first["data"]["syncStatus"]["relists"] + 1
        await gateway.ask(fragment)
        gateway.source.status.relists += 1
        assert json.loads(await gateway.ask(fragment))["data"]["status"]["relists"] == 2
        assert gateway.cache.stats.stores == 0
        await gateway.ask()  # other answers are still cached
        assert gateway.cache.stats.stores == 1


async def test_a_compressed_entry_lives_and_dies_with_its_answer() -> None:
    store = Store()
    store.replace(fleet.objects())
    cache = ResponseCache(BoundedMemoryCache())
    key = cache.key("d" * 64, store.snapshot)
    plain, zipped = Entry("a" * 32, b'{"data":1}'), Entry("a" * 32, b"\x1f\x8b...")
    await cache.set(key, zipped, encoding="gzip")  # no answer beside it: not filed
    assert await cache.get(key, store.snapshot, "gzip") is None
    assert cache.stats.misses == 0  # the encoding's absence is no miss; the answer's is
    assert await cache.get(key, store.snapshot) is None
    assert cache.stats.misses == 1
    await cache.set(key, plain, Reads(store.snapshot.generation))
    await cache.set(key, zipped, encoding="gzip")
    assert await cache.get(key, store.snapshot, "gzip") == zipped
    assert await cache.get(key, store.snapshot) == plain
    assert (cache.stats.stores, cache.stats.hits) == (1, 2)
    store.replace(fleet.objects()[1:])
    assert await cache.get(key, store.snapshot, "gzip") is None
    assert await cache.get(key, store.snapshot) is None
