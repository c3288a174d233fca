"""schemathesis fuzzes the real app over HTTP, with its default checks: 0 failures.

It runs its CLI (``st run``, as a user would) against uvicorn serving the demo
fleet and catalog, with a fixed seed and a bounded number of cases per root
field; tests/fuzz_hooks.py tells it about the custom scalars, the names the
fleet and the catalog have, and the two rules across arguments the types cannot
state. A positive case any error answers, or a negative one that is not refused,
fails the run.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from gateway.api.limits import Limits
from gateway.domain.flavors import load_catalog
from gateway.sources.demo.source import generate
from tests.objects import eviction
from tests.support import StaticSource, run_server

ROOT = Path(__file__).resolve().parents[1]
ST = Path(sys.executable).with_name("st")
SEED, EXAMPLES = 1, 30
#: The query cost allowed: a generated query nests links (a booking's hypervisor's
#: bookings' hypervisor...) deeper than any client, and a refusal with
#: QUERY_TOO_COSTLY (tests/test_cost.py checks it) would count as a failure. Raised,
#: every generated query runs, which is what fuzzing execution needs.
MAX_COST = 10**9


async def test_schemathesis_finds_nothing() -> None:
    limits = Limits(max_cost=MAX_COST)
    fleet = generate(200, 0)
    # Until the demo carries evictions: a few on its first hosts, in every state.
    hosts = [obj["metadata"]["name"] for obj in fleet[:3]]
    evictions = [
        eviction(f"evict-{host}", host, state=state)
        for host, state in zip(hosts, ("Running", "Failed", None), strict=True)
    ]
    source = StaticSource(fleet, evictions=evictions)
    async with run_server(source, catalog=load_catalog(None), limits=limits) as (address, _):
        process = await asyncio.create_subprocess_exec(
            str(ST),
            "run",
            f"http://{address}/graphql",
            f"--seed={SEED}",
            f"--max-examples={EXAMPLES}",
            "--phases=fuzzing",
            "--workers=2",
            "--generation-database=none",
            "--no-color",
            cwd=ROOT,
            env={**os.environ, "SCHEMATHESIS_HOOKS": "tests.fuzz_hooks"},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        output, _ = await asyncio.wait_for(process.communicate(), timeout=110)
    report = output.decode()
    assert process.returncode == 0, report
    assert "No issues found" in report, report
    assert "Tested: 13" in report, report  # every root query field, none skipped
