"""The deploy/ manifests against a real API server: valid objects, and RBAC that works."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from harness import controlplane
from harness.controlplane import ControlPlane

ROOT = Path(__file__).resolve().parents[1]
NAMESPACE = "hypervisor-gateway"
GATEWAY = f"system:serviceaccount:{NAMESPACE}:hypervisor-gateway"

pytestmark = pytest.mark.cluster


def kubectl(
    plane: ControlPlane, *args: str, check: bool = True
) -> subprocess.CompletedProcess[str]:
    command = [str(controlplane.kubectl()), "--kubeconfig", str(plane.kubeconfig), *args]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    if check:
        assert result.returncode == 0, f"{' '.join(args)}: {result.stderr}"
    return result


def can(plane: ControlPlane, who: str, verb: str, resource: str) -> bool:
    answer = kubectl(plane, "auth", "can-i", verb, resource, f"--as={who}", check=False)
    return answer.stdout.strip() == "yes"


def test_the_base_applies_and_grants_what_the_gateway_needs(
    cluster: ControlPlane, eviction_crd: Path
) -> None:
    base = str(ROOT / "deploy" / "base")
    # A dry run creates nothing, not even the namespace the other objects go in.
    kubectl(cluster, "create", "namespace", NAMESPACE)
    # kubectl asks about the evictions only of a cluster that serves them.
    cluster.install_crd(eviction_crd)
    try:
        kubectl(cluster, "apply", "--server-side", "--dry-run=server", "-k", base)
        kubectl(cluster, "apply", "--server-side", "-k", base)
        for verb in ("get", "list", "watch"):
            assert can(cluster, GATEWAY, verb, "hypervisors.kvm.cloud.sap")
            assert can(cluster, GATEWAY, verb, "evictions.kvm.cloud.sap")
        assert can(cluster, GATEWAY, "create", "tokenreviews.authentication.k8s.io")
        assert can(cluster, GATEWAY, "create", "subjectaccessreviews.authorization.k8s.io")
        assert not can(cluster, GATEWAY, "update", "hypervisors.kvm.cloud.sap")
        assert not can(cluster, GATEWAY, "delete", "evictions.kvm.cloud.sap")
        assert not can(cluster, GATEWAY, "list", "secrets")
        assert not can(cluster, "reader", "list", "hypervisors.kvm.cloud.sap")
        kubectl(
            cluster,
            "create",
            "clusterrolebinding",
            "test-readers",
            "--clusterrole=hypervisor-reader",
            "--user=reader",
        )
        assert can(cluster, "reader", "list", "hypervisors.kvm.cloud.sap")
        assert can(cluster, "reader", "watch", "evictions.kvm.cloud.sap")
        assert not can(cluster, "reader", "update", "hypervisors.kvm.cloud.sap")
    finally:
        kubectl(
            cluster,
            "delete",
            "clusterrolebinding",
            "test-readers",
            "--ignore-not-found",
            check=False,
        )
        kubectl(cluster, "delete", "--wait=false", "--ignore-not-found", "-k", base, check=False)
        cluster.remove_crd(eviction_crd)


def test_the_service_monitor_needs_the_prometheus_operator(cluster: ControlPlane) -> None:
    monitoring = str(ROOT / "deploy" / "monitoring")
    result = kubectl(
        cluster, "apply", "--server-side", "--dry-run=server", "-k", monitoring, check=False
    )
    assert result.returncode != 0
    assert "ServiceMonitor" in result.stderr
