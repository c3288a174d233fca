"""The demo fleet's plan: the same seed plans the same fleet, and the plan is a region's."""

from __future__ import annotations

import re

from gateway.sources.demo.plan import REGIONS, Fleet, Host
from gateway.sources.demo.source import generate

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


def test_the_same_seed_plans_the_same_fleet_and_another_seed_another() -> None:
    def plan(seed: int) -> list[tuple[str, str, int, list[str]]]:
        return [
            (h.name, h.zone, h.memory, [c.uuid for c in h.consumers])
            for h in Fleet(60, seed, None).hosts()
        ]

    assert plan(7) == plan(7)
    assert plan(7) != plan(8)


def test_hosts_are_named_once_placed_in_known_zones_and_consumers_are_v4_uuids() -> None:
    hosts = Fleet(120, 1, 10).hosts()
    assert len(hosts) == 120
    assert len({h.name for h in hosts}) == 120
    zones = {f"{region}{z}" for region, letters in REGIONS.items() for z in letters}
    assert {h.zone for h in hosts} <= zones
    uuids = [c.uuid for h in hosts for c in h.consumers]
    assert uuids and all(UUID.fullmatch(u) for u in uuids)


def test_the_rollout_tracks_a_share_of_every_role() -> None:
    hosts = Fleet(200, 2, None, tracked=0.6).hosts()
    roles: dict[str, list[bool]] = {}
    for h in hosts:
        roles.setdefault(h.role, []).append(h.tracked)
    assert {"full", "oversubscribed", "new", "maintenance"} <= set(roles)
    for role, tracked in roles.items():
        assert sum(tracked) == round(0.6 * len(tracked)), role


def test_the_rollout_does_not_replan_the_fleet() -> None:
    def plan(share: float) -> list[tuple[str, str, str, int]]:
        return [
            (h.name, h.role, h.hardware.model, h.memory) for h in Fleet(80, 4, None, share).hosts()
        ]

    assert plan(0) == plan(0.5) == plan(1)
    assert [h.tracked for h in Fleet(80, 4, None, 0.5).hosts()] == [
        h.tracked for h in Fleet(80, 4, None, 0.5).hosts()
    ]


def test_small_fleets_with_few_bookings_plan_for_every_seed() -> None:
    """A host whose only consumers all migrated away has none to book twice: it is
    skipped, not a StopIteration out of the plan (30 hosts, 2 bookings, seed 4 did that)."""
    for seed in range(12):
        assert len(generate(30, seed=seed, bookings_per_host=2)) == 30


def test_some_building_blocks_pin_cores_or_belong_to_a_few_projects() -> None:
    """Whole building blocks: of the general-purpose ones in order, every fifth from
    the second pins three quarters of its cores, every eighth from the fourth (when
    not pinned) is reserved for two projects; HANA ones are neither."""
    fleet = Fleet(2000, 0, None)
    hosts = fleet.hosts()
    blocks: dict[str, list[Host]] = {}
    for h in hosts:
        blocks.setdefault(h.bb, []).append(h)
    assert all(len({h.pool for h in block}) == 1 for block in blocks.values())
    general = [bb for bb, block in blocks.items() if not block[0].hardware.hana]
    pinned = {bb for bb, block in blocks.items() if block[0].dedicated}
    restricted = {bb for bb, block in blocks.items() if block[0].allowed}
    assert pinned == set(general[1::5])
    assert restricted == {bb for i, bb in enumerate(general) if i % 8 == 3} - pinned
    assert len(fleet.restricted_projects) == 2
    for h in hosts:
        assert h.dedicated == (h.hardware.cores * 3 // 4 if h.bb in pinned else 0)
        assert h.allowed == (fleet.restricted_projects if h.bb in restricted else ())


def test_pinned_instances_run_on_pinned_hosts_and_projects_where_they_may() -> None:
    fleet = Fleet(2000, 0, None)
    hosts = fleet.hosts()
    for h in hosts:
        kinds = {c.flavor.pinned for c in h.consumers}
        assert kinds <= ({True, False} if h.dedicated else {False}), h.name
        projects = {c.project for c in h.consumers}
        if h.allowed:
            assert projects <= set(h.allowed), h.name
        elif h.hardware.hana:
            assert projects <= set(fleet.hana_projects), h.name
    assert any(c.flavor.pinned for h in hosts for c in h.consumers)
    # A live migration stays among hosts that may take the instance.
    places: dict[str, set[tuple[str, tuple[bool, bool, tuple[str, ...]]]]] = {}
    for h in hosts:
        for c in h.consumers:
            places.setdefault(c.uuid, set()).add((h.name, h.pool))
    migrating = [on for on in places.values() if len(on) > 1]
    assert len(migrating) >= 10
    assert all(len({pool for _, pool in on}) == 1 for on in migrating)
