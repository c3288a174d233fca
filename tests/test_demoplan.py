"""The demo fleet's plan: the same seed plans the same fleet, and the plan is a region's."""

from __future__ import annotations

import re

from gateway.demoplan import REGIONS, Fleet

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
