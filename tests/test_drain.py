"""Drain plans (domain brief, section 9): exact plans for small fleets, and on generated
fleets every plan valid and maximal."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.domain import capacity
from gateway.domain.drain import after_drain, plan_drain
from gateway.domain.eligibility import host_facts
from gateway.domain.parse import parse_hypervisor
from gateway.domain.records import Hypervisor, View
from tests.objects import consumer, hypervisor, uuid_of

GiB = 2**30
HANA = "CUSTOM_HANA_EXCLUSIVE_HOST"
HANA_AGGREGATE = {"aggregate": {"name": "hana", "metadata": {f"trait:{HANA}": "required"}}}


def host(
    name: str,
    consumers: list[tuple[int, int, int]] | None = None,
    *,
    zone: str = "a",
    cpu: int = 16,
    memory: int = 64,
    ready: bool = True,
    untracked: bool = False,
    allocation: tuple[int, int] = (0, 0),
    **spec: Any,
) -> Hypervisor:
    """A host of ``cpu`` cores and ``memory`` GiB; consumers as (uuid number, cpu, GiB)."""
    bookings = [
        consumer(uuid_of(n), {"cpu": c, "memory": f"{m}Gi"}, projectID=f"p{n % 3}")
        for n, c, m in consumers or []
    ]
    status = {
        "conditions": [{"type": "Ready", "status": str(ready)}],
        "capacity": {"cpu": cpu, "memory": f"{memory}Gi"},
        "allocation": {"cpu": allocation[0], "memory": f"{allocation[1]}Gi"},
    }
    body = spec if untracked else {"bookings": bookings, **spec}
    labels = {"topology.kubernetes.io/zone": zone}
    return parse_hypervisor(hypervisor(name, labels=labels, spec=body, status=status))


def summary(plan: Any) -> list[tuple[str, str, str]]:
    return [(m.uuid[-2:], m.source, m.target) for m in plan.moves]


def test_largest_first_each_onto_the_tightest_fit() -> None:
    fleet = [
        host("drained", [(1, 2, 8), (2, 4, 32), (3, 1, 4)]),
        host("roomy", memory=64),
        host("tight", [(9, 4, 24)], memory=64),  # 40 GiB left
        host("small", memory=10),
    ]
    plan = plan_drain(fleet, ["drained"])
    # 32 GiB: tight (40 left -> 8) beats roomy (64 -> 32); 8 GiB: tight has 8 left, exactly;
    # 4 GiB: small (10 -> 6) is now the tightest.
    assert summary(plan) == [
        ("02", "drained", "tight"),
        ("01", "drained", "tight"),
        ("03", "drained", "small"),
    ]
    assert (plan.unplaced, plan.exact) == ((), True)


def test_only_same_zone_eligible_hosts_of_the_same_isolation_take_them() -> None:
    fleet = [
        host("drained", [(1, 2, 8)]),
        host("other-zone", zone="b"),
        host("down", ready=False),
        host("maint", maintenance="manual"),
        host("private", allowedProjects=["p9"]),
        host("hana", customTraits=[HANA], groups=[HANA_AGGREGATE]),
    ]
    plan = plan_drain(fleet, ["drained"])
    assert plan.moves == ()
    (left,) = plan.unplaced
    # Only a host of another project would have room: none the scheduler would use.
    reason = "no host in zone a the scheduler would use for it"
    assert (left.source, left.reason) == ("drained", reason)
    # The project of the consumer (p1) opens a host restricted to it.
    opened = [*fleet, host("p1-only", allowedProjects=["p1"])]
    assert summary(plan_drain(opened, ["drained"])) == [("01", "drained", "p1-only")]
    # A HANA host's instances stay on HANA hosts.
    hana = [
        host("hana-1", [(1, 2, 8)], customTraits=[HANA], groups=[HANA_AGGREGATE]),
        host("general"),
        host("hana-2", customTraits=[HANA], groups=[HANA_AGGREGATE]),
    ]
    assert summary(plan_drain(hana, ["hana-1"])) == [("01", "hana-1", "hana-2")]


def test_a_zone_with_nowhere_to_go_says_so() -> None:
    plan = plan_drain([host("alone", [(1, 1, 1)]), host("b", zone="b")], ["alone"])
    assert plan.unplaced[0].reason == "no host in zone a the scheduler would use for it"


def test_an_unplaced_consumer_is_told_why() -> None:
    """No room is one reason; a host closed to its project or one whose figures are
    unknown has no room to run out of."""
    full = [host("drained", [(1, 2, 8)]), host("full", [(2, 16, 64)])]
    assert plan_drain(full, ["drained"]).unplaced[0].reason == (
        "no eligible host in zone a has room for it"
    )
    blind = [host("drained", [(1, 2, 8)]), host("blind", untracked=True)]
    assert plan_drain(blind, ["drained"], View.BOOKINGS).unplaced[0].reason == (
        "no eligible host in zone a knows its figures of cpu, memory"
    )


def test_a_migrating_consumer_moves_only_its_drained_booking() -> None:
    fleet = [host("src", [(1, 2, 8)]), host("dst", [(1, 2, 8)]), host("spare")]
    plan = plan_drain(fleet, ["src"])
    assert summary(plan) == [("01", "src", "dst")]  # dst has less memory left than spare
    after = {h.name: h for h in after_drain(fleet, plan)}
    assert "src" not in after
    memory = after["dst"].resources["memory"]
    assert (memory.booked, memory.free) == (16 * GiB, 48 * GiB)
    # What the next question judges it by: Placement's room, the moved booking taken.
    assert capacity.judged(View.BOOKINGS)(memory, True) == (48 * GiB, 64 * GiB)


def test_untracked_hosts_are_judged_in_aggregate_and_not_exact() -> None:
    """Against what the zone's hosts leave unallocated (libvirt's view, as the drained
    host's allocation is), in every view: the domain brief's remaining unallocated figure."""
    fleet = [
        host("untracked", untracked=True, allocation=(8, 40)),
        host("t1", [(1, 8, 40)], memory=64, allocation=(8, 40)),  # 24 GiB unallocated
        host("t2", memory=20),
    ]
    plan = plan_drain(fleet, ["untracked"])
    assert not plan.exact
    (estimate,) = plan.estimates
    assert (estimate.host, estimate.fits) == ("untracked", True)
    assert estimate.left["memory"] == 44 * GiB
    # t1 booked for 40 GiB but running 10: 54 GiB unallocated, in the bookings' view too.
    running_less = [fleet[0], host("t1", [(1, 8, 40)], memory=64, allocation=(8, 10)), fleet[2]]
    for view in View:
        assert plan_drain(running_less, ["untracked"], view).estimates[0].left["memory"] == (
            74 * GiB
        )
    tight = plan_drain([*fleet[:2], host("t2", memory=10)], ["untracked"])
    assert tight.estimates[0].fits is False
    # Its instances' projects are unknown: a host open to some projects only is no room.
    private = plan_drain([*fleet[:2], host("t2", memory=20, allowedProjects=["p1"])], ["untracked"])
    assert (private.estimates[0].left["memory"], private.estimates[0].fits) == (24 * GiB, False)


def test_views_decide_the_room() -> None:
    """In ALLOCATION, a tracked host's room is libvirt's: its allocation, not its bookings."""
    fleet = [host("drained", [(1, 2, 8)]), host("busy", allocation=(16, 60))]
    assert summary(plan_drain(fleet, ["drained"], View.BOOKINGS)) == [("01", "drained", "busy")]
    assert summary(plan_drain(fleet, ["drained"], View.ALLOCATION)) == []


# Generated fleets: every plan valid and maximal.

consumers_strategy = st.lists(
    st.tuples(st.integers(1, 40), st.integers(1, 8), st.integers(1, 48)), max_size=5
)
hosts_strategy = st.lists(
    st.fixed_dictionaries(
        {
            "consumers": consumers_strategy,
            "zone": st.sampled_from(["a", "b"]),
            "cpu": st.integers(4, 32),
            "memory": st.integers(16, 96),
            "ready": st.sampled_from([True, True, False]),
            "isolated": st.booleans(),
            "projects": st.sampled_from([[], [], ["p1"]]),
        }
    ),
    min_size=2,
    max_size=8,
)


def made(i: int, spec: dict[str, Any]) -> Hypervisor:
    extra: dict[str, Any] = {"allowedProjects": spec["projects"]}
    if spec["isolated"]:
        extra |= {"customTraits": [HANA], "groups": [HANA_AGGREGATE]}
    return host(
        f"h{i}",
        spec["consumers"],
        zone=spec["zone"],
        cpu=spec["cpu"],
        memory=spec["memory"],
        ready=spec["ready"],
        **extra,
    )


@settings(max_examples=120, deadline=None)
@given(hosts_strategy, st.data(), st.sampled_from(list(View)))
def test_every_plan_is_valid_and_maximal(
    specs: list[dict[str, Any]], data: Any, view: View
) -> None:
    fleet = [made(i, s) for i, s in enumerate(specs)]
    drained = data.draw(st.sets(st.sampled_from([h.name for h in fleet]), min_size=1))
    plan = plan_drain(fleet, drained, view)
    by_name = {h.name: h for h in fleet}
    after = {h.name: h for h in after_drain(fleet, plan)}
    moved_to: dict[str, list[Any]] = {}
    for move in plan.moves:
        source, target = by_name[move.source], by_name[move.target]
        assert move.target not in drained and move.source in drained
        assert source.zone == target.zone
        assert eligible(source, target, project_of(source, move.uuid))
        moved_to.setdefault(move.target, []).append(move)
    for name, moves in moved_to.items():  # no target over its figure, in the plan's view
        judge = capacity.judged(view)
        for resource in ("cpu", "memory"):
            figure, _ = judge(by_name[name].resources[resource], by_name[name].bookings_tracked)
            taken = sum((m.resources.get(resource, Decimal(0)) for m in moves), Decimal(0))
            assert figure is not None and taken <= figure
    for left in plan.unplaced:  # maximal: nowhere with what the plan leaves
        source = by_name[left.source]
        for target in after.values():
            if target.zone != source.zone or not eligible(
                source, target, project_of(source, left.uuid)
            ):
                continue
            taken = [m.resources for m in moved_to.get(target.name, [])]
            assert not fits_after(by_name[target.name], taken, left.resources, view)
    # Every consumer booking of a drained host is moved or left, once.
    expected = sorted((c.uuid, h) for h in drained for c in by_name[h].consumers)
    got = sorted(
        [(m.uuid, m.source) for m in plan.moves] + [(u.uuid, u.source) for u in plan.unplaced]
    )
    assert sorted(set(expected)) == got


def project_of(source: Hypervisor, uuid: str) -> str | None:
    return next(c.project_id for c in source.consumers if c.uuid == uuid)


def eligible(source: Hypervisor, target: Hypervisor, project: str | None) -> bool:
    facts = host_facts(target)
    return (
        facts.ready
        and not facts.disabled
        and (not facts.allowed_projects or project in facts.allowed_projects)
        and facts.isolating == host_facts(source).isolating
    )


def fits_after(target: Hypervisor, taken: list[Any], wanted: Any, view: View) -> bool:
    judge = capacity.judged(view)
    for name, amount in wanted.items():
        resource = target.resources.get(name)
        if resource is None:
            return False
        figure, maximum = judge(resource, target.bookings_tracked)
        if figure is not None:
            figure -= sum((t.get(name, Decimal(0)) for t in taken), Decimal(0))
        if not capacity.admits(name, amount, figure, maximum):
            return False
    return True


def test_an_untracked_hana_host_is_judged_against_hana_hosts_only() -> None:
    fleet = [
        host(
            "hana-u",
            untracked=True,
            allocation=(8, 40),
            customTraits=[HANA],
            groups=[HANA_AGGREGATE],
        ),
        host("general", memory=512),
    ]
    (estimate,) = plan_drain(fleet, ["hana-u"]).estimates
    assert (estimate.fits, estimate.left["memory"]) == (False, None)
