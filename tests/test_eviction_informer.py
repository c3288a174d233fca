"""Evictions from a real kube-apiserver serving the operator's released CRDs.

The eviction informer is the Hypervisors' engine on another path, so what these
tests prove is what differs: the released Eviction CRD's objects arrive and change
as the operator writes them, and a cluster without that CRD (an older operator)
serves its Hypervisors all the same, with evictions unavailable until the CRD is
installed, and again once it is removed.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway.domain.evictions import EvictionState
from gateway.sources.kubernetes.backoff import Backoff
from gateway.sources.kubernetes.cluster import ClusterSource
from gateway.sources.kubernetes.credentials import load_client_config
from gateway.sources.kubernetes.evictions import EvictionInformer
from gateway.sources.kubernetes.informer import HypervisorInformer
from gateway.store.store import Store
from harness.controlplane import ControlPlane
from tests.kubeapi import EvictionAPI, HypervisorAPI
from tests.objects import eviction, reported
from tests.support import cancelled, eventually, serve

MiB = 2**20

StartSource = Callable[[ControlPlane], Awaitable[tuple[ClusterSource, Store]]]


@pytest.fixture
async def start_source(tmp_path: Path) -> AsyncIterator[StartSource]:
    """Start the cluster source the CLI builds; it stops after the test."""
    tasks: list[asyncio.Task[None]] = []

    async def start(plane: ControlPlane) -> tuple[ClusterSource, Store]:
        source = await _source(plane, tmp_path)
        store = Store()
        tasks.append(asyncio.create_task(source.run(store)))
        return source, store

    yield start
    await cancelled(tasks)


@pytest.fixture
async def apis(released_cluster: ControlPlane) -> AsyncIterator[tuple[HypervisorAPI, EvictionAPI]]:
    hypervisors, evictions = HypervisorAPI(released_cluster), EvictionAPI(released_cluster)
    await hypervisors.delete_all()
    try:
        yield hypervisors, evictions
    finally:
        await hypervisors.aclose()
        await evictions.aclose()


@pytest.fixture
def with_evictions(released_cluster: ControlPlane, eviction_crd: Path) -> Iterator[None]:
    """The released Eviction CRD installed for one test, and removed after it."""
    released_cluster.install_crd(eviction_crd)
    try:
        yield
    finally:
        released_cluster.remove_crd(eviction_crd)


def _states(store: Store) -> dict[str, EvictionState]:
    return {e.name: e.state for e in store.evictions.snapshot.ordered}


@pytest.mark.cluster
@pytest.mark.usefixtures("with_evictions")
async def test_evictions_are_seen_as_the_operator_writes_them(
    released_cluster: ControlPlane,
    apis: tuple[HypervisorAPI, EvictionAPI],
    start_source: StartSource,
) -> None:
    _, evictions = apis
    await evictions.create(eviction("before", "node-0", state="Succeeded"))
    source, store = await start_source(released_cluster)
    await eventually(lambda: store.evictions.ready, 10)
    assert _states(store) == {"before": EvictionState.SUCCEEDED}

    created = await evictions.create(eviction("evict-node-1", "node-1", "decommission"))
    await eventually(lambda: "evict-node-1" in store.evictions.snapshot.by_name, 5)
    pending = store.evictions.snapshot.by_name["evict-node-1"]
    assert (pending.hypervisor, pending.reason) == ("node-1", "decommission")
    assert pending.state is EvictionState.PENDING and pending.outstanding_ram is None
    assert pending.resource_version == created["metadata"]["resourceVersion"]

    running = eviction("x", "node-1", state="Running")["status"]
    running.update(outstandingInstances=["a1", "b2"], hypervisorServiceId="svc-1")
    await evictions.patch_status("evict-node-1", running)
    await eventually(lambda: _states(store)["evict-node-1"] is EvictionState.RUNNING, 5)
    record = store.evictions.snapshot.by_name["evict-node-1"]
    # The API server defaults outstandingRamMb to 0 in any status written.
    assert record.outstanding_ram == 0
    assert record.outstanding_instances == ("a1", "b2")
    assert record.hypervisor_service_id == "svc-1"

    await evictions.patch_status("evict-node-1", {"outstandingRamMb": 2048})
    await eventually(
        lambda: (
            store.evictions.snapshot.by_name["evict-node-1"].outstanding_ram == Decimal(2048 * MiB)
        ),
        5,
    )
    failed = eviction("x", "node-1", state="Failed")["status"]
    await evictions.patch_status("evict-node-1", failed)
    await eventually(lambda: _states(store)["evict-node-1"] is EvictionState.FAILED, 5)

    await evictions.delete("evict-node-1")
    await eventually(lambda: _states(store) == {"before": EvictionState.SUCCEEDED}, 5)
    assert store.evictions.snapshot.by_hypervisor.keys() == {"node-0"}
    assert store.evictions.snapshot.unavailable is None
    assert source.evictions.status.error is None


@pytest.mark.cluster
async def test_without_the_crd_hypervisors_are_served_and_evictions_unavailable(
    released_cluster: ControlPlane,
    eviction_crd: Path,
    apis: tuple[HypervisorAPI, EvictionAPI],
    tmp_path: Path,
) -> None:
    """The gateway as served: ready, its hosts answered, evictions an error with a code,
    until the CRD is installed; and again once it is removed."""
    hypervisors, evictions = apis
    await hypervisors.create(reported("node-1"))
    source = await _source(released_cluster, tmp_path)
    async with serve(source) as (client, store):
        await eventually(lambda: store.ready and source.status.synced, 10)
        # Not "not loaded yet" (how every store starts): the informer heard the 404.
        await eventually(
            lambda: "no Eviction CRD" in (store.evictions.snapshot.unavailable or ""), 10
        )
        assert (await client.get("/readyz")).status_code == 200
        body = await _ask(client)
        assert body["data"]["hypervisors"] == {"nodes": [{"name": "node-1", "evictions": None}]}
        assert body["data"]["syncStatus"] == {
            "synced": True,
            "evictionsAvailable": False,
            "evictionsMessage": "the cluster does not serve evictions.kvm.cloud.sap "
            "(no Eviction CRD)",
        }
        assert {e["extensions"]["code"] for e in body["errors"]} == {"EVICTIONS_UNAVAILABLE"}
        assert source.status.error is None  # the Hypervisors' status knows nothing of it

        # Installed later (the operator upgraded): evictions appear without a restart.
        released_cluster.install_crd(eviction_crd)
        try:
            await evictions.create(eviction("evict-node-1", "node-1", state="Running"))
            # Created, then its status written: both are events, the second the one asked.
            await eventually(
                lambda: _states(store).get("evict-node-1") is EvictionState.RUNNING, 10
            )
            body = await _ask(client)
            assert "errors" not in body, body["errors"]
            assert body["data"]["hypervisors"]["nodes"] == [
                {"name": "node-1", "evictions": [{"name": "evict-node-1", "state": "RUNNING"}]}
            ]
        finally:
            released_cluster.remove_crd(eviction_crd)

        # Removed again: its evictions went with it, and they are unavailable once more.
        await eventually(lambda: store.evictions.snapshot.unavailable is not None, 10)
        assert len(store.evictions.snapshot) == 0
        maintenance = {"maintenance": "manual", "maintenanceReason": "disk swap"}
        await hypervisors.patch("node-1", {"spec": maintenance})
        await eventually(lambda: store.snapshot.by_name["node-1"].maintenance == "manual", 5)
        assert source.status.synced and source.status.error is None
        assert (await client.get("/readyz")).status_code == 200


async def _source(plane: ControlPlane, tmp_path: Path) -> ClusterSource:
    """The cluster source the CLI builds (both informers), with fast retries."""
    path = plane.write_kubeconfig(tmp_path / "kubeconfig-served")
    configuration = await load_client_config(str(path))
    return ClusterSource(
        HypervisorInformer(configuration, backoff=Backoff(initial=0.1, cap=1.0)),
        EvictionInformer(configuration, backoff=Backoff(initial=0.1, cap=0.5)),
    )


async def _ask(client: httpx.AsyncClient) -> dict[str, Any]:
    document = """{ hypervisors { nodes { name evictions { name state } } }
        syncStatus { synced evictionsAvailable evictionsMessage } }"""
    response = await client.post("/graphql", json={"query": document})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body
