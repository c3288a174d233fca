"""The project's CRD manifest, checked by the API server itself.

Rules the gateway relies on (exactly one booking type, ratios >= 1) are proved
on both the project's manifest and the operator's; objects are shown to mean
the same thing under both.
"""

from __future__ import annotations

from typing import Any

import pytest

from gateway.parse import parse_hypervisor
from scripts.controlplane import HYPERVISORS, ControlPlane
from tests.kubeapi import HypervisorAPI, consumer, hypervisor

pytestmark = pytest.mark.cluster

UUID = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
RESERVATION = {"reservation": {"name": "nova-reserved", "resources": {"memory": "4Gi"}}}


def _with_bookings(bookings: list[Any]) -> dict[str, Any]:
    body = hypervisor("node-crd", bookings=bookings)
    body.pop("status")
    return body


@pytest.mark.parametrize(
    "booking",
    [
        pytest.param({**consumer(UUID), **RESERVATION}, id="both"),
        pytest.param({}, id="neither"),
    ],
)
async def test_booking_must_set_exactly_one_type(
    any_api: HypervisorAPI, booking: dict[str, Any]
) -> None:
    response = await any_api.http.post(HYPERVISORS, json=_with_bookings([booking]))
    assert response.status_code == 422, response.text
    assert "exactly one booking type must be set" in response.json()["message"]


async def test_either_booking_type_alone_is_accepted(any_api: HypervisorAPI) -> None:
    response = await any_api.http.post(
        HYPERVISORS, json=_with_bookings([consumer(UUID), RESERVATION])
    )
    assert response.status_code == 201, response.text


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"overcommit": {"cpu": 0.5}}, "overcommit ratios must be >= 1.0"),
        ({"bookings": [consumer("not-a-uuid")]}, "uuid"),
        ({"bookings": [consumer(UUID, cpu="1 Gi")]}, "resources"),
        ({"bookings": [{"consumer": {"uuid": UUID, "resources": {}}}]}, "resources"),
        ({"maintenance": "manual"}, "maintenanceReason must be non-empty"),
    ],
)
async def test_schema_rejects(any_api: HypervisorAPI, patch: dict[str, Any], message: str) -> None:
    body = _with_bookings([])
    body["spec"].update(patch)
    response = await any_api.http.post(HYPERVISORS, json=body)
    assert response.status_code == 422, response.text
    assert message in response.json()["message"]


async def test_quantities_the_pattern_admits_are_stored_verbatim(any_api: HypervisorAPI) -> None:
    """The pattern lets "1e999" through: the parser, not the schema, must cope with it."""
    body = _with_bookings([consumer(UUID, cpu="1e999")])
    created = (await any_api.http.post(HYPERVISORS, json=body)).json()
    assert created["spec"]["bookings"][0]["consumer"]["resources"]["cpu"] == "1e999"


async def test_fields_a_newer_operator_adds_are_kept(api: HypervisorAPI) -> None:
    body = hypervisor("node-operator")
    body["spec"]["futureSetting"] = {"mode": "gradual"}
    body["status"]["futureReport"] = [1, 2]
    created = await api.create(body)
    assert created["spec"]["futureSetting"] == {"mode": "gradual"}
    assert created["status"]["futureReport"] == [1, 2]


async def test_the_same_object_means_the_same_under_both_crds(
    cluster: ControlPlane, reference_cluster: ControlPlane
) -> None:
    """Defaults and pruning differ in detail; what the gateway reads must not."""
    body = hypervisor("node-same", bookings=[consumer(UUID, cpu=8), RESERVATION])
    body["status"]["conditions"] = [
        {
            "type": "Ready",
            "status": "True",
            "reason": "Ready",
            "message": "",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
    ]
    parsed = []
    for plane in (cluster, reference_cluster):
        client = HypervisorAPI(plane)
        try:
            await client.delete_all()
            parsed.append(parse_hypervisor(await client.create(body)))
        finally:
            await client.aclose()
    project, reference = parsed
    for field in (
        "labels", "lifecycle_enabled", "high_availability", "allowed_projects", "traits",
        "aggregates", "overcommit", "bookings", "ready", "capacity", "num_instances",
        "hypervisor_version", "libvirt_version", "resources", "warnings",
    ):  # fmt: skip
        assert getattr(project, field) == getattr(reference, field), field
