"""Changes reach GraphQL answers and subscriptions, from the real API server and
from files: the whole path from source to WebSocket, with nothing stubbed."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets
import yaml

from gateway.sources.files import FileSource
from gateway.sources.kubernetes.cluster import ClusterSource
from gateway.sources.kubernetes.credentials import load_client_config
from gateway.sources.kubernetes.evictions import EvictionInformer
from gateway.sources.kubernetes.informer import HypervisorInformer
from harness.controlplane import ControlPlane
from tests.kubeapi import EvictionAPI, HypervisorAPI
from tests.objects import consumer, eviction, reported, resources
from tests.support import eventually, listening, run_server

C1 = "aaaaaaaa-0000-4000-8000-000000000001"
C2 = "aaaaaaaa-0000-4000-8000-000000000002"


class Subscriber:
    def __init__(self, ws: websockets.ClientConnection) -> None:
        self.ws = ws

    @classmethod
    async def open(cls, address: str, query: str) -> Subscriber:
        ws = await websockets.connect(
            f"ws://{address}/graphql", subprotocols=["graphql-transport-ws"]
        )
        await ws.send(json.dumps({"type": "connection_init"}))
        assert json.loads(await ws.recv())["type"] == "connection_ack"
        await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": {"query": query}}))
        return cls(ws)

    async def next(self) -> Any:
        message = json.loads(await asyncio.wait_for(self.ws.recv(), 10))
        assert message["type"] == "next", message
        return message["payload"]["data"]


async def query(address: str, document: str) -> Any:
    async with httpx.AsyncClient() as client:
        response = await client.post(f"http://{address}/graphql", json={"query": document})
    body = response.json()
    assert "errors" not in body, body
    return body["data"]


WATCH = """subscription { hypervisorChanged(filter: {zone: "live-zone"}) {
    type hypervisor { name resourceVersion resource(name: "cpu") { capacity booked free } } } }"""
ASK = '{ hypervisor(name: "live-1") { resource(name: "cpu") { capacity booked free } } }'


@pytest.mark.cluster
async def test_cluster_changes_reach_queries_and_subscriptions(
    cluster: ControlPlane, tmp_path: Path
) -> None:
    kubeconfig = cluster.write_kubeconfig(tmp_path / "kubeconfig")
    informer = HypervisorInformer(await load_client_config(str(kubeconfig)))
    api = HypervisorAPI(cluster)
    try:
        async with run_server(informer) as (address, store):
            await eventually(lambda: store.ready, within=30)
            changes = await Subscriber.open(address, WATCH)
            await listening(address)

            # cpu 64 x 2.0 = 128; booked 4
            await api.create(
                reported("live-1", zone="live-zone", bookings=[consumer(C1, resources())])
            )
            added = (await changes.next())["hypervisorChanged"]
            assert added["type"] == "ADDED" and added["hypervisor"]["name"] == "live-1"
            await eventually(lambda: _free(address, "124"), within=10)

            # A spec write (a new booking) and a status write (more cores).
            bookings = [consumer(C1, resources()), consumer(C2, resources(cpu=10))]
            await api.patch("live-1", {"spec": {"bookings": bookings}})
            modified = await _until(
                changes, lambda c: c["hypervisor"]["resource"]["booked"] == "14"
            )
            assert modified["type"] == "MODIFIED"
            await api.patch_status("live-1", {"capacity": {"cpu": 96}})
            await _until(changes, lambda c: c["hypervisor"]["resource"]["capacity"] == "192")
            await eventually(lambda: _free(address, "178"), within=10)

            await api.delete("live-1")
            await _until(changes, lambda c: c["type"] == "DELETED")
            await eventually(lambda: _gone(address), within=10)
            await changes.ws.close()
    finally:
        await api.aclose()


EVICTIONS = """subscription { evictionChanged(filter: {hypervisor: "live-2"}) {
    type eviction { name state outstandingRam hypervisor { name } } } }"""


@pytest.mark.cluster
async def test_cluster_eviction_changes_reach_subscriptions(
    released_cluster: ControlPlane, eviction_crd: Path, tmp_path: Path
) -> None:
    """The operator's released CRDs: an eviction of a host, from creation to deletion."""
    released_cluster.install_crd(eviction_crd)
    configuration = await load_client_config(
        str(released_cluster.write_kubeconfig(tmp_path / "kubeconfig"))
    )
    source = ClusterSource(HypervisorInformer(configuration), EvictionInformer(configuration))
    hosts, evictions = HypervisorAPI(released_cluster), EvictionAPI(released_cluster)
    try:
        await hosts.create(reported("live-2"))
        async with run_server(source) as (address, store):
            await eventually(lambda: store.evictions.ready and "live-2" in store.snapshot.by_name)
            changes = await Subscriber.open(address, EVICTIONS)
            await eventually(lambda: store.evictions.listening == 1)

            await evictions.create(eviction("evict-live-2", "live-2"))
            await evictions.patch_status(
                "evict-live-2", eviction("x", "live-2", state="Running")["status"]
            )
            await evictions.patch_status("evict-live-2", {"outstandingRamMb": 1024})
            await evictions.delete("evict-live-2")
            seen = [(await changes.next())["evictionChanged"] for _ in range(4)]
            await changes.ws.close()
    finally:
        await hosts.delete("live-2")
        await hosts.aclose()
        await evictions.aclose()
        released_cluster.remove_crd(eviction_crd)
    host = {"name": "live-2"}
    assert [(c["type"], c["eviction"]["state"], c["eviction"]["outstandingRam"]) for c in seen] == [
        ("ADDED", "PENDING", None),
        ("MODIFIED", "RUNNING", "0"),
        ("MODIFIED", "RUNNING", str(1024 * 2**20)),
        ("DELETED", "RUNNING", str(1024 * 2**20)),
    ]
    assert all(c["eviction"]["name"] == "evict-live-2" for c in seen)
    assert all(c["eviction"]["hypervisor"] == host for c in seen)


async def _until(subscriber: Subscriber, condition: Any) -> Any:
    while True:
        change = (await subscriber.next())["hypervisorChanged"]
        if condition(change):
            return change


async def _free(address: str, expected: str) -> bool:
    data = await query(address, ASK)
    return bool(data["hypervisor"]) and data["hypervisor"]["resource"]["free"] == expected


async def _gone(address: str) -> bool:
    return (await query(address, ASK))["hypervisor"] is None


@pytest.fixture
async def file_gateway(tmp_path: Path) -> AsyncIterator[tuple[str, Path]]:
    fleet = tmp_path / "fleet"
    fleet.mkdir()
    (fleet / "live-1.yaml").write_text(
        yaml.safe_dump(reported("live-1", zone="live-zone", bookings=[consumer(C1, resources())]))
    )
    async with run_server(FileSource(fleet, poll_interval=0.1)) as (address, store):
        await eventually(lambda: store.ready, within=10)
        yield address, fleet


async def test_file_changes_reach_queries_and_subscriptions(file_gateway: tuple[str, Path]) -> None:
    address, fleet = file_gateway
    totals = await Subscriber.open(
        address,
        """subscription {
        fleetCapacityChanged(filter: {zone: "live-zone"}) { resource(name: "cpu") { free } } }""",
    )
    changes = await Subscriber.open(address, WATCH)
    assert (await totals.next())["fleetCapacityChanged"] == [{"resource": {"free": "124"}}]
    assert await _free(address, "124")

    (fleet / "live-1.yaml").write_text(
        yaml.safe_dump(
            reported(
                "live-1",
                zone="live-zone",
                bookings=[consumer(C1, resources()), consumer(C2, resources(cpu=10))],
            )
        )
    )
    modified = (await changes.next())["hypervisorChanged"]
    assert modified["type"] == "MODIFIED" and modified["hypervisor"]["resource"]["free"] == "114"
    assert (await totals.next())["fleetCapacityChanged"] == [{"resource": {"free": "114"}}]

    (fleet / "live-1.yaml").unlink()
    assert (await changes.next())["hypervisorChanged"]["type"] == "DELETED"
    assert (await totals.next())["fleetCapacityChanged"] == [{"resource": None}]  # no host left
    assert await _gone(address)
