"""Which hosts the scheduler may use, each rule with its reason (domain brief, section 8),
and slot groups that add up to an independent per-host reference."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.domain import slots
from gateway.domain.demand import Demand, flavor_demand
from gateway.domain.eligibility import Reason, first_reason, host_facts, matches_spec, reasons
from gateway.domain.fleet import Grouping
from gateway.domain.parse import parse_hypervisor
from gateway.domain.records import Hypervisor, View
from tests.objects import consumer, hypervisor, uuid_of

GiB = 2**30
HANA = "CUSTOM_HANA_EXCLUSIVE_HOST"


def host(
    name: str = "h",
    *,
    ready: bool | None = True,
    maintenance: str = "",
    evicted: bool = False,
    projects: list[str] | None = None,
    traits: list[str] | None = None,
    aggregates: list[dict[str, Any]] | None = None,
    zone: str = "a",
    cpu: int = 64,
    booked_cpu: int = 0,
) -> Hypervisor:
    spec: dict[str, Any] = {
        "maintenance": maintenance,
        "allowedProjects": projects or [],
        "customTraits": traits or [],
        "groups": [{"aggregate": a} for a in aggregates or []],
        "bookings": [consumer(uuid_of(1), {"cpu": booked_cpu})] if booked_cpu else [],
    }
    status: dict[str, Any] = {
        "capacity": {"cpu": cpu, "memory": "256Gi"},
        "allocation": {"cpu": 0, "memory": 0},
        "evicted": evicted,
    }
    if ready is not None:
        status["conditions"] = [{"type": "Ready", "status": "True" if ready else "False"}]
    labels = {"topology.kubernetes.io/zone": zone}
    return parse_hypervisor(hypervisor(name, labels=labels, spec=spec, status=status))


def aggregate(name: str, **metadata: str) -> dict[str, Any]:
    return {"name": name, "uuid": f"00000000-0000-0000-0000-{len(name):012d}", "metadata": metadata}


def flavor(**specs: str) -> Demand:
    return flavor_demand(4, 16384, specs)


PLAIN = flavor()
HANA_FLAVOR = flavor(**{f"trait:{HANA}": "required"})
HANA_AGGREGATE = aggregate("hana", **{f"trait:{HANA}": "required"})


def judged(h: Hypervisor, demand: Demand = PLAIN, project: str | None = None) -> list[Reason]:
    return list(reasons(host_facts(h), demand, project))


def test_an_eligible_host_has_no_reason() -> None:
    assert judged(host()) == []


@pytest.mark.parametrize(
    ("made", "expected"),
    [
        ({"ready": False}, [Reason.NOT_READY]),
        ({"ready": None}, [Reason.NOT_READY]),  # no Ready condition at all
        ({"maintenance": "manual"}, [Reason.DISABLED]),
        ({"maintenance": "termination"}, [Reason.DISABLED]),
        ({"evicted": True}, [Reason.DISABLED]),
        ({"traits": ["COMPUTE_STATUS_DISABLED"]}, [Reason.DISABLED]),  # Nova forbids it
        ({"projects": ["p2", "p3"]}, [Reason.PROJECT_RESTRICTED]),
        ({"traits": ["HW_CPU_HYPERTHREADING"]}, []),
        ({"aggregates": [HANA_AGGREGATE]}, [Reason.ISOLATED_AGGREGATE]),
        (
            {"ready": False, "maintenance": "ha", "projects": ["p9"]},
            [Reason.NOT_READY, Reason.DISABLED, Reason.PROJECT_RESTRICTED],
        ),
    ],
)
def test_each_rule(made: dict[str, Any], expected: list[Reason]) -> None:
    assert judged(host(**made)) == expected


def test_no_status_is_not_ready() -> None:
    bare = parse_hypervisor(hypervisor("bare"))
    assert judged(bare) == [Reason.NOT_READY]


def test_a_project_is_admitted_where_it_is_listed() -> None:
    restricted = host(projects=["p1", "p2"])
    assert judged(restricted, project="p2") == []
    assert judged(restricted, project="p3") == [Reason.PROJECT_RESTRICTED]
    assert judged(host(), project="p3") == []  # an open host takes every project


def test_traits_required_and_forbidden() -> None:
    needs_ssd = flavor(**{"trait:CUSTOM_SSD": "required", "trait:CUSTOM_SLOW": "forbidden"})
    assert judged(host(), needs_ssd) == [Reason.MISSING_TRAIT]
    assert judged(host(traits=["CUSTOM_SSD"]), needs_ssd) == []
    both = host(traits=["CUSTOM_SLOW"])
    assert judged(both, needs_ssd) == [Reason.MISSING_TRAIT, Reason.FORBIDDEN_TRAIT]
    # A thread policy forbids hyperthreading (Nova's _translate_pinning_policies).
    isolate = flavor(**{"hw:cpu_policy": "dedicated", "hw:cpu_thread_policy": "isolate"})
    assert judged(host(traits=["HW_CPU_HYPERTHREADING"]), isolate) == [Reason.FORBIDDEN_TRAIT]


def test_isolated_aggregates_take_only_the_flavors_that_ask_for_them() -> None:
    hana_host = host(traits=[HANA], aggregates=[HANA_AGGREGATE])
    assert judged(hana_host, HANA_FLAVOR) == []
    assert judged(hana_host, PLAIN) == [Reason.ISOLATED_AGGREGATE]
    # A HANA flavor on a general host misses the trait; the general host isolates nothing.
    assert judged(host(), HANA_FLAVOR) == [Reason.MISSING_TRAIT]
    # An aggregate isolating on two traits takes only flavors requiring both.
    twice = aggregate("two", **{f"trait:{HANA}": "required", "trait:CUSTOM_X": "required"})
    assert judged(host(traits=[HANA], aggregates=[twice]), HANA_FLAVOR) == [
        Reason.ISOLATED_AGGREGATE
    ]
    # Metadata that is not "required" does not isolate.
    loose = aggregate("loose", **{f"trait:{HANA}": "preferred"})
    assert judged(host(aggregates=[loose])) == []


def test_an_explicit_request_is_judged_by_the_first_three_rules_only() -> None:
    explicit = Demand.of_amounts({"cpu": Decimal(1)})
    hana_host = host(aggregates=[HANA_AGGREGATE], projects=["p1"])
    assert judged(hana_host, explicit) == [Reason.PROJECT_RESTRICTED]
    assert judged(hana_host, explicit, "p1") == []


def test_aggregate_extra_specs() -> None:
    pinned = flavor(**{"aggregate_instance_extra_specs:pinned": "true"})
    assert judged(host(), pinned) == [Reason.AGGREGATE_MISMATCH]
    assert judged(host(aggregates=[aggregate("p", pinned="false")]), pinned) == [
        Reason.AGGREGATE_MISMATCH
    ]
    assert judged(host(aggregates=[aggregate("p", pinned="true")]), pinned) == []
    # Values across aggregates, and comma lists, are all candidates (Nova's metadata sets).
    two = [aggregate("a", pinned="false"), aggregate("b", pinned="x, true")]
    assert judged(host(aggregates=two), pinned) == []


@pytest.mark.parametrize(
    ("value", "requirement", "matched"),
    [
        ("true", "true", True),
        ("True", "true", False),
        ("4", "= 3", True),  # "=" means at least
        ("2", "= 3", False),
        ("3", "== 3.0", True),
        ("3", "!= 3", False),
        ("10", ">= 9", True),
        ("10", "<= 9", False),
        ("abc", "= 3", False),  # not a number: no match
        ("ssd,nvme", "<in> nvme", True),
        ("ssd", "<all-in> ssd nvme", False),
        ("ssd nvme", "<all-in> ssd nvme", True),
        ("b", "<or> a <or> b <or> c", True),
        ("d", "<or> a <or> b", False),
        ("b", "s== b", True),
        ("b", "s!= b", False),
        ("b", "s< c", True),
        ("b", "s>= c", False),
        ("x", "=", False),  # an operator without operand matches nothing
    ],
)
def test_extra_spec_operators(value: str, requirement: str, matched: bool) -> None:
    assert matches_spec(value, requirement) is matched


def test_excluded_hosts_have_no_slots_and_groups_count_them() -> None:
    hosts = [
        host("open", cpu=64),  # 16 slots of 4 cores
        host("full", cpu=4, booked_cpu=4),  # eligible, no room
        host("down", ready=False),
        host("maint", maintenance="manual", ready=False),  # counted once, as NOT_READY
        host("evicted", evicted=True),
        host("private", projects=["p1"]),
        host("hana", traits=[HANA], aggregates=[HANA_AGGREGATE]),
    ]
    (group,) = slots.slot_groups(hosts, PLAIN, Grouping.NONE)
    assert (group.slots, group.hosts_with_room, group.hosts_unknown, group.host_count) == (
        16,
        1,
        0,
        7,
    )
    assert group.excluded == (
        (Reason.NOT_READY, 2),
        (Reason.DISABLED, 1),
        (Reason.PROJECT_RESTRICTED, 1),
        (Reason.ISOLATED_AGGREGATE, 1),
    )
    per_host = {h.hypervisor.name: (h.slots, h.reason) for h in group.hosts}
    assert per_host["down"] == (0, Reason.NOT_READY)
    assert per_host["full"] == (0, None)
    # The project opens its host; HANA flavors go only to the HANA host.
    (for_p1,) = slots.slot_groups(hosts, PLAIN, Grouping.NONE, project="p1")
    assert (for_p1.slots, for_p1.hosts_with_room) == (32, 2)
    (hana,) = slots.slot_groups(hosts, HANA_FLAVOR, Grouping.NONE, flavor="hana")
    assert (hana.slots, hana.hosts_with_room) == (16, 1)
    assert dict(hana.excluded)[Reason.MISSING_TRAIT] == 2  # open, full (private: restricted first)


def test_a_flavor_that_cannot_be_judged_leaves_every_eligible_host_unknown() -> None:
    granular = flavor(**{"resources1:VGPU": "1"})
    (group,) = slots.slot_groups([host(), host("down", ready=False)], granular, Grouping.NONE)
    # No slots to sum (null, not the 0 of the host left out), as Flavor.judged says.
    assert (group.slots, group.hosts_unknown) == (None, 1)
    assert group.excluded == ((Reason.NOT_READY, 1),)
    (alone,) = slots.slot_groups([host()], granular, Grouping.NONE)
    assert (alone.slots, alone.hosts_unknown) == (None, 1)


# Property: groups add up to an independent per-host reference.

REASON_ORDER = list(Reason)
FLAVORS = [
    PLAIN,
    HANA_FLAVOR,
    flavor(**{"trait:CUSTOM_SSD": "forbidden"}),
    flavor(**{"aggregate_instance_extra_specs:pinned": "true"}),
    Demand.of_amounts({"cpu": Decimal(8)}),
]


def reference(h: Hypervisor, demand: Demand, project: str | None) -> tuple[str, int | None]:
    """Section 8 read plainly, then section 4's slots on the host's free cpu and memory
    (whole GiB here, so bytes and Placement's MiB agree): ('excluded:REASON' | 'room' |
    'none' | 'unknown', slots)."""
    traits = {t.name for t in h.traits}
    metadata = [dict(a.metadata) for a in h.aggregates]
    rules = [
        (Reason.NOT_READY, not h.ready),
        (Reason.DISABLED, bool(h.maintenance) or h.evicted is True),
        (Reason.PROJECT_RESTRICTED, bool(h.allowed_projects) and project not in h.allowed_projects),
    ]
    if demand.scheduled:
        isolating = {
            k[6:]
            for m in metadata
            for k, v in m.items()
            if k.startswith("trait:") and v == "required"
        }
        rules += [
            (Reason.MISSING_TRAIT, any(t not in traits for t in demand.required)),
            (Reason.FORBIDDEN_TRAIT, any(t in traits for t in demand.forbidden)),
            (Reason.ISOLATED_AGGREGATE, any(t not in demand.required for t in isolating)),
            (
                Reason.AGGREGATE_MISMATCH,
                any(all(m.get(k) != v for m in metadata) for k, v in demand.aggregate_specs),
            ),
        ]
    for reason, applies in rules:
        if applies:
            return f"excluded:{reason.value}", 0
    counts = []
    for name, amount in demand.resources:
        free = h.resources[name].available
        assert free is not None
        counts.append(int(free // amount) if free >= 0 else 0)
    found = min(counts)
    return ("room" if found else "none"), found


hosts_strategy = st.lists(
    st.fixed_dictionaries(
        {
            "ready": st.sampled_from([True, False, None]),
            "maintenance": st.sampled_from(["", "", "manual", "termination"]),
            "evicted": st.booleans(),
            "projects": st.sampled_from([[], [], ["p1"], ["p2", "p3"]]),
            "traits": st.lists(st.sampled_from([HANA, "CUSTOM_SSD", "CUSTOM_X"]), unique=True),
            "aggregates": st.lists(
                st.sampled_from([HANA_AGGREGATE, aggregate("pin", pinned="true"), aggregate("gp")]),
                unique_by=lambda a: a["name"],
            ),
            "zone": st.sampled_from(["a", "b"]),
            "cpu": st.integers(1, 96),
            "booked_cpu": st.integers(0, 100),
        }
    ),
    max_size=12,
)


@settings(max_examples=150, deadline=None)
@given(hosts_strategy, st.sampled_from(FLAVORS), st.sampled_from([None, "p1", "p3"]))
def test_groups_add_up_to_the_per_host_reference(
    made: list[dict[str, Any]], demand: Demand, project: str | None
) -> None:
    hosts = [host(f"h{i:02d}", **m) for i, m in enumerate(made)]
    groups = slots.slot_groups(hosts, demand, Grouping.ZONE, View.AVAILABLE, "f", project)
    seen = 0
    for group in groups:
        expected = [reference(h, demand, project) for h in group.members()]
        kinds = [kind for kind, _ in expected]
        assert group.host_count == len(expected)
        assert group.hosts_with_room == kinds.count("room")
        assert group.hosts_unknown == kinds.count("unknown") == 0
        known = [n for kind, n in expected if kind != "unknown"]
        assert group.slots == (sum(known) if known else None)  # excluded hosts: 0
        excluded = {r.value: n for r, n in group.excluded}
        assert excluded == {k[9:]: kinds.count(k) for k in set(kinds) if k.startswith("excluded:")}
        no_room = kinds.count("none")
        assert group.host_count == (
            group.hosts_with_room + no_room + group.hosts_unknown + sum(excluded.values())
        )
        assert [first_reason(host_facts(h), demand, project) for h in group.members()] == [
            None if not k.startswith("excluded:") else Reason(k[9:]) for k in kinds
        ]
        seen += group.host_count
    assert seen == len(hosts)
