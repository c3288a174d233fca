"""The gateway (and the bare Starlette app) as separate processes, started by their CLIs."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from harness.controlplane import ROOT

__all__ = ["MemorySampler", "Server", "memory_kib", "stop_on_terminate"]


def stop_on_terminate() -> None:
    """Let SIGTERM end this run as Ctrl-C does, through every ``finally``: the servers
    a benchmark started (the gateway, kube-apiserver, etcd) are then stopped with it,
    not left running for the next run to collide with."""
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


class Server:
    """A server process on loopback; ``started`` is taken just before it is spawned.

    ``python`` runs it: this interpreter unless the server lives in a virtualenv of
    its own (OpenStack Placement, :mod:`harness.placement`).
    """

    def __init__(
        self, args: list[str], port: int, log: Path, python: str | Path = sys.executable
    ) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self._log = log.open("ab")
        self.started = time.perf_counter()
        self.process = subprocess.Popen(
            [python, *args], cwd=ROOT, stdout=self._log, stderr=self._log
        )

    @classmethod
    def gateway(cls, port: int, log: Path, *options: str) -> Server:
        """``python -m gateway serve`` (the real CLI) with ``options``."""
        args = ["-m", "gateway", "serve", "--port", str(port), "--auth", "none"]
        return cls([*args, "--log-level", "warning", *options], port, log)

    @classmethod
    def bare(cls, port: int, log: Path) -> Server:
        return cls(["-m", "bench.bare_app", "--port", str(port)], port, log)

    @property
    def pid(self) -> int:
        return self.process.pid

    def wait_ready(self, path: str = "/readyz", timeout: float = 600) -> float:
        """Poll ``path`` until it answers 200; returns seconds since the process was spawned.

        Every 20 ms: the figure is off by at most that, and the polls take little
        from the process measured (each /readyz cost the gateway ~180 us of CPU and
        the client ~0.5 ms more on the same two cores; every 5 ms that was ~3% of
        the loading gateway's CPU and ~7% of a core).
        """
        deadline = time.perf_counter() + timeout
        with httpx.Client(base_url=self.url, timeout=5) as http:
            while time.perf_counter() < deadline:
                if self.process.poll() is not None:
                    raise RuntimeError(f"server exited with {self.process.returncode}")
                try:
                    if http.get(path).status_code == 200:
                        return time.perf_counter() - self.started
                except httpx.HTTPError:
                    pass
                time.sleep(0.02)
        raise RuntimeError(f"{self.url}{path} not ready after {timeout}s")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


def memory_kib(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (peak) of a process, in KiB, from /proc."""
    figures = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            figures[key] = int(value.split()[0])
    return figures


class MemorySampler:
    """Samples a process's VmRSS every ``interval`` seconds in a thread; ``peak`` is the max."""

    def __init__(self, pid: int, interval: float = 0.01) -> None:
        self.pid = pid
        self.interval = interval
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, memory_kib(self.pid)["VmRSS"])
            self._stop.wait(self.interval)
