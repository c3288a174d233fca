"""The flavor catalog: what each flavor requests, and every way a catalog can be wrong."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gateway.domain.flavors import FlavorError, load_catalog, parse_catalog

MiB = 2**20
GiB = 2**30


def requested(entry: dict[str, Any]) -> dict[str, int]:
    (flavor,) = parse_catalog([entry], "test").flavors
    return {name: int(amount) for name, amount in flavor.resources.items()}


def test_vcpus_and_ram_become_cpu_and_memory_bytes() -> None:
    assert requested({"name": "g_c4_m16", "vcpus": 4, "ram": 16384, "disk": 64}) == {
        "cpu": 4,
        "memory": 16 * GiB,
    }


def test_extra_resource_classes_are_requested_as_they_are() -> None:
    entry = {
        "name": "gpu",
        "vcpus": 8,
        "ram": 1024,
        "extra_specs": {
            "resources:VGPU": 1,
            "resources:CUSTOM_FPGA": "2",
            "resources:DISK_GB": 80,
        },
    }
    assert requested(entry) == {
        "CUSTOM_FPGA": 2,
        "DISK_GB": 80,
        "VGPU": 1,
        "cpu": 8,
        "memory": 1024 * MiB,
    }


def test_vcpu_and_memory_mb_extra_specs_replace_the_flavor_figures() -> None:
    entry = {
        "name": "pinned",
        "vcpus": 4,
        "ram": 2048,
        "properties": {"resources:VCPU": "0", "resources:PCPU": "4", "resources:MEMORY_MB": "1024"},
    }
    assert requested(entry) == {"PCPU": 4, "memory": 1024 * MiB}


def test_disk_is_shown_but_not_requested() -> None:
    (flavor,) = parse_catalog([{"name": "f", "vcpus": 1, "ram": 512, "disk": 20}], "t").flavors
    assert (flavor.disk_gb, "DISK_GB" in flavor.resources, "disk" in flavor.resources) == (
        20,
        False,
        False,
    )


def test_openstack_flavor_list_output_reads_as_it_is() -> None:
    entry = {
        "ID": "1",
        "Name": "m1",
        "RAM": 2048,
        "Disk": 20,
        "Ephemeral": 0,
        "VCPUs": 2,
        "Is Public": True,
        "Properties": "hw:cpu_policy='dedicated', resources:VGPU='1'",
    }
    (flavor,) = parse_catalog([entry], "t").flavors
    assert flavor.extra_specs == {"hw:cpu_policy": "dedicated", "resources:VGPU": "1"}
    assert requested(entry) == {"VGPU": 1, "PCPU": 2, "memory": 2048 * MiB}


def test_the_demo_catalog() -> None:
    catalog = load_catalog(None)
    names = [f.name for f in catalog.flavors]
    assert len(names) == 29
    assert names[:3] == ["g_c1_m4", "g_c2_m8", "g_c4_m16"]
    assert {n.split("_")[0] for n in names} == {"g", "c", "m", "hana", "p"}
    avx2 = {"trait:HW_CPU_X86_AVX512F": "forbidden"}
    # As a region's: HANA flavors require the HANA hosts' trait, pinned ones ask for
    # dedicated cores on the pinned aggregate; the others ask for nothing special.
    specs = {f.name: dict(f.extra_specs) for f in catalog.flavors}
    hana = {"trait:CUSTOM_HANA_EXCLUSIVE_HOST": "required"}
    pinned = {"hw:cpu_policy": "dedicated", "aggregate_instance_extra_specs:pinned": "true"}
    assert {n for n, s in specs.items() if s == hana} == {"hana_c32_m512", "hana_c64_m1024"}
    assert [n for n, s in specs.items() if s == pinned] == [
        "p_c2_m8", "p_c4_m16", "p_c8_m32", "p_c16_m64", "p_c32_m128"
    ]  # fmt: skip
    assert [n for n, s in specs.items() if s == avx2] == ["g_c8_m32_avx2"]
    assert sum(s == {} for s in specs.values()) == 21
    flavor = catalog.get("m_c64_m512")
    assert flavor is not None
    assert dict(flavor.resources) == {"cpu": 64, "memory": 512 * GiB}
    assert catalog.get("nope") is None


def test_files(tmp_path: Path) -> None:
    yaml_file = tmp_path / "flavors.yaml"
    yaml_file.write_text("flavors:\n  - {name: a, vcpus: 1, ram: 1024}\n")
    assert [f.name for f in load_catalog(yaml_file).flavors] == ["a"]
    json_file = tmp_path / "flavors.json"
    json_file.write_text(json.dumps([{"name": "b", "vcpus": 2, "ram": 2048}]))
    assert [f.name for f in load_catalog(json_file).flavors] == ["b"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "expected a non-empty list of flavors"),
        ({"flavors": []}, "expected a non-empty list of flavors"),
        ({"flavor": [{"name": "a"}]}, "expected a non-empty list of flavors"),
        (None, "expected a non-empty list of flavors"),
        (["a"], "flavor 1: expected a map with name, vcpus and ram"),
        ([{"vcpus": 1, "ram": 1}], "flavor 1: name: expected a non-empty string"),
        ([{"name": " ", "vcpus": 1, "ram": 1}], "name: expected a non-empty string"),
        ([{"name": "a", "ram": 1}], "a: vcpus: expected a whole number >= 1, got None"),
        ([{"name": "a", "vcpus": 0, "ram": 1}], "a: vcpus: expected a whole number >= 1, got 0"),
        ([{"name": "a", "vcpus": True, "ram": 1}], "vcpus: expected a whole number >= 1, got True"),
        ([{"name": "a", "vcpus": 1.5, "ram": 1}], "vcpus: expected a whole number >= 1, got 1.5"),
        ([{"name": "a", "vcpus": "four", "ram": 1}], "vcpus: expected a whole number"),
        ([{"name": "a", "vcpus": 1, "ram": -1}], "a: ram: expected a whole number >= 1, got -1"),
        ([{"name": "a", "vcpus": 1, "ram": 1, "disk": -1}], "disk: expected a whole number >= 0"),
        (
            [{"name": "a", "vcpus": 1, "ram": 2**31}],
            "a: ram: 2147483648 is beyond the 32-bit integers the API shows",
        ),
        (
            [{"name": "a", "vcpus": 1, "ram": 1}, {"name": "a", "vcpus": 2, "ram": 2}],
            "flavor 'a' is listed twice",
        ),
        ([{"name": "a", "vcpus": 1, "ram": 1, "properties": ["x"]}], "expected a map of extra"),
        ([{"name": "a", "vcpus": 1, "ram": 1, "properties": "x=1"}], "cannot read 'x=1'"),
        (
            [{"name": "a", "vcpus": 1, "ram": 1, "properties": {"resources:VGPU": "many"}}],
            "a: resources:VGPU: expected a whole number >= 0, got 'many'",
        ),
        (
            [{"name": "a", "vcpus": 1, "ram": 1, "properties": {"resources:VGPU": None}}],
            "resources:VGPU': expected a plain value",
        ),
        (
            [{"name": "a", "vcpus": 1, "ram": 1, "properties": {"hw:cpu_policy": "pinned"}}],
            "a: hw:cpu_policy='pinned': expected one of shared, dedicated, mixed",
        ),
        (
            [{"name": "a", "vcpus": 1, "ram": 1, "properties": {"trait:X": "yes"}}],
            "a: trait:X='yes': expected a trait name = required or forbidden",
        ),
        (
            [{"name": "a", "vcpus": 1, "ram": 1, "properties": {"resources:": 1}}],
            "resources:: no resource class",
        ),
        (
            [
                {
                    "name": "a",
                    "vcpus": 1,
                    "ram": 1,
                    "properties": {"resources:VCPU": 0, "resources:MEMORY_MB": 0},
                }
            ],
            "a: requests no resource at all",
        ),
    ],
)
def test_malformed_catalogs_are_refused_with_the_reason(data: Any, message: str) -> None:
    with pytest.raises(FlavorError, match=r"^test: ") as refused:
        parse_catalog(data, "test")
    assert message in str(refused.value)


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(FlavorError, match="cannot read it"):
        load_catalog(tmp_path / "missing.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("flavors: [\n")
    with pytest.raises(FlavorError, match="not valid JSON or YAML"):
        load_catalog(broken)
    broken_json = tmp_path / "broken.json"
    broken_json.write_text("{")
    with pytest.raises(FlavorError, match="not valid JSON or YAML"):
        load_catalog(broken_json)


def test_granular_flavors_are_loaded_and_not_judged() -> None:
    catalog = parse_catalog(
        [{"name": "a", "vcpus": 2, "ram": 1024, "properties": {"resources1:VGPU": 1}}], "test"
    )
    (flavor,) = catalog.flavors
    assert dict(flavor.resources) == {"cpu": 2, "memory": 1024 * MiB}
    assert flavor.demand.unjudged is not None
    assert "resources1:VGPU" in flavor.demand.unjudged
