"""The command line: clear refusals instead of a gateway that serves nothing."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gateway.cli import build_catalog, build_persisted, main
from gateway.domain.flavors import load_catalog
from gateway.http.persisted import sha256
from gateway.settings import Settings, add_arguments, from_arguments


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gateway", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def test_no_source_and_no_cluster_names_the_options(tmp_path: Path) -> None:
    result = run("serve", env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert result.returncode == 2
    for option in ("--demo", "--from PATH", "--kubeconfig"):
        assert option in result.stderr


def test_unreachable_cluster_is_refused_at_start(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
            }
        )
    )
    result = run("serve", "--kubeconfig", str(kubeconfig))
    assert result.returncode == 2
    assert "cannot reach https://127.0.0.1:1" in result.stderr and "--demo" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["serve", "--from", "/nonexistent/fleet"], "no such file or directory"),
        (["serve", "--from", "/dev/null"], "--from /dev/null: not a regular file or a directory"),
        (["serve", "--demo", "--cache", "redis"], "--cache redis needs --redis-url"),
        (["serve", "--demo", "--cache", "disk"], "expected memory, redis or off"),
        (["serve", "--demo", "--auth", "ldap"], "expected kubernetes or none"),
    ],
)
def test_bad_settings_are_refused(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(args) == 2
    assert message in capsys.readouterr().err


def test_a_malformed_flavor_catalog_stops_the_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    catalog = tmp_path / "flavors.yaml"
    catalog.write_text("flavors:\n  - {name: a, vcpus: 0, ram: 1024}\n")
    assert main(["serve", "--demo", "--flavors", str(catalog)]) == 2
    err = capsys.readouterr().err
    assert f"--flavors {catalog}: flavor 1: a: vcpus: expected a whole number >= 1" in err
    assert main(["serve", "--demo", "--flavors", str(tmp_path / "none.yaml")]) == 2
    assert "cannot read it" in capsys.readouterr().err


def test_trusted_documents_are_read_at_start_and_a_bad_file_stops_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = "{ fleetCapacity { hypervisorCount } }"
    trusted = tmp_path / "trusted.json"
    trusted.write_text(json.dumps({sha256(document): document}))
    persisted = build_persisted(Settings(trusted_documents=str(trusted), persisted_bytes=10))
    assert persisted.trusted == {sha256(document): document}
    assert build_persisted(Settings()).trusted is None  # any operation, registered
    trusted.write_text(json.dumps({"0" * 64: document}))
    assert main(["serve", "--demo", "--trusted-documents", str(trusted)]) == 2
    assert "is not the SHA-256 of its document" in capsys.readouterr().err
    assert main(["serve", "--demo", "--trusted-documents", str(tmp_path / "none.json")]) == 2
    assert "none.json" in capsys.readouterr().err


def test_the_flavor_catalog_by_source(tmp_path: Path) -> None:
    catalog = tmp_path / "flavors.json"
    catalog.write_text('[{"name": "mine", "vcpus": 1, "ram": 512}]')
    assert [f.name for f in build_catalog(Settings(flavors=str(catalog))).flavors] == ["mine"]
    assert [f.name for f in build_catalog(Settings(demo=True, flavors=str(catalog))).flavors] == [
        "mine"
    ]
    assert build_catalog(Settings(demo=True)) == load_catalog(None)  # the demo's own
    assert build_catalog(Settings()).flavors == ()  # a cluster: none unless given


def test_version_and_help() -> None:
    assert run("--version").stdout.strip()
    assert "export-schema" in run("--help").stdout


def test_capacity_series_switch_is_a_flag_and_an_environment_variable() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert from_arguments(parser.parse_args([]), {}).capacity_series is True
    assert from_arguments(parser.parse_args(["--no-capacity-series"]), {}).capacity_series is False
    quiet = {"GATEWAY_CAPACITY_SERIES": "false"}
    assert from_arguments(parser.parse_args([]), quiet).capacity_series is False
