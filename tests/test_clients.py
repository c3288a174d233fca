"""The real clients against the real server: Apollo Client 4, urql and graphql-ws in
node, gql in Python.

Each node client is set up as a dashboard would be: automatic persisted queries with
hash-only GETs, and a fetch that revalidates a GET with the ETag it kept (neither
library keeps ETags; a browser's HTTP cache does). tests/clients/clients.mjs
logs every exchange; this test judges the log. tests/clients/live.mjs speaks
graphql-transport-ws with graphql-ws's own client (a query, persisted queries by
hash alone, a subscription to a change made here) and Apollo over it. gql asks the
same questions over HTTP and both WebSocket protocols. scripts/test installs the
pinned packages (tests/clients/package-lock.json).
"""

from __future__ import annotations

import asyncio
import copy
import json
import shutil
from pathlib import Path
from typing import Any

import graphql
import httpx
import pytest
import yaml
from gql import Client, GraphQLRequest
from gql.transport.async_transport import AsyncTransport
from gql.transport.exceptions import TransportQueryError
from gql.transport.httpx import HTTPXAsyncTransport
from gql.transport.websockets import WebsocketsTransport
from prometheus_client.parser import text_string_to_metric_families
from websockets.typing import Subprotocol

from gateway.domain.flavors import load_catalog
from gateway.http.cache import BoundedMemoryCache, ResponseCache
from gateway.http.persisted import PersistedQueries
from gateway.sources.demo.source import generate
from tests.fleet import objects as fleet_objects
from tests.support import listening, run_server
from tests.test_transports import DOCUMENTS, Answer, over_post

ROOT = Path(__file__).resolve().parents[1]
CLIENTS = ROOT / "tests" / "clients"
README = (ROOT / "README.md").read_text()
HOSTS = 200
COUNT = "{ fleetCapacity { hypervisorCount } }"
ZONES = "{ fleetCapacity(groupBy: ZONE) { key hypervisorCount } }"


def _node() -> str:
    node = shutil.which("node")
    if node is None or not (CLIENTS / "node_modules" / "@apollo" / "client").is_dir():
        pytest.fail("node and tests/clients/node_modules are needed: run scripts/test")
    return node


async def _run_clients(address: str, script: str = "clients.mjs") -> dict[str, Any]:
    scheme = "ws" if script == "live.mjs" else "http"
    process = await asyncio.create_subprocess_exec(
        _node(),
        str(CLIENTS / script),
        f"{scheme}://{address}/graphql",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), timeout=120)
    finally:
        if process.returncode is None:  # timed out, or the test failed meanwhile
            process.kill()
            await process.wait()
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


def _codes(answer: dict[str, Any]) -> list[str]:
    return [e["extensions"]["code"] for e in answer.get("errors", [])]


async def test_graphql_ws_queries_persists_and_hears_a_change_and_apollo_rides_it() -> None:
    fleet = generate(HOSTS)
    persisted = PersistedQueries()
    async with run_server(fleet, persisted=persisted) as (address, store):
        running = asyncio.create_task(_run_clients(address, "live.mjs"))
        try:
            # The hypervisorChanged subscription, the script's last (node starts in seconds).
            await listening(address, within=60)
            changed = copy.deepcopy(fleet[7])
            changed["metadata"]["resourceVersion"] = "2"
            changed["metadata"]["labels"]["changed"] = "yes"
            store.upsert(changed)
        finally:
            report = await running
        async with httpx.AsyncClient(base_url=f"http://{address}") as client:
            over_http = (await client.post("/graphql", json={"query": COUNT})).json()
            zones = (await client.post("/graphql", json={"query": ZONES})).json()
    assert report["query"] == over_http
    missed, registered, found = report["persisted"]
    assert _codes(missed) == ["PERSISTED_QUERY_NOT_FOUND"]
    assert registered == found == over_http
    missed, registered, found = report["subscription"]
    assert _codes(missed) == ["PERSISTED_QUERY_NOT_FOUND"]
    totals = zones["data"]["fleetCapacity"]
    assert registered["data"]["fleetCapacityChanged"] == found["data"]["fleetCapacityChanged"]
    assert found["data"]["fleetCapacityChanged"] == totals
    assert report["apollo"] == totals
    name = changed["metadata"]["name"]
    assert report["changed"] == {
        "data": {"hypervisorChanged": {"type": "MODIFIED", "hypervisor": {"name": name}}}
    }
    # Apollo sends the query with its hash over WebSocket: registered, never missed.
    assert (persisted.stats.registered, persisted.stats.misses) == (3, 2)


def _gql_transport(name: str, address: str) -> AsyncTransport:
    if name == "http":
        return HTTPXAsyncTransport(url=f"http://{address}/graphql", timeout=30)
    return WebsocketsTransport(url=f"ws://{address}/graphql", subprotocols=[Subprotocol(name)])


async def _gql_answer(session: Any, document: str, variables: dict[str, Any]) -> Answer:
    """gql's answer: its data, or the data and errors it raised with."""
    try:
        data = await session.execute(GraphQLRequest(document, variable_values=variables))
    except TransportQueryError as error:
        return {"data": error.data, "errors": error.errors}
    return {"data": data, "errors": None}


async def _post_answer(address: str, document: str, variables: dict[str, Any]) -> Answer:
    """The answer to a POST of ``document`` as gql sends it (printed), in gql's shape."""
    printed = graphql.print_ast(graphql.parse(document))
    answer = await over_post(address, printed, variables)
    return {"data": answer.get("data"), "errors": answer.get("errors")}


#: The totals' selection, asked once (fleetCapacity) and subscribed to (fleetCapacityChanged).
ZONE_FREE = "(groupBy: ZONE) { key resources { name free } }"


@pytest.mark.parametrize("transport", ["http", "graphql-transport-ws", "graphql-ws"])
async def test_gql_gets_the_answers_of_every_other_transport(transport: str) -> None:
    """gql over HTTP and both WebSocket protocols; the suite of tests/test_transports.py."""
    async with run_server(fleet_objects(), catalog=load_catalog(None)) as (address, _):
        expected = [await _post_answer(address, d, v) for _, d, v, _ in DOCUMENTS]
        totals = await over_post(address, f"{{ fleetCapacity{ZONE_FREE} }}", {})
        async with Client(transport=_gql_transport(transport, address)) as session:
            answers = [await _gql_answer(session, d, v) for _, d, v, _ in DOCUMENTS]
            events = []
            if transport != "http":
                changes = GraphQLRequest(f"subscription {{ fleetCapacityChanged{ZONE_FREE} }}")
                async for event in session.subscribe(changes):
                    events.append(event)
                    break
    if transport == "graphql-ws":  # the legacy protocol's error message carries the first
        expected = [{**e, "errors": e["errors"][:1]} if e["errors"] else e for e in expected]
    assert answers == expected
    if transport != "http":
        assert events == [{"fleetCapacityChanged": totals["data"]["fleetCapacity"]}]


def _readme_block(after: str, fence: str, end: str = "```") -> str:
    """The README's first block opened by ``fence`` after the text ``after``."""
    start = README.index(fence, README.index(after)) + len(fence)
    return README[start : README.index(end, start)]


async def _run(cwd: Path, *command: str) -> None:
    process = await asyncio.create_subprocess_exec(
        *command, cwd=cwd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    try:
        out, _ = await asyncio.wait_for(process.communicate(), timeout=120)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == 0, f"{command[0]}: {out.decode()}"


async def test_the_readme_codegen_config_generates_types_that_compile_strictly(
    tmp_path: Path,
) -> None:
    """graphql-codegen with the README's codegen.yml, on schema.graphql and the README's
    typed query, then tsc --strict over what it generated: an unmapped scalar, a
    config the preset refuses or types that do not compile fail here."""
    _node()
    config = _readme_block("with the custom scalars mapped (`codegen.yml`)", "```yaml\n")
    query = _readme_block("### Python (httpx)", 'FITS = """\n', '"""')
    assert yaml.safe_load(config)["schema"].startswith("schema.graphql")
    (tmp_path / "codegen.yml").write_text(config)
    shutil.copy(ROOT / "schema.graphql", tmp_path / "schema.graphql")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "fits.graphql").write_text(query)
    (tmp_path / "node_modules").symlink_to(CLIENTS / "node_modules")
    tools = CLIENTS / "node_modules" / ".bin"
    await _run(tmp_path, str(tools / "graphql-codegen"), "--config", "codegen.yml")
    generated = sorted((tmp_path / "src" / "gql").glob("*.ts"))
    typed = (tmp_path / "src" / "gql" / "graphql.ts").read_text()
    assert "FitsQuery" in typed and "FitsQueryVariables" in typed
    await _run(tmp_path, str(tools / "tsc"), "--noEmit", "--strict", *map(str, generated))
