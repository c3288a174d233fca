"""The README's GraphQL examples work as written on ``serve --demo`` (the defaults):
each answers without an error, and the slot examples say what the README says."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway.domain.flavors import load_catalog
from gateway.sources.demo.source import DemoSource
from tests.support import eventually, serve

ROOT = Path(__file__).resolve().parents[1]
TEXT = (ROOT / "README.md").read_text()
EXAMPLES = [
    block
    for block in re.findall(r"```graphql\n(.*?)```", TEXT, re.DOTALL)
    if not block.lstrip().startswith("subscription")
]


@pytest.fixture
async def demo() -> AsyncIterator[httpx.AsyncClient]:
    """What serve --demo serves: the demo source (its fleet and evictions) and catalog."""
    async with serve(DemoSource(), catalog=load_catalog(None)) as (client, store):
        await eventually(lambda: store.ready)
        yield client


async def answer(client: httpx.AsyncClient, document: str) -> dict[str, Any]:
    response = await client.post("/graphql", json={"query": document})
    body = response.json()
    assert response.status_code == 200 and "errors" not in body, body
    data: dict[str, Any] = body["data"]
    return data


def test_the_examples_are_found() -> None:
    assert len(EXAMPLES) >= 11


@pytest.mark.parametrize("document", EXAMPLES, ids=lambda d: " ".join(d.split())[:60])
async def test_every_example_answers_on_the_demo(demo: httpx.AsyncClient, document: str) -> None:
    await answer(demo, document)


async def test_one_host_per_reason(demo: httpx.AsyncClient) -> None:
    (document,) = [e for e in EXAMPLES if "notReady:" in e]
    data = await answer(demo, document)
    reasons = {alias: found["eligibility"].get("reasons") for alias, found in data.items()}
    assert reasons == {
        "notReady": ["NOT_READY", "DISABLED"],
        "disabled": ["DISABLED"],
        "restricted": ["PROJECT_RESTRICTED"],
        "admitted": None,
        "missingTrait": ["MISSING_TRAIT"],
        "forbiddenTrait": ["FORBIDDEN_TRAIT"],
        "isolated": ["ISOLATED_AGGREGATE"],
        "mismatch": ["AGGREGATE_MISMATCH"],
        "pinned": None,
    }
    assert data["admitted"]["eligibility"]["eligible"] is True
    assert data["pinned"]["eligibility"]["eligible"] is True
    assert data["pinned"]["eligibility"]["slots"] > 0


async def test_hana_flavors_boot_only_on_hana_hosts(demo: httpx.AsyncClient) -> None:
    (document,) = [e for e in EXAMPLES if 'fitsFlavor: "hana_c64_m1024"' in e]
    nodes = (await answer(demo, document))["hypervisors"]["nodes"]
    assert nodes and all(n["eligibility"]["slots"] >= 1 for n in nodes)
    hana = await answer(
        demo, '{ hypervisors(filter: {trait: "CUSTOM_HANA_EXCLUSIVE_HOST"}) { nodes { name } } }'
    )
    assert {n["name"] for n in nodes} <= {n["name"] for n in hana["hypervisors"]["nodes"]}
