"""A real Kubernetes control plane (etcd + kube-apiserver) on loopback.

Used by ``scripts/dev-cluster`` for local development and by the test suite's
session fixture. Nothing is faked: the binaries are the upstream ones (built by
``scripts/build-control-plane``), authentication is real (a static token file and
a private CA that can sign client certificates), authorization is RBAC, and the
project's CRD is applied and waited for until the API server serves it (others,
such as the operator's Eviction CRD, can be installed and removed meanwhile).

Everything lives in one directory (certificates, tokens, etcd data, logs,
kubeconfigs), so ``down`` is "stop two processes, remove one directory".
"""

from __future__ import annotations

import base64
import json
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx
import yaml

__all__ = [
    "EVICTIONS",
    "HYPERVISORS",
    "ROOT",
    "ControlPlane",
    "ControlPlaneError",
    "build_binaries",
    "free_port",
]

ROOT = Path(__file__).resolve().parent.parent
PROJECT_CRD = ROOT / "deploy" / "crd" / "hypervisors.kvm.cloud.sap.yaml"
HYPERVISORS = "/apis/kvm.cloud.sap/v1/hypervisors"
EVICTIONS = "/apis/kvm.cloud.sap/v1/evictions"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"

#: Users in the static token file besides ``admin`` (system:masters). RBAC grants
#: them nothing, so authorization tests can bind exactly the roles they need.
DEFAULT_USERS: Mapping[str, tuple[str, ...]] = {"reader": (), "stranger": ()}


class ControlPlaneError(RuntimeError):
    """The control plane could not be built or started; the message says why."""


def build_binaries() -> tuple[Path, Path]:
    """Return (kube-apiserver, etcd), building them first if they are not cached."""
    apiserver, etcd, _ = _built()
    return apiserver, etcd


def kubectl() -> Path:
    """The kubectl built with the API server (same version), building it if needed."""
    return _built()[2]


def _built() -> tuple[Path, Path, Path]:
    result = subprocess.run(
        [str(ROOT / "scripts" / "build-control-plane")], capture_output=True, text=True
    )
    if result.returncode != 0:
        raise ControlPlaneError(f"build-control-plane failed:\n{result.stderr[-4000:]}")
    apiserver, etcd, kubectl = result.stdout.split()
    return Path(apiserver), Path(etcd), Path(kubectl)


def free_port() -> int:
    """A loopback port free now; the server that is given it binds it a moment later."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class ControlPlane:
    """etcd and kube-apiserver in ``workdir``; see the module docstring.

    ``start()`` is idempotent per instance; ``stop()`` ends both processes and, if
    the directory was created here, removes it. The apiserver alone can be stopped
    and started again (same port, same data) to test clients across restarts.
    """

    def __init__(
        self,
        workdir: Path | None = None,
        crd: Path = PROJECT_CRD,
        users: Mapping[str, tuple[str, ...]] = DEFAULT_USERS,
        apiserver_flags: Sequence[str] = (),
    ) -> None:
        self._owns_workdir = workdir is None
        self._extra_flags = list(apiserver_flags)
        self.dir = Path(workdir or tempfile.mkdtemp(prefix="hgw-cluster-"))
        self.dir.mkdir(parents=True, exist_ok=True)  # a kept one, on its first run
        self.crd = crd
        self.tokens = {"admin": secrets.token_hex(16)}
        self.tokens.update({user: secrets.token_hex(16) for user in users})
        self._groups: dict[str, tuple[str, ...]] = {"admin": ("system:masters",), **users}
        self.etcd_port = free_port()
        self.apiserver_port = free_port()
        self._etcd: subprocess.Popen[bytes] | None = None
        self._apiserver: subprocess.Popen[bytes] | None = None
        self._binaries: tuple[Path, Path] | None = None

    # -- addresses and credentials --------------------------------------------

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.apiserver_port}"

    @property
    def etcd_url(self) -> str:
        return f"http://127.0.0.1:{self.etcd_port}"

    @property
    def ca_file(self) -> Path:
        return self.dir / "ca.crt"

    @property
    def kubeconfig(self) -> Path:
        """The admin kubeconfig (written by :meth:`start`)."""
        return self.dir / "kubeconfig"

    def write_kubeconfig(
        self, path: Path, user: str = "admin", server: str | None = None, token: str | None = None
    ) -> Path:
        """Write a kubeconfig for ``user`` (a token-file user, or any name with ``token``).

        ``server`` points the client elsewhere, such as a proxy in front of the
        API server; the certificate is valid for any port on 127.0.0.1.
        """
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "dev",
                    "cluster": {
                        "server": server or self.server,
                        "certificate-authority": str(self.ca_file),
                    },
                }
            ],
            "users": [{"name": user, "user": {"token": token or self.tokens[user]}}],
            "contexts": [{"name": f"dev-{user}", "context": {"cluster": "dev", "user": user}}],
            "current-context": f"dev-{user}",
        }
        path.write_text(yaml.safe_dump(config))
        return path

    @property
    def pids(self) -> dict[str, int]:
        """Process ids of the running components, for tools that outlive this object."""
        processes = {"etcd": self._etcd, "kube-apiserver": self._apiserver}
        return {name: p.pid for name, p in processes.items() if p is not None}

    def client(self, user: str = "admin") -> httpx.Client:
        """A plain HTTP client authenticated as ``user``."""
        return httpx.Client(
            base_url=self.server,
            verify=ssl.create_default_context(cafile=self.ca_file),
            headers={"Authorization": f"Bearer {self.tokens[user]}"},
            timeout=30,
        )

    def add_user(self, user: str, groups: tuple[str, ...] = ()) -> str:
        """Add a token-file user and return its token.

        kube-apiserver reads the token file only at start, so this restarts it
        (a few seconds); prefer the ``users`` given to the constructor.
        """
        self.tokens[user] = secrets.token_hex(16)
        self._groups[user] = groups
        self._write_tokens()
        if self._apiserver is not None:
            self.stop_apiserver()
            self.start_apiserver()
        return self.tokens[user]

    # -- lifecycle --------------------------------------------------------------

    def start(self) -> None:
        self._binaries = self._binaries or build_binaries()
        if not self.ca_file.exists():
            self._write_credentials()
        self._write_tokens()  # a kept ``workdir`` (its etcd data) is started with new tokens
        self._start_etcd()
        self.start_apiserver()
        self.install_crd(self.crd)
        self.write_kubeconfig(self.kubeconfig)

    def stop(self) -> None:
        self.stop_apiserver()
        if self._etcd is not None:
            _terminate(self._etcd)
            self._etcd = None
        if self._owns_workdir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def start_apiserver(self, timeout: float = 60) -> None:
        """Start kube-apiserver (again) and wait until it is ready."""
        assert self._binaries is not None, "start() first"
        log = (self.dir / "kube-apiserver.log").open("ab")
        self._apiserver = subprocess.Popen(
            [str(self._binaries[0]), *self._apiserver_flags()], stdout=log, stderr=log
        )
        self._wait_ready(timeout)

    def stop_apiserver(self, kill: bool = False) -> None:
        """Stop kube-apiserver: gracefully, or with SIGKILL like a crashed process."""
        if self._apiserver is not None:
            _terminate(self._apiserver, signal.SIGKILL if kill else signal.SIGTERM)
            self._apiserver = None

    def compact(self) -> int:
        """Compact etcd's history up to its current revision; returns that revision.

        After this, no watch or list can start from an older resourceVersion: the
        API server answers ``410 Gone``. Uses etcd's v3 JSON gateway.
        """
        key = base64.b64encode(b"/").decode()
        revision = httpx.post(f"{self.etcd_url}/v3/kv/range", json={"key": key}).json()["header"][
            "revision"
        ]
        response = httpx.post(
            f"{self.etcd_url}/v3/kv/compaction", json={"revision": revision, "physical": True}
        )
        response.raise_for_status()
        return int(revision)

    # -- internals ---------------------------------------------------------------

    def _write_credentials(self) -> None:
        d = self.dir
        (d / "san.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
        for command in (
            "req -x509 -newkey rsa:2048 -nodes -days 30 -subj /CN=hgw-dev-ca"
            " -keyout ca.key -out ca.crt",
            "req -newkey rsa:2048 -nodes -subj /CN=kube-apiserver"
            " -keyout apiserver.key -out apiserver.csr",
            "x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 30"
            " -extfile san.cnf -out apiserver.crt",
            # Service account tokens (TokenRequest) are signed with this key pair.
            "genrsa -out sa.key 2048",
            "rsa -in sa.key -pubout -out sa.pub",
        ):
            _openssl(d, command)

    def issue_client_certificate(
        self, directory: Path, user: str, groups: Sequence[str] = (), trusted: bool = True
    ) -> tuple[Path, Path]:
        """A client certificate and key for ``user`` in ``groups``, written to ``directory``.

        Signed by the cluster's CA, or with ``trusted=False`` by a CA of its own,
        which the API server refuses (401) as it would one past its end.
        """
        directory.mkdir(parents=True, exist_ok=True)
        subject = "/CN=" + user + "".join(f"/O={group}" for group in groups)
        _openssl(
            directory,
            f"req -newkey rsa:2048 -nodes -subj {subject} -keyout client.key -out client.csr",
        )
        if trusted:
            ca = f"-CA {self.ca_file} -CAkey {self.dir / 'ca.key'} -CAcreateserial"
            _openssl(directory, f"x509 -req -in client.csr {ca} -days 1 -out client.crt")
        else:
            _openssl(directory, "x509 -req -in client.csr -key client.key -days 1 -out client.crt")
        return directory / "client.crt", directory / "client.key"

    def _write_tokens(self) -> None:
        lines = [
            f'{token},{user},{user},"{",".join(self._groups[user])}"'
            for user, token in self.tokens.items()
        ]
        (self.dir / "tokens.csv").write_text("\n".join(lines) + "\n")

    def _start_etcd(self) -> None:
        assert self._binaries is not None
        peer = f"http://127.0.0.1:{free_port()}"
        log = (self.dir / "etcd.log").open("ab")
        self._etcd = subprocess.Popen(
            [
                str(self._binaries[1]),
                "--name=dev",
                f"--data-dir={self.dir / 'etcd'}",
                f"--listen-client-urls={self.etcd_url}",
                f"--advertise-client-urls={self.etcd_url}",
                f"--listen-peer-urls={peer}",
                f"--initial-advertise-peer-urls={peer}",
                f"--initial-cluster=dev={peer}",
                "--log-level=warn",
                # A throwaway cluster: durability across power loss buys nothing.
                "--unsafe-no-fsync",
            ],
            stdout=log,
            stderr=log,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            self._check_alive(self._etcd, "etcd")
            try:
                if httpx.get(f"{self.etcd_url}/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise ControlPlaneError(f"etcd did not become healthy; see {self.dir / 'etcd.log'}")

    def _apiserver_flags(self) -> list[str]:
        d = self.dir
        return [
            f"--etcd-servers={self.etcd_url}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={self.apiserver_port}",
            f"--tls-cert-file={d / 'apiserver.crt'}",
            f"--tls-private-key-file={d / 'apiserver.key'}",
            f"--client-ca-file={d / 'ca.crt'}",
            f"--token-auth-file={d / 'tokens.csv'}",
            "--authorization-mode=RBAC",
            f"--service-account-key-file={d / 'sa.pub'}",
            f"--service-account-signing-key-file={d / 'sa.key'}",
            "--service-account-issuer=https://kubernetes.default.svc",
            "--service-cluster-ip-range=10.96.0.0/24",
            # No kubelets, no Service endpoints: nothing to reconcile.
            "--endpoint-reconciler-type=none",
            "--profiling=false",
            "--v=1",
            *self._extra_flags,
        ]

    def _wait_ready(self, timeout: float) -> None:
        assert self._apiserver is not None
        deadline = time.monotonic() + timeout
        with self.client() as http:
            while time.monotonic() < deadline:
                self._check_alive(self._apiserver, "kube-apiserver")
                try:
                    if http.get("/readyz", timeout=2).status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                time.sleep(0.2)
        raise ControlPlaneError(
            f"kube-apiserver not ready after {timeout}s; see {self.dir / 'kube-apiserver.log'}"
        )

    def _check_alive(self, process: subprocess.Popen[bytes], name: str) -> None:
        if process.poll() is not None:
            log = (self.dir / f"{name}.log").read_text(errors="replace")[-3000:]
            raise ControlPlaneError(f"{name} exited with {process.returncode}:\n{log}")

    def install_crd(self, manifest_path: Path, timeout: float = 60) -> None:
        """Create a CRD, then wait until it is Established and its resource answers."""
        manifest: dict[str, Any] = yaml.safe_load(manifest_path.read_text())
        name, served = manifest["metadata"]["name"], _collection(manifest)
        deadline = time.monotonic() + timeout
        with self.client() as http:
            response = http.post(CRDS, json=manifest)
            if response.status_code != 409:
                _raise_for(response, f"creating CRD from {manifest_path}")
            while time.monotonic() < deadline:
                crd = http.get(f"{CRDS}/{name}").json()
                conditions = (crd.get("status") or {}).get("conditions") or []
                established = any(
                    c["type"] == "Established" and c["status"] == "True" for c in conditions
                )
                if established and http.get(served, params={"limit": 1}).status_code == 200:
                    return
                time.sleep(0.2)
        raise ControlPlaneError(f"CRD {name} not served after {timeout}s")

    def replace_crd(self, manifest_path: Path) -> None:
        """Put a CRD in the place of the one of its name, as an upgrade or a rollback
        does: the objects stay in etcd as they were written, and are read (pruned and
        defaulted) under its schema once the API server has taken it up."""
        manifest: dict[str, Any] = yaml.safe_load(manifest_path.read_text())
        name = manifest["metadata"]["name"]
        with self.client() as http:
            current = http.get(f"{CRDS}/{name}")
            _raise_for(current, f"reading CRD {name}")
            manifest["metadata"]["resourceVersion"] = current.json()["metadata"]["resourceVersion"]
            response = http.put(f"{CRDS}/{name}", json=manifest)
            _raise_for(response, f"replacing CRD {name} from {manifest_path}")

    def remove_crd(self, manifest_path: Path, timeout: float = 60) -> None:
        """Delete a CRD (and with it every object of its kind); wait until the API
        server no longer serves its resource."""
        manifest: dict[str, Any] = yaml.safe_load(manifest_path.read_text())
        name, served = manifest["metadata"]["name"], _collection(manifest)
        deadline = time.monotonic() + timeout
        with self.client() as http:
            response = http.delete(f"{CRDS}/{name}")
            if response.status_code != 404:
                _raise_for(response, f"deleting CRD {name}")
            while time.monotonic() < deadline:
                gone = http.get(f"{CRDS}/{name}").status_code == 404
                if gone and http.get(served, params={"limit": 1}).status_code == 404:
                    return
                time.sleep(0.2)
        raise ControlPlaneError(f"CRD {name} still served {timeout}s after its deletion")


def _collection(crd: Mapping[str, Any]) -> str:
    """The path of a cluster-scoped CRD's collection, in its storage version."""
    spec = crd["spec"]
    (version,) = (v["name"] for v in spec["versions"] if v.get("storage"))
    return f"/apis/{spec['group']}/{version}/{spec['names']['plural']}"


def _openssl(directory: Path, command: str) -> None:
    result = subprocess.run(["openssl", *command.split()], cwd=directory, capture_output=True)
    if result.returncode != 0:
        raise ControlPlaneError(f"openssl {command}: {result.stderr.decode()[-2000:]}")


def _raise_for(response: httpx.Response, doing: str) -> None:
    if response.is_error:
        try:
            message = response.json().get("message", response.text)
        except json.JSONDecodeError:
            message = response.text
        raise ControlPlaneError(f"{doing}: HTTP {response.status_code}: {message}")


def _terminate(process: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
    if process.poll() is None:
        process.send_signal(sig)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
