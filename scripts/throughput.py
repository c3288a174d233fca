"""Cached small-query throughput against a bare Starlette endpoint, without a cluster.

``python -m scripts.throughput [--size 200] [--seconds 5] [--rounds 3]``

The benchmark's throughput target (``python -m bench``, step 5) needs a control
plane; the figure it judges depends only on the path of a cached answer, which
the demo fleet exercises just as well. This starts the gateway on the demo fleet
with the benchmark's flags and ``bench/bare_app.py``, then alternates ``wrk``
runs against each: on a shared machine only a ratio taken within one round means
anything, so every round prints its own.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import tempfile
from pathlib import Path

import httpx

from harness.processes import Server
from harness.throughput import requests_per_second

SMALL_QUERY = "query Small($name: String!) { hypervisor(name: $name) { name zone } }"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m scripts.throughput", description=__doc__)
    parser.add_argument("--size", type=int, default=200, help="hosts in the demo fleet")
    parser.add_argument("--seconds", type=int, default=5, help="length of each wrk run")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", type=int, default=32)
    options = parser.parse_args()
    logs = Path(tempfile.mkdtemp(prefix="throughput-"))
    demo = ("--demo", "--demo-size", str(options.size))
    gateway = Server.gateway(_port(), logs / "gateway.log", *demo)
    bare = Server.bare(_port(), logs / "bare.log")
    try:
        gateway.wait_ready()
        bare.wait_ready()
        body = {"query": SMALL_QUERY, "variables": {"name": _first_host(gateway.url)}}
        ratios = []
        for _ in range(options.rounds):
            ours = requests_per_second(
                gateway.url + "/graphql", body, options.clients, options.seconds
            )
            theirs = requests_per_second(
                bare.url + "/graphql", body, options.clients, options.seconds
            )
            ratios.append(theirs / ours)
            print(f"gateway {ours:8,.0f} req/s   bare {theirs:8,.0f} req/s   1/{theirs / ours:.2f}")
        print(f"median ratio 1/{statistics.median(ratios):.2f} (logs in {logs})")
    finally:
        gateway.stop()
        bare.stop()


def _first_host(url: str) -> str:
    query = "{ hypervisors(first: 1) { nodes { name } } }"
    answer = httpx.post(url + "/graphql", json={"query": query}).json()
    name: str = answer["data"]["hypervisors"]["nodes"][0]["name"]
    return name


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


if __name__ == "__main__":
    main()
