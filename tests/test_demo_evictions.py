"""The demo's evictions: one per host in maintenance, saying what the host still runs."""

from __future__ import annotations

from decimal import Decimal

from gateway.domain.evictions import EvictionState, parse_eviction
from gateway.domain.flavors import load_catalog
from gateway.domain.parse import parse_hypervisor
from gateway.sources.demo.evictions import evictions
from gateway.sources.demo.source import DemoSource, generate
from tests.support import eventually, query, serve


def test_every_host_in_maintenance_is_being_emptied() -> None:
    objects = generate()
    hosts = {h.name: h for h in map(parse_hypervisor, objects)}
    made = [parse_eviction(e) for e in evictions(objects)]
    assert sorted(e.hypervisor or "" for e in made) == sorted(
        name for name, h in hosts.items() if h.maintenance
    )
    for eviction in made:
        assert not eviction.warnings
        host = hosts[eviction.hypervisor or ""]
        running = [i.id for i in host.instances]
        assert list(eviction.outstanding_instances) == running
        if running:
            memory = host.allocation["memory"]
            assert eviction.outstanding_ram == memory - memory % 2**20
            assert eviction.state in (EvictionState.RUNNING, EvictionState.FAILED)
        else:
            assert (eviction.state, eviction.outstanding_ram) == (
                EvictionState.SUCCEEDED,
                Decimal(0),
            )
    # Running, failed and succeeded are all there to see on the default demo.
    assert {e.state for e in made} == {
        EvictionState.RUNNING,
        EvictionState.FAILED,
        EvictionState.SUCCEEDED,
    }


async def test_the_demo_serves_them() -> None:
    async with serve(DemoSource(), catalog=load_catalog(None)) as (client, store):
        await eventually(lambda: store.ready)
        data = await query(
            client,
            "{ syncStatus { evictionsAvailable } evictions { name state hypervisor { maintenance"
            " evictions { name } } } }",
        )
    assert data["syncStatus"]["evictionsAvailable"] is True
    assert len(data["evictions"]) == len(evictions(generate()))
    for eviction in data["evictions"]:
        assert eviction["hypervisor"]["maintenance"]
        assert eviction["hypervisor"]["evictions"] == [{"name": eviction["name"]}]
