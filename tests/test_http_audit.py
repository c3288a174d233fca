"""The GraphQL-over-HTTP reference audit (npm graphql-http) against the real server.

Every audit, MUST, SHOULD and MAY alike, must pass: the suite grades a failed
SHOULD as ``warn`` and a failed MAY as ``notice``, and both count as failures
here. scripts/test installs the pinned package (tests/http_audit/package-lock.json).
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from tests import fleet
from tests.support import run_server

AUDIT = Path(__file__).parent / "http_audit"


def _node() -> str:
    node = shutil.which("node")
    if node is None or not (AUDIT / "node_modules" / "graphql-http").is_dir():
        pytest.fail("node and tests/http_audit/node_modules are needed: run scripts/test")
    return node


async def test_every_graphql_over_http_audit_passes() -> None:
    node = _node()
    async with run_server(fleet.objects()) as (address, _):
        process = await asyncio.create_subprocess_exec(
            node,
            str(AUDIT / "audit.mjs"),
            f"http://{address}/graphql",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(process.communicate(), timeout=120)
    assert process.returncode == 0, err.decode()
    results = json.loads(out)
    assert len(results) >= 61, f"the suite ran only {len(results)} audits"
    failed = [
        f"{r['id']} {r['name']}: {r['status']} ({r['reason']})"
        for r in results
        if r["status"] != "ok"
    ]
    assert not failed, "\n".join(failed)
