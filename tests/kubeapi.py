"""Writing Hypervisor and Eviction objects to the test cluster, and comparing the cache
with it.

Plain HTTP against the real API server, so that what the tests write is exactly
what a controller would write: spec through the object, status through the
status subresource.
"""

from __future__ import annotations

import dataclasses
import ssl
import sys
import textwrap
from pathlib import Path
from typing import Any

import httpx
import yaml

from gateway.domain.parse import parse_hypervisor
from gateway.store.store import Store
from harness.controlplane import EVICTIONS, HYPERVISORS, ControlPlane
from tests.support import eventually

MERGE_PATCH = {"Content-Type": "application/merge-patch+json"}


def serves_bookings(plane: ControlPlane) -> bool:
    """Whether the plane's CRD has spec.bookings (the released one prunes them)."""
    for doc in yaml.safe_load_all(plane.crd.read_text()):
        (version,) = (v for v in doc["spec"]["versions"] if v["name"] == "v1")
        spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
        return "bookings" in spec["properties"]
    raise AssertionError(f"{plane.crd} holds no CRD")


class ObjectAPI:
    """Async create / patch / delete / list of one resource's objects (at ``path``), as
    the admin user."""

    path: str

    def __init__(self, cluster: ControlPlane, user: str = "admin") -> None:
        self.cluster = cluster
        self.http = httpx.AsyncClient(
            base_url=cluster.server,
            verify=ssl.create_default_context(cafile=cluster.ca_file),
            headers={"Authorization": f"Bearer {cluster.tokens[user]}"},
            timeout=30,
            limits=httpx.Limits(max_connections=32),
        )

    async def aclose(self) -> None:
        await self.http.aclose()

    async def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Create the object, then write its status through the subresource."""
        body = {k: v for k, v in obj.items() if k != "status"}
        created = _ok(await self.http.post(self.path, json=body))
        if "status" in obj:
            created = await self.patch_status(obj["metadata"]["name"], obj["status"])
        return created

    async def patch(self, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        response = await self.http.patch(f"{self.path}/{name}", json=patch, headers=MERGE_PATCH)
        return _ok(response)

    async def patch_status(self, name: str, status: dict[str, Any]) -> dict[str, Any]:
        response = await self.http.patch(
            f"{self.path}/{name}/status", json={"status": status}, headers=MERGE_PATCH
        )
        return _ok(response)

    async def delete(self, name: str) -> None:
        _ok(await self.http.delete(f"{self.path}/{name}"))

    async def delete_all(self) -> None:
        _ok(await self.http.delete(self.path))
        await eventually(self._empty, within=60)

    async def _empty(self) -> bool:
        return not (await self.http.get(self.path, params={"limit": 1})).json()["items"]

    async def list(self) -> dict[str, dict[str, Any]]:
        """A fresh, consistent LIST of every object, by name."""
        items: list[dict[str, Any]] = []
        params: dict[str, Any] = {"limit": 500}
        while True:
            body = _ok(await self.http.get(self.path, params=params))
            items.extend(body["items"])
            if not body["metadata"].get("continue"):
                return {item["metadata"]["name"]: item for item in items}
            params["continue"] = body["metadata"]["continue"]


class HypervisorAPI(ObjectAPI):
    path = HYPERVISORS


class EvictionAPI(ObjectAPI):
    path = EVICTIONS


class Refused(AssertionError):
    """The API server answered with an error; a test failure unless a test expects it."""

    def __init__(self, response: httpx.Response) -> None:
        super().__init__(f"HTTP {response.status_code}: {response.text[:500]}")
        self.status_code = response.status_code


def _ok(response: httpx.Response) -> Any:
    if response.is_error:
        raise Refused(response)
    return response.json()


def cache_view(store: Store) -> dict[str, tuple[str | None, Any]]:
    """What the cache holds: name -> (resourceVersion, derived capacity)."""
    return {h.name: (h.resource_version, h.resources) for h in store.snapshot.ordered}


def cluster_view(objects: dict[str, dict[str, Any]]) -> dict[str, tuple[str | None, Any]]:
    """The same view computed from a fresh LIST."""
    parsed = (parse_hypervisor(obj) for obj in objects.values())
    return {h.name: (h.resource_version, h.resources) for h in parsed}


async def assert_converges(store: Store, api: HypervisorAPI, within: float) -> None:
    """The cache ends up equal to a fresh LIST (the cluster is quiet by now)."""
    expected = cluster_view(await api.list())
    try:
        await eventually(lambda: cache_view(store) == expected, within)
    except AssertionError:
        actual = cache_view(store)
        missing = sorted(set(expected) - set(actual))[:5]
        extra = sorted(set(actual) - set(expected))[:5]
        stale = sorted(n for n in expected if n in actual and actual[n] != expected[n])[:5]
        raise AssertionError(
            f"cache differs from LIST: missing {missing}, extra {extra}, stale {stale}"
        ) from None


@dataclasses.dataclass(frozen=True)
class ExecPlugin:
    """A kubeconfig whose user runs a credential plugin, as for OIDC or a cloud login.

    The plugin hands out the text of ``token`` (write it to change the next token)
    and logs each run to ``runs``.
    """

    kubeconfig: Path
    token: Path
    runs: Path

    @classmethod
    def write(cls, cluster: ControlPlane, directory: Path, first_token: str) -> ExecPlugin:
        token, runs = directory / "token", directory / "runs"
        token.write_text(first_token)
        plugin = directory / "credential-plugin.py"
        plugin.write_text(
            textwrap.dedent(f"""
                import json, pathlib
                with open({str(runs)!r}, "a") as log:
                    log.write("run\\n")
                print(json.dumps({{
                    "apiVersion": "client.authentication.k8s.io/v1beta1",
                    "kind": "ExecCredential",
                    "status": {{"token": pathlib.Path({str(token)!r}).read_text()}},
                }}))
            """)
        )
        path = cluster.write_kubeconfig(directory / "kubeconfig")
        config = yaml.safe_load(path.read_text())
        config["users"][0]["user"] = {
            "exec": {
                "apiVersion": "client.authentication.k8s.io/v1beta1",
                "command": sys.executable,
                "args": [str(plugin)],
            }
        }
        path.write_text(yaml.safe_dump(config))
        return cls(path, token, runs)

    def run_count(self) -> int:
        return len(self.runs.read_text().split()) if self.runs.exists() else 0


@dataclasses.dataclass(frozen=True)
class CertificateUser:
    """A kubeconfig whose user presents a client certificate from files, as cert-manager
    or a mounted Secret keeps them; :meth:`rotate` replaces them in place."""

    kubeconfig: Path
    cluster: ControlPlane
    directory: Path

    @classmethod
    def write(cls, cluster: ControlPlane, directory: Path, trusted: bool) -> CertificateUser:
        user = cls(directory / "kubeconfig", cluster, directory)
        certificate, key = user.rotate(trusted)
        config = yaml.safe_load(cluster.write_kubeconfig(user.kubeconfig).read_text())
        config["users"][0]["user"] = {
            "client-certificate": str(certificate),
            "client-key": str(key),
        }
        user.kubeconfig.write_text(yaml.safe_dump(config))
        return user

    def rotate(self, trusted: bool = True) -> tuple[Path, Path]:
        """A new key and certificate: the cluster's CA signs it, or with ``trusted=False`` none
        it knows (refused with 401, as a certificate past its end is)."""
        return self.cluster.issue_client_certificate(
            self.directory, "certificate-user", ("system:masters",), trusted
        )
