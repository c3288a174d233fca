"""Where the Kubernetes credentials come from, in controller-runtime's order."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from kubernetes.aio.client import ApiClient

from gateway.sources.kubernetes.credentials import (
    KubeConfigError,
    client_certificate,
    load_client_config,
    present_current_certificate,
    reload_credentials,
)


def _kubeconfig(path: Path, *servers: str) -> Path:
    names = [f"ctx-{i}" for i in range(len(servers))]
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {"name": n, "cluster": {"server": s}}
                    for n, s in zip(names, servers, strict=True)
                ],
                "users": [{"name": "u", "user": {"token": "secret-token"}}],
                "contexts": [{"name": n, "context": {"cluster": n, "user": "u"}} for n in names],
                "current-context": names[0],
            }
        )
    )
    return path


@pytest.fixture(autouse=True)
def _no_ambient_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


async def test_explicit_path_and_context(tmp_path: Path) -> None:
    path = _kubeconfig(tmp_path / "config", "https://one:6443", "https://two:6443")
    assert (await load_client_config(str(path))).host == "https://one:6443"
    configuration = await load_client_config(str(path), context="ctx-1")
    assert configuration.host == "https://two:6443"
    assert configuration.api_key["BearerToken"] == "Bearer secret-token"


async def test_kubeconfig_variable_before_in_cluster(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(_kubeconfig(tmp_path / "config", "https://env:6443")))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    assert (await load_client_config()).host == "https://env:6443"


async def test_nothing_configured_says_what_was_tried() -> None:
    with pytest.raises(KubeConfigError, match="--kubeconfig, set KUBECONFIG, run in a pod"):
        await load_client_config()


async def test_in_cluster_without_a_service_account_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    with pytest.raises(KubeConfigError, match="in-cluster configuration unusable"):
        await load_client_config()
    with pytest.raises(KubeConfigError, match="--context 'x' given"):
        await load_client_config(context="x")


async def test_unknown_context_is_a_clear_error(tmp_path: Path) -> None:
    path = _kubeconfig(tmp_path / "config", "https://one:6443")
    with pytest.raises(KubeConfigError, match=f"cannot use kubeconfig {path}"):
        await load_client_config(str(path), context="missing")


async def test_reloading_takes_a_rotated_token_into_the_same_configuration(
    tmp_path: Path,
) -> None:
    path = _kubeconfig(tmp_path / "config", "https://one:6443")
    configuration = await load_client_config(str(path))
    path.write_text(path.read_text().replace("secret-token", "rotated-token"))
    await reload_credentials(configuration, str(path))
    assert configuration.api_key["BearerToken"] == "Bearer rotated-token"


def _self_signed(directory: Path) -> None:
    """A new key and certificate in ``directory``, replacing any there."""
    command = "req -x509 -newkey rsa:2048 -nodes -subj /CN=gateway -days 1"
    command += f" -keyout {directory / 'client.key'} -out {directory / 'client.crt'}"
    subprocess.run(["openssl", *command.split()], check=True, capture_output=True)


async def test_a_client_presents_a_rotated_certificate_once_renewed(tmp_path: Path) -> None:
    _self_signed(tmp_path)
    path = _kubeconfig(tmp_path / "config", "https://one:6443")
    config = yaml.safe_load(path.read_text())
    config["users"][0]["user"] = {
        "client-certificate": str(tmp_path / "client.crt"),
        "client-key": str(tmp_path / "client.key"),
    }
    path.write_text(yaml.safe_dump(config))
    configuration = await load_client_config(str(path))
    async with ApiClient(configuration) as api:
        presented, built = client_certificate(configuration), api.rest_client
        assert presented.startswith(b"-----BEGIN CERTIFICATE-----")
        assert await present_current_certificate(api, presented) == presented
        assert api.rest_client is built  # nothing changed, nothing renewed

        _self_signed(tmp_path)  # rotated in place: same names, new content
        await reload_credentials(configuration, str(path))
        renewed = await present_current_certificate(api, presented)
        assert renewed != presented and api.rest_client is not built

        (tmp_path / "client.key").write_text("half-written")
        renewed_client = api.rest_client
        with pytest.raises(OSError):
            await present_current_certificate(api, renewed)
        assert api.rest_client is renewed_client  # the last good context stays
