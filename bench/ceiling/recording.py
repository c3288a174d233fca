"""The stream to replay, recorded from the real API server under the churn writers.

The recorder is a watch like the gateway's, in a process of its own; the
writers are bench.churn's. Meanwhile the API server's CPU is read from /proc:
what one write costs it, the yardstick for what one change costs the gateway.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from bench.churn.phase import Load, add_writers, cpu_seconds
from bench.churn.writers import Target
from bench.fleet import Api, async_client
from harness.controlplane import ControlPlane
from harness.crowd import Crowd, Gate
from harness.replay_recording import record_stream

__all__ = ["record"]

#: Seconds the recorder goes on after the writers: their last events are on the way.
AFTER = 2.0


async def _recorder(gate: Gate, api: Api, directory: str) -> dict[str, int]:
    async def ready() -> float:
        return (await gate.ready()).end

    async with async_client(api, 1) as http:
        return await record_stream(http, Path(directory), ready)


def record(
    plane: ControlPlane,
    hosts: list[Target],
    directory: Path,
    rate: float,
    seconds: float,
    load: Load,
) -> dict[str, Any]:
    """Record ``seconds`` of writes at ``rate`` a second into ``directory``; the figures."""
    directory.mkdir(parents=True, exist_ok=True)
    api = Api.of(plane)
    pids = plane.pids
    with Crowd() as crowd:
        crowd.add("record", _recorder, api, str(directory))
        add_writers(crowd, api, hosts, rate, load)
        window = crowd.open(seconds, AFTER)
        time.sleep(max(0.0, window.start - time.monotonic()))
        before = {name: cpu_seconds(pid) for name, pid in pids.items()}
        time.sleep(max(0.0, window.end - time.monotonic()))
        cpu = {name: cpu_seconds(pid) - before[name] for name, pid in pids.items()}
        done = crowd.collect()
    writes = sum(len(done[f"writer-{n}"]["stamps"]) for n in range(load.writers))
    written = window.end - window.start  # the writers go on to the end
    return {
        "rate": rate,
        "seconds": written,
        "writes": writes,
        "achieved": writes / written,
        "lines": done["record"],
        "apiserver_cpu_per_write": cpu["kube-apiserver"] / writes if writes else None,
        "etcd_cpu_per_write": cpu["etcd"] / writes if writes else None,
    }
