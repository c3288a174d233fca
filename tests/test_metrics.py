"""/metrics: per-request figures as they happen, the gateway's state as it is at scrape."""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import websockets
from kubernetes.aio import client as k8s
from prometheus_client.parser import text_string_to_metric_families

from gateway.domain import fleet as fleet_totals
from gateway.domain.ledger import Ledger
from gateway.http.auth import KubernetesAuthorizer, Verdict
from gateway.http.cache import BoundedMemoryCache, ResponseCache
from gateway.http.metrics import Metrics, OperationNames
from gateway.store.store import Store
from tests import fleet, objects
from tests.support import StaticSource, eventually, run_server, serve

P = "hypervisor_gateway_"


class Gateway:
    """The real app with its lifespan running, its source and store, and a client."""

    def __init__(self, source: StaticSource, store: Store, client: httpx.AsyncClient) -> None:
        self.source = source
        self.store = store
        self.client = client

    async def scrape(self, accept: str | None = None) -> dict[tuple[str, frozenset[Any]], float]:
        """Every sample of one scrape: (name, labels) -> value."""
        headers = {"accept": accept} if accept else {}
        response = await self.client.get("/metrics", headers=headers)
        assert response.status_code == 200
        return {
            (sample.name, frozenset(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(response.text)
            for sample in family.samples
        }

    async def value(self, name: str, **labels: str) -> float:
        return (await self.scrape())[(P + name, frozenset(labels.items()))]

    async def post(self, query: str, **variables: Any) -> httpx.Response:
        return await self.client.post("/graphql", json={"query": query, "variables": variables})


@contextlib.asynccontextmanager
async def gateway(objs: list[dict[str, Any]], **options: Any) -> AsyncIterator[Gateway]:
    source = StaticSource(objs)
    async with serve(source, **options) as (client, store):
        await source.loaded.wait()
        yield Gateway(source, store, client)


@pytest.fixture
async def gw() -> AsyncIterator[Gateway]:
    cache = ResponseCache(BoundedMemoryCache(max_entries=100))
    async with gateway(fleet.objects(), cache=cache) as running:
        yield running


async def test_requests_are_counted_by_operation_and_outcome(gw: Gateway) -> None:
    await gw.post("query Names { hypervisors { totalCount } }")
    await gw.post("query Names { hypervisors { totalCount } }")
    await gw.post("{ hypervisors { totalCount } }")
    await gw.post('query Negative { slots(flavor: "nope") { key } }')  # a field error
    await gw.post("query Invalid { noSuchField }")
    await gw.post("{ not a document")
    samples = await gw.scrape()

    def requests(operation: str, outcome: str) -> float:
        labels = frozenset({"operation": operation, "outcome": outcome}.items())
        return samples.get((P + "graphql_requests_total", labels), 0.0)

    assert requests("Names", "ok") == 2
    assert requests("anonymous", "ok") == 1
    assert requests("Negative", "error") == 1
    assert requests("Invalid", "rejected") == 1
    assert requests("unknown", "rejected") == 1
    latency = P + "graphql_request_duration_seconds_count"
    assert samples[(latency, frozenset({"operation": "Names", "outcome": "ok"}.items()))] == 2
    assert (
        samples[
            (
                P + "graphql_request_duration_seconds_sum",
                frozenset({"operation": "Names", "outcome": "ok"}.items()),
            )
        ]
        > 0
    )


class BrokenAuthorizer:
    """An authorizer with a bug: every check raises."""

    async def check(self, token: str | None) -> Verdict:
        raise RuntimeError("a bug")


async def test_a_request_that_fails_with_500_is_counted() -> None:
    async with gateway(fleet.objects(), authorizer=BrokenAuthorizer()) as running:
        with pytest.raises(RuntimeError, match="a bug"):  # the test client re-raises it
            await running.post("query Count { hypervisors { totalCount } }")
        failed = await running.value(
            "graphql_requests_total", operation="unknown", outcome="failed"
        )
    assert failed == 1


async def test_probes_graphiql_and_scrapes_are_not_graphql_requests(gw: Gateway) -> None:
    await gw.client.get("/healthz")
    await gw.client.get("/graphql", headers={"accept": "text/html"})
    await gw.scrape()
    samples = await gw.scrape()
    assert not [key for key in samples if key[0] == P + "graphql_requests_total"]


async def test_in_flight_counts_the_scrape_itself_and_nothing_left_over(gw: Gateway) -> None:
    for _ in range(3):
        await gw.post("{ hypervisors { totalCount } }")
        assert await gw.value("http_requests_in_flight") == 1


async def test_cache_hits_and_misses(gw: Gateway) -> None:
    document = "query Zones { fleetCapacity(groupBy: ZONE) { key } }"
    await gw.post(document)
    await gw.post(document)
    await gw.post(document)
    assert await gw.value("response_cache_misses_total") == 1
    assert await gw.value("response_cache_stores_total") == 1
    assert await gw.value("response_cache_hits_total") == 2
    assert await gw.value("response_cache_errors_total") == 0
    assert await gw.value("response_cache_degraded") == 0
    answer = await gw.post(document)
    assert await gw.value("response_cache_entries") == 1
    assert await gw.value("response_cache_bytes") >= len(answer.content) > 0
    assert await gw.value("response_cache_budget_bytes") == 64 * 2**20
    assert 0 < await gw.value("response_cache_reads_bytes") < 1000  # a ledger's
    assert await gw.value("response_cache_reads_budget_bytes") == 8 * 2**20
    gw.store.upsert(
        objects.hypervisor("node-new")
    )  # a new generation: the old answer is unreachable
    await gw.post(document)
    assert await gw.value("response_cache_misses_total") == 2


async def test_completed_objects_kept_for_reuse_are_reported() -> None:
    """The executor's memo of completed hosts: what it holds and what it reused."""
    async with gateway(fleet.objects()) as gw:
        before = await gw.value("completed_objects_hits_total")
        page = "{ hypervisors { nodes { name zone } } }"
        await gw.post(page)
        await gw.post(page)  # no response cache: the hosts completed before are reused
        assert await gw.value("completed_objects_hits_total") >= before + len(fleet.objects())
        assert await gw.value("completed_objects") >= len(fleet.objects())
        assert 0 < await gw.value("completed_objects_bytes") <= 32 * 2**20
        assert await gw.value("completed_objects_evictions_total") >= 0


async def test_what_parsing_remembers_is_reported() -> None:
    """The memos of what repeats across a fleet: every one named, with what it holds."""
    async with gateway(fleet.objects()) as gw:
        found = await gw.scrape()
    memos = {
        dict(labels)["memo"]: value
        for (name, labels), value in found.items()
        if name == P + "parse_memo_entries"
    }
    assert {"maps", "resource maps", "capabilities", "domain_capabilities"} <= memos.keys()
    assert memos["resource maps"] > 0  # the fleet's bookings and capacities were parsed
    assert found[(P + "quantity_spellings", frozenset())] > 0
    assert 0 < found[(P + "quantity_spellings_bytes", frozenset())] <= 16 * 2**20
    assert found[(P + "shared_strings", frozenset())] > 0


async def test_no_cache_figures_without_a_cache() -> None:
    async with gateway(fleet.objects()) as running:
        assert not [name for name, _ in await running.scrape() if "response_cache" in name]


async def test_store_figures_follow_the_store(gw: Gateway) -> None:
    count = len(fleet.objects())
    assert await gw.value("hypervisors") == count
    assert await gw.value("rejected_objects") == 0
    assert await gw.value("parse_warnings") == 0
    uuid = objects.uuid_of(7)
    twice = {
        "bookings": [objects.consumer(uuid, {"cpu": "1"}), objects.consumer(uuid, {"cpu": "2"})]
    }
    gw.store.upsert(objects.hypervisor("node-twice", spec=twice))
    gw.store.upsert({"kind": "Hypervisor", "metadata": {}})  # no name: rejected
    assert await gw.value("hypervisors") == count + 1
    assert await gw.value("parse_warnings") == 1
    assert await gw.value("rejected_objects") == 1
    gw.store.delete("node-twice")
    assert await gw.value("hypervisors") == count
    assert await gw.value("parse_warnings") == 0


async def test_a_scrape_reads_the_warning_count_the_store_carries(
    gw: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert await gw.value("parse_warnings") == 0  # counted once, over the fleet
    assert gw.store.views.keeps(gw.store.snapshot, fleet_totals.warning_tally)
    monkeypatch.setattr(Ledger, "of", _never)
    twice = {"bookings": [objects.consumer(objects.uuid_of(7), {"cpu": str(n)}) for n in (1, 2)]}
    gw.store.upsert(objects.hypervisor("node-twice", spec=twice))
    assert gw.store.views.keeps(gw.store.snapshot, fleet_totals.warning_tally)
    assert await gw.value("parse_warnings") == 1


def _never(*args: object) -> Ledger:
    raise AssertionError("the warnings were counted over the fleet again")


async def test_source_figures_follow_the_sync_status(gw: Gateway) -> None:
    status = gw.source.status
    assert await gw.value("ready") == 1
    assert await gw.value("relists_total") == 0
    assert await gw.value("watch_events_total", type="BOOKMARK") == 0
    assert 0 <= await gw.value("seconds_since_last_sync") < 60
    status.relists += 2
    status.watch_restarts += 3
    status.events["MODIFIED"] += 5
    status.events["BOOKMARK"] += 1
    status.error = "HTTP 403 Forbidden"
    assert await gw.value("relists_total") == 2
    assert await gw.value("watch_restarts_total") == 3
    assert await gw.value("watch_events_total", type="MODIFIED") == 5
    assert await gw.value("watch_events_total", type="BOOKMARK") == 1
    assert await gw.value("watch_events_total", type="ADDED") == 0
    assert await gw.value("source_error") == 1
    status.confirmed_at = None
    assert await gw.value("seconds_since_last_sync") == float("inf")


async def test_auth_decisions_are_counted_through_the_app() -> None:
    metrics = Metrics()
    with socket.socket() as probe:  # a port nothing listens on: the reviews cannot be made
        probe.bind(("127.0.0.1", 0))
        nowhere = f"http://127.0.0.1:{probe.getsockname()[1]}"
    async with k8s.ApiClient(k8s.Configuration(host=nowhere)) as api:
        authorizer = KubernetesAuthorizer(api, on_decision=metrics.auth_decision)
        async with gateway(fleet.objects(), authorizer=authorizer, metrics=metrics) as running:
            for decision in ("allowed", "denied", "invalid", "error"):
                assert await running.value("auth_decisions_total", decision=decision) == 0
            anonymous = await running.post("query Count { hypervisors { totalCount } }")
            assert anonymous.status_code == 401
            unchecked = await running.client.post(
                "/graphql",
                json={"query": "query Count { hypervisors { totalCount } }"},
                headers={"authorization": "Bearer some-token"},
            )
            assert unchecked.status_code == 503
            assert await running.value("auth_decisions_total", decision="invalid") == 1
            assert await running.value("auth_decisions_total", decision="error") == 1
            assert await running.value("auth_decisions_total", decision="allowed") == 0
            # Refused before the document was read: the operation is not known yet.
            assert (
                await running.value(
                    "graphql_requests_total", operation="unknown", outcome="rejected"
                )
                == 2
            )
    with pytest.raises(ValueError, match="maybe"):
        metrics.auth_decision("maybe")


async def test_each_app_has_its_own_registry(gw: Gateway) -> None:
    async with gateway(fleet.objects()) as other:
        await gw.post("query Mine { hypervisors { totalCount } }")
        mine = frozenset({"operation": "Mine", "outcome": "ok"}.items())
        assert (await gw.scrape())[(P + "graphql_requests_total", mine)] == 1
        assert (P + "graphql_requests_total", mine) not in await other.scrape()


async def test_openmetrics_when_asked(gw: Gateway) -> None:
    response = await gw.client.get("/metrics", headers={"accept": "application/openmetrics-text"})
    assert response.headers["content-type"].startswith("application/openmetrics-text")
    assert response.text.endswith("# EOF\n")
    plain = await gw.client.get("/metrics")
    assert plain.headers["content-type"].startswith("text/plain")


def test_operation_names_are_bounded() -> None:
    names = OperationNames(limit=2, length=8)
    assert names.label(None) == "anonymous"
    assert names.label("Anything", known=False) == "unknown"
    assert names.label("First") == "First"
    assert names.label("AVeryLongOperationName") == "AVeryLon"
    assert names.label("Third") == "other"
    assert names.label("First") == "First"  # names seen before the cap keep their label


async def test_many_operation_names_make_few_series() -> None:
    async with gateway(fleet.objects()) as running:
        for n in range(80):
            await running.post(f"query Op{n} {{ hypervisors {{ totalCount }} }}")
        samples = await running.scrape()
    operations = {
        dict(labels)["operation"]
        for name, labels in samples
        if name == P + "graphql_requests_total"
    }
    assert len(operations) == 51  # the first 50 names, then "other"
    assert "other" in operations
    assert (
        samples[
            (
                P + "graphql_requests_total",
                frozenset({"operation": "other", "outcome": "ok"}.items()),
            )
        ]
        == 30
    )


async def test_websocket_connections_and_subscription_streams() -> None:
    async with run_server(fleet.objects()) as (address, _):
        url = f"http://{address}/metrics"

        async def scrape() -> dict[str, float]:
            async with httpx.AsyncClient() as client:
                text = (await client.get(url)).text
            return {
                s.name: s.value
                for f in text_string_to_metric_families(text)
                for s in f.samples
                if not s.labels
            }

        async def reads(count: int) -> bool:
            """One connection, one change stream and one latest-value reader, or none."""
            figures = await scrape()
            names = ("websocket_connections", "subscription_streams", "subscription_latest_readers")
            return all(figures[P + name] == count for name in names)

        async with websockets.connect(
            f"ws://{address}/graphql", subprotocols=["graphql-transport-ws"]
        ) as ws:
            await ws.send(json.dumps({"type": "connection_init"}))
            assert json.loads(await ws.recv())["type"] == "connection_ack"
            subscriptions = [
                "subscription { hypervisorChanged { type } }",
                "subscription { fleetCapacityChanged { hypervisorCount } }",
            ]
            for n, subscription in enumerate(subscriptions):
                await ws.send(
                    json.dumps(
                        {"id": str(n), "type": "subscribe", "payload": {"query": subscription}}
                    )
                )
            await eventually(lambda: reads(1))  # both subscriptions registered
        await eventually(lambda: reads(0))  # the connection closed, and all it held
