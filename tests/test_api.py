"""The GraphQL API over HTTP, through the real ASGI app, with exact figures."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from gateway.sources.demo.source import generate
from gateway.store.store import Store
from tests import fleet
from tests.objects import consumer, hypervisor
from tests.support import query, serve


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with serve(fleet.objects()) as (client, _):
        yield client


async def names(
    client: httpx.AsyncClient,
    filter: dict[str, Any] | None = None,
    order: dict[str, Any] | None = None,
) -> list[str]:
    data = await query(
        client,
        "query($f: HypervisorFilter, $o: HypervisorOrder) {"
        " hypervisors(filter: $f, orderBy: $o) { nodes { name } } }",
        f=filter,
        o=order,
    )
    return [n["name"] for n in data["hypervisors"]["nodes"]]


async def test_free_capacity_follows_placement(client: httpx.AsyncClient) -> None:
    data = await query(
        client,
        """{ hypervisor(name: "node-a") {
        resources { name physical overcommitRatio reserved capacity booked free allocated
                    unallocated overcommitted utilization available basis used } } }""",
    )
    cpu, memory = data["hypervisor"]["resources"]
    assert cpu == {
        "name": "cpu",
        "physical": "256",
        "overcommitRatio": "2",
        "reserved": "4",
        "capacity": "504",
        "booked": "28",
        "free": "476",
        "allocated": "30",
        "unallocated": "474",
        "overcommitted": False,
        "utilization": pytest.approx(28 / 504),
        "available": "476",
        "basis": "BOOKINGS",
        "used": "28",
    }
    assert memory["capacity"] == "1090921693184"
    assert memory["booked"] == "60129542144"
    assert memory["free"] == "1030792151040"


async def test_over_subscribed_and_unknown(client: httpx.AsyncClient) -> None:
    data = await query(
        client,
        """{
        b: hypervisor(name: "node-b") { overcommitted resource(name: "cpu") { free overcommitted } }
        c: hypervisor(name: "node-c") { hasStatus overcommitted resource(name: "cpu") {
             physical capacity free booked reserved available basis used overcommitted utilization } }
        d: hypervisor(name: "node-d") { bookingsTracked bookings { __typename } drift { runningNotBooked { id } }
             overcommitted resource(name: "cpu") { capacity free booked reserved allocated unallocated
               available basis used utilization overcommitted } ready readyReason maintenance } }""",
    )
    assert data["b"] == {"overcommitted": True, "resource": {"free": "-4", "overcommitted": True}}
    assert data["c"] == {
        "hasStatus": False,
        "overcommitted": None,
        "resource": {
            "physical": None,
            "capacity": None,
            "free": None,
            "booked": "2",
            "reserved": "0",
            "available": None,
            "basis": None,
            "used": "2",
            "overcommitted": None,
            "utilization": None,
        },
    }
    # Not tracked: nothing is known of its bookings; libvirt's allocation is the best figure.
    assert data["d"] == {
        "bookingsTracked": False,
        "bookings": [],
        "drift": None,
        "overcommitted": False,
        "resource": {
            "capacity": "128",
            "free": None,
            "booked": None,
            "reserved": None,
            "allocated": "100",
            "unallocated": "28",
            "available": "28",
            "basis": "ALLOCATION",
            "used": "100",
            "utilization": pytest.approx(100 / 128),
            "overcommitted": False,
        },
        "ready": False,
        "readyReason": "Down",
        "maintenance": "manual",
    }


async def test_bookings_union_and_drift(client: httpx.AsyncClient) -> None:
    data = await query(
        client,
        """{ hypervisor(name: "node-a") {
        bookings { __typename
          ... on ReservationBooking { name resources { name amount } hypervisor { name } }
          ... on ConsumerBooking { uuid projectId consumerType consumerGeneration } }
        drift { bookedNotRunning { uuid } runningNotBooked { id name active } } } }""",
    )
    bookings = data["hypervisor"]["bookings"]
    assert bookings[0] == {
        "__typename": "ReservationBooking",
        "name": "nova-reserved",
        "resources": [{"name": "cpu", "amount": "4"}, {"name": "memory", "amount": "8589934592"}],
        "hypervisor": {"name": "node-a"},
    }
    assert [b.get("uuid") for b in bookings[1:]] == [fleet.C1, fleet.C2, fleet.C3]
    assert data["hypervisor"]["drift"] == {
        "bookedNotRunning": [{"uuid": fleet.C3}],
        "runningNotBooked": [
            {"id": "99999999-9999-9999-9999-999999999999", "name": "ghost", "active": False}
        ],
    }


async def test_consumer_across_hypervisors(client: httpx.AsyncClient) -> None:
    data = await query(
        client,
        """query($u: UUID!) { consumer(uuid: $u) {
        uuid migrating projectId hypervisors { name }
        bookings { hypervisor { name } resources { name amount } } } }""",
        u=fleet.C3.upper(),
    )
    consumer = data["consumer"]
    assert consumer["uuid"] == fleet.C3
    assert consumer["migrating"] is True
    assert [h["name"] for h in consumer["hypervisors"]] == ["node-a", "node-b"]
    assert all(b["resources"][0] == {"name": "cpu", "amount": "4"} for b in consumer["bookings"])
    missing = await query(
        client, '{ consumer(uuid: "00000000-0000-0000-0000-000000000000") { uuid } }'
    )
    assert missing == {"consumer": None}


async def test_consumers_connection_and_filters(client: httpx.AsyncClient) -> None:
    data = await query(
        client,
        """{
        all: consumers { totalCount nodes { uuid } }
        migrating: consumers(filter: {migrating: true}) { nodes { uuid } }
        p1: consumers(filter: {projectId: "p1"}) { nodes { uuid } }
        page: consumers(first: 2) { pageInfo { hasNextPage endCursor } nodes { uuid } } }""",
    )
    assert [n["uuid"] for n in data["all"]["nodes"]] == [
        fleet.C1,
        fleet.C2,
        fleet.C3,
        fleet.C4,
        fleet.C5,
    ]
    assert data["migrating"]["nodes"] == [{"uuid": fleet.C3}]
    assert [n["uuid"] for n in data["p1"]["nodes"]] == [fleet.C1, fleet.C3]
    rest = await query(
        client,
        "query($a: Cursor) { consumers(after: $a) { nodes { uuid } } }",
        a=data["page"]["pageInfo"]["endCursor"],
    )
    assert [n["uuid"] for n in rest["consumers"]["nodes"]] == [fleet.C3, fleet.C4, fleet.C5]


CONSUMERS = """query($u: UUID!) {
  consumer(uuid: $u) { uuid migrating hypervisors { name }
                       bookings { hypervisor { name } resources { name amount } } }
  hosts: hypervisors(filter: {consumer: $u}) { nodes { name } }
  all: consumers { totalCount nodes { uuid hypervisors { name } bookings { resources { amount } } } }
  p1: consumers(filter: {projectId: "p1"}) { nodes { uuid } }
  page: consumers(first: 2) { pageInfo { hasNextPage endCursor } nodes { uuid } } }"""


async def test_consumers_answer_after_changes_as_on_a_fresh_store() -> None:
    """The consumer index is carried by the changes: a migration, a consumer gone,
    a status patch, a new host. The answers are those of a store loaded afresh."""
    objects = fleet.objects()
    async with serve(objects) as (client, store):
        before = await query(client, CONSUMERS, u=fleet.C1)  # indexes the consumers
        node_a, node_b, node_c = objects[:3]
        node_c["spec"]["bookings"].append(copy.deepcopy(node_a["spec"]["bookings"][1]))  # C1
        node_b["spec"]["bookings"].pop()  # C4 is gone
        node_a["status"]["allocation"]["cpu"] = "31"
        added = hypervisor(
            "node-e", spec={"bookings": [consumer(fleet.C4.replace("4", "6"), {"cpu": 1})]}
        )
        for changed in [node_c, node_b, node_a, added]:
            changed["metadata"]["resourceVersion"] = "2"
            store.upsert(changed)
        assert store.views.indexes_consumers(store.snapshot)  # carried, not indexed again
        after = await query(client, CONSUMERS, u=fleet.C1)
    async with serve([*objects, added]) as (client, _):
        assert await query(client, CONSUMERS, u=fleet.C1) == after
    assert before["hosts"]["nodes"] == [{"name": "node-a"}]
    assert after["hosts"]["nodes"] == [{"name": "node-a"}, {"name": "node-c"}]
    assert after["consumer"]["migrating"] and after["all"]["totalCount"] == 5


@pytest.mark.parametrize(
    ("filter", "expected"),
    [
        ({}, ["node-a", "node-b", "node-c", "node-d"]),
        ({"names": ["node-d", "node-a", "nope"]}, ["node-a", "node-d"]),
        ({"zone": "qa-de-1a"}, ["node-a", "node-c"]),
        ({"region": "qa-de-1"}, ["node-a", "node-b", "node-c", "node-d"]),
        ({"buildingBlock": "bb02"}, ["node-b", "node-d"]),
        ({"aggregate": "agg-1"}, ["node-a", "node-b"]),
        ({"aggregate": "agg-2"}, ["node-b"]),
        ({"trait": "CUSTOM_Y"}, ["node-b"]),
        ({"trait": "COMPUTE_STATUS_ENABLED"}, ["node-b"]),
        (
            {
                "labelSelector": "kubernetes.metal.cloud.sap/bb in (bb01),topology.kubernetes.io/zone!=x"
            },
            ["node-a", "node-c"],
        ),
        ({"ready": True}, ["node-a", "node-b"]),
        ({"maintenance": ["manual"]}, ["node-d"]),
        ({"maintenance": [""]}, ["node-a", "node-b", "node-c"]),
        ({"consumer": fleet.C3}, ["node-a", "node-b"]),
        ({"projectId": "p2"}, ["node-a", "node-c"]),
        ({"overcommitted": True}, ["node-b"]),
        ({"overcommitted": False}, ["node-a", "node-d"]),  # node-c: unknown, matches neither
        ({"overcommitted": True, "view": "BOOKINGS"}, ["node-b"]),
        ({"overcommitted": False, "view": "BOOKINGS"}, ["node-a"]),  # node-d is not tracked
        ({"overcommitted": True, "view": "ALLOCATION"}, []),  # node-b reports no allocation
        ({"overcommitted": False, "view": "ALLOCATION"}, ["node-a", "node-d"]),
        ({"bookingsTracked": False}, ["node-d"]),
        ({"hasStatus": False}, ["node-c"]),
        ({"zone": "qa-de-1b", "ready": False}, ["node-d"]),
    ],
)
async def test_hypervisor_filters(
    client: httpx.AsyncClient, filter: dict[str, Any], expected: list[str]
) -> None:
    assert await names(client, filter) == expected


async def test_can_fit_uses_free_capacity_and_max_unit(client: httpx.AsyncClient) -> None:
    fit = [{"resource": "cpu", "amount": "4"}, {"resource": "memory", "amount": "16Gi"}]
    # node-d is not tracked: it fits on libvirt's figures (28 cores unallocated).
    assert await names(client, {"canFit": fit}) == ["node-a", "node-d"]
    assert await names(client, {"canFit": fit, "view": "AVAILABLE"}) == ["node-a", "node-d"]
    assert await names(client, {"canFit": fit, "view": "BOOKINGS"}) == ["node-a"]
    # node-b reports no allocation: unknown in the libvirt view, so it never fits there.
    assert await names(client, {"canFit": fit, "view": "ALLOCATION"}) == ["node-a", "node-d"]
    cores = [{"resource": "cpu", "amount": "29"}]
    assert await names(client, {"canFit": cores}) == ["node-a"]  # beyond node-d's 28
    # 300 cores are free on node-a (476) but exceed its physical total (max_unit 256).
    assert await names(client, {"canFit": [{"resource": "cpu", "amount": "300"}]}) == []
    assert await names(client, {"canFit": [{"resource": "cpu", "amount": "256"}]}) == ["node-a"]


@pytest.mark.parametrize(
    ("order", "expected"),
    [
        ({"field": "NAME", "direction": "DESC"}, ["node-d", "node-c", "node-b", "node-a"]),
        (
            {"field": "FREE", "resource": "cpu", "direction": "DESC"},
            ["node-a", "node-b", "node-c", "node-d"],
        ),
        ({"field": "FREE", "resource": "cpu"}, ["node-b", "node-a", "node-c", "node-d"]),
        (
            {"field": "AVAILABLE", "resource": "cpu", "direction": "DESC"},
            ["node-a", "node-d", "node-b", "node-c"],
        ),
        ({"field": "AVAILABLE", "resource": "cpu"}, ["node-b", "node-d", "node-a", "node-c"]),
        (
            {"field": "BOOKED", "resource": "cpu", "direction": "DESC"},
            ["node-b", "node-a", "node-c", "node-d"],
        ),
        (
            {"field": "UTILIZATION", "resource": "cpu", "direction": "DESC"},
            ["node-b", "node-d", "node-a", "node-c"],  # 68/64, 100/128 (allocated), 28/504
        ),
        (
            {"field": "UTILIZATION", "resource": "cpu"},
            ["node-a", "node-d", "node-b", "node-c"],
        ),
        (
            {"field": "CAPACITY", "resource": "DISK_GB", "direction": "DESC"},
            ["node-a", "node-b", "node-c", "node-d"],  # nobody knows: all by name
        ),
    ],
)
async def test_ordering_puts_unknown_last(
    client: httpx.AsyncClient, order: dict[str, Any], expected: list[str]
) -> None:
    assert await names(client, order=order) == expected


async def test_cursor_pagination_walks_every_host_once(client: httpx.AsyncClient) -> None:
    seen, after = [], None
    while True:
        data = await query(
            client,
            """query($a: Cursor) {
            hypervisors(first: 1, after: $a, orderBy: {field: FREE, resource: "memory", direction: DESC}) {
              totalCount pageInfo { hasNextPage endCursor } edges { cursor node { name } } } }""",
            a=after,
        )
        page = data["hypervisors"]
        assert page["totalCount"] == 4
        seen += [e["node"]["name"] for e in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert seen == ["node-a", "node-b", "node-c", "node-d"]  # two unknown, last


async def test_fleet_capacity_sums_only_known_figures(client: httpx.AsyncClient) -> None:
    data = await query(
        client,
        """{
        all: fleetCapacity { key hypervisorCount trackedHosts untrackedHosts resource(name: "cpu") {
              hypervisors trackedHosts untrackedHosts physical reserved capacity booked free
              allocated available used unknownCapacityHosts overcommittedHosts utilization } }
        zones: fleetCapacity(groupBy: ZONE) { key hypervisorCount resource(name: "cpu") {
              free booked available unknownCapacityHosts } }
        aggregates: fleetCapacity(groupBy: AGGREGATE) { key hypervisorCount } }""",
    )
    assert data["all"] == [
        {
            "key": None,
            "hypervisorCount": 4,
            "trackedHosts": 3,
            "untrackedHosts": 1,
            "resource": {
                "hypervisors": 4,
                "trackedHosts": 3,
                "untrackedHosts": 1,
                "physical": str(256 + 64 + 128),
                "reserved": "4",
                "capacity": str(504 + 64 + 128),
                "booked": str(28 + 68 + 2),  # tracked hosts only: node-d's is unknown
                "free": str(476 - 4),  # node-d's capacity never counts as free
                "allocated": str(30 + 100),
                "available": str(476 - 4 + 28),
                "used": str(28 + 68 + 2 + 100),
                "unknownCapacityHosts": 1,
                "overcommittedHosts": 1,
                # over the hosts knowing used and capacity: node-c has no capacity
                "utilization": pytest.approx((28 + 68 + 100) / (504 + 64 + 128)),
            },
        }
    ]
    assert data["zones"] == [
        {
            "key": "qa-de-1a",
            "hypervisorCount": 2,
            "resource": {
                "free": "476",
                "booked": "30",
                "available": "476",
                "unknownCapacityHosts": 1,
            },
        },
        {
            "key": "qa-de-1b",
            "hypervisorCount": 2,
            "resource": {
                "free": "-4",
                "booked": "68",
                "available": "24",
                "unknownCapacityHosts": 0,
            },
        },
    ]
    assert data["aggregates"] == [
        {"key": "agg-1", "hypervisorCount": 2},
        {"key": "agg-2", "hypervisorCount": 1},
        {"key": None, "hypervisorCount": 2},
    ]


async def test_fleet_capacity_of_untracked_hosts_only(client: httpx.AsyncClient) -> None:
    data = await query(
        client,
        """{ fleetCapacity(filter: {bookingsTracked: false}) { resource(name: "cpu") {
              trackedHosts untrackedHosts reserved booked free capacity available } } }""",
    )
    assert data["fleetCapacity"][0]["resource"] == {
        "trackedHosts": 0,
        "untrackedHosts": 1,
        "reserved": None,  # no host contributes: unknown, not 0
        "booked": None,
        "free": None,
        "capacity": "128",
        "available": "28",
    }


async def test_unknown_capacity_counts_hosts_with_neither_status_nor_bookings() -> None:
    bare = {"apiVersion": "kvm.cloud.sap/v1", "kind": "Hypervisor", "metadata": {"name": "bare"}}
    async with serve([*fleet.objects(), bare]) as (client, _):
        data = await query(
            client,
            """{ fleetCapacity { hypervisorCount resource(name: "cpu") {
                  hypervisors unknownCapacityHosts untrackedHosts } } }""",
        )
    assert data["fleetCapacity"] == [
        {
            "hypervisorCount": 5,
            # bare has no resource at all, but its capacity is just as unknown as node-c's
            "resource": {"hypervisors": 4, "unknownCapacityHosts": 2, "untrackedHosts": 2},
        }
    ]


@pytest.mark.parametrize("direction", ["ASC", "DESC"])
async def test_cursor_pagination_over_unknown_figures(
    client: httpx.AsyncClient, direction: str
) -> None:
    order = {"field": "FREE", "resource": "cpu", "direction": direction}
    expected = await names(client, order=order)
    seen: list[str] = []
    after = None
    while True:
        data = await query(
            client,
            """query($a: Cursor, $o: HypervisorOrder) { hypervisors(first: 1, after: $a, orderBy: $o) {
              pageInfo { hasNextPage endCursor } nodes { name } } }""",
            a=after,
            o=order,
        )
        page = data["hypervisors"]
        seen += [n["name"] for n in page["nodes"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert seen == expected
    assert seen[2:] == ["node-c", "node-d"]  # free unknown: last in both directions


async def test_placement_view(client: httpx.AsyncClient) -> None:
    data = await query(
        client,
        """{ placementProvider(uuid: "AAAAAAAA-0000-0000-0000-000000000001") {
        name inventories { resourceClass total reserved minUnit maxUnit stepSize allocationRatio
                           capacity used free } usages { name amount } } }""",
    )
    provider = data["placementProvider"]
    assert provider["name"] == "node-a"
    assert provider["inventories"] == [
        {
            "resourceClass": "VCPU",
            "total": "256",
            "reserved": "4",
            "minUnit": "1",
            "maxUnit": "256",
            "stepSize": "1",
            "allocationRatio": "2",
            "capacity": "504",
            "used": "28",
            "free": "476",
        },
        {
            "resourceClass": "MEMORY_MB",
            "total": "1048576",
            "reserved": "8192",
            "minUnit": "1",
            "maxUnit": "1048576",
            "stepSize": "1",
            "allocationRatio": "1",
            "capacity": "1040384",
            "used": "57344",
            "free": "983040",
        },
    ]
    assert provider["usages"] == [
        {"name": "MEMORY_MB", "amount": "57344"},
        {"name": "VCPU", "amount": "28"},
    ]


async def test_placement_view_of_an_untracked_host_is_unknown(client: httpx.AsyncClient) -> None:
    data = await query(
        client,
        """{ hypervisor(name: "node-d") { placement {
        inventories { resourceClass total reserved capacity used free } usages { name } } } }""",
    )
    assert data["hypervisor"]["placement"] == {
        "inventories": [
            {
                "resourceClass": "VCPU",
                "total": "128",
                "reserved": None,
                "capacity": "128",
                "used": None,
                "free": None,
            },
            {
                "resourceClass": "MEMORY_MB",
                "total": "262144",
                "reserved": None,
                "capacity": "262144",
                "used": None,
                "free": None,
            },
        ],
        "usages": None,  # unknown, never an empty (zero) usage
    }


async def test_memberships_keep_their_source(client: httpx.AsyncClient) -> None:
    data = await query(
        client,
        """{ hypervisor(name: "node-b") {
        traits { name source } aggregates { name uuid source metadata { key value } } } }""",
    )
    assert data["hypervisor"] == {
        "traits": [
            {"name": "CUSTOM_Y", "source": "SPEC"},
            {"name": "COMPUTE_STATUS_ENABLED", "source": "STATUS"},
        ],
        "aggregates": [
            {"name": "agg-2", "uuid": None, "source": "SPEC", "metadata": []},
            {"name": "agg-1", "uuid": "a1", "source": "STATUS", "metadata": []},
        ],
    }


async def test_sync_status_and_probes(client: httpx.AsyncClient) -> None:
    data = await query(
        client,
        "{ syncStatus { source synced generation hypervisors rejected "
        "secondsSinceConfirmed lastEventAt } }",
    )
    status = data["syncStatus"]
    assert status["synced"] is True and status["hypervisors"] == 4 and status["rejected"] == []
    assert status["generation"] == "1"
    assert 0 <= status["secondsSinceConfirmed"] < 60
    assert status["lastEventAt"].endswith("Z")
    assert (await client.get("/healthz")).json() == {"status": "ok"}
    ready = await client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["ready"] is True


async def test_bad_objects_are_warned_about_and_skipped() -> None:
    objects = fleet.objects()
    objects[0]["spec"]["bookings"][1]["consumer"]["resources"]["memory"] = "NaN"
    objects[1]["spec"]["bookings"].append(objects[1]["spec"]["bookings"][0])  # C3 twice on node-b
    objects.append({"kind": "Hypervisor", "metadata": {}})  # no name: cannot be represented
    async with serve(objects) as (client, store):
        data = await query(
            client,
            """{
            a: hypervisor(name: "node-a") { warnings resource(name: "memory") { booked } }
            b: hypervisor(name: "node-b") { warnings resource(name: "cpu") { booked free } }
            syncStatus { hypervisors rejected } }""",
        )
    assert data["a"]["resource"]["booked"] == str(24 * 2**30)  # 32Gi left out
    assert "invalid quantity 'NaN'" in data["a"]["warnings"][0]
    assert data["b"]["resource"] == {"booked": "72", "free": "-8"}  # 4 + 64 + 4 again
    assert "booked more than once" in data["b"]["warnings"][0]
    assert data["syncStatus"]["hypervisors"] == 4
    assert data["syncStatus"]["rejected"] == ["#4: metadata.name is missing"]
    assert isinstance(store, Store)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ('{ hypervisors(after: "!!") { totalCount } }', "not a cursor's encoding"),
        # the schemathesis findings: an empty cursor, a selector that does not parse
        ('{ hypervisors(first: 0, after: "") { totalCount } }', "invalid cursor ''"),
        ('{ consumers(after: "") { totalCount } }', "invalid cursor ''"),
        ('{ fleetCapacity(filter: {labelSelector: "<garbage>"}) { key } }', "label selector"),
        ('{ hypervisors(filter: {labelSelector: "a in (b"}) { totalCount } }', "unbalanced"),
        ('{ hypervisors(after: "WzAsIjEiXQ==") { totalCount } }', "not a position"),
        (
            '{ hypervisors(filter: {canFit: [{resource: "cpu", amount: "1 Gi"}]}) { totalCount } }',
            "invalid quantity",
        ),
        (
            '{ hypervisors(filter: {canFit: [{resource: "cpu", amount: "-1"}]}) { totalCount } }',
            "never negative",
        ),
        (
            '{ hypervisors(filter: {canFit: [{resource: "c p u", amount: "1"}]}) { totalCount } }',
            "invalid resource name",
        ),
        ('{ consumer(uuid: "6f1c2a9e") { uuid } }', "invalid UUID"),
        ('{ placementProvider(uuid: "") { name } }', "invalid UUID"),
        ('{ hypervisors(filter: {consumer: "x"}) { totalCount } }', "invalid UUID"),
    ],
)
async def test_arguments_of_a_wrong_shape_are_refused_in_validation(
    client: httpx.AsyncClient, document: str, message: str
) -> None:
    """400 under the GraphQL media type, no data: no resolver ran on them."""
    response = await client.post(
        "/graphql",
        json={"query": document},
        headers={"accept": "application/graphql-response+json"},
    )
    assert response.status_code == 400, response.text
    body = response.json()
    assert "data" not in body
    assert message in body["errors"][0]["message"], body
    assert "path" not in body["errors"][0]


async def test_variables_of_a_wrong_shape_are_refused_before_execution(
    client: httpx.AsyncClient,
) -> None:
    response = await client.post(
        "/graphql",
        json={
            "query": "query($a: Cursor, $u: UUID!) { consumers(after: $a) { totalCount } "
            "consumer(uuid: $u) { uuid } }",
            "variables": {"a": "", "u": "not-a-uuid"},
        },
        headers={"accept": "application/graphql-response+json"},
    )
    assert response.status_code == 400
    messages = [e["message"] for e in response.json()["errors"]]
    assert any("invalid cursor ''" in m for m in messages), messages
    assert any("invalid UUID 'not-a-uuid'" in m for m in messages), messages


@pytest.mark.parametrize(
    ("first", "answered"),
    [(-1, 0), (3, 3), (10_001, 10_000), (2**31 - 1, 10_000)],
)
async def test_first_outside_the_page_range_is_answered_at_its_bound_with_a_warning(
    client: httpx.AsyncClient, first: int, answered: int
) -> None:
    document = "query($n: Int) { consumers(first: $n) { totalCount nodes { uuid } } }"
    response = await client.post("/graphql", json={"query": document, "variables": {"n": first}})
    body = response.json()
    consumers = body["data"]["consumers"]
    assert len(consumers["nodes"]) == min(answered, consumers["totalCount"])
    warnings = body.get("extensions", {}).get("warnings", [])
    if answered == first:
        assert warnings == []
    else:
        assert warnings == [
            {
                "code": "PAGE_SIZE_CLAMPED",
                "message": f"first is {first}; answered with {answered} (first runs from 0 "
                "to the page size limit, 10000)",
            }
        ]


async def test_an_ordering_by_a_figure_without_a_resource_orders_by_memory() -> None:
    names = "nodes { name }"
    async with serve(generate(60)) as (client, _):  # memory and cpu order them differently
        data = await query(
            client,
            f"""{{ omitted: hypervisors(orderBy: {{field: FREE, direction: DESC}}) {{ {names} }}
            null: hypervisors(orderBy: {{field: FREE, resource: null, direction: DESC}})
              {{ {names} }}
            memory: hypervisors(orderBy: {{field: FREE, resource: "memory", direction: DESC}})
              {{ {names} }}
            cpu: hypervisors(orderBy: {{field: FREE, resource: "cpu", direction: DESC}})
              {{ {names} }} }}""",
        )
    assert data["omitted"] == data["null"] == data["memory"] != data["cpu"]


async def test_a_well_formed_cursor_past_the_end_or_of_another_list_is_an_empty_page(
    client: httpx.AsyncClient,
) -> None:
    data = await query(
        client,
        """{ all: hypervisors { totalCount pageInfo { endCursor } }
        consumers(first: 1) { pageInfo { endCursor } } }""",
    )
    end, consumer = data["all"]["pageInfo"]["endCursor"], data["consumers"]["pageInfo"]["endCursor"]
    data = await query(
        client,
        """query($end: Cursor, $c: Cursor) {
        past: hypervisors(after: $end) { totalCount nodes { name } pageInfo { hasNextPage } }
        foreign: hypervisors(after: $c, orderBy: {field: FREE, resource: "cpu"}) { totalCount }
        desc: hypervisors(after: $end, orderBy: {direction: DESC}, first: 1) { nodes { name } } }""",
        end=end,
        c=consumer,
    )
    assert data["past"] == {"totalCount": 4, "nodes": [], "pageInfo": {"hasNextPage": False}}
    assert data["foreign"]["totalCount"] == 4
    # In descending name order the last name's cursor is the first position: the rest follow.
    assert len(data["desc"]["nodes"]) == 1


async def test_a_zero_amount_fits_nowhere(client: httpx.AsyncClient) -> None:
    """Below Placement's min_unit: no host admits it (it used to be an error)."""
    data = await query(
        client,
        '{ hypervisors(filter: {canFit: [{resource: "cpu", amount: "0"}]}) { totalCount } }',
    )
    assert data["hypervisors"]["totalCount"] == 0


async def test_fleet_total_over_no_hosts_is_one_empty_group(client: httpx.AsyncClient) -> None:
    data = await query(
        client,
        """{
        none: fleetCapacity(filter: {zone: "nowhere"}) { key hypervisorCount resources { name } }
        zones: fleetCapacity(filter: {zone: "nowhere"}, groupBy: ZONE) { key } }""",
    )
    assert data == {"none": [{"key": None, "hypervisorCount": 0, "resources": []}], "zones": []}


# Fields of the operator's released CRD beside the capacity.


def _released(name: str, **status: Any) -> dict[str, Any]:
    """An object as the released CRD admits it: no spec.bookings."""
    return hypervisor(name, spec={"skipTests": False}, status={"numInstances": 0, **status})


_TAINTED = {"type": "Tainted", "status": "True", "reason": "Kubectl", "message": "⚠️"}
_UNTAINTED = {"type": "Tainted", "status": "False", "reason": "NoKubectl", "message": "🟢"}
_FACTS = [
    _released(
        "hv-evicted",
        evicted=True,
        conditions=[_UNTAINTED],
        capabilities={"cpuArch": "x86_64", "cpus": 128, "memory": "2Ti"},
        updateStatus={"inProgress": True, "installed": "1877.3", "retry": 3},
        domainCapabilities={"hypervisorType": "kvm", "supportedFeatures": ["sev"]},
    ),
    _released("hv-tainted", evicted=False, conditions=[_TAINTED]),
    _released("hv-silent"),
    hypervisor("hv-new"),
]


async def test_released_crd_facts() -> None:
    async with serve(_FACTS) as (client, _):
        data = await query(
            client,
            """{ hypervisors { nodes { name evicted taint tainted skipTests specHash
                 capabilities { cpuArch cpus memory }
                 domainCapabilities { arch hypervisorType supportedFeatures supportedDevices }
                 updateStatus { inProgress installed retry } } } }""",
        )
    by_name = {n.pop("name"): n for n in data["hypervisors"]["nodes"]}
    assert by_name["hv-evicted"] == {
        "evicted": True,
        "taint": "🟢",
        "tainted": False,
        "skipTests": False,
        "specHash": None,
        "capabilities": {"cpuArch": "x86_64", "cpus": "128", "memory": str(2 * 2**40)},
        "domainCapabilities": {
            "arch": None,
            "hypervisorType": "kvm",
            "supportedFeatures": ["sev"],
            "supportedDevices": [],
        },
        "updateStatus": {"inProgress": True, "installed": "1877.3", "retry": 3},
    }
    assert by_name["hv-tainted"]["taint"] == "⚠️"
    unknown = dict.fromkeys(
        ("evicted", "taint", "tainted", "specHash", "capabilities", "domainCapabilities")
    )
    assert by_name["hv-new"] == {**unknown, "skipTests": None, "updateStatus": None}


@pytest.mark.parametrize(
    ("filter", "expected"),
    [
        ({"evicted": True}, ["hv-evicted"]),
        ({"evicted": False}, ["hv-new", "hv-silent", "hv-tainted"]),
        ({"tainted": True}, ["hv-tainted"]),
        ({"tainted": False}, ["hv-evicted", "hv-new", "hv-silent"]),
        ({"tainted": False, "evicted": False}, ["hv-new", "hv-silent"]),
    ],
)
async def test_evicted_and_tainted_filters(filter: dict[str, Any], expected: list[str]) -> None:
    async with serve(_FACTS) as (client, _):
        assert await names(client, filter) == expected
