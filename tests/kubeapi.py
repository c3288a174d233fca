"""Writing Hypervisor objects to the test cluster, and comparing the cache with it.

Plain HTTP against the real API server, so that what the tests write is exactly
what a controller would write: spec through the object, status through the
status subresource.
"""

from __future__ import annotations

import asyncio
import dataclasses
import ssl
import sys
import textwrap
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import yaml

from gateway.domain.parse import parse_hypervisor
from gateway.store.store import Store
from harness.controlplane import HYPERVISORS, ControlPlane

MERGE_PATCH = {"Content-Type": "application/merge-patch+json"}


def hypervisor(
    name: str,
    cpu: int | str = 64,
    memory: str = "256Gi",
    bookings: list[dict[str, Any]] | None = None,
    overcommit: dict[str, float] | None = None,
    zone: str = "qa-de-1a",
) -> dict[str, Any]:
    """A Hypervisor object with a status, as the node agent would have filled it."""
    spec: dict[str, Any] = {"overcommit": overcommit or {"cpu": 2.0}}
    if bookings is not None:
        spec["bookings"] = bookings
    return {
        "apiVersion": "kvm.cloud.sap/v1",
        "kind": "Hypervisor",
        "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": zone}},
        "spec": spec,
        "status": {"capacity": {"cpu": cpu, "memory": memory}, "numInstances": 0},
    }


def serves_bookings(plane: ControlPlane) -> bool:
    """Whether the plane's CRD has spec.bookings (the released one prunes them)."""
    for doc in yaml.safe_load_all(plane.crd.read_text()):
        (version,) = (v for v in doc["spec"]["versions"] if v["name"] == "v1")
        spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
        return "bookings" in spec["properties"]
    raise AssertionError(f"{plane.crd} holds no CRD")


def consumer(uuid: str, cpu: int | str = 4, memory: str = "8Gi") -> dict[str, Any]:
    return {"consumer": {"uuid": uuid, "resources": {"cpu": cpu, "memory": memory}}}


class HypervisorAPI:
    """Async create / patch / delete / list of Hypervisors, as the admin user."""

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
        created = _ok(await self.http.post(HYPERVISORS, json=body))
        if "status" in obj:
            created = await self.patch_status(obj["metadata"]["name"], obj["status"])
        return created

    async def patch(self, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        response = await self.http.patch(f"{HYPERVISORS}/{name}", json=patch, headers=MERGE_PATCH)
        return _ok(response)

    async def patch_status(self, name: str, status: dict[str, Any]) -> dict[str, Any]:
        response = await self.http.patch(
            f"{HYPERVISORS}/{name}/status", json={"status": status}, headers=MERGE_PATCH
        )
        return _ok(response)

    async def delete(self, name: str) -> None:
        _ok(await self.http.delete(f"{HYPERVISORS}/{name}"))

    async def delete_all(self) -> None:
        _ok(await self.http.delete(HYPERVISORS))
        await eventually(self._empty, within=60)

    async def _empty(self) -> bool:
        return not (await self.http.get(HYPERVISORS, params={"limit": 1})).json()["items"]

    async def list(self) -> dict[str, dict[str, Any]]:
        """A fresh, consistent LIST of every object, by name."""
        items: list[dict[str, Any]] = []
        params: dict[str, Any] = {"limit": 500}
        while True:
            body = _ok(await self.http.get(HYPERVISORS, params=params))
            items.extend(body["items"])
            if not body["metadata"].get("continue"):
                return {item["metadata"]["name"]: item for item in items}
            params["continue"] = body["metadata"]["continue"]


def _ok(response: httpx.Response) -> Any:
    if response.is_error:
        raise AssertionError(f"HTTP {response.status_code}: {response.text[:500]}")
    return response.json()


async def eventually(
    condition: Callable[[], Awaitable[bool] | bool], within: float, interval: float = 0.05
) -> None:
    """Wait until ``condition()`` holds; fail after ``within`` seconds."""
    deadline = time.monotonic() + within
    while True:
        result = condition()
        if isinstance(result, Awaitable):
            result = await result
        if result:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"condition still false after {within}s")
        await asyncio.sleep(interval)


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
