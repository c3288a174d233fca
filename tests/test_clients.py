"""Apollo Client 4 and urql, the real libraries in node, against the real server.

Each client is set up as a dashboard would be: automatic persisted queries with
hash-only GETs, and a fetch that revalidates a GET with the ETag it kept (neither
library keeps ETags; a browser's HTTP cache does). tests/clients/clients.mjs
logs every exchange; this test judges the log. scripts/test installs the pinned
packages (tests/clients/package-lock.json).
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from gateway.http.cache import BoundedMemoryCache, ResponseCache
from gateway.sources.demo.source import generate
from tests.support import run_server

CLIENTS = Path(__file__).parent / "clients"
HOSTS = 200


def _node() -> str:
    node = shutil.which("node")
    if node is None or not (CLIENTS / "node_modules" / "@apollo" / "client").is_dir():
        pytest.fail("node and tests/clients/node_modules are needed: run scripts/test")
    return node


async def _run_clients(address: str) -> dict[str, Any]:
    process = await asyncio.create_subprocess_exec(
        _node(),
        str(CLIENTS / "clients.mjs"),
        f"http://{address}/graphql",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=120)
    assert process.returncode == 0, err.decode()
    report: dict[str, Any] = json.loads(out)
    return report


@pytest.mark.parametrize("cached", [True, False])
async def test_apollo_and_urql_register_persist_revalidate_and_decode(cached: bool) -> None:
    cache = ResponseCache(BoundedMemoryCache()) if cached else None
    async with run_server(generate(HOSTS), cache=cache) as (address, _):
        report = await _run_clients(address)
        async with httpx.AsyncClient() as client:
            scrape = (await client.get(f"http://{address}/metrics")).text
    assert report["apollo"] == report["urql"] == [HOSTS] * 3
    for name in ("apollo", "urql"):
        log = [r for r in report["requests"] if r["client"] == name]
        # Hash only, not found; the document with its hash (Apollo falls back to POST).
        assert log[0]["method"] == "GET" and not log[0]["sentQuery"]
        assert log[0]["code"] == "PERSISTED_QUERY_NOT_FOUND"
        assert log[1]["sentQuery"] and log[1]["code"] is None
        # Then by hash alone, over GET: answered, then revalidated with its ETag.
        fetched, revalidated = log[2], log[3]
        assert (fetched["method"], fetched["sentQuery"], fetched["status"]) == ("GET", False, 200)
        assert fetched["encoding"] == "gzip" and fetched["etag"]
        assert (revalidated["status"], revalidated["etag"]) == (304, fetched["etag"])
        assert len(log) == 4
    persisted = {
        sample.name: sample.value
        for family in text_string_to_metric_families(scrape)
        for sample in family.samples
        if sample.name.startswith("hypervisor_gateway_persisted_")
    }
    assert persisted["hypervisor_gateway_persisted_queries"] == 2
    assert persisted["hypervisor_gateway_persisted_query_misses_total"] == 2
