"""Query.slots and Query.flavors over HTTP, on the hand-made fleet, with exact figures.

For 4 cores and 16 GiB: node-a (tracked) has 476 cores and 960 GiB free: 60 slots;
node-b is over-subscribed: 0. The scheduler would use neither node-c (no status) nor
node-d (not ready, in maintenance), though node-d (not tracked) has 28 cores and
192 GiB unallocated: 7 on libvirt's figures, were it eligible.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from gateway.domain.flavors import parse_catalog
from tests import fleet
from tests.objects import hypervisor as fleet_object
from tests.support import query, serve

CATALOG = parse_catalog(
    [
        {"name": "g_c4_m16", "vcpus": 4, "ram": 16384},
        {"name": "g_c32_m128", "vcpus": 32, "ram": 131072, "properties": {"hw:x": "y"}},
        {"name": "gpu", "vcpus": 1, "ram": 1024, "properties": {"resources:VGPU": "1"}},
    ],
    "test",
)
SLOTS = "key flavor view slots allocationSlots hostsWithRoom hostsUnknown hosts excluded { reason hosts }"
NOT_READY_2 = [{"reason": "NOT_READY", "hosts": 2}]


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with serve(fleet.objects(), catalog=CATALOG) as (client, _):
        yield client


async def slots(client: httpx.AsyncClient, arguments: str, fields: str = SLOTS) -> Any:
    return (await query(client, f"{{ slots({arguments}) {{ {fields} }} }}"))["slots"]


REQUEST = 'request: [{resource: "cpu", amount: "4"}, {resource: "memory", amount: "16Gi"}]'
ASKED = [{"name": "cpu", "amount": "4"}, {"name": "memory", "amount": str(16 * 2**30)}]


async def test_slots_of_a_request(client: httpx.AsyncClient) -> None:
    assert await slots(client, REQUEST) == [
        {
            "key": None,
            "flavor": None,
            "view": "AVAILABLE",
            "slots": 60,
            "allocationSlots": None,
            "hostsWithRoom": 1,
            "hostsUnknown": 0,
            "hosts": 4,
            "excluded": NOT_READY_2,
        }
    ]


async def test_slots_per_zone_and_host(client: httpx.AsyncClient) -> None:
    fields = "key slots hostsWithRoom hostsUnknown excluded { reason hosts } request { name amount } hypervisors { hypervisor { name } slots basis reason }"
    not_ready = [{"reason": "NOT_READY", "hosts": 1}]
    assert await slots(client, f"{REQUEST}, groupBy: ZONE", fields) == [
        {
            "key": "qa-de-1a",
            "slots": 60,
            "hostsWithRoom": 1,
            "hostsUnknown": 0,
            "excluded": not_ready,
            "request": ASKED,
            "hypervisors": [
                {
                    "hypervisor": {"name": "node-a"},
                    "slots": 60,
                    "basis": "BOOKINGS",
                    "reason": None,
                },
                {
                    "hypervisor": {"name": "node-c"},
                    "slots": 0,
                    "basis": None,
                    "reason": "NOT_READY",
                },
            ],
        },
        {
            "key": "qa-de-1b",
            "slots": 0,
            "hostsWithRoom": 0,
            "hostsUnknown": 0,
            "excluded": not_ready,
            "request": ASKED,
            "hypervisors": [
                {"hypervisor": {"name": "node-b"}, "slots": 0, "basis": "BOOKINGS", "reason": None},
                {
                    "hypervisor": {"name": "node-d"},
                    "slots": 0,
                    "basis": None,
                    "reason": "NOT_READY",
                },
            ],
        },
    ]


@pytest.mark.parametrize(
    ("view", "expected"),
    [
        ("BOOKINGS", (60, None, 0)),
        # node-a: 474 cores, 952 GiB unallocated -> 59; node-b reports no allocation
        ("ALLOCATION", (59, 59, 1)),
    ],
)
async def test_slots_per_view(
    client: httpx.AsyncClient, view: str, expected: tuple[int, int | None, int]
) -> None:
    (group,) = await slots(client, f"{REQUEST}, view: {view}")
    assert (group["slots"], group["allocationSlots"], group["hostsUnknown"]) == expected
    assert group["view"] == view


async def test_slots_of_a_flavor_with_a_filter(client: httpx.AsyncClient) -> None:
    (group,) = await slots(client, 'flavor: "g_c4_m16", filter: {zone: "qa-de-1b"}')
    assert (group["flavor"], group["slots"], group["hosts"]) == ("g_c4_m16", 0, 2)
    assert group["excluded"] == [{"reason": "NOT_READY", "hosts": 1}]


async def test_every_flavor_per_zone_in_one_query(client: httpx.AsyncClient) -> None:
    data = await query(
        client,
        """{ flavors { name vcpus ramMib diskGb resources { name amount } extraSpecs { key value }
             slots(groupBy: ZONE) { key slots hostsWithRoom hostsUnknown } } }""",
    )
    by_name = {f["name"]: f for f in data["flavors"]}
    assert list(by_name) == ["g_c4_m16", "g_c32_m128", "gpu"]
    assert by_name["g_c4_m16"]["slots"] == [
        {"key": "qa-de-1a", "slots": 60, "hostsWithRoom": 1, "hostsUnknown": 0},
        {"key": "qa-de-1b", "slots": 0, "hostsWithRoom": 0, "hostsUnknown": 0},
    ]
    # 32 cores: node-a min(476 // 32, 960 // 128) = 7
    assert by_name["g_c32_m128"]["slots"] == [
        {"key": "qa-de-1a", "slots": 7, "hostsWithRoom": 1, "hostsUnknown": 0},
        {"key": "qa-de-1b", "slots": 0, "hostsWithRoom": 0, "hostsUnknown": 0},
    ]
    assert by_name["g_c32_m128"]["extraSpecs"] == [{"key": "hw:x", "value": "y"}]
    # Nobody reports a VGPU capacity: every eligible host is unknown but node-b, whose
    # over-subscribed figures admit no instance whatever its VGPU; the slots known are
    # those of the excluded hosts and node-b's, none.
    assert by_name["gpu"]["slots"] == [
        {"key": "qa-de-1a", "slots": 0, "hostsWithRoom": 0, "hostsUnknown": 1},
        {"key": "qa-de-1b", "slots": 0, "hostsWithRoom": 0, "hostsUnknown": 0},
    ]
    assert by_name["gpu"]["resources"] == [
        {"name": "VGPU", "amount": "1"},
        {"name": "cpu", "amount": "1"},
        {"name": "memory", "amount": str(2**30)},
    ]
    assert (by_name["gpu"]["vcpus"], by_name["gpu"]["ramMib"], by_name["gpu"]["diskGb"]) == (
        1,
        1024,
        None,
    )


async def errors(client: httpx.AsyncClient, document: str) -> list[dict[str, Any]]:
    response = await client.post("/graphql", json={"query": document})
    body = response.json()
    assert body.get("data") is None, body
    result: list[dict[str, Any]] = body["errors"]
    return result


@pytest.mark.parametrize(
    ("arguments", "message", "code"),
    [
        ('flavor: "nope"', "unknown flavor 'nope': Query.flavors lists the 3", "UNKNOWN_FLAVOR"),
        ("filter: {}", "slots needs exactly one of request and flavor", "BAD_SLOTS_REQUEST"),
        (f'{REQUEST}, flavor: "gpu"', "exactly one of request and flavor", "BAD_SLOTS_REQUEST"),
        ("request: []", "slots: a request needs at least one resource", "BAD_SLOTS_REQUEST"),
        (
            'request: [{resource: "cpu", amount: "1"}, {resource: "cpu", amount: "2"}]',
            "slots request names cpu twice",
            "BAD_SLOTS_REQUEST",
        ),
    ],
)
async def test_bad_slot_questions(
    client: httpx.AsyncClient, arguments: str, message: str, code: str
) -> None:
    (error,) = await errors(client, f"{{ slots({arguments}) {{ slots }} }}")
    assert message in error["message"]
    assert error["extensions"]["code"] == code


async def test_without_a_catalog() -> None:
    async with serve(fleet.objects()) as (client, _):
        assert (await query(client, "{ flavors { name } }"))["flavors"] == []
        (error,) = await errors(client, '{ slots(flavor: "g_c4_m16") { slots } }')
    assert "no flavor catalog is loaded (serve --flavors FILE)" in error["message"]
    assert error["extensions"]["code"] == "UNKNOWN_FLAVOR"


# The scheduler's rules (domain brief, section 8) through the API.

READY = [{"type": "Ready", "status": "True"}]
HANA = "CUSTOM_HANA_EXCLUSIVE_HOST"
RULES_CATALOG = parse_catalog(
    [
        {"name": "g_c4_m16", "vcpus": 4, "ram": 16384},
        {
            "name": "hana_c4_m64",
            "vcpus": 4,
            "ram": 65536,
            "properties": {f"trait:{HANA}": "required"},
        },
        {
            "name": "p_c4_m16",
            "vcpus": 4,
            "ram": 16384,
            "properties": {"hw:cpu_policy": "dedicated"},
        },
        {"name": "vgpu", "vcpus": 1, "ram": 1024, "properties": {"resources1:VGPU": "1"}},
    ],
    "test",
)


def ruled(name: str, *, ready: bool = True, cpu: Any = 64, **spec: Any) -> dict[str, Any]:
    status = {
        "conditions": [{"type": "Ready", "status": str(ready)}],
        "capacity": {"cpu": cpu, "memory": "512Gi", "PCPU": 16},
        "allocation": {"cpu": 0, "memory": 0},
    }
    return fleet_object(name, spec={"bookings": [], **spec}, status=status)


def rules_fleet() -> list[dict[str, Any]]:
    hana_aggregate = {"aggregate": {"name": "hana", "metadata": {f"trait:{HANA}": "required"}}}
    return [
        ruled("gp-1"),  # 16 of g_c4_m16 (cpu), 4 of p_c4_m16 (PCPU), 8 of hana by memory
        ruled("down", ready=False),
        ruled("maint", maintenance="manual"),
        ruled("private", allowedProjects=["p1"]),
        ruled("hana-1", customTraits=[HANA], groups=[hana_aggregate]),
    ]


@pytest.fixture
async def rules_client() -> AsyncIterator[httpx.AsyncClient]:
    async with serve(rules_fleet(), catalog=RULES_CATALOG) as (client, _):
        yield client


async def test_groups_count_what_the_scheduler_excludes(rules_client: httpx.AsyncClient) -> None:
    fields = "slots hostsWithRoom hostsUnknown hosts excluded { reason hosts }"
    (plain,) = await slots(rules_client, 'flavor: "g_c4_m16"', fields)
    assert plain == {
        "slots": 16,
        "hostsWithRoom": 1,
        "hostsUnknown": 0,
        "hosts": 5,
        "excluded": [
            {"reason": "NOT_READY", "hosts": 1},
            {"reason": "DISABLED", "hosts": 1},
            {"reason": "PROJECT_RESTRICTED", "hosts": 1},
            {"reason": "ISOLATED_AGGREGATE", "hosts": 1},
        ],
    }
    (for_p1,) = await slots(rules_client, 'flavor: "g_c4_m16", project: "p1"', fields)
    assert (for_p1["slots"], for_p1["hostsWithRoom"]) == (32, 2)
    (hana,) = await slots(rules_client, 'flavor: "hana_c4_m64"', fields)
    assert (hana["slots"], hana["hostsWithRoom"]) == (8, 1)
    assert {"reason": "MISSING_TRAIT", "hosts": 1} in hana["excluded"]
    (pinned,) = await slots(rules_client, 'flavor: "p_c4_m16"', fields)
    assert pinned["slots"] == 4  # 16 PCPU, the shared cpus untouched
    (granular,) = await slots(rules_client, 'flavor: "vgpu"', fields)
    # Not judged: no slots to sum (null, not the 0 of its 4 excluded hosts), 1 unknown.
    assert (granular["slots"], granular["hostsUnknown"]) == (None, 1)
    # The same through Flavor.slots, with the filter's hosts (counted, not kept).
    data = await query(
        rules_client,
        '{ flavors { name slots(project: "p1", filter: {names: ["gp-1", "private", "down"]}) { slots excluded { reason hosts } } } }',
    )
    by_name = {f["name"]: f["slots"] for f in data["flavors"]}
    assert by_name["g_c4_m16"] == [{"slots": 32, "excluded": [{"reason": "NOT_READY", "hosts": 1}]}]


async def test_a_flavor_shows_the_request_nova_sends(rules_client: httpx.AsyncClient) -> None:
    data = await query(
        rules_client,
        "{ flavors { name resources { name amount } requiredTraits forbiddenTraits judged reason } }",
    )
    by_name = {f.pop("name"): f for f in data["flavors"]}
    assert by_name["p_c4_m16"]["resources"] == [
        {"name": "PCPU", "amount": "4"},
        {"name": "memory", "amount": str(16 * 2**30)},
    ]
    assert by_name["hana_c4_m64"]["requiredTraits"] == [HANA]
    assert by_name["g_c4_m16"] | {"resources": None} == {
        "resources": None,
        "requiredTraits": [],
        "forbiddenTraits": [],
        "judged": True,
        "reason": None,
    }
    assert by_name["vgpu"]["judged"] is False
    assert "resources1:VGPU" in by_name["vgpu"]["reason"]


async def test_eligibility_of_one_host(rules_client: httpx.AsyncClient) -> None:
    document = """query ($name: String!, $flavor: String!, $project: String) {
      hypervisor(name: $name) { eligibility(flavor: $flavor, project: $project) {
        flavor project eligible reasons slots basis view } } }"""

    async def eligibility(name: str, flavor: str, project: str | None = None) -> Any:
        data = await query(rules_client, document, name=name, flavor=flavor, project=project)
        return data["hypervisor"]["eligibility"]

    assert await eligibility("gp-1", "g_c4_m16") == {
        "flavor": "g_c4_m16",
        "project": None,
        "eligible": True,
        "reasons": [],
        "slots": 16,
        "basis": "BOOKINGS",
        "view": "AVAILABLE",
    }
    hana_host = await eligibility("hana-1", "g_c4_m16")
    assert (hana_host["eligible"], hana_host["reasons"], hana_host["slots"]) == (
        False,
        ["ISOLATED_AGGREGATE"],
        0,
    )
    assert (await eligibility("private", "hana_c4_m64"))["reasons"] == [
        "PROJECT_RESTRICTED",
        "MISSING_TRAIT",
    ]
    assert (await eligibility("private", "g_c4_m16", "p1"))["eligible"] is True
    response = await rules_client.post(
        "/graphql",
        json={"query": document, "variables": {"name": "gp-1", "flavor": "nope"}},
    )
    (error,) = response.json()["errors"]
    assert error["extensions"]["code"] == "UNKNOWN_FLAVOR"


async def test_where_can_i_boot_a_flavor(rules_client: httpx.AsyncClient) -> None:
    async def names(filter: str) -> list[str]:
        data = await query(
            rules_client, f"{{ hypervisors(filter: {filter}) {{ nodes {{ name }} }} }}"
        )
        return [n["name"] for n in data["hypervisors"]["nodes"]]

    assert await names('{fitsFlavor: "g_c4_m16"}') == ["gp-1"]
    assert await names('{fitsFlavor: "g_c4_m16", project: "p1"}') == ["gp-1", "private"]
    assert await names('{fitsFlavor: "hana_c4_m64"}') == ["hana-1"]
    assert await names('{project: "p2"}') == ["down", "gp-1", "hana-1", "maint"]
    (error,) = await errors(
        rules_client, '{ hypervisors(filter: {fitsFlavor: "x"}) { totalCount } }'
    )
    assert error["extensions"]["code"] == "UNKNOWN_FLAVOR"


async def test_slot_counts_beyond_32_bits() -> None:
    """A Count is a JSON integer of any size: Int would refuse 2^31 and more."""
    huge = ruled("huge", cpu="4000000000000")
    async with serve([huge], catalog=RULES_CATALOG) as (client, _):
        (group,) = await slots(client, 'request: [{resource: "cpu", amount: "1"}]', "slots")
        assert group["slots"] == 4 * 10**12
        data = await query(
            client, '{ hypervisor(name: "huge") { eligibility(flavor: "g_c4_m16") { slots } } }'
        )
    # memory bounds it: 512 GiB / 16 GiB
    assert data["hypervisor"]["eligibility"]["slots"] == 32
