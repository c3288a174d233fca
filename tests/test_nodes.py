"""Global ids: one per object, unique across types, resolved back by Query.node."""

from __future__ import annotations

import base64

import pytest

from gateway.api.nodes import global_id, parse_global_id
from gateway.domain.flavors import load_catalog
from tests import fleet
from tests.support import serve

IDS = "{ hypervisors { nodes { id name } } consumers { nodes { id uuid } } flavors { id name } }"
NODE = (
    "query($id: ID!) { node(id: $id) { __typename id ... on Hypervisor { key: name } "
    "... on Consumer { key: uuid } ... on Flavor { key: name } } }"
)


def test_a_global_id_is_base64_of_type_and_key() -> None:
    made = global_id("Hypervisor", "node-a")
    assert base64.b64decode(made) == b"Hypervisor:node-a"
    assert parse_global_id(made) == ("Hypervisor", "node-a")


@pytest.mark.parametrize(
    "value",
    ["", "not base64!", global_id("Booking", "x"), global_id("Hypervisor", ""), "SHlwZXJ2aXNvcg=="],
)
def test_what_this_server_did_not_make_names_nothing(value: str) -> None:
    assert parse_global_id(value) is None


async def test_every_node_is_found_by_its_id() -> None:
    async with serve(fleet.objects(), catalog=load_catalog(None)) as (client, _):
        data = (await client.post("/graphql", json={"query": IDS})).json()["data"]
        listed = [
            *(("Hypervisor", n["id"], n["name"]) for n in data["hypervisors"]["nodes"]),
            *(("Consumer", n["id"], n["uuid"]) for n in data["consumers"]["nodes"]),
            *(("Flavor", n["id"], n["name"]) for n in data["flavors"]),
        ]
        found = []
        for _, id_, _ in listed:
            answer = await client.post("/graphql", json={"query": NODE, "variables": {"id": id_}})
            node = answer.json()["data"]["node"]
            found.append((node["__typename"], node["id"], node["key"]))
        again = (await client.post("/graphql", json={"query": IDS})).json()["data"]
    assert found == listed
    assert len({id_ for _, id_, _ in listed}) == len(listed)  # unique across types
    assert again == data  # stable


@pytest.mark.parametrize("value", ["bad", global_id("Hypervisor", "no-such-host")])
async def test_an_id_of_nothing_is_null(value: str) -> None:
    async with serve(fleet.objects()) as (client, _):
        answer = await client.post("/graphql", json={"query": NODE, "variables": {"id": value}})
    assert answer.json() == {"data": {"node": None}}
