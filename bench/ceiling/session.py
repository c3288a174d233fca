"""A ceiling run at one fleet size: load, record from the real API server, then replay.

The API server is stopped once the stream is recorded: from then on the two
cores are the gateway's, its readers' and the replay server's, as a replica's
share of a large region would be.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from bench.ceiling.phase import kept_up, replayed
from bench.ceiling.recording import record
from bench.churn.phase import Load
from bench.churn.writers import targets
from bench.fleet import loaded_once
from gateway.sources.demo.source import generate
from harness.controlplane import ControlPlane, free_port
from harness.processes import Server
from harness.replay_recording import Recording

__all__ = ["Options", "ceiling"]

#: The recorder's figures, beside the recording.
RECORDED = "recorded.json"


@dataclasses.dataclass(frozen=True)
class Options:
    """How a run records and steps its rates (see ``python -m bench.ceiling -h``)."""

    #: Writes a second asked of the real API server while recording, and for how long.
    record_rate: float = 40
    record_seconds: float = 30
    #: The rate past which the ceiling is not looked for.
    max_rate: float = 16_000
    #: A directory to keep the loaded cluster in between runs (a temporary one if None).
    cluster: Path | None = None
    #: Replay the recording an earlier run left in the logs, with its figures.
    reuse: bool = False
    #: Seconds of the readers alone, before the first rate (0: none).
    quiet: float = 20


def ceiling(
    size: int,
    rates: list[float],
    seconds: float,
    logs: Path,
    log: Any = print,
    readers: Load | None = None,
    options: Options | None = None,
) -> dict[str, Any]:
    """The phases at ``rates``, then doubling the last one while the gateway keeps up."""
    readers, options = readers or Load(), options or Options()
    directory = logs / f"recording-{size}"
    figures = directory / RECORDED
    if options.reuse and figures.exists():
        recorded, loaded = json.loads(figures.read_text()), None
        log(f"[ceiling {size}] replaying the recording of an earlier run")
    else:
        recorded, loaded = _record(size, directory, log, readers, options)
        figures.write_text(json.dumps(recorded))
    phases, ready = _replay(size, directory, rates, seconds, logs, log, readers, options)
    kept = [p["rate"] for p in phases if p["kept_up"]]
    return {
        "size": size,
        "load_seconds": loaded,
        "recorded": recorded,
        "ready_seconds": ready,
        "phases": phases,
        "ceiling": max(kept) if kept else None,
        "ceiling_bounded": not phases[-1]["kept_up"],
    }


def _replay(
    size: int,
    directory: Path,
    rates: list[float],
    seconds: float,
    logs: Path,
    log: Any,
    readers: Load,
    options: Options,
) -> tuple[list[dict[str, Any]], float]:
    """The replay server, the floor and a gateway on the replay; every phase, and the
    seconds the gateway took to be ready."""
    names = [line.name for line in Recording.changes_in(directory)]
    replay_port = free_port()
    replay = Server(
        ["-m", "harness.replay", str(directory), "--port", str(replay_port)],
        replay_port,
        logs / f"replay-{size}.log",
    )
    bare = Server.bare(free_port(), logs / f"ceiling-bare-{size}.log")
    gateway: Server | None = None
    try:
        replay.wait_ready("/healthz")
        bare.wait_ready()
        kubeconfig = _kubeconfig(logs / f"replay-{size}.kubeconfig", replay.url)
        args = ["--kubeconfig", str(kubeconfig), "--max-page-size", str(max(size, 10_000))]
        gateway = Server.gateway(free_port(), logs / f"ceiling-{size}.log", *args)
        ready = gateway.wait_ready()
        log(f"[ceiling {size}] the gateway was ready on the replay in {ready:.1f} s")
        phases: list[dict[str, Any]] = []
        if options.quiet:
            # The readers alone: what they cost without a change (the part of the CPU
            # no change rate divides), and every fleet-wide view made before the rates.
            log(f"[ceiling {size}] the readers alone for {options.quiet:g} s")
            quiet = replayed(replay, gateway, bare, names, 0, options.quiet, readers)
            phases.append(quiet | {"kept_up": None})
        for rate in _rates(rates, options.max_rate, phases):
            log(f"[ceiling {size}] {rate:g} changes/s for {seconds:g} s")
            phase = replayed(replay, gateway, bare, names, rate, seconds, readers)
            phase["kept_up"] = kept_up(phase)
            log(f"[ceiling {size}] sent {phase['achieved']:.1f}/s, kept up: {phase['kept_up']}")
            phases.append(phase)
        return phases, ready
    finally:
        for server in (gateway, bare, replay):
            if server is not None:
                server.stop()


def _rates(asked: list[float], most: float, done: list[dict[str, Any]]) -> Iterator[float]:
    """The asked rates, then double the highest while the last phase kept up."""
    yield from asked
    rate = max(asked)
    while done and done[-1]["kept_up"] and rate * 2 <= most:
        rate *= 2
        yield rate


def _record(
    size: int, directory: Path, log: Any, readers: Load, options: Options
) -> tuple[dict[str, Any], float | None]:
    """The fleet in a real API server (loaded, or kept from an earlier run), its stream
    recorded under the writers; the recording's figures and the loading's seconds."""
    plane = ControlPlane(workdir=options.cluster)
    try:
        plane.start()
        objects = generate(size, seed=0, bookings_per_host=40)
        log(f"[ceiling {size}] loading, unless the cluster holds the fleet already")
        loaded = loaded_once(plane, objects, 40)
        if loaded is not None:
            log(f"[ceiling {size}] loaded in {loaded:.1f} s")
        hosts = targets(objects)
        del objects
        log(f"[ceiling {size}] recording {options.record_seconds:g} s of writes")
        recorded = record(
            plane, hosts, directory, options.record_rate, options.record_seconds, readers
        )
        log(
            f"[ceiling {size}] recorded {recorded['writes']} writes ({recorded['achieved']:.1f}/s),"
            f" {recorded['apiserver_cpu_per_write'] * 1e3:.1f} ms of API server CPU each"
        )
        return recorded, loaded
    finally:
        plane.stop()


def _kubeconfig(path: Path, server: str) -> Path:
    """A kubeconfig for the replay server: plain HTTP on loopback, any token."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "replay", "cluster": {"server": server}}],
        "users": [{"name": "replay", "user": {"token": "replay"}}],
        "contexts": [{"name": "replay", "context": {"cluster": "replay", "user": "replay"}}],
        "current-context": "replay",
    }
    path.write_text(yaml.safe_dump(config))
    return path
