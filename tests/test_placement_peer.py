"""The gateway's slots in the BOOKINGS view against a real OpenStack Placement (domain brief, 4, 6 and 8).

The same generated fleet (tests/peer_fleet.py) is served by the gateway and
loaded into Placement: one provider per tracked host (uuid = status.hypervisorId)
with its inventories (total = physical, reserved = the reservation bookings,
allocation_ratio = the overcommit, max_unit = total), its traits (plus
COMPUTE_STATUS_DISABLED while in maintenance, as the operator disables the compute
service), its aggregates, and every consumer booking as an allocation. Then, for
each flavor of the catalog, the hosts the gateway gives at least one slot must be
exactly the providers of ``GET /allocation_candidates`` for the request Nova sends
for that flavor (nova/scheduler/utils.py ResourceRequest, request_filter.py), and
each of those hosts' slots must be Placement's own arithmetic over what it holds:
min over the requested classes of (floor((total - reserved) x ratio) - used) // amount.

What Placement does not model is kept out of the fleet, not worked around: every
host is Ready (Placement knows no readiness), none is evicted, none has
spec.allowedProjects (Nova's tenant isolation is off by default) and no flavor has
aggregate_instance_extra_specs (a scheduler filter, not a Placement query). Untracked
hosts are in the gateway's fleet only: in the BOOKINGS view they must never have room.

The request is Nova's, configured as the domain brief's rules assume: flavors have
disk 0, so no DISK_GB (no node agent reports one); ``[scheduler]
enable_isolated_aggregate_filtering = true`` (Nova's default is false); and
``[workarounds] disable_fallback_pcpu_query = true`` (default false), so a pinned
flavor is asked for as PCPU only, without the deprecated second query with VCPU
that exists for hosts not yet reporting PCPU.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from gateway.domain.flavors import parse_catalog
from harness.placement import Inventory, PlacementClient
from tests.peer_fleet import AGGREGATES, DISABLED, GPU, HANA, Fleet, add_host, generate
from tests.support import query, serve

#: ``openstack flavor show`` as the catalog file holds it.
FLAVORS: list[dict[str, Any]] = [
    {"name": "c2_m4", "vcpus": 2, "ram": 4096, "disk": 0},
    {"name": "c8_m32", "vcpus": 8, "ram": 32768, "disk": 0},
    {"name": "c3_m12345", "vcpus": 3, "ram": 12345, "disk": 0},
    {"name": "c48_m256", "vcpus": 48, "ram": 262144, "disk": 0},
    # more vCPUs than most hosts have cores: max_unit, not the overcommitted free figure
    {"name": "c100_m8", "vcpus": 100, "ram": 8192, "disk": 0},
    {
        "name": "avx512_c4_m8",
        "vcpus": 4,
        "ram": 8192,
        "disk": 0,
        "properties": {"trait:HW_CPU_X86_AVX512F": "required"},
    },
    {
        "name": "fast_disk_c4_m16",
        "vcpus": 4,
        "ram": 16384,
        "disk": 0,
        "properties": {"trait:CUSTOM_SLOW_DISK": "forbidden"},
    },
    {
        "name": "ssd_no_avx2_c2_m8",
        "vcpus": 2,
        "ram": 8192,
        "disk": 0,
        "properties": {"trait:CUSTOM_SSD": "required", "trait:HW_CPU_X86_AVX2": "forbidden"},
    },
    {
        "name": "nvme_c1_m2",
        "vcpus": 1,
        "ram": 2048,
        "disk": 0,
        "properties": {"trait:CUSTOM_NVME": "required"},
    },
    {
        "name": "gpu_c8_m16",
        "vcpus": 8,
        "ram": 16384,
        "disk": 0,
        "properties": {f"trait:{GPU}": "required"},
    },
    {
        "name": "pinned_c4_m16",
        "vcpus": 4,
        "ram": 16384,
        "disk": 0,
        "properties": {"hw:cpu_policy": "dedicated"},
    },
    {
        "name": "pinned_avx512_c8_m32",
        "vcpus": 8,
        "ram": 32768,
        "disk": 0,
        "properties": {"hw:cpu_policy": "dedicated", "trait:HW_CPU_X86_AVX512F": "required"},
    },
    {
        "name": "hana_c16_m256",
        "vcpus": 16,
        "ram": 262144,
        "disk": 0,
        "properties": {f"trait:{HANA}": "required"},
    },
]

#: A host's slots and the reason it is excluded (null when eligible).
Answer = tuple[int | None, str | None]

SLOTS = """
query ($flavor: String!) {
  slots(flavor: $flavor, view: BOOKINGS) { hypervisors { hypervisor { name } slots reason } }
}
"""


def nova_request(flavor: Mapping[str, Any]) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """What Nova's scheduler asks Placement for this flavor: the amounts, and the query.

    ResourceRequest.to_querystring: ``resources``, ``required`` (the flavor's traits,
    forbidden ones as ``!NAME``), ``root_required=!COMPUTE_STATUS_DISABLED``
    (compute_status_filter) and ``member_of=!in:`` the aggregates with a
    ``trait:NAME=required`` metadata key whose NAME the flavor does not require
    (isolate_aggregates).
    """
    specs: Mapping[str, str] = flavor.get("properties", {})
    cpu = "PCPU" if specs.get("hw:cpu_policy") == "dedicated" else "VCPU"
    amounts = {cpu: flavor["vcpus"], "MEMORY_MB": flavor["ram"]}
    traits = {k.removeprefix("trait:"): v for k, v in specs.items() if k.startswith("trait:")}
    required = sorted(t for t, v in traits.items() if v == "required")
    forbidden = sorted(t for t, v in traits.items() if v == "forbidden")
    isolated = sorted(
        a.uuid
        for a in AGGREGATES.values()
        if any(
            k.startswith("trait:") and v == "required" and k.removeprefix("trait:") not in required
            for k, v in a.metadata.items()
        )
    )
    params = [
        ("limit", "1000"),  # [scheduler] max_placement_results
        ("resources", ",".join(f"{rc}:{n}" for rc, n in sorted(amounts.items()))),
        ("root_required", f"!{DISABLED}"),
    ]
    if required or forbidden:
        params.append(("required", ",".join([*required, *(f"!{t}" for t in forbidden)])))
    if isolated:
        params.append(("member_of", "!in:" + ",".join(isolated)))
    return amounts, params


async def load(placement: PlacementClient, fleet: Fleet) -> None:
    """The fleet into Placement: the bookings first, against an inventory that takes them all.

    Placement refuses an allocation beyond capacity, yet a host's bookings may
    exceed it (a ratio lowered, a reservation raised, after they were made): so
    the providers are loaded as they were, the allocations made, and then the
    inventories set as they are now, which Placement accepts.
    """
    for provider in fleet.providers:
        await placement.create_provider(provider.uuid, provider.name)
        roomy = {
            rc: Inventory(i.total, allocation_ratio=100.0) for rc, i in provider.inventories.items()
        }
        await placement.set_inventories(provider.uuid, roomy)
    for consumer_uuid, consumer in fleet.consumers.items():
        await placement.allocate(
            consumer_uuid, consumer.allocations, consumer.project, consumer.user
        )
    for provider in fleet.providers:
        await placement.set_inventories(provider.uuid, provider.inventories)
        await placement.set_traits(provider.uuid, provider.traits)
        await placement.set_aggregates(provider.uuid, provider.aggregates)


def placement_slots(
    inventories: Mapping[str, Inventory], usages: Mapping[str, int], amounts: Mapping[str, int]
) -> int:
    """Instances of ``amounts`` that fit in what Placement holds for one provider."""
    return min((inventories[rc].capacity - usages[rc]) // n for rc, n in amounts.items())


async def gateway_slots(gateway: httpx.AsyncClient, flavor: str) -> dict[str, Answer]:
    """Each host's slots and exclusion reason in the BOOKINGS view, by name."""
    data = await query(gateway, SLOTS, flavor=flavor)
    hosts = (h for group in data["slots"] for h in group["hypervisors"])
    return {h["hypervisor"]["name"]: (h["slots"], h["reason"]) for h in hosts}


def difference(
    candidates: set[str], answers: Mapping[str, Answer], slots: Mapping[str, int]
) -> dict[str, Any]:
    """Where the gateway's answers and Placement's part ways; empty when they agree.

    ``slots`` is Placement's count for each candidate, which the gateway must give
    it as an eligible host (reason null); every other host must have no room.
    """
    with_room = {name for name, (count, _) in answers.items() if (count or 0) >= 1}
    wrong = {n: answers.get(n) for n in sorted(candidates) if answers.get(n) != (slots[n], None)}
    if with_room == candidates and not wrong:
        return {}
    return {
        "room in the gateway only": sorted(with_room - candidates),
        "room in Placement only": sorted(candidates - with_room),
        "gateway (slots, reason)": wrong,
        "Placement (slots)": {n: slots[n] for n in wrong},
    }


async def compare(
    placement: str, fleet: Fleet, flavors: list[dict[str, Any]]
) -> tuple[dict[str, set[str]], dict[str, dict[str, Any]]]:
    """Load ``fleet`` into Placement and serve it; per flavor, Placement's candidates
    among the fleet's hosts, and where the gateway's answer differs (no key: none)."""
    names = {p.uuid: p.name for p in fleet.providers}
    catalog = parse_catalog(flavors, "tests/test_placement_peer.py")
    candidates: dict[str, set[str]] = {}
    mismatches: dict[str, dict[str, Any]] = {}
    async with PlacementClient(placement) as client:
        await load(client, fleet)
        held = {
            p.name: (await client.inventories(p.uuid), await client.usages(p.uuid))
            for p in fleet.providers
        }
        async with serve(fleet.objects, catalog=catalog) as (gateway, _):
            for flavor in flavors:
                amounts, params = nova_request(flavor)
                # other tests' providers share the server: only the fleet's count
                found = {names[p] for p in await client.candidates(params) if p in names}
                slots = {n: placement_slots(*held[n], amounts) for n in found}
                answers = await gateway_slots(gateway, flavor["name"])
                candidates[flavor["name"]] = found
                if differences := difference(found, answers, slots):
                    mismatches[flavor["name"]] = differences
    return candidates, mismatches


async def test_hosts_with_slots_are_placements_allocation_candidates(placement: str) -> None:
    candidates, mismatches = await compare(placement, generate(), FLAVORS)
    assert all(candidates.values()), f"a flavor without candidates compares nothing: {candidates}"
    assert mismatches == {}


async def test_a_ratio_with_no_exact_binary_float_counts_as_in_placement(placement: str) -> None:
    """Placement's capacity is int((total - reserved) x allocation_ratio) in floats.

    100 x 1.15 is 114.99999999999999 there, so a host of 100 cores at 1.15 takes
    114 vCPUs, not 115: judged on bookings, the gateway counts as Placement does.
    (With MySQL, whose FLOAT column keeps single precision, more ratios fall short:
    100 x 1.3 is 129.99999523 there; this peer runs on SQLite's doubles.)
    """
    fleet = Fleet()
    memory = {"MEMORY_MB": Inventory(65536)}
    inventories = {"VCPU": Inventory(100, allocation_ratio=1.15), **memory}
    consumers = {
        "0f0f0f0f-0000-4000-8000-0000000000c1": {"VCPU": 100, "MEMORY_MB": 1024},
        "0f0f0f0f-0000-4000-8000-0000000000c2": {"VCPU": 14, "MEMORY_MB": 1024},
    }
    add_host(fleet, "node-ratio", "64Gi", inventories, consumers)
    flavor = {"name": "c1_m1024", "vcpus": 1, "ram": 1024, "disk": 0}

    candidates, mismatches = await compare(placement, fleet, [flavor])

    assert candidates == {"c1_m1024": set()}  # 114 of 114 taken
    assert mismatches == {}
