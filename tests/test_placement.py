"""The Placement harness: a real Placement keeps what the client writes and answers at Nova's microversion."""

from __future__ import annotations

import uuid

import pytest

from harness.placement import Inventory, PlacementClient, PlacementError

INVENTORIES = {
    "VCPU": Inventory(16, reserved=2, allocation_ratio=1.5),
    "MEMORY_MB": Inventory(65536, reserved=4096),
}


async def _provider(placement: PlacementClient, name: str) -> str:
    provider = str(uuid.uuid4())
    await placement.create_provider(provider, f"{name}-{provider}")
    await placement.set_inventories(provider, INVENTORIES)
    return provider


async def test_a_provider_round_trips(placement: str) -> None:
    async with PlacementClient(placement) as client:
        provider = await _provider(client, "round-trip")
        await client.allocate(str(uuid.uuid4()), {provider: {"VCPU": 4}}, "p1", "u1")

        inventories = await client.inventories(provider)
        usages = await client.usages(provider)

    assert inventories == {
        "VCPU": Inventory(16, 2, 1.5, max_unit=16),
        "MEMORY_MB": Inventory(65536, 4096, 1.0, max_unit=65536),
    }
    assert inventories["VCPU"].capacity == 21  # floor((16 - 2) * 1.5)
    assert usages == {"VCPU": 4, "MEMORY_MB": 0}


async def test_an_allocation_beyond_capacity_is_refused(placement: str) -> None:
    async with PlacementClient(placement) as client:
        provider = await _provider(client, "full")
        with pytest.raises(PlacementError, match="409"):
            await client.allocate(str(uuid.uuid4()), {provider: {"VCPU": 22}}, "p1", "u1")


async def test_candidates_follow_traits_and_aggregates(placement: str) -> None:
    aggregate = str(uuid.uuid4())
    async with PlacementClient(placement) as client:
        tagged = await _provider(client, "tagged")
        await client.set_traits(tagged, ["CUSTOM_PEER_TEST", "HW_CPU_X86_AVX2"])
        plain = await _provider(client, "plain")
        await client.set_aggregates(plain, [aggregate])

        async def candidates(*query: tuple[str, str]) -> set[str]:
            found = await client.candidates([("resources", "VCPU:2,MEMORY_MB:1024"), *query])
            return found & {tagged, plain}

        assert await candidates() == {tagged, plain}
        assert await candidates(("required", "CUSTOM_PEER_TEST")) == {tagged}
        assert await candidates(("required", "!CUSTOM_PEER_TEST")) == {plain}
        assert await candidates(("root_required", "!HW_CPU_X86_AVX2")) == {plain}
        assert await candidates(("member_of", f"!in:{aggregate}")) == {tagged}
        # VCPU max_unit is the physical 16, whatever the ratio allows
        assert await client.candidates([("resources", "VCPU:17")]) & {tagged, plain} == set()
