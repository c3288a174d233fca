"""A resource no host reports is answered, with a warning in the response's extensions."""

from __future__ import annotations

import pytest

from gateway.domain import fleet as domain_fleet
from tests import fleet
from tests.support import serve

QUERIES = [
    '{ hypervisors(filter: {canFit: [{resource: "cpuz", amount: "1"}]}) { totalCount } }',
    '{ hypervisors(orderBy: {field: FREE, resource: "cpuz"}) { totalCount } }',
    '{ fleetCapacity(filter: {canFit: [{resource: "cpuz", amount: "1"}]}) { key } }',
    '{ slots(request: [{resource: "cpuz", amount: "1"}]) { slots } }',
]


@pytest.mark.parametrize("query", QUERIES)
async def test_an_unknown_resource_is_warned_of(query: str) -> None:
    async with serve(fleet.objects()) as (client, _):
        first = (await client.post("/graphql", json={"query": query})).json()
        again = (await client.post("/graphql", json={"query": query})).json()  # cached
    assert "errors" not in first
    [warning] = first["extensions"]["warnings"]
    assert warning["code"] == "UNKNOWN_RESOURCE"
    assert warning["message"].startswith("no hypervisor reports a resource named 'cpuz'")
    assert "cpu, memory" in warning["message"]
    assert again == first


async def test_known_resources_and_no_resources_warn_of_nothing() -> None:
    known = QUERIES[0].replace("cpuz", "cpu") + " "
    async with serve(fleet.objects()) as (client, _):
        for query in (known, "{ hypervisors { totalCount } }"):
            answer = (await client.post("/graphql", json={"query": query})).json()
            assert "extensions" not in answer


async def test_checking_the_names_does_not_count_the_fleets_totals() -> None:
    """A fit or an order names resources: which ones the fleet reports is a count of
    names per host, kept per change; the fleet's totals are a row of sums per resource
    (169 against 31 ms at 20,000 hosts), to count and carry only for who asks them."""
    async with serve(fleet.objects()) as (client, store):
        for query in QUERIES[:2]:
            await client.post("/graphql", json={"query": query})
        snapshot = store.snapshot
        assert store.views.keeps(snapshot, domain_fleet.resource_tally)
        assert not store.views.keeps(snapshot, domain_fleet.tally(domain_fleet.Grouping.NONE))
