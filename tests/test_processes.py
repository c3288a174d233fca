"""The benchmarks' servers as processes: a run ended by SIGTERM stops what it started."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from harness.controlplane import ROOT, free_port

_RUN = """
import signal, sys
from pathlib import Path
from harness.processes import Server, stop_on_terminate

stop_on_terminate()
server = Server.bare({port}, Path({log!r}))
try:
    server.wait_ready()
    print(server.pid, flush=True)
    signal.pause()
finally:
    server.stop()
"""


def test_a_run_ended_by_sigterm_stops_the_servers_it_started(tmp_path: Path) -> None:
    run = subprocess.Popen(
        [sys.executable, "-c", _RUN.format(port=free_port(), log=str(tmp_path / "bare.log"))],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert run.stdout is not None
    started = int(run.stdout.readline())
    os.kill(started, 0)  # running
    run.send_signal(signal.SIGTERM)
    assert run.wait(timeout=60) == 128 + signal.SIGTERM
    assert not Path(f"/proc/{started}").exists()  # stopped and reaped, not orphaned
