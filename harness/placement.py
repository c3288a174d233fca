"""A real OpenStack Placement, to check the gateway's slots against (tests/test_placement_peer.py).

Placement (PyPI ``openstack-placement``) runs in a process of its own under
``.venv-placement``, whose pinned, hashed dependencies are in
``harness/placement-requirements.lock``: oslo.*, SQLAlchemy and WebOb are
Placement's, never the gateway's, so they stay out of the gateway's lock files.
``scripts/test`` creates the virtualenv; to change a pin::

    uv pip compile --universal --generate-hashes --python-version 3.11 \\
        harness/placement-requirements.in -o harness/placement-requirements.lock

:class:`PlacementClient` speaks the REST API at one microversion, Nova's, with the
``noauth2`` admin token the server accepts.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx

from harness.controlplane import ROOT, free_port
from harness.processes import Server

__all__ = [
    "MICROVERSION",
    "PLACEMENT_PYTHON",
    "Inventory",
    "PlacementClient",
    "PlacementError",
    "start_placement",
]

PLACEMENT_PYTHON = ROOT / ".venv-placement" / "bin" / "python"
_APP = Path(__file__).resolve().parent / "placement_app.py"

#: What Nova's scheduler sends ``GET /allocation_candidates`` at (report.py,
#: SAME_SUBTREE_VERSION). It has ``required=!TRAIT`` (1.22), ``member_of=!in:``
#: (1.32) and ``root_required`` (1.35); allocations carry consumer generations (1.28).
MICROVERSION = "1.36"


class PlacementError(RuntimeError):
    """Placement refused a request; the message has its answer."""


def start_placement(log: Path, timeout: float = 120) -> Server:
    """Placement on a free loopback port, once it answers its version document.

    Raises FileNotFoundError without ``.venv-placement``, RuntimeError when the
    server exits or does not answer within ``timeout`` seconds (its log has why).
    """
    if not PLACEMENT_PYTHON.exists():
        raise FileNotFoundError(f"{PLACEMENT_PYTHON} (scripts/test creates .venv-placement)")
    port = free_port()
    server = Server(["-P", str(_APP), "--port", str(port)], port, log, python=PLACEMENT_PYTHON)
    try:
        server.wait_ready("/", timeout)
    except RuntimeError:
        server.stop()
        raise
    return server


@dataclasses.dataclass(frozen=True, slots=True)
class Inventory:
    """One resource class of a provider, in Placement's units (VCPU, MEMORY_MB, ...)."""

    total: int
    reserved: int = 0
    allocation_ratio: float = 1.0
    #: Nova's convention: one allocation may take up to all of the physical amount.
    max_unit: int | None = None

    @property
    def capacity(self) -> int:
        """What Placement allocates against: its own formula (placement/objects/inventory.py)."""
        return math.floor((self.total - self.reserved) * self.allocation_ratio)

    def to_json(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "reserved": self.reserved,
            "allocation_ratio": self.allocation_ratio,
            "max_unit": self.total if self.max_unit is None else self.max_unit,
            "min_unit": 1,
            "step_size": 1,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Inventory:
        return cls(data["total"], data["reserved"], data["allocation_ratio"], data["max_unit"])


class PlacementClient:
    """Placement's REST API, as ``async with PlacementClient(url) as placement``."""

    def __init__(self, url: str) -> None:
        headers = {"OpenStack-API-Version": f"placement {MICROVERSION}", "x-auth-token": "admin"}
        self._http = httpx.AsyncClient(base_url=url, headers=headers, timeout=30)

    async def __aenter__(self) -> PlacementClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._http.aclose()

    async def create_provider(self, uuid: str, name: str) -> None:
        await self._call("POST", "/resource_providers", {"uuid": uuid, "name": name})

    async def set_inventories(self, uuid: str, inventories: Mapping[str, Inventory]) -> None:
        """Replace the provider's inventories (all classes at once)."""
        body = {rc: inventory.to_json() for rc, inventory in inventories.items()}
        await self._put_generational(f"/resource_providers/{uuid}/inventories", "inventories", body)

    async def set_traits(self, uuid: str, traits: Iterable[str]) -> None:
        """Replace the provider's traits, creating the custom ones first."""
        names = sorted(set(traits))
        for name in names:
            if name.startswith("CUSTOM_"):
                await self._call("PUT", f"/traits/{name}")
        await self._put_generational(f"/resource_providers/{uuid}/traits", "traits", names)

    async def set_aggregates(self, uuid: str, aggregates: Iterable[str]) -> None:
        body = sorted(set(aggregates))
        await self._put_generational(f"/resource_providers/{uuid}/aggregates", "aggregates", body)

    async def allocate(
        self, consumer: str, allocations: Mapping[str, Mapping[str, int]], project: str, user: str
    ) -> None:
        """A new consumer's allocations: provider UUID -> resource class -> amount."""
        body = {
            "allocations": {rp: {"resources": dict(r)} for rp, r in allocations.items()},
            "project_id": project,
            "user_id": user,
            "consumer_generation": None,
        }
        await self._call("PUT", f"/allocations/{consumer}", body)

    async def inventories(self, uuid: str) -> dict[str, Inventory]:
        answer = await self._call("GET", f"/resource_providers/{uuid}/inventories")
        return {rc: Inventory.from_json(i) for rc, i in answer["inventories"].items()}

    async def usages(self, uuid: str) -> dict[str, int]:
        answer = await self._call("GET", f"/resource_providers/{uuid}/usages")
        usages: dict[str, int] = answer["usages"]
        return usages

    async def candidates(self, query: Sequence[tuple[str, str]]) -> set[str]:
        """The providers ``GET /allocation_candidates?query`` can allocate from."""
        answer = await self._call(
            "GET", "/allocation_candidates", params=httpx.QueryParams(tuple(query))
        )
        requests: list[dict[str, Any]] = answer["allocation_requests"]
        return {rp for request in requests for rp in request["allocations"]}

    async def _put_generational(self, path: str, key: str, body: Any) -> None:
        """PUT a provider's ``key`` at the generation it has now (no one else writes it)."""
        generation = (await self._call("GET", path))["resource_provider_generation"]
        await self._call("PUT", path, {key: body, "resource_provider_generation": generation})

    async def _call(
        self,
        method: str,
        path: str,
        body: Any = None,
        params: httpx.QueryParams | None = None,
    ) -> dict[str, Any]:
        response = await self._http.request(method, path, json=body, params=params)
        if response.is_error:
            raise PlacementError(f"{method} {path}: {response.status_code} {response.text}")
        answer: dict[str, Any] = response.json() if response.content else {}
        return answer
