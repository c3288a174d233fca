"""A churn run at one fleet size: the control plane, the fleet, the gateway, every phase."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from bench.churn.phase import Load, measure
from bench.churn.writers import targets
from bench.fleet import Api, load
from gateway.sources.demo.source import generate
from harness.controlplane import ControlPlane, free_port
from harness.processes import Server

__all__ = ["churn"]


def churn(
    size: int,
    rates: list[float],
    seconds: float,
    logs: Path,
    log: Any = print,
    readers: Load | None = None,
) -> dict[str, Any]:
    """Every phase at ``size`` hosts: one per write rate, in this order."""
    plane = ControlPlane()
    gateway: Server | None = None
    bare = Server.bare(free_port(), logs / f"churn-bare-{size}.log")
    try:
        bare.wait_ready()
        plane.start()
        objects = generate(size, seed=0, bookings_per_host=40)
        log(f"[churn {size}] loading")
        loaded = asyncio.run(load(plane, objects))
        hosts = targets(objects)  # all the phases need of the fleet:
        del objects  # at 20,000 hosts the objects are hundreds of MiB in this process
        log(f"[churn {size}] loaded in {loaded:.1f} s")
        args = ["--kubeconfig", str(plane.kubeconfig), "--max-page-size", str(max(size, 10_000))]
        gateway = Server.gateway(free_port(), logs / f"churn-{size}.log", *args)
        gateway.wait_ready()
        phases = []
        for rate in rates:
            log(f"[churn {size}] {rate:g} changes/s for {seconds:g} s")
            phase = measure(Api.of(plane), gateway, bare, hosts, rate, seconds, readers or Load())
            log(
                f"[churn {size}] achieved {phase['achieved']:.1f} changes/s"
                f" ({phase['writes_skipped']} writes skipped, {phase['write_failures']} failed),"
                f" {phase['probe_polls']:.0f} probe polls/s, {phase['errors']} query errors"
            )
            for kind, reasons in phase["error_reasons"].items():
                log(f"[churn {size}] {kind} errors, the last: {reasons}")
            for kind, ended in phase["subscriptions_ended"].items():
                log(f"[churn {size}] {len(ended)} {kind} subscriptions ended early: {ended[-1]}")
            phases.append(phase)
        return {"size": size, "load_seconds": loaded, "phases": phases}
    finally:
        if gateway is not None:
            gateway.stop()
        bare.stop()
        plane.stop()
