"""Builders for Hypervisor objects as the API server returns them (plain JSON data)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import yaml

_versions = itertools.count(1)


def hypervisor(
    name: str = "node-1",
    *,
    labels: dict[str, Any] | None = None,
    spec: dict[str, Any] | None = None,
    status: dict[str, Any] | None = None,
    resource_version: str | None = None,
) -> dict[str, Any]:
    """One object; a fresh resourceVersion unless one is given, no status unless given."""
    obj: dict[str, Any] = {
        "apiVersion": "kvm.cloud.sap/v1",
        "kind": "Hypervisor",
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "resourceVersion": resource_version or str(next(_versions)),
            "generation": 1,
            "labels": labels or {},
        },
        "spec": spec if spec is not None else {},
    }
    if status is not None:
        obj["status"] = status
    return obj


def consumer(uuid: str, resources: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """A spec.bookings entry for a consumer."""
    return {"consumer": {"uuid": uuid, "resources": resources, **fields}}


def reservation(name: str, resources: dict[str, Any]) -> dict[str, Any]:
    """A spec.bookings entry for a reservation."""
    return {"reservation": {"name": name, "resources": resources}}


def uuid_of(n: int) -> str:
    """A valid, distinct consumer UUID for each n."""
    return f"{n:08x}-0000-4000-8000-{n:012x}"


CRD_REFERENCE = "hypervisors.kvm.cloud.sap.bookings.yaml"


def crd_reference() -> dict[str, Any] | None:
    """The operator's CRD manifest, kept beside the repository in ../shared/reference/.

    Looked up in every parent directory, so a git worktree nested deeper finds it
    too; None when it is absent (a plain clone), and the tests that need it skip.
    """
    root = Path(__file__).resolve().parents[1]
    for directory in root.parents:
        path = directory / "shared" / "reference" / CRD_REFERENCE
        if path.is_file():
            manifest: dict[str, Any] = yaml.safe_load(path.read_text())
            return manifest
    return None


def crd_schema() -> dict[str, Any] | None:
    """The openAPIV3Schema of the CRD's v1 version, or None without the reference."""
    manifest = crd_reference()
    if manifest is None:
        return None
    (version,) = (v for v in manifest["spec"]["versions"] if v["name"] == "v1")
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema
