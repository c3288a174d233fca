"""Authentication and authorization against the real API server.

The gateway runs with a service-account token bound to exactly the ClusterRole of
deploy/base; three callers ask it: one the cluster lets list hypervisors, one it
does not, and one without a token.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets
import yaml
from kubernetes.aio.client import ApiClient

from gateway.http.auth import Decision, KubernetesAuthorizer
from gateway.http.cache import BoundedMemoryCache, ResponseCache
from gateway.sources.kubernetes.cluster import ClusterSource
from gateway.sources.kubernetes.credentials import load_client_config, renewal
from gateway.sources.kubernetes.evictions import EvictionInformer
from gateway.sources.kubernetes.informer import HypervisorInformer
from gateway.store.store import Store
from harness.controlplane import ControlPlane
from tests.kubeapi import CertificateUser, ExecPlugin
from tests.objects import eviction, reported
from tests.support import Clock, eventually, run_server

pytestmark = pytest.mark.cluster

ROOT = Path(__file__).resolve().parents[1]
NAMESPACE = "gateway-auth-test"


def _ok(response: httpx.Response) -> Any:
    assert response.status_code < 300 or response.status_code == 409, response.text
    return response.json()


def _role(kind_name: str) -> dict[str, Any]:
    """A ClusterRole of deploy/base, by name."""
    documents = [
        d
        for f in sorted((ROOT / "deploy/base").glob("*.yaml"))
        for d in yaml.safe_load_all(f.read_text())
    ]
    for document in documents:
        if (
            document
            and document["kind"] == "ClusterRole"
            and document["metadata"]["name"] == kind_name
        ):
            return {
                "apiVersion": document["apiVersion"],
                "kind": "ClusterRole",
                "metadata": {"name": f"test-{kind_name}"},
                "rules": document["rules"],
            }
    raise AssertionError(f"deploy/base has no ClusterRole {kind_name}")


def _bind(admin: httpx.Client, role: str, subject: dict[str, Any], name: str) -> None:
    _ok(
        admin.post(
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
            json={
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": name},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": role,
                },
                "subjects": [subject],
            },
        )
    )


class Setup:
    def __init__(self, cluster: ControlPlane) -> None:
        self.cluster = cluster
        self.admin = cluster.client()

    def service_account_token(self, name: str) -> str:
        _ok(self.admin.post("/api/v1/namespaces", json={"metadata": {"name": NAMESPACE}}))
        _ok(
            self.admin.post(
                f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts", json={"metadata": {"name": name}}
            )
        )
        request = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": 3600},
        }
        answer = _ok(
            self.admin.post(
                f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{name}/token", json=request
            )
        )
        return str(answer["status"]["token"])


@pytest.fixture(scope="module")
def rbac(cluster: ControlPlane) -> Iterator[dict[str, str]]:
    """The gateway's service account with deploy/base's role; reader bound to the reader role."""
    setup = Setup(cluster)
    for role in ("hypervisor-gateway", "hypervisor-reader"):
        _ok(setup.admin.post("/apis/rbac.authorization.k8s.io/v1/clusterroles", json=_role(role)))
    token = setup.service_account_token("gateway")
    _bind(
        setup.admin,
        "test-hypervisor-gateway",
        {"kind": "ServiceAccount", "name": "gateway", "namespace": NAMESPACE},
        "test-gateway",
    )
    bare = setup.service_account_token("gateway-without-reviews")
    _ok(
        setup.admin.post(
            "/apis/rbac.authorization.k8s.io/v1/clusterroles",
            json={
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": "test-watch-only"},
                "rules": [
                    {
                        "apiGroups": ["kvm.cloud.sap"],
                        "resources": ["hypervisors"],
                        "verbs": ["get", "list", "watch"],
                    }
                ],
            },
        )
    )
    _bind(
        setup.admin,
        "test-watch-only",
        {"kind": "ServiceAccount", "name": "gateway-without-reviews", "namespace": NAMESPACE},
        "test-watch-only",
    )
    _bind(
        setup.admin,
        "test-hypervisor-reader",
        {"kind": "User", "name": "reader", "apiGroup": "rbac.authorization.k8s.io"},
        "test-reader",
    )
    _ok(setup.admin.post("/apis/kvm.cloud.sap/v1/hypervisors", json=reported("auth-node-1")))
    yield {
        "gateway": token,
        "gateway-without-reviews": bare,
        "reader": cluster.tokens["reader"],
        "stranger": cluster.tokens["stranger"],
    }
    for kind, name in (
        ("clusterrolebindings", "test-reader"),
        ("clusterrolebindings", "test-gateway"),
        ("clusterrolebindings", "test-watch-only"),
    ):
        setup.admin.delete(f"/apis/rbac.authorization.k8s.io/v1/{kind}/{name}")
    setup.admin.delete("/apis/kvm.cloud.sap/v1/hypervisors/auth-node-1")
    setup.admin.delete(f"/api/v1/namespaces/{NAMESPACE}")


Decisions = Counter[str]


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def gateway(
    cluster: ControlPlane, rbac: dict[str, str], tmp_path: Path, clock: Clock
) -> AsyncIterator[tuple[str, Decisions, Store]]:
    """The gateway as deployed: informer, response cache, and reviews with the service
    account's token."""
    kubeconfig = cluster.write_kubeconfig(tmp_path / "kubeconfig", "gateway", token=rbac["gateway"])
    configuration = await load_client_config(str(kubeconfig))
    decisions: Decisions = Counter()
    api = ApiClient(configuration)
    authorizer = KubernetesAuthorizer(
        api,
        allowed_ttl=60.0,
        denied_ttl=60.0,
        on_decision=lambda d: decisions.update([d]),
        clock=clock,
    )
    cache = ResponseCache(BoundedMemoryCache())
    async with run_server(
        HypervisorInformer(configuration), authorizer=authorizer, cache=cache
    ) as (address, store):
        await eventually(lambda: store.ready, within=30)  # the informer's first list
        yield address, decisions, store
    await api.close()


async def ask(
    address: str, token: str | None, document: str = "{ hypervisors { nodes { name } } }"
) -> httpx.Response:
    headers = {"accept": "application/graphql-response+json"}
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    async with httpx.AsyncClient() as client:
        return await client.post(
            f"http://{address}/graphql", json={"query": document}, headers=headers
        )


async def test_allowed_denied_and_anonymous(
    gateway: tuple[str, Decisions, Store], rbac: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    address, _, _ = gateway
    with caplog.at_level(logging.DEBUG):
        allowed = await ask(address, rbac["reader"])
        # The same request again: its answer is cached now, and still only for the allowed.
        assert (await ask(address, rbac["reader"])).content == allowed.content
        denied = await ask(address, rbac["stranger"])
        anonymous = await ask(address, None)
        invalid = await ask(address, "not-a-token")
    assert allowed.status_code == 200
    assert {"name": "auth-node-1"} in allowed.json()["data"]["hypervisors"]["nodes"]
    assert denied.status_code == 403
    error = denied.json()["errors"][0]
    assert error["extensions"]["code"] == "FORBIDDEN"
    assert "stranger" in error["message"] and "list hypervisors.kvm.cloud.sap" in error["message"]
    for response in (anonymous, invalid):
        assert response.status_code == 401
        assert response.headers["www-authenticate"].startswith("Bearer")
        assert response.json()["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    logged = "\n".join(r.getMessage() for r in caplog.records)
    for token in rbac.values():
        assert token not in logged


async def test_capacity_series_are_guarded_as_graphql_is_and_metrics_is_open(
    gateway: tuple[str, Decisions, Store], rbac: dict[str, str]
) -> None:
    """The same per-host figures as the API, so the same reviews; Prometheus' token is
    a reader's (deploy/monitoring binds it)."""
    address, _, _ = gateway

    async def scrape(path: str, token: str | None) -> httpx.Response:
        headers = {} if token is None else {"authorization": f"Bearer {token}"}
        async with httpx.AsyncClient() as client:
            return await client.get(f"http://{address}{path}", headers=headers)

    allowed = await scrape("/metrics/capacity", rbac["reader"])
    assert allowed.status_code == 200
    assert "hypervisor_gateway_fleet_hosts{" in allowed.text  # auth-node-1's group
    assert (await scrape("/metrics/capacity", rbac["stranger"])).status_code == 403
    anonymous = await scrape("/metrics/capacity", None)
    assert anonymous.status_code == 401 and anonymous.headers["www-authenticate"]
    assert (await scrape("/metrics", None)).status_code == 200


async def test_the_scraper_of_deploy_monitoring_may_read_the_capacity_series(
    gateway: tuple[str, Decisions, Store], cluster: ControlPlane
) -> None:
    """The binding deploy/monitoring gives Prometheus' token is enough for the review."""
    (binding,) = (
        d
        for d in yaml.safe_load_all((ROOT / "deploy/monitoring/capacity-scraper.yaml").read_text())
        if d["kind"] == "ClusterRoleBinding"
    )
    (bound,) = binding["subjects"]
    account = bound["name"]
    setup = Setup(cluster)
    token = setup.service_account_token(account)
    name = f"test-{binding['metadata']['name']}"
    subject = {"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE}
    _bind(setup.admin, f"test-{binding['roleRef']['name']}", subject, name)
    try:
        address, _, _ = gateway
        async with httpx.AsyncClient() as client:
            scrape = await client.get(
                f"http://{address}/metrics/capacity", headers={"authorization": f"Bearer {token}"}
            )
        assert scrape.status_code == 200, scrape.text
    finally:
        setup.admin.delete(f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{name}")


async def test_a_burst_costs_one_review(
    gateway: tuple[str, Decisions, Store], rbac: dict[str, str], clock: Clock
) -> None:
    address, decisions, _ = gateway
    assert (await ask(address, rbac["reader"])).status_code == 200
    cached = sum(decisions.values())
    assert (await ask(address, rbac["reader"])).status_code == 200
    assert sum(decisions.values()) == cached  # within the TTL: no review
    clock.now += 61.0  # every decision so far has expired
    responses = await asyncio.gather(*(ask(address, rbac["reader"]) for _ in range(20)))
    assert all(r.status_code == 200 for r in responses)
    assert sum(decisions.values()) - cached == 1


async def test_a_cancelled_request_leaves_the_shared_review_to_the_others(
    cluster: ControlPlane, rbac: dict[str, str], tmp_path: Path
) -> None:
    """The request that started a review goes away (its client hung up): the others
    waiting on the same review still get its verdict."""
    kubeconfig = cluster.write_kubeconfig(tmp_path / "kubeconfig", "gateway", token=rbac["gateway"])
    decisions: Decisions = Counter()
    async with ApiClient(await load_client_config(str(kubeconfig))) as api:
        authorizer = KubernetesAuthorizer(api, on_decision=lambda d: decisions.update([d]))
        first = asyncio.create_task(authorizer.check(rbac["reader"]))
        second = asyncio.create_task(authorizer.check(rbac["reader"]))
        await asyncio.sleep(0)  # one step each: the first began the review, the second waits
        assert not first.done() and not second.done()
        first.cancel()
        verdict = await second
    assert verdict.decision is Decision.ALLOWED and verdict.user == "reader"
    assert first.cancelled() and decisions == {"allowed": 1}


async def test_missing_review_permissions_are_a_clear_error(
    cluster: ControlPlane, rbac: dict[str, str], tmp_path: Path
) -> None:
    """A gateway deployed without the tokenreviews/subjectaccessreviews grant answers 503."""
    kubeconfig = cluster.write_kubeconfig(
        tmp_path / "kc", "bare", token=rbac["gateway-without-reviews"]
    )
    configuration = await load_client_config(str(kubeconfig))
    api = ApiClient(configuration)
    try:
        async with run_server(
            HypervisorInformer(configuration), authorizer=KubernetesAuthorizer(api)
        ) as (address, store):
            await eventually(lambda: store.ready, within=30)
            response = await ask(address, rbac["reader"])
    finally:
        await api.close()
    assert response.status_code == 503
    assert response.json()["errors"][0]["message"] == "cannot check credentials right now"


async def test_refused_gateway_credentials_are_loaded_again(
    cluster: ControlPlane, rbac: dict[str, str], tmp_path: Path
) -> None:
    """The reviews' own token expired (an exec plugin's): the plugin runs again, at once."""
    plugin = ExecPlugin.write(cluster, tmp_path, "expired-token")
    configuration = await load_client_config(str(plugin.kubeconfig))
    api = ApiClient(configuration)
    authorizer = KubernetesAuthorizer(
        api,
        credentials=renewal(api, str(plugin.kubeconfig)),
    )
    try:
        verdict = await authorizer.check(rbac["reader"])
        assert verdict.decision is Decision.ERROR  # refused, and refused again when fresh
        assert plugin.run_count() == 2
        await authorizer.check(rbac["stranger"])  # no second reload within the interval
        assert plugin.run_count() == 2

        plugin.token.write_text(rbac["gateway"])  # the plugin's next token is valid
        authorizer.reload_interval = 0
        verdict = await authorizer.check(rbac["reader"])
        assert verdict.decision is Decision.ALLOWED and verdict.user == "reader"
        assert plugin.run_count() == 3
    finally:
        await api.close()


async def test_a_rotated_gateway_certificate_is_presented_after_a_refusal(
    cluster: ControlPlane, rbac: dict[str, str], tmp_path: Path
) -> None:
    """The reviews' own client certificate was replaced in its files: a new TLS context."""
    user = CertificateUser.write(cluster, tmp_path, trusted=False)
    configuration = await load_client_config(str(user.kubeconfig))
    api = ApiClient(configuration)
    authorizer = KubernetesAuthorizer(
        api,
        credentials=renewal(api, str(user.kubeconfig)),
        reload_interval=0,
    )
    try:
        assert (await authorizer.check(rbac["reader"])).decision is Decision.ERROR

        user.rotate()  # the files now hold a certificate of the cluster's CA
        verdict = await authorizer.check(rbac["reader"])
        assert verdict.decision is Decision.ALLOWED and verdict.user == "reader"
    finally:
        await api.close()


async def subscribe(address: str, token: str | None) -> websockets.ClientConnection:
    ws = await websockets.connect(f"ws://{address}/graphql", subprotocols=["graphql-transport-ws"])
    payload = {"Authorization": f"Bearer {token}"} if token else {}
    await ws.send(json.dumps({"type": "connection_init", "payload": payload}))
    return ws


async def test_websocket_authenticates_in_connection_init(
    gateway: tuple[str, Decisions, Store], rbac: dict[str, str]
) -> None:
    address, _, _ = gateway
    for token in (rbac["stranger"], None):
        ws = await subscribe(address, token)
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), 5)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 4403
    ws = await subscribe(address, rbac["reader"])
    assert json.loads(await ws.recv())["type"] == "connection_ack"
    await ws.close()


async def test_revoked_user_loses_their_subscription(
    cluster: ControlPlane, rbac: dict[str, str], tmp_path: Path
) -> None:
    kubeconfig = cluster.write_kubeconfig(tmp_path / "kubeconfig", "gateway", token=rbac["gateway"])
    configuration = await load_client_config(str(kubeconfig))
    api = ApiClient(configuration)
    admin = cluster.client()
    _bind(
        admin,
        "test-hypervisor-reader",
        {"kind": "User", "name": "stranger", "apiGroup": "rbac.authorization.k8s.io"},
        "test-stranger",
    )
    try:
        authorizer = KubernetesAuthorizer(api, allowed_ttl=0.5, denied_ttl=0.5)
        async with run_server(
            HypervisorInformer(configuration), authorizer=authorizer, auth_recheck_interval=0.5
        ) as (address, _):
            ws = await subscribe(address, rbac["stranger"])
            assert json.loads(await ws.recv())["type"] == "connection_ack"
            await ws.send(
                json.dumps(
                    {
                        "id": "1",
                        "type": "subscribe",
                        "payload": {
                            "query": "subscription { fleetCapacityChanged { hypervisorCount } }"
                        },
                    }
                )
            )
            assert json.loads(await asyncio.wait_for(ws.recv(), 5))["type"] == "next"
            admin.delete("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/test-stranger")
            with pytest.raises(websockets.ConnectionClosed) as closed:
                while True:
                    await asyncio.wait_for(ws.recv(), 10)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 4403
    finally:
        admin.delete("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/test-stranger")
        await api.close()


async def test_the_gateways_role_reads_evictions_and_one_without_them_still_serves(
    cluster: ControlPlane, rbac: dict[str, str], eviction_crd: Path, tmp_path: Path
) -> None:
    """deploy/base's role lists and watches evictions; a gateway whose role predates them
    (hypervisors only) serves its hosts, and says why evictions are unavailable."""
    cluster.install_crd(eviction_crd)
    admin = cluster.client()
    try:
        _ok(admin.post("/apis/kvm.cloud.sap/v1/evictions", json=eviction("auth-e", "auth-node-1")))
        allowed = await _first_view(cluster, "gateway", rbac, tmp_path)
        refused = await _first_view(cluster, "gateway-without-reviews", rbac, tmp_path)
    finally:
        cluster.remove_crd(eviction_crd)
        admin.close()
    for store in (allowed, refused):
        assert "auth-node-1" in store.snapshot.by_name
    assert allowed.evictions.snapshot.unavailable is None
    assert list(allowed.evictions.snapshot.by_name) == ["auth-e"]
    unavailable = str(refused.evictions.snapshot.unavailable)
    assert "not authorized to list/watch evictions.kvm.cloud.sap" in unavailable


async def _first_view(
    cluster: ControlPlane, account: str, rbac: dict[str, str], tmp_path: Path
) -> Store:
    """What the cluster source, as ``account``, holds once both informers were answered."""
    kubeconfig = cluster.write_kubeconfig(tmp_path / account, account, token=rbac[account])
    configuration = await load_client_config(str(kubeconfig))
    source = ClusterSource(HypervisorInformer(configuration), EvictionInformer(configuration))
    store = Store()
    task = asyncio.create_task(source.run(store))
    try:
        await eventually(lambda: store.ready and source.status.synced, within=30)
        await eventually(lambda: store.evictions.snapshot.generation > 0, within=30)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    return store
