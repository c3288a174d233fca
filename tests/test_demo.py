"""The demo fleet: deterministic, valid against the CRD, and as awkward as a real one."""

from __future__ import annotations

import asyncio
import copy
import json
import re
import time
from collections import Counter
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.cli import main
from gateway.domain.flavors import load_catalog
from gateway.domain.records import Origin
from gateway.sources.demo.plan import EXAMPLE_CONSUMER, TRACKED, Fleet, Host
from gateway.sources.demo.render import HANA_TRAIT
from gateway.sources.demo.source import DemoSource, generate, generate_fleet
from gateway.store.snapshot import Snapshot
from gateway.store.store import Store
from gateway.store.views import Views
from tests.objects import reference_dir
from tests.support import eventually

ROOT = Path(__file__).resolve().parents[1]
UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
DATE_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


@pytest.fixture(scope="module")
def fleet() -> list[dict[str, Any]]:
    return generate()


@pytest.fixture(scope="module")
def plan() -> dict[str, Host]:
    """The default fleet's hosts as planned, by name."""
    return {h.name: h for h in Fleet(200, 0, None).hosts()}


@pytest.fixture(scope="module")
def snapshot(fleet: list[dict[str, Any]]) -> Snapshot:
    store = Store()
    store.replace(copy.deepcopy(fleet))
    assert store.rejected == {}
    return store.snapshot


# Determinism and shape


def test_same_arguments_give_the_same_fleet() -> None:
    assert generate(300, seed=7) == generate(300, seed=7)
    assert generate(300, seed=7, bookings_per_host=12) == generate(
        300, seed=7, bookings_per_host=12
    )


def test_other_seeds_give_other_fleets() -> None:
    assert generate(50, seed=1) != generate(50, seed=2)


@pytest.mark.parametrize("size", [0, 1, 2, 7, 20, 200, 1000])
def test_size_is_exact_and_names_are_unique(size: int) -> None:
    names = [obj["metadata"]["name"] for obj in generate(size)]
    assert len(names) == size
    assert len(set(names)) == size


def test_negative_size_is_refused() -> None:
    with pytest.raises(ValueError, match="-1"):
        generate(-1)


def test_objects_are_plain_json_and_share_no_mutable_parts(fleet: list[dict[str, Any]]) -> None:
    assert json.loads(json.dumps(fleet)) == fleet
    seen: dict[int, str] = {}
    for obj in fleet:
        for part in _containers(obj):
            assert id(part) not in seen, (
                f"{obj['metadata']['name']} shares data with {seen[id(part)]}"
            )
            seen[id(part)] = obj["metadata"]["name"]


def test_objects_leave_cluster_assigned_metadata_out(fleet: list[dict[str, Any]]) -> None:
    for obj in fleet:
        assert obj["apiVersion"] == "kvm.cloud.sap/v1"
        assert obj["kind"] == "Hypervisor"
        assert set(obj["metadata"]) == {"name", "labels"}


def test_benchmark_fleets_are_fast_and_have_the_asked_bookings() -> None:
    started = time.perf_counter()
    objects = generate(2000, seed=3, bookings_per_host=40)
    elapsed = time.perf_counter() - started
    # About 0.35 s on a small machine; a generous bound that still catches a blow-up.
    assert elapsed < 5, f"2000 hosts with 40 bookings took {elapsed:.1f}s"
    counts = [
        sum("consumer" in b for b in obj["spec"]["bookings"])
        for obj in objects
        if "bookings" in obj["spec"] and "status" in obj
    ]
    assert 37 <= sum(counts) / len(counts) <= 43


# Validity against the CRD


def _crd_schemas() -> Iterator[Any]:
    """The project's own manifests and, when present, the operator's reference CRD."""
    reference = reference_dir()
    files = sorted(ROOT.glob("deploy/**/*.yaml"))
    files += sorted(reference.glob("*.yaml")) if reference else []
    for path in files:
        for doc in yaml.safe_load_all(path.read_text()):
            if (
                isinstance(doc, dict)
                and doc.get("kind") == "CustomResourceDefinition"
                and doc["metadata"]["name"] == "hypervisors.kvm.cloud.sap"
            ):
                for version in doc["spec"]["versions"]:
                    if version["name"] == "v1":
                        yield pytest.param(
                            version["schema"]["openAPIV3Schema"],
                            id=str(path.relative_to(path.parents[1])),
                        )


CRD_SCHEMAS = list(_crd_schemas())


@pytest.mark.skipif(not CRD_SCHEMAS, reason="no Hypervisor CRD manifest found (HGW_REFERENCE_DIR)")
@pytest.mark.parametrize("schema", CRD_SCHEMAS)
def test_every_object_passes_the_crd_schema(schema: Any, fleet: list[dict[str, Any]]) -> None:
    """A CRD without spec.bookings (the released one) is checked on today's fleet."""
    with_bookings = "bookings" in schema["properties"]["spec"]["properties"]
    objects = fleet if with_bookings else generate(tracked=0)
    for obj in objects + generate(100, seed=5, bookings_per_host=30, tracked=int(with_bookings)):
        errors = _validate(schema, obj, "")
        assert errors == [], f"{obj['metadata']['name']}: {errors[:5]}"
    reported = (o for o in objects if "status" in o and ("bookings" in o["spec"]) == with_bookings)
    broken = copy.deepcopy(next(reported))
    broken["spec"]["maintenance"] = "sometimes"
    broken["status"]["capabilities"]["memory"] = "16 GiB"
    del broken["spec"]["reboot"]
    expected = [".spec: reboot is required"]
    if with_bookings:
        broken["spec"]["bookings"][0]["reservation"]["resources"]["memory"] = "16 GiB"
        expected.append(
            ".spec.bookings[0].reservation.resources.memory: '16 GiB' does not match the pattern"
        )
    assert _validate(schema, broken, "") == [
        *expected,
        ".spec.maintenance: 'sometimes' not in enum",
        ".status.capabilities.memory: '16 GiB' does not match the pattern",
    ]


def test_the_validator_catches_what_the_api_server_would_reject(
    fleet: list[dict[str, Any]],
) -> None:
    schema = {
        "type": "object",
        "required": ["spec"],
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "mode": {"type": "string", "enum": ["", "manual"]},
                    "amounts": {
                        "type": "object",
                        "minProperties": 1,
                        "additionalProperties": {
                            "anyOf": [{"type": "integer"}, {"type": "string"}],
                            "x-kubernetes-int-or-string": True,
                            "pattern": "^[0-9]+(Gi)?$",
                        },
                    },
                },
            }
        },
    }
    good = {"spec": {"mode": "manual", "amounts": {"cpu": 4, "memory": "4Gi"}}}
    assert _validate(schema, good, "") == []
    assert _validate(schema, {}, "") == [": spec is required"]
    assert _validate(schema, {"spec": {"mode": "auto"}}, "") == [".spec.mode: 'auto' not in enum"]
    assert _validate(schema, {"spec": {"amounts": {}}}, "") == [".spec.amounts: fewer than 1 keys"]
    assert _validate(schema, {"spec": {"amounts": {"m": "4 Gi"}}}, "") == [
        ".spec.amounts.m: '4 Gi' does not match the pattern"
    ]
    assert _validate(schema, {"spec": {"extra": 1}}, "") == [".spec.extra: unknown field (pruned)"]
    assert _validate(schema, {"spec": {"amounts": {"m": 1.5}}}, "") == [
        ".spec.amounts.m: 1.5 is not integer or string"
    ]


def _validate(schema: dict[str, Any], value: Any, path: str) -> list[str]:
    """The parts of Kubernetes' structural-schema validation the fleet can trip over."""
    if "anyOf" in schema:
        kinds = [s["type"] for s in schema["anyOf"]]
        if not any(_is(kind, value) for kind in kinds):
            return [f"{path}: {value!r} is not {' or '.join(kinds)}"]
    elif "type" in schema and not _is(schema["type"], value):
        return [f"{path}: {value!r} is not {schema['type']}"]
    errors: list[str] = []
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {value!r} not in enum")
    if isinstance(value, str):
        if "pattern" in schema and not re.search(schema["pattern"], value):
            errors.append(f"{path}: {value!r} does not match the pattern")
        if len(value) < schema.get("minLength", 0) or len(value) > schema.get("maxLength", 1e9):
            errors.append(f"{path}: length {len(value)} out of bounds")
        if schema.get("format") == "date-time" and not DATE_TIME.match(value):
            errors.append(f"{path}: {value!r} is not a date-time")
    if isinstance(value, int) and value < schema.get("minimum", value):
        errors.append(f"{path}: {value} is below the minimum")
    if isinstance(value, list):
        for i, item in enumerate(value):
            errors += _validate(schema.get("items", {}), item, f"{path}[{i}]")
    if isinstance(value, dict):
        errors += [
            f"{path}: {key} is required" for key in schema.get("required", ()) if key not in value
        ]
        if len(value) < schema.get("minProperties", 0):
            errors.append(f"{path}: fewer than {schema['minProperties']} keys")
        properties = schema.get("properties")
        for key, item in value.items():
            if properties is not None and key in properties:
                errors += _validate(properties[key], item, f"{path}.{key}")
            elif "additionalProperties" in schema:
                errors += _validate(schema["additionalProperties"], item, f"{path}.{key}")
            elif properties is not None:
                errors.append(f"{path}.{key}: unknown field (pruned)")
    return errors


def _is(kind: str, value: Any) -> bool:
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    python = {"string": str, "boolean": bool, "object": dict, "array": list}[kind]
    return isinstance(value, python)


def test_the_crd_rules_hold(fleet: list[dict[str, Any]]) -> None:
    """The CEL rules and metadata checks, written out by hand."""
    for obj in fleet:
        name, spec = obj["metadata"]["name"], obj["spec"]
        assert DNS_SUBDOMAIN.match(name) and len(name) <= 253
        for key, label in obj["metadata"]["labels"].items():
            assert len(label) <= 63 and LABEL_VALUE.match(label), (name, key)
        for booking in spec.get("bookings", []):
            assert ("consumer" in booking) + ("reservation" in booking) == 1, name
            body = booking.get("consumer") or booking["reservation"]
            assert len(body["resources"]) >= 1
            if "consumer" in booking:
                assert UUID.match(body["uuid"])
            else:
                assert body["name"]
        for group in spec["groups"]:
            assert ("trait" in group) + ("aggregate" in group) == 1, name
            if "aggregate" in group:
                assert UUID.match(group["aggregate"]["uuid"]) and group["aggregate"]["name"]
        assert all(ratio >= 1.0 for ratio in spec["overcommit"].values())
        if spec.get("maintenance") == "manual":
            assert spec.get("maintenanceReason"), name
        for condition in obj.get("status", {}).get("conditions", []):
            assert condition["status"] in ("True", "False", "Unknown")
            assert re.match(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$", condition["reason"])


# Realism, counted in the parsed store


def test_only_the_planted_duplicate_warns(snapshot: Snapshot) -> None:
    warnings = [w for h in snapshot.ordered for w in h.warnings]
    assert len(warnings) == 1
    assert "booked more than once here" in warnings[0]


def test_fleet_spans_regions_zones_and_building_blocks(snapshot: Snapshot) -> None:
    hosts = snapshot.ordered
    assert {h.region for h in hosts} == {"qa-de-1", "qa-de-2", "qa-nl-1"}
    assert {h.zone for h in hosts} >= {"qa-de-1a", "qa-de-1b", "qa-de-1c", "qa-de-1d"}
    assert len({h.building_block for h in hosts}) >= 8
    assert all(h.worker_group for h in hosts)
    assert len({a.name for h in hosts for a in h.aggregates}) >= 12
    assert "hana_exclusive" in snapshot.by_aggregate
    assert {"CUSTOM_HANA_EXCLUSIVE_HOST", "COMPUTE_STATUS_DISABLED"} <= set(snapshot.by_trait)
    sources = {(t.name, t.source.value) for h in hosts for t in h.traits}
    assert ("CUSTOM_HANA_EXCLUSIVE_HOST", "spec.groups") in sources
    assert ("CUSTOM_HANA_EXCLUSIVE_HOST", "status") in sources
    assert any(source == "spec" for _, source in sources)


def test_hardware_and_overcommit_are_realistic(
    fleet: list[dict[str, Any]], snapshot: Snapshot
) -> None:
    with_status = [h for h in snapshot.ordered if h.has_status]
    # A pinned host reports its dedicated cores as PCPU, the shared ones as cpu.
    cores = {int(h.capacity["cpu"] + h.capacity.get("PCPU", 0)) for h in with_status}
    memory = [h.capacity["memory"] for h in with_status]
    assert min(cores) >= 64 and max(cores) <= 256 and len(cores) >= 4
    assert all(512 * 2**30 * 0.95 <= m <= 4 * 2**40 for m in memory)
    written = [obj["status"]["capacity"]["memory"] for obj in fleet if "status" in obj]
    assert any(isinstance(m, int) for m in written)
    assert any(isinstance(m, str) and m.endswith("Gi") for m in written)
    assert any(isinstance(m, str) and m.endswith("Ki") for m in written)
    assert any(isinstance(m, str) and m.isdigit() for m in written)
    ratios = Counter(str(h.overcommit.get("cpu")) for h in snapshot.ordered)
    assert {"1.0", "2.0", "3.0"} <= set(ratios)
    assert {str(h.overcommit.get("memory")) for h in snapshot.ordered} == {"1.0"}
    assert sum(1 for h in with_status if h.effective_capacity) > 0.9 * len(with_status)
    assert any(not h.effective_capacity for h in with_status)  # older agents
    assert all(len(h.cells) in (2, 4) for h in with_status)


def test_bookings_and_consumers(snapshot: Snapshot) -> None:
    tracked = [h for h in snapshot.ordered if h.bookings_tracked]
    assert all(r.name == "nova-reserved" for h in tracked for r in h.reservations)
    assert sum(1 for h in tracked if h.reservations) == len(tracked)
    assert len(Views().consumers(snapshot)) >= 2000
    consumers = [c for h in tracked for c in h.consumers]
    assert {c.consumer_type for c in consumers} == {"INSTANCE", "MIGRATION"}
    assert all(re.fullmatch(r"[0-9a-f]{32}", c.project_id or "") for c in consumers)
    assert all(re.fullmatch(r"[0-9a-f]{32}", c.user_id or "") for c in consumers)
    assert any(c.consumer_generation is None for c in consumers)
    assert len({c.project_id for c in consumers}) >= 50
    # A pinned instance books its vCPUs as PCPU.
    vcpus = [c.resources.get("cpu", Decimal(0)) + c.resources.get("PCPU", 0) for c in consumers]
    assert {2, 4, 8, 16, 32} <= set(vcpus)
    assert all(
        c.resources["memory"] >= n * 2 * 2**30 for c, n in zip(consumers, vcpus, strict=True)
    )


def test_the_awkward_cases_are_all_there(snapshot: Snapshot) -> None:
    hosts = snapshot.ordered
    migrating = [
        u for u, b in Views().consumers(snapshot).items() if len({x.hypervisor for x in b}) > 1
    ]
    assert len(migrating) >= 2
    assert sum(1 for h in hosts for c in h.consumers if c.consumer_type == "MIGRATION") >= 2
    assert 2 <= sum(not h.has_status for h in hosts) <= 10
    new = [h for h in hosts if not h.has_status]
    assert any(h.bookings_tracked for h in new) and not all(h.bookings_tracked for h in new)
    # A new host's reservation is known, its capacity is not.
    reserved_only = next(h for h in new if h.bookings_tracked)
    assert reserved_only.resources["cpu"].reserved > 0
    assert reserved_only.resources["cpu"].capacity is None
    assert 0.35 * len(hosts) <= sum(not h.bookings_tracked for h in hosts) <= 0.45 * len(hosts)
    assert 2 <= sum(h.overcommitted is True for h in hosts) <= 10
    assert 3 <= sum(h.maintenance is not None for h in hosts) <= 10
    assert 5 <= sum(not h.ready for h in hosts) <= 30
    assert any(not h.hypervisor_id for h in hosts if h.has_status)  # still onboarding
    reasons = {h.ready_reason for h in hosts if h.has_status and not h.ready}
    assert {"Maintenance", "LibVirtConnectionFailed", "Onboarding"} <= reasons


# A region's special hosts: isolated HANA, pinned cores, kept for a few projects


def test_hana_hosts_carry_the_trait_their_aggregate_isolates(
    plan: dict[str, Host], snapshot: Snapshot
) -> None:
    hana = {name for name, h in plan.items() if h.hardware.hana}
    assert hana and {h.name for h in snapshot.by_trait[HANA_TRAIT]} == hana
    assert {h.name for h in snapshot.by_aggregate["hana_exclusive"]} == hana
    isolating = {
        (a.name, tuple(a.metadata.items()))
        for h in snapshot.ordered
        for a in h.aggregates
        if any(key.startswith("trait:") for key in a.metadata)
    }
    assert isolating == {("hana_exclusive", ((f"trait:{HANA_TRAIT}", "required"),))}
    # Isolated by the trait, not by project: every project's HANA flavor may land there.
    assert all(snapshot.by_name[name].allowed_projects == () for name in hana)
    required = {
        (flavor.name, key.removeprefix("trait:"))
        for flavor in load_catalog(None).flavors
        for key, value in flavor.extra_specs.items()
        if key.startswith("trait:") and value == "required"
    }
    assert required == {("hana_c32_m512", HANA_TRAIT), ("hana_c64_m1024", HANA_TRAIT)}


def test_pinned_hosts_report_their_dedicated_cores_as_pcpu(
    plan: dict[str, Host], snapshot: Snapshot
) -> None:
    pinned = {name for name, h in plan.items() if h.dedicated}
    reporting = {h.name for h in snapshot.ordered if "PCPU" in h.capacity}
    assert reporting and reporting == {n for n in pinned if plan[n].role != "new"}
    tracked_pcpu = Decimal(0)
    for name in reporting:
        h, p = snapshot.by_name[name], plan[name]
        assert h.capacity["PCPU"] == p.dedicated and h.capacity["cpu"] == p.shared
        assert h.capabilities and h.capabilities.cpus == p.hardware.cores
        assert h.overcommit.get("PCPU") is None  # Placement never overcommits PCPU
        assert sum(c.capacity["PCPU"] for c in h.cells) == p.dedicated
        domains = [c for c in p.consumers if c.domain]
        assert h.allocation["PCPU"] == sum(c.flavor.vcpus for c in domains if c.flavor.pinned)
        assert h.allocation["cpu"] == sum(c.flavor.vcpus for c in domains if not c.flavor.pinned)
        if h.bookings_tracked:
            booked = sum(c.flavor.vcpus for c in p.consumers if c.booked and c.flavor.pinned)
            assert h.resources["PCPU"].booked == booked
            assert h.resources["PCPU"].capacity == p.dedicated
            tracked_pcpu += booked
    assert tracked_pcpu > 0
    assert {h.name for h in snapshot.by_aggregate["pinned_cpus"]} == pinned
    metadata = {
        tuple(a.metadata.items())
        for h in snapshot.by_aggregate["pinned_cpus"]
        for a in h.aggregates
        if a.name == "pinned_cpus" and a.source is not Origin.SPEC  # spec.aggregates: names
    }
    assert metadata == {(("pinned", "true"),)}
    # The pinned flavors ask for that aggregate, and for dedicated cores.
    asking = [
        f.name
        for f in load_catalog(None).flavors
        if f.extra_specs.get("aggregate_instance_extra_specs:pinned") == "true"
    ]
    assert asking == ["p_c2_m8", "p_c4_m16", "p_c8_m32", "p_c16_m64", "p_c32_m128"]


def test_one_building_block_is_kept_for_a_few_projects(
    plan: dict[str, Host], snapshot: Snapshot
) -> None:
    restricted = {name for name, h in plan.items() if h.allowed}
    assert len({plan[name].bb for name in restricted}) == 1
    assert {h.name for h in snapshot.ordered if h.allowed_projects} == restricted
    (projects,) = {snapshot.by_name[name].allowed_projects for name in restricted}
    assert len(projects) == 2
    consumers = [c for name in restricted for c in snapshot.by_name[name].consumers]
    assert consumers and {c.project_id for c in consumers} <= set(projects)
    metadata = {
        tuple(a.metadata.items())
        for name in restricted
        for a in snapshot.by_name[name].aggregates
        if a.name == plan[name].bb and a.source is not Origin.SPEC
    }
    assert metadata == {(("filter_tenant_id", ",".join(projects)),)}


def test_the_untracked_hosts_domains_are_sized_as_their_allocation() -> None:
    """What the churn needs to change an untracked host: each domain's size, which
    adds up to the host's cpu allocation (memory has libvirt's overhead on top)."""
    fleet = generate_fleet(200, 0, None, TRACKED)
    assert fleet.objects == generate()
    untracked = [o for o in fleet.objects if "bookings" not in o["spec"] and "status" in o]
    assert untracked
    for obj in untracked:
        status = obj["status"]
        sized = [i for i in status["instances"] if i["id"] in fleet.domains]
        assert {i["name"] for i in status["instances"] if i not in sized} <= {"instance-orphan"}
        for resource in ("cpu", "PCPU"):
            total = sum(int(fleet.domains[i["id"]].get(resource, 0)) for i in sized)
            assert total == int(status["allocation"].get(resource, 0)), obj["metadata"]["name"]


def test_status_drifts_a_little_from_the_bookings(snapshot: Snapshot) -> None:
    compared = [h for h in snapshot.ordered if h.drift is not None and h.consumers]
    drifting = [
        h
        for h in compared
        if h.drift and (h.drift.booked_not_running or h.drift.running_not_booked)
    ]
    assert 0 < len(drifting) < len(compared) / 2
    assert any(h.drift and h.drift.running_not_booked for h in compared)
    exact = close = 0
    for h in compared:
        booked, allocated = h.resources["memory"].booked, h.resources["memory"].allocated
        assert allocated is not None
        exact += booked == allocated
        close += abs(allocated - booked) <= booked / 4
    assert exact == 0  # libvirt counts each domain's overhead
    assert close > 0.8 * len(compared)
    for h in snapshot.ordered:
        assert h.num_instances == (len(h.instances) if h.has_status else None)
        if h.has_status:
            assert sum(c.capacity["cpu"] for c in h.cells) == h.capacity["cpu"]


# The source


async def test_demo_source_loads_once_and_keeps_serving() -> None:
    store = Store()
    source = DemoSource(size=40, seed=3)
    task = asyncio.create_task(source.run(store))
    try:
        await eventually(lambda: store.ready)
        assert source.status.synced and source.status.error is None
        assert source.status.confirmed_at is not None
        assert sorted(store.snapshot.by_name) == sorted(
            o["metadata"]["name"] for o in generate(40, 3)
        )
        # Ready, the source has yielded only to wait for its next confirmation: a run
        # that returned after the load would be done by now.
        assert not task.done()
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


def _containers(value: Any) -> Iterator[Any]:
    if isinstance(value, dict | list):
        yield value
        for item in value.values() if isinstance(value, dict) else value:
            yield from _containers(item)


# A rollout of spec.bookings in progress


def _parsed(objects: list[dict[str, Any]]) -> Snapshot:
    store = Store()
    store.replace(objects)
    return store.snapshot


@pytest.mark.parametrize(("share", "low", "high"), [(0, 0, 0), (0.25, 44, 56), (1, 200, 200)])
def test_the_tracked_share_carries_spec_bookings(share: float, low: int, high: int) -> None:
    objects = generate(tracked=share)
    assert low <= sum("bookings" in obj["spec"] for obj in objects) <= high


def test_every_kind_of_host_is_found_tracked_and_untracked(snapshot: Snapshot) -> None:
    untracked = [h for h in snapshot.ordered if h.has_status and not h.bookings_tracked]
    assert untracked and all(h.allocation and not h.bookings for h in untracked)
    # Over-subscribed in Placement's view where tracked, in libvirt's where not.
    assert sum(h.overcommitted is True for h in snapshot.ordered if h.bookings_tracked) >= 2
    cpu = [h.resources["cpu"] for h in untracked]
    over = [r for r in cpu if r.unallocated is not None and r.unallocated < 0]
    nearly_full = [
        r for r in cpu if r.capacity and r.allocated and r.allocated >= r.capacity * 9 // 10
    ]
    assert len(over) >= 2 and len(nearly_full) >= len(over) + 2
    assert all(r.allocated is not None and r.allocated < r.capacity for r in cpu if r not in over)


def test_tracking_changes_the_bookings_not_the_hosts() -> None:
    def hosts(share: float) -> list[tuple[Any, ...]]:
        return [
            (
                obj["metadata"],
                obj["spec"]["overcommit"],
                "status" in obj and obj["status"]["capacity"]["cpu"],
            )
            for obj in generate(60, seed=3, tracked=share)
        ]

    assert hosts(0) == hosts(0.6) == hosts(1)
    assert generate(60, seed=3, tracked=0.6) == generate(60, seed=3, tracked=0.6)


@pytest.mark.parametrize("share", [-0.1, 1.5, float("nan")])
def test_a_tracked_share_outside_0_to_1_is_refused(share: float) -> None:
    with pytest.raises(ValueError, match="--demo-tracked"):
        generate(10, tracked=share)
    with pytest.raises(ValueError, match="--demo-tracked"):
        DemoSource(tracked=share)


def test_the_flag_refuses_a_share_outside_0_to_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--demo", "--demo-tracked", "1.01"]) == 2
    assert "--demo-tracked) must be from 0 to 1, got 1.01" in capsys.readouterr().err


def test_the_readme_consumer_migrates_between_two_tracked_hosts(snapshot: Snapshot) -> None:
    assert EXAMPLE_CONSUMER in (ROOT / "README.md").read_text()
    bookings = Views().consumers(snapshot)[EXAMPLE_CONSUMER]
    assert len({b.hypervisor for b in bookings}) == 2
    assert all(snapshot.by_name[b.hypervisor].bookings_tracked for b in bookings)


def test_hosts_are_evicted_tainted_and_updated_as_the_operator_reports(
    snapshot: Snapshot,
) -> None:
    hosts = [h for h in snapshot.ordered if h.has_status]
    evicted = [h for h in hosts if h.evicted]
    assert len(evicted) >= 2 and all(h.maintenance and not h.instances for h in evicted)
    assert any(h.evicted is False for h in hosts if h.maintenance)
    assert all(h.evicted is None for h in hosts if not h.maintenance)
    tainted = [h for h in hosts if h.tainted]
    assert len(tainted) >= 2 and {h.taint for h in tainted} == {"⚠️"}
    assert {h.taint for h in hosts if not h.tainted} == {"🟢"}
    updating = [h for h in hosts if h.update_status and h.update_status.in_progress]
    assert len(updating) >= 2
    assert all(h.update_status and h.update_status.installed != h.target_version for h in updating)
    assert all(
        h.capabilities and h.capabilities.cpus == h.capacity["cpu"] + h.capacity.get("PCPU", 0)
        for h in hosts
    )
