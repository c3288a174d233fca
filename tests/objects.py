"""Builders for Hypervisor objects as the API server returns them (plain JSON data)."""

from __future__ import annotations

import itertools
import os
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


#: The operator's CRD with spec.bookings (its open pull request).
BOOKINGS_CRD = "hypervisors.kvm.cloud.sap.bookings.yaml"
#: The operator's released CRD, as real clusters serve it: no spec.bookings.
RELEASED_CRD = "hypervisors.kvm.cloud.sap.main.yaml"


def reference_dir() -> Path | None:
    """``shared/reference/`` beside the repository, where CI puts the operator's CRDs.

    ``$HGW_REFERENCE_DIR`` if set; else ``../shared/reference`` from the repository
    root, or from a directory above it (a git worktree sits deeper than its main
    clone). None when there is none: the tests that need it skip. The files are
    never copied into the project.
    """
    if os.environ.get("HGW_REFERENCE_DIR"):
        return Path(os.environ["HGW_REFERENCE_DIR"])
    root = Path(__file__).resolve().parents[1]
    candidates = (parent / "shared" / "reference" for parent in root.parents)
    return next((path for path in candidates if path.is_dir()), None)


def crd_reference(name: str = BOOKINGS_CRD) -> dict[str, Any] | None:
    """One of the operator's CRD manifests, or None without the reference directory."""
    directory = reference_dir()
    if directory is None:
        return None
    manifest: dict[str, Any] = yaml.safe_load((directory / name).read_text())
    return manifest


def crd_schema(name: str = BOOKINGS_CRD) -> dict[str, Any] | None:
    """The openAPIV3Schema of the CRD's v1 version, or None without the reference."""
    manifest = crd_reference(name)
    if manifest is None:
        return None
    (version,) = (v for v in manifest["spec"]["versions"] if v["name"] == "v1")
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema
