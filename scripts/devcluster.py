"""A local Kubernetes API (etcd + kube-apiserver) with the Hypervisor CRD, for development.

    scripts/dev-cluster up          # build once, start, apply the CRD, print the KUBECONFIG
    eval "$(scripts/dev-cluster env)"
    scripts/dev-cluster load-demo --size 200 --seed 1
    hypervisor-gateway serve        # uses $KUBECONFIG
    scripts/dev-cluster down        # stop both processes and delete all data

Only the export line goes to stdout, so `eval "$(scripts/dev-cluster up)"` works.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import ssl
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx
import yaml

from harness.controlplane import (
    HYPERVISORS,
    PROJECT_CRD,
    ControlPlane,
    ControlPlaneError,
)

CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "hypervisor-gateway"
DIR = Path(os.environ.get("HGW_DEV_CLUSTER_DIR", CACHE / "dev-cluster"))
STATE = DIR / "state.json"
KUBECONFIG = DIR / "kubeconfig"


def up(args: argparse.Namespace) -> int:
    if _running():
        print("dev-cluster: already running", file=sys.stderr)
        return env(args)
    down(args)
    DIR.mkdir(parents=True)
    plane = ControlPlane(workdir=DIR, crd=Path(args.crd))
    print(
        "dev-cluster: starting etcd and kube-apiserver (the first build takes minutes)",
        file=sys.stderr,
    )
    try:
        plane.start()
    except ControlPlaneError as error:
        plane.stop()
        print(f"dev-cluster: {error}", file=sys.stderr)
        return 1
    STATE.write_text(json.dumps({"pids": plane.pids, "server": plane.server}))
    print(f"dev-cluster: API server at {plane.server}, CRD from {args.crd}", file=sys.stderr)
    others = ", ".join(sorted(set(plane.tokens) - {"admin"}))
    print(f"dev-cluster: users besides admin, with no RBAC grants: {others}", file=sys.stderr)
    return env(args)


def down(_: argparse.Namespace) -> int:
    for pid in _state().get("pids", {}).values():
        _stop(pid)
    shutil.rmtree(DIR, ignore_errors=True)
    return 0


def env(_: argparse.Namespace) -> int:
    if not _running():
        print("dev-cluster: not running; start it with `scripts/dev-cluster up`", file=sys.stderr)
        return 1
    print(f"export KUBECONFIG={KUBECONFIG}")
    return 0


def load_demo(args: argparse.Namespace) -> int:
    """Create or update the demo fleet: spec through the object, status through /status."""
    if not _running():
        print("dev-cluster: not running; start it with `scripts/dev-cluster up`", file=sys.stderr)
        return 1
    from gateway.sources.demo.source import generate

    objects = generate(args.size, seed=args.seed)
    with _client() as http, ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda obj: _apply(http, obj), objects))
    print(f"dev-cluster: applied {len(objects)} Hypervisors", file=sys.stderr)
    return 0


def _apply(http: httpx.Client, obj: dict[str, Any]) -> None:
    # Server-side apply creates or updates, so loading twice is harmless.
    metadata = {k: v for k, v in obj["metadata"].items() if k in ("name", "labels", "annotations")}
    head = {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "metadata": metadata}
    path = f"{HYPERVISORS}/{metadata['name']}"
    _server_side_apply(http, path, {**head, "spec": obj.get("spec", {})})
    if obj.get("status") is not None:
        _server_side_apply(http, f"{path}/status", {**head, "status": obj["status"]})


def _server_side_apply(http: httpx.Client, path: str, body: dict[str, Any]) -> None:
    response = http.patch(
        path,
        content=json.dumps(body),
        params={"fieldManager": "dev-cluster", "force": "true"},
        headers={"Content-Type": "application/apply-patch+yaml"},
    )
    if response.is_error:
        raise SystemExit(f"dev-cluster: {path}: HTTP {response.status_code}: {response.text}")


def _client() -> httpx.Client:
    config = yaml.safe_load(KUBECONFIG.read_text())
    cluster = config["clusters"][0]["cluster"]
    token = config["users"][0]["user"]["token"]
    return httpx.Client(
        base_url=cluster["server"],
        verify=ssl.create_default_context(cafile=cluster["certificate-authority"]),
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )


def _state() -> dict[str, Any]:
    try:
        state: dict[str, Any] = json.loads(STATE.read_text())
        return state
    except (OSError, ValueError):
        return {}


def _running() -> bool:
    pids = _state().get("pids", {})
    return bool(pids) and all(_alive(pid) for pid in pids.values())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    # After a reboot the number may belong to some other program.
    cmdline = Path(f"/proc/{pid}/cmdline")
    return not cmdline.exists() or any(
        name in cmdline.read_bytes() for name in (b"etcd", b"kube-apiserver")
    )


def _stop(pid: int) -> None:
    if not _alive(pid):
        return
    os.kill(pid, signal.SIGTERM)
    for _ in range(300):
        if not _alive(pid):
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="dev-cluster",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)
    start = commands.add_parser("up", help="start the control plane")
    start.add_argument("--crd", default=str(PROJECT_CRD), help="CRD manifest to apply")
    start.set_defaults(run=up)
    commands.add_parser("down", help="stop it and delete its data").set_defaults(run=down)
    commands.add_parser("env", help="print `export KUBECONFIG=...`").set_defaults(run=env)
    demo = commands.add_parser("load-demo", help="create the demo fleet in the cluster")
    demo.add_argument("--size", type=int, default=100)
    demo.add_argument("--seed", type=int, default=0)
    demo.set_defaults(run=load_demo)
    args = parser.parse_args()
    result: int = args.run(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
