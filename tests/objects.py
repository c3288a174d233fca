"""Builders for Hypervisor and Eviction objects (plain JSON data): as the API server
returns them, or as a client writes them; and the operator's CRDs to check them against."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from gateway.domain.records import ZONE_LABEL

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


def reported(
    name: str,
    cpu: int | str = 64,
    memory: str = "256Gi",
    bookings: list[dict[str, Any]] | None = None,
    overcommit: dict[str, float] | None = None,
    zone: str = "qa-de-1a",
) -> dict[str, Any]:
    """An object as a client creates it, with a status as the node agent would fill it.

    No uid, resourceVersion or generation: the API server sets those (and refuses
    a create that carries a resourceVersion), and a file holds none.
    """
    spec: dict[str, Any] = {"overcommit": overcommit or {"cpu": 2.0}}
    if bookings is not None:
        spec["bookings"] = bookings
    status = {"capacity": {"cpu": cpu, "memory": memory}, "numInstances": 0}
    obj = hypervisor(name, labels={ZONE_LABEL: zone}, spec=spec, status=status)
    obj["metadata"] = {"name": name, "labels": obj["metadata"]["labels"]}
    return obj


def consumer(uuid: str, resources: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """A spec.bookings entry for a consumer."""
    return {"consumer": {"uuid": uuid, "resources": resources, **fields}}


def resources(cpu: int | str = 4, memory: str = "8Gi") -> dict[str, Any]:
    """A booking's resources: an ordinary small instance unless told otherwise."""
    return {"cpu": cpu, "memory": memory}


def reservation(name: str, resources: dict[str, Any]) -> dict[str, Any]:
    """A spec.bookings entry for a reservation."""
    return {"reservation": {"name": name, "resources": resources}}


def eviction(
    name: str,
    host: str,
    reason: str = "kernel update",
    *,
    state: str | None = None,
    status: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An Eviction as a client creates it; ``state`` (Running, Failed, Succeeded) puts an
    Evicting condition with that reason into ``status`` (which it then needs)."""
    obj: dict[str, Any] = {
        "apiVersion": "kvm.cloud.sap/v1",
        "kind": "Eviction",
        "metadata": {"name": name},
        "spec": {"hypervisor": host, "reason": reason},
    }
    if state is not None:
        status = dict(status or {})
        condition = {
            "type": "Evicting",
            "status": "False" if state in ("Failed", "Succeeded") else "True",
            "reason": state,
            "message": f"eviction {state.lower()}",
            "lastTransitionTime": "2026-12-01T10:00:00Z",
        }
        status["conditions"] = [*status.get("conditions", []), condition]
    if status is not None:
        obj["status"] = status
    return obj


def uuid_of(n: int) -> str:
    """A valid, distinct consumer UUID for each n."""
    return f"{n:08x}-0000-4000-8000-{n:012x}"


#: The operator's CRD with spec.bookings (its open pull request).
BOOKINGS_CRD = "hypervisors.kvm.cloud.sap.bookings.yaml"
#: The operator's released CRD, as real clusters serve it: no spec.bookings.
RELEASED_CRD = "hypervisors.kvm.cloud.sap.main.yaml"
#: The operator's released Eviction CRD.
EVICTION_CRD = "evictions.kvm.cloud.sap.main.yaml"


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


# Which fields a parser reads, to check them against a CRD's schema.


class Recording(Mapping[str, Any]):
    """A mapping that records the path of every key looked up, present or not."""

    def __init__(self, data: Mapping[str, Any], path: str, seen: set[str]) -> None:
        self._data, self._path, self._seen = data, path, seen

    def __getitem__(self, key: str) -> Any:
        path = f"{self._path}.{key}" if self._path else key
        self._seen.add(path)
        return recorded(self._data[key], path, self._seen)

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


def recorded(value: Any, path: str, seen: set[str]) -> Any:
    """``value`` with every mapping in it a :class:`Recording` (paths of list items end in [])."""
    if isinstance(value, dict):
        return Recording(value, path, seen)
    if isinstance(value, list):
        return [recorded(item, f"{path}[]", seen) for item in value]
    return value


def in_schema(schema: Mapping[str, Any], path: str) -> bool:
    """Whether a path as :func:`recorded` writes it exists in a CRD's openAPIV3Schema."""
    node: Any = schema
    for part in path.split("."):
        name, is_list = (part[:-2], True) if part.endswith("[]") else (part, False)
        if name in node.get("properties", {}):
            node = node["properties"][name]
        elif isinstance(node.get("additionalProperties"), Mapping):
            node = node["additionalProperties"]
        else:
            return False
        if is_list:
            node = node["items"]
    return True
