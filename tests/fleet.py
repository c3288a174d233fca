"""A small, hand-made fleet whose every figure is worked out in the comments."""

from __future__ import annotations

import copy
from typing import Any

from tests.objects import consumer, hypervisor

C1 = "11111111-1111-1111-1111-111111111111"
C2 = "22222222-2222-2222-2222-222222222222"
C3 = "33333333-3333-3333-3333-333333333333"  # live migration: booked on node-a and node-b
C4 = "44444444-4444-4444-4444-444444444444"
C5 = "55555555-5555-5555-5555-555555555555"


def _consumer(uuid: str, project: str, **resources: Any) -> dict[str, Any]:
    return consumer(
        uuid,
        resources,
        projectID=project,
        userID="u1",
        consumerType="INSTANCE",
        consumerGeneration=1,
    )


def _ready(status: str) -> list[dict[str, str]]:
    return [
        {
            "type": "Ready",
            "status": status,
            "reason": "Ok" if status == "True" else "Down",
            "message": "",
            "lastTransitionTime": "2026-11-01T00:00:00Z",
        }
    ]


def _hypervisor(
    name: str, zone: str, bb: str, spec: dict[str, Any], status: dict[str, Any] | None
) -> dict[str, Any]:
    labels = {
        "topology.kubernetes.io/zone": zone,
        "topology.kubernetes.io/region": "qa-de-1",
        "kubernetes.metal.cloud.sap/bb": bb,
    }
    return hypervisor(name, labels=labels, spec=spec, status=status, resource_version="1")


def objects() -> list[dict[str, Any]]:
    """A fresh copy of the fleet (tests may change it)."""
    return copy.deepcopy(_FLEET)


_FLEET = [
    # cpu: capacity floor((256 - 4) * 2) = 504, booked 16+8+4 = 28, free 476
    # memory: capacity 1Ti - 8Gi = 1090921693184, booked 56Gi = 60129542144,
    #         free 1030792151040
    _hypervisor(
        "node-a",
        "qa-de-1a",
        "bb01",
        {
            "overcommit": {"cpu": 2.0},
            "groups": [
                {"aggregate": {"name": "agg-1", "uuid": "a1", "metadata": {"k": "v"}}},
                {"trait": {"name": "CUSTOM_X"}},
            ],
            "bookings": [
                {
                    "reservation": {
                        "name": "nova-reserved",
                        "resources": {"cpu": "4", "memory": "8Gi"},
                    }
                },
                _consumer(C1, "p1", cpu=16, memory="32Gi"),
                _consumer(C2, "p2", cpu="8", memory="16Gi"),
                _consumer(C3, "p1", cpu="4", memory="8Gi"),
            ],
        },
        {
            "capacity": {"cpu": "256", "memory": "1Ti"},
            "allocation": {"cpu": "30", "memory": "64Gi"},
            "hypervisorId": "aaaaaaaa-0000-0000-0000-000000000001",
            "conditions": _ready("True"),
            "instances": [
                {"id": C1, "name": "i1", "active": True},
                {"id": C2, "name": "i2", "active": True},
                {"id": "99999999-9999-9999-9999-999999999999", "name": "ghost", "active": False},
            ],
            "numInstances": 3,
        },
    ),
    # cpu: capacity 64, booked 4+64 = 68, free -4 (over-subscribed)
    # memory: capacity 512Gi = 549755813888, booked 8Gi+128Gi = 146028888064
    _hypervisor(
        "node-b",
        "qa-de-1b",
        "bb02",
        {
            "aggregates": ["agg-2"],
            "customTraits": ["CUSTOM_Y"],
            "bookings": [
                _consumer(C3, "p1", cpu="4", memory="8Gi"),
                _consumer(C4, "p3", cpu="64", memory="128Gi"),
            ],
        },
        {
            "capacity": {"cpu": 64, "memory": "512Gi"},
            "aggregates": [{"name": "agg-1", "uuid": "a1"}],
            "traits": ["COMPUTE_STATUS_ENABLED"],
            "conditions": _ready("True"),
            "numInstances": 0,
        },
    ),
    # no status yet: capacity unknown, booked 2 cpu
    _hypervisor(
        "node-c",
        "qa-de-1a",
        "bb01",
        {
            "bookings": [_consumer(C5, "p2", cpu="2", memory="4Gi")],
        },
        None,
    ),
    # bookings not tracked (booked, reserved, free unknown); in maintenance, not ready
    # cpu: capacity 128, allocated 100, unallocated = available 28 on basis ALLOCATION
    # memory: capacity 256Gi, allocated 64Gi, available 192Gi = 206158430208
    _hypervisor(
        "node-d",
        "qa-de-1b",
        "bb02",
        {
            "maintenance": "manual",
            "maintenanceReason": "disk swap",
        },
        {
            "capacity": {"cpu": "128", "memory": "256Gi"},
            "allocation": {"cpu": "100", "memory": "64Gi"},
            "conditions": _ready("False"),
            "numInstances": 0,
        },
    ),
]
