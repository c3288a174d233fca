"""The project's CRD manifest, checked by the API server itself.

Rules the gateway relies on (exactly one booking type, ratios >= 1) are proved
on the project's manifest and the operator's; objects are shown to mean the same
thing under each, and objects valid under the operator's released CRD (no
bookings) or its bookings CRD are read by the informer from every one of them.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from gateway.domain.parse import parse_hypervisor
from gateway.domain.records import Capabilities, UpdateStatus
from harness.controlplane import HYPERVISORS, ControlPlane
from tests.conftest import BOOKING_CLUSTERS, StartInformer
from tests.kubeapi import (
    HypervisorAPI,
    assert_converges,
    consumer,
    eventually,
    hypervisor,
    serves_bookings,
)

pytestmark = pytest.mark.cluster

UUID = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
RESERVATION = {"reservation": {"name": "nova-reserved", "resources": {"memory": "4Gi"}}}


def _with_bookings(bookings: list[Any]) -> dict[str, Any]:
    body = hypervisor("node-crd", bookings=bookings)
    body.pop("status")
    return body


@BOOKING_CLUSTERS
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


@BOOKING_CLUSTERS
async def test_either_booking_type_alone_is_accepted(any_api: HypervisorAPI) -> None:
    response = await any_api.http.post(
        HYPERVISORS, json=_with_bookings([consumer(UUID), RESERVATION])
    )
    assert response.status_code == 201, response.text


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"overcommit": {"cpu": 0.5}}, "overcommit ratios must be >= 1.0"),
        ({"maintenance": "manual"}, "maintenanceReason must be non-empty"),
    ],
)
async def test_schema_rejects(any_api: HypervisorAPI, patch: dict[str, Any], message: str) -> None:
    await _assert_rejected(any_api, patch, message)


@BOOKING_CLUSTERS
@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"bookings": [consumer("not-a-uuid")]}, "uuid"),
        ({"bookings": [consumer(UUID, cpu="1 Gi")]}, "resources"),
        ({"bookings": [{"consumer": {"uuid": UUID, "resources": {}}}]}, "resources"),
    ],
)
async def test_schema_rejects_bad_bookings(
    any_api: HypervisorAPI, patch: dict[str, Any], message: str
) -> None:
    await _assert_rejected(any_api, patch, message)


async def _assert_rejected(api: HypervisorAPI, patch: dict[str, Any], message: str) -> None:
    body = _with_bookings([])
    body["spec"].update(patch)
    response = await api.http.post(HYPERVISORS, json=body)
    assert response.status_code == 422, response.text
    assert message in response.json()["message"]


@BOOKING_CLUSTERS
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


# Objects of either operator CRD, on a cluster serving each CRD.

TAINTED = {
    "type": "Tainted",
    "status": "True",
    "reason": "Kubectl",
    "message": "⚠️",
    "lastTransitionTime": "2026-01-01T00:00:00Z",
}


def _operator_object(name: str, bookings: list[Any] | None) -> dict[str, Any]:
    """What the released operator writes, with spec.bookings if ``bookings`` is a list."""
    body = hypervisor(name, bookings=bookings)
    body["spec"] |= {"version": "1877.5", "skipTests": True}
    body["status"] |= {
        "allocation": {"cpu": 100, "memory": "64Gi"},
        "evicted": True,
        "capabilities": {"cpuArch": "x86_64", "cpus": 64, "memory": "256Gi"},
        "updateStatus": {"inProgress": True, "installed": "1877.4", "retry": 3},
        "domainCapabilities": {"arch": "x86_64", "supportedFeatures": ["sev"]},
        "specHash": "0f3a",
        "conditions": [TAINTED],
    }
    return body


@pytest.mark.parametrize("written", ["released", "bookings"])
async def test_objects_of_either_operator_crd_are_read_from_every_cluster(
    any_cluster: ControlPlane,
    any_api: HypervisorAPI,
    start_informer: StartInformer,
    written: str,
) -> None:
    """A cluster whose CRD has no spec.bookings prunes them: the host is then untracked."""
    informer, store = await start_informer(any_cluster)
    await eventually(lambda: store.ready, 10)
    bookings = [consumer(UUID, cpu=8), RESERVATION] if written == "bookings" else None
    created = await any_api.create(_operator_object("node-operator", bookings))
    version = created["metadata"]["resourceVersion"]
    await eventually(
        lambda: (
            (h := store.snapshot.by_name.get("node-operator")) is not None
            and h.resource_version == version
        ),
        5,
    )
    h = store.snapshot.by_name["node-operator"]
    tracked = written == "bookings" and serves_bookings(any_cluster)
    assert h.bookings_tracked is tracked
    assert len(h.bookings) == (2 if tracked else 0)
    assert (h.evicted, h.taint, h.tainted, h.spec_hash) == (True, "⚠️", True, "0f3a")
    assert (h.target_version, h.skip_tests) == ("1877.5", True)
    assert h.capabilities == Capabilities("x86_64", Decimal(64), Decimal(256 * 2**30))
    assert h.update_status == UpdateStatus(in_progress=True, installed="1877.4", retry=3)
    assert h.domain_capabilities is not None
    assert h.domain_capabilities.supported_features == ("sev",)
    assert h.warnings == ()
    cpu = h.resources["cpu"]
    assert (cpu.capacity, cpu.allocated, cpu.unallocated) == (128, 100, 28)
    if tracked:
        assert (cpu.booked, cpu.free) == (8, 120)
    assert informer.status.parse_failures == 0
    await assert_converges(store, any_api, within=5)
