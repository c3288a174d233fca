"""Parsing Eviction objects: the state, the outstanding figures, and no crash on bad input."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from gateway.domain.evictions import EvictionState, parse_eviction
from gateway.domain.parse import ParseError
from gateway.domain.records import Condition
from tests.objects import EVICTION_CRD, crd_schema, eviction, in_schema, recorded

MiB = 2**20


def full_object() -> dict[str, Any]:
    """An Eviction as the operator writes it, every field the gateway reads set."""
    obj = eviction(
        "evict-node-7",
        "node-7",
        "decommission",
        state="Running",
        status={
            "outstandingRamMb": 65536,
            "outstandingInstances": ["3f1c...a", "9b2d...c"],
            "hypervisorServiceId": "svc-7",
            "conditions": [
                {
                    "type": "HypervisorDisabled",
                    "status": "True",
                    "reason": "Disabled",
                    "message": "compute service disabled",
                    "lastTransitionTime": "2026-12-01T09:00:00Z",
                }
            ],
        },
    )
    obj["metadata"].update(
        uid="uid-e7", resourceVersion="42", creationTimestamp="2026-12-01T08:59:00Z"
    )
    return obj


def test_every_field() -> None:
    e = parse_eviction(full_object())
    assert (e.name, e.uid, e.resource_version, e.created) == (
        "evict-node-7",
        "uid-e7",
        "42",
        "2026-12-01T08:59:00Z",
    )
    assert (e.hypervisor, e.reason, e.state) == ("node-7", "decommission", EvictionState.RUNNING)
    assert e.outstanding_ram == Decimal(65536 * MiB)  # 64 GiB, in bytes
    assert e.outstanding_instances == ("3f1c...a", "9b2d...c")
    assert e.hypervisor_service_id == "svc-7"
    assert [c.type for c in e.conditions] == ["HypervisorDisabled", "Evicting"]
    assert e.conditions[1] == Condition(
        "Evicting", "True", "Running", "eviction running", "2026-12-01T10:00:00Z"
    )
    assert e.warnings == ()


@pytest.mark.parametrize(
    ("reason", "state"),
    [
        ("Running", EvictionState.RUNNING),
        ("Failed", EvictionState.FAILED),
        ("Succeeded", EvictionState.SUCCEEDED),
    ],
)
def test_the_state_is_the_evicting_conditions_reason(reason: str, state: EvictionState) -> None:
    e = parse_eviction(eviction("e", "node-1", state=reason))
    assert e.state is state
    assert e.warnings == ()


def test_without_an_evicting_condition_it_is_pending() -> None:
    other = {"type": "PreflightChecksSucceeded", "status": "True", "reason": "Passed"}
    e = parse_eviction(eviction("e", "node-1", status={"conditions": [other]}))
    assert e.state is EvictionState.PENDING
    assert parse_eviction(eviction("e", "node-1")).state is EvictionState.PENDING


def test_an_unknown_reason_is_pending_with_a_warning() -> None:
    e = parse_eviction(eviction("e", "node-1", state="Paused"))
    assert e.state is EvictionState.PENDING
    assert e.warnings == (
        "status.conditions[Evicting].reason: 'Paused' is not Running, Failed or Succeeded; "
        "read as pending",
    )


def test_outstanding_ram_is_unknown_without_a_status_and_zero_by_default() -> None:
    # The CRD defaults outstandingRamMb to 0 in any status the operator writes.
    assert parse_eviction(eviction("e", "node-1")).outstanding_ram is None
    assert parse_eviction(eviction("e", "node-1", status={})).outstanding_ram == 0


@pytest.mark.parametrize(
    ("value", "warning"),
    [
        ("64Gi", "status.outstandingRamMb: expected an integer, got '64Gi'; ignored"),
        (-1, "status.outstandingRamMb: negative amount -1; unknown"),
    ],
)
def test_a_bad_outstanding_ram_is_unknown_with_a_warning(value: Any, warning: str) -> None:
    e = parse_eviction(eviction("e", "node-1", status={"outstandingRamMb": value}))
    assert e.outstanding_ram is None
    assert e.warnings == (warning,)


def test_bad_types_are_warnings_never_failures() -> None:
    obj = eviction("e", "node-1")
    obj["spec"] = {"hypervisor": 7, "reason": ["x"]}
    obj["status"] = {"outstandingInstances": "abc", "conditions": {"type": "Evicting"}}
    e = parse_eviction(obj)
    assert (e.hypervisor, e.reason, e.outstanding_instances) == (None, None, ())
    assert e.state is EvictionState.PENDING
    assert len(e.warnings) == 5, e.warnings
    assert "spec.hypervisor: no host named: the eviction belongs to none" in e.warnings


@pytest.mark.parametrize("obj", [None, [], {"metadata": {}}, {"metadata": {"name": ""}}])
def test_an_object_without_a_name_cannot_be_represented(obj: Any) -> None:
    with pytest.raises(ParseError):
        parse_eviction(obj)


def test_equal_objects_make_equal_records() -> None:
    """The store keeps a record whose object did not change: equality says so."""
    assert parse_eviction(full_object()) == parse_eviction(full_object())
    changed = full_object()
    changed["status"]["outstandingRamMb"] = 0
    assert parse_eviction(changed) != parse_eviction(full_object())


SCHEMA = crd_schema(EVICTION_CRD)


@pytest.mark.skipif(SCHEMA is None, reason="operator CRD reference not present")
def test_every_field_the_parser_reads_is_in_the_released_schema() -> None:
    assert SCHEMA is not None
    seen: set[str] = set()
    assert parse_eviction(recorded(full_object(), "", seen)).warnings == ()
    read = {p for p in seen if not p.startswith(("metadata.", "apiVersion", "kind"))}
    assert {
        "spec.hypervisor",
        "spec.reason",
        "status.outstandingRamMb",
        "status.outstandingInstances",
        "status.hypervisorServiceId",
        "status.conditions[].reason",
    } <= read
    assert sorted(p for p in read if not in_schema(SCHEMA, p)) == []
