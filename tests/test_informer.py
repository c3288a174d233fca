"""The informer against a real kube-apiserver: every change arrives, every fault heals.

Each test ends by comparing the cache with a fresh LIST (names, resourceVersions
and derived capacity), which is the only definition of "never loses an update"
that matters to a client of the gateway.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import itertools
import json
import os
import random
import time
from collections.abc import AsyncIterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway.sources.kubernetes.backoff import Backoff
from gateway.sources.kubernetes.credentials import load_client_config, reload_credentials
from gateway.sources.kubernetes.informer import HypervisorInformer
from gateway.store.store import Store
from harness.controlplane import ControlPlane
from tests.conftest import BOOKING_CLUSTERS, StartInformer
from tests.fakeapi import FakeHypervisorAPI, bookmark, event, initial_events_end
from tests.kubeapi import (
    CertificateUser,
    ExecPlugin,
    HypervisorAPI,
    Refused,
    assert_converges,
    serves_bookings,
)
from tests.objects import consumer, hypervisor, reported, resources
from tests.support import Clock, eventually, loop_turns
from tests.tcpproxy import TcpProxy

UUID = "7f1c2a9e-3b4d-4e5f-8a6b-0c1d2e3f4a5b"
#: What random writers expect: created twice (409), or gone already (404).
CONFLICTS = frozenset({404, 409})


#: Faults the churn test injects (drops, blocks, compactions, at most one restart).
DISRUPTIONS = 8


class Writes:
    """Writes the API server accepted: the pace of a test, where a time window was."""

    def __init__(self) -> None:
        self.count = 0

    async def more(self, count: int) -> None:
        """Wait until ``count`` more writes have gone through."""
        target = self.count + count
        await eventually(lambda: self.count >= target, 60)


def _unavailable(refused: Refused) -> bool:
    """A starting API server answers 5xx (or 429) until its storage is ready."""
    return refused.status_code >= 500 or refused.status_code == 429


@pytest.mark.cluster
async def test_create_update_delete_are_seen(
    any_cluster: ControlPlane, any_api: HypervisorAPI, start_informer: StartInformer
) -> None:
    informer, store = await start_informer(any_cluster)
    await eventually(lambda: store.ready and informer.status.synced, within=10)

    # A cluster serving the released CRD prunes the bookings: the host is untracked.
    booked = 8 if serves_bookings(any_cluster) else None
    created = await any_api.create(
        reported("node-1", cpu=64, bookings=[consumer(UUID, resources(cpu=8))])
    )
    await eventually(lambda: _version(store, "node-1") == created["metadata"]["resourceVersion"], 5)
    _assert_cpu(store, capacity=64 * 2, booked=booked)

    spec = await any_api.patch("node-1", {"spec": {"overcommit": {"cpu": 4.0}}})
    await eventually(lambda: _version(store, "node-1") == spec["metadata"]["resourceVersion"], 5)
    _assert_cpu(store, capacity=64 * 4, booked=booked)

    status = await any_api.patch_status("node-1", {"capacity": {"cpu": 32}})
    await eventually(lambda: _version(store, "node-1") == status["metadata"]["resourceVersion"], 5)
    _assert_cpu(store, capacity=32 * 4, booked=booked)

    await any_api.delete("node-1")
    await eventually(lambda: "node-1" not in store.snapshot.by_name, 5)
    assert informer.status.error is None
    assert informer.status.last_event_at is not None


def _assert_cpu(store: Store, capacity: int, booked: int | None) -> None:
    h = store.snapshot.by_name["node-1"]
    assert h.bookings_tracked is (booked is not None)
    cpu = h.resources["cpu"]
    assert cpu.capacity == capacity
    if booked is not None:
        assert (cpu.booked, cpu.free) == (booked, capacity - booked)


@pytest.mark.cluster
async def test_apiserver_killed_and_restarted_mid_watch(
    cluster: ControlPlane, api: HypervisorAPI, start_informer: StartInformer
) -> None:
    for i in range(20):
        await api.create(reported(f"node-{i}"))
    informer, store = await start_informer(cluster)
    await eventually(lambda: store.ready, 10)

    written = Writes()

    async def write_until(stop: asyncio.Event) -> None:
        n = 0
        while not stop.is_set():
            n += 1
            try:
                await api.patch_status(f"node-{n % 20}", {"numInstances": n})
                written.count += 1
            except Refused as refused:
                if not _unavailable(refused):
                    raise
                await asyncio.sleep(0.1)  # the client's pause before it tries again
            except httpx.TransportError:  # the API server is down part of the time
                await asyncio.sleep(0.1)

    stop = asyncio.Event()
    writer = asyncio.create_task(write_until(stop))
    await written.more(20)
    await asyncio.to_thread(cluster.stop_apiserver, kill=True)
    await asyncio.to_thread(cluster.start_apiserver)
    await written.more(20)  # through the new API server
    stop.set()
    await writer
    await api.delete("node-0")

    await assert_converges(store, api, within=15)
    assert informer.status.watch_restarts >= 1


@pytest.mark.cluster
async def test_relists_after_410_gone(
    any_cluster: ControlPlane,
    any_api: HypervisorAPI,
    any_proxy: TcpProxy,
    start_informer: StartInformer,
) -> None:
    for i in range(10):
        await any_api.create(reported(f"node-{i}"))
    informer, store = await start_informer(any_cluster, via=any_proxy)
    await eventually(lambda: store.ready and len(store.snapshot) == 10, 10)

    # Cut the informer off, change the fleet, and erase the history it would
    # resume from: etcd compacted, and a restarted API server whose watch cache
    # starts after the changes.
    any_proxy.block()
    for i in range(5):
        await any_api.delete(f"node-{i}")
    await any_api.create(reported("node-new"))
    await any_api.patch_status("node-9", {"capacity": {"cpu": 8}})
    await asyncio.to_thread(any_cluster.compact)
    await asyncio.to_thread(any_cluster.stop_apiserver)
    await asyncio.to_thread(any_cluster.start_apiserver)
    relists = informer.status.relists
    any_proxy.unblock()

    await assert_converges(store, any_api, within=15)
    assert sorted(store.snapshot.by_name) == [
        "node-5",
        "node-6",
        "node-7",
        "node-8",
        "node-9",
        "node-new",
    ]
    assert informer.status.relists == relists + 1


@pytest.mark.cluster
@pytest.mark.parametrize("any_cluster", ["bookings"], indirect=True)
@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "paged"])
async def test_a_relist_after_a_crd_rollback_sees_the_bookings_pruned(
    any_cluster: ControlPlane,
    any_api: HypervisorAPI,
    any_proxy: TcpProxy,
    start_informer: StartInformer,
    released_crd: Path,
    stream: bool,
) -> None:
    """Rolled back to the released CRD, the API server prunes spec.bookings from what it
    reads of an object, at the resourceVersion it had: a relist must read it again."""
    created = await any_api.create(
        reported("node-1", cpu=64, bookings=[consumer(UUID, resources(cpu=8))])
    )
    version = created["metadata"]["resourceVersion"]
    informer, store = await start_informer(any_cluster, via=any_proxy, stream=stream)
    await eventually(lambda: store.ready and _version(store, "node-1") == version, 10)
    assert store.snapshot.by_name["node-1"].resources["cpu"].booked == 8

    any_proxy.block()
    try:
        await asyncio.to_thread(any_cluster.replace_crd, released_crd)
        await eventually(lambda: _reads_bookings(any_api, "node-1", False), 30)
        # The position the informer would resume from, compacted away: it relists.
        await asyncio.to_thread(any_cluster.compact)
        await asyncio.to_thread(any_cluster.stop_apiserver)
        await asyncio.to_thread(any_cluster.start_apiserver)
        relists = informer.status.relists
        any_proxy.unblock()
        await eventually(lambda: informer.status.relists > relists, 15)
        host = store.snapshot.by_name["node-1"]
        assert (host.resource_version, host.bookings_tracked, host.bookings) == (version, False, ())
        assert host.resources["cpu"].booked is None
    finally:
        any_proxy.unblock()
        await asyncio.to_thread(any_cluster.replace_crd, any_cluster.crd)
        await eventually(lambda: _reads_bookings(any_api, "node-1", True), 30)


async def _reads_bookings(api: HypervisorAPI, name: str, reads: bool) -> bool:
    """Whether the API server reads the object with spec.bookings (``reads``) or without:
    whether it serves it under the CRD it was last given."""
    response = await api.http.get(f"{api.path}/{name}")
    return ("bookings" in response.json()["spec"]) is reads


@pytest.mark.cluster
@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "paged"])
async def test_fleet_larger_than_a_batch_is_loaded_completely(
    cluster: ControlPlane, api: HypervisorAPI, start_informer: StartInformer, stream: bool
) -> None:
    count = 2100
    semaphore = asyncio.Semaphore(24)

    async def create(i: int) -> None:
        async with semaphore:
            body = reported(f"node-{i:05d}")
            body.pop("status")
            await api.create(body)

    await asyncio.gather(*(create(i) for i in range(count)))
    informer, store = await start_informer(cluster, page_size=500, batch_size=500, stream=stream)
    await eventually(lambda: store.ready, 30)
    assert len(store.snapshot) == count
    assert gc.isenabled()  # paused while the objects were decoded and parsed, and only then
    await api.patch_status("node-00007", {"numInstances": 7})  # the watch goes on after it
    await assert_converges(store, api, within=10)
    assert (informer.status.relists, informer.status.watch_restarts) == (0, 0)
    await api.delete_all()


@pytest.mark.cluster
async def test_server_that_cannot_stream_is_listed_in_pages(
    unstreaming_cluster: ControlPlane, start_informer: StartInformer, caplog: Any
) -> None:
    api = HypervisorAPI(unstreaming_cluster)
    try:
        for i in range(5):
            await api.create(reported(f"node-{i}"))
        caplog.set_level("INFO", logger="gateway.sources.kubernetes.informer")
        informer, store = await start_informer(unstreaming_cluster, page_size=2)
        await eventually(lambda: store.ready and len(store.snapshot) == 5, 10)
        assert "WatchList feature gate" in caplog.text  # the server's own refusal, logged
        await api.delete("node-0")
        await assert_converges(store, api, within=10)
        assert informer.status.error is None
    finally:
        await api.aclose()


@pytest.mark.cluster
async def test_a_crd_removed_while_disconnected_empties_the_fleet_until_it_is_back(
    cluster: ControlPlane, api: HypervisorAPI, proxy: TcpProxy, start_informer: StartInformer
) -> None:
    """Removing the CRD deletes every object: a connected watch hears each DELETED. One
    that reconnects after it hears a 404 instead, and must come to the same fleet (it
    served the deleted one as ready); not ready, as at a start without the CRD, until
    the CRD is back and listed."""
    await api.create(reported("node-gone"))
    informer, store = await start_informer(cluster, via=proxy)
    await eventually(lambda: "node-gone" in store.snapshot.by_name and informer.status.synced, 10)
    removed = False
    try:
        proxy.block()
        await asyncio.to_thread(cluster.remove_crd, cluster.crd)
        removed = True
        proxy.unblock()
        await eventually(lambda: len(store.snapshot) == 0 and not store.ready, 10)
        assert not informer.status.synced
        assert informer.status.error == (
            "the cluster does not serve hypervisors.kvm.cloud.sap (no Hypervisor CRD)"
        )
        await asyncio.to_thread(cluster.install_crd, cluster.crd)
        removed = False
        created = await api.create(reported("node-back"))
        await eventually(
            lambda: _version(store, "node-back") == created["metadata"]["resourceVersion"], 10
        )
        await eventually(lambda: store.ready and informer.status.synced, 10)
        assert informer.status.error is None and list(store.snapshot.by_name) == ["node-back"]
    finally:
        proxy.unblock()
        if removed:
            await asyncio.to_thread(cluster.install_crd, cluster.crd)


@pytest.mark.cluster
async def test_objects_near_the_etcd_size_limit_stream_through_the_watch(
    cluster: ControlPlane, api: HypervisorAPI, start_informer: StartInformer
) -> None:
    _, store = await start_informer(cluster)
    await eventually(lambda: store.ready, 10)
    bookings = [
        consumer(f"00000000-0000-4000-8000-{i:012d}", resources(cpu=1)) for i in range(11000)
    ]
    created = await api.create(reported("node-big", cpu=8000, bookings=bookings))
    assert len(json.dumps(created)) > 1_100_000  # close to etcd's 1.5 MiB per object
    await eventually(
        lambda: _version(store, "node-big") == created["metadata"]["resourceVersion"], 10
    )
    assert store.snapshot.by_name["node-big"].resources["cpu"].booked == 11000


@pytest.mark.cluster
async def test_randomized_churn_with_disruptions_converges(
    cluster: ControlPlane, api: HypervisorAPI, proxy: TcpProxy, start_informer: StartInformer
) -> None:
    seed = int(os.environ.get("CHURN_SEED", time.time_ns() % 2**32))
    print(f"churn seed {seed} (set CHURN_SEED to replay)")
    rng = random.Random(seed)
    # Short server-side watch timeouts: the normal end of a watch is part of the churn too.
    informer, store = await start_informer(
        cluster, via=proxy, watch_timeout=(2, 5), backoff=Backoff(initial=0.05, cap=0.5)
    )
    await eventually(lambda: store.ready, 10)
    names = [f"churn-{i}" for i in range(40)]
    stop = asyncio.Event()
    written = Writes()

    async def writer(w: int) -> None:
        local = random.Random(seed + w)
        while not stop.is_set():
            name = local.choice(names)
            action = local.random()
            try:
                if action < 0.3:
                    await api.create(reported(name, cpu=local.randint(8, 128)))
                elif action < 0.55:
                    await api.patch(
                        name, {"spec": {"overcommit": {"cpu": local.choice([1.0, 2.0, 4.0])}}}
                    )
                elif action < 0.85:
                    await api.patch_status(name, {"capacity": {"cpu": local.randint(8, 128)}})
                else:
                    await api.delete(name)
                written.count += 1
            except Refused as refused:
                if refused.status_code not in CONFLICTS and not _unavailable(refused):
                    raise
            except httpx.TransportError:
                await asyncio.sleep(0.05)  # the client's pause while the API server restarts

    async def watch_ends() -> None:
        """Until the server ends the informer's watch (after 2 to 5 s) and it resumes."""
        restarts = informer.status.watch_restarts
        await eventually(lambda: informer.status.watch_restarts > restarts, 15)

    async def disrupt() -> None:
        """A fixed number of faults, paced by the writes that get through in between."""
        await watch_ends()  # the normal end of a watch, amid the writes
        restarted = False
        for _ in range(DISRUPTIONS):
            await written.more(rng.randint(15, 60))
            choice = rng.random()
            if choice < 0.4:
                proxy.drop()
            elif choice < 0.7:
                proxy.block()
                await written.more(rng.randint(5, 40))
                proxy.unblock()
            elif choice < 0.85 or restarted:
                await asyncio.to_thread(cluster.compact)
                proxy.drop()
            else:
                restarted = True
                await asyncio.to_thread(cluster.stop_apiserver, kill=rng.random() < 0.5)
                await asyncio.to_thread(cluster.start_apiserver)
        await written.more(rng.randint(15, 60))

    tasks = [asyncio.create_task(writer(w)) for w in range(6)]
    try:
        await disrupt()
    finally:
        stop.set()
        proxy.unblock()
        await asyncio.gather(*tasks)

    await assert_converges(store, api, within=20)


@pytest.mark.cluster
async def test_dead_connection_does_not_hang_the_watch(
    cluster: ControlPlane, api: HypervisorAPI, proxy: TcpProxy, start_informer: StartInformer
) -> None:
    _, store = await start_informer(cluster, via=proxy, watch_timeout=(3, 3), read_grace=1.0)
    await eventually(lambda: store.ready, 10)
    before = await api.create(reported("node-before"))  # the watch is open: it brings this
    await eventually(
        lambda: _version(store, "node-before") == before["metadata"]["resourceVersion"], 10
    )
    proxy.blackhole()
    created = await api.create(reported("node-after"))
    # Only a client-side timeout gets the informer off the silent connection.
    await eventually(
        lambda: _version(store, "node-after") == created["metadata"]["resourceVersion"], 10
    )


@pytest.mark.cluster
@BOOKING_CLUSTERS
async def test_malformed_objects_are_kept_with_warnings(
    any_cluster: ControlPlane, any_api: HypervisorAPI, start_informer: StartInformer
) -> None:
    informer, store = await start_informer(any_cluster)
    await eventually(lambda: store.ready, 10)
    bad = reported(
        "node-bad",
        bookings=[consumer(UUID, resources(cpu="1e999")), consumer(UUID, resources(cpu=2))],
    )
    bad["status"]["capacity"]["memory"] = "1e999"
    await any_api.create(bad)
    good = await any_api.create(
        reported("node-good", cpu=10, bookings=[consumer(UUID, resources(cpu=3))])
    )
    await eventually(lambda: _version(store, "node-good") == good["metadata"]["resourceVersion"], 5)

    warnings = " ".join(store.snapshot.by_name["node-bad"].warnings)
    assert "1e999" in warnings
    assert "more than once" in warnings
    parsed = store.snapshot.by_name["node-good"]
    assert parsed.warnings == ()
    assert parsed.resources["cpu"].free == Decimal(10 * 2 - 3)
    assert informer.status.parse_failures == 0
    await assert_converges(store, any_api, within=5)


@pytest.mark.cluster
async def test_bad_token_is_reported_not_ready(
    cluster: ControlPlane, start_informer: StartInformer
) -> None:
    informer, store = await start_informer(cluster, user="intruder", token="not-a-token")
    await eventually(lambda: informer.status.error is not None, 5)
    assert "401" in informer.status.error
    assert "not authorized" in informer.status.error
    assert not store.ready
    assert not informer.status.synced


@pytest.mark.cluster
async def test_forbidden_until_rbac_grants_read(
    cluster: ControlPlane, api: HypervisorAPI, start_informer: StartInformer
) -> None:
    await api.create(reported("node-1"))
    informer, store = await start_informer(cluster, user="stranger")
    await eventually(lambda: informer.status.error is not None, 5)
    assert "403" in informer.status.error
    assert not store.ready

    # Granting exactly get/list/watch fixes it, without restarting the informer.
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    role = {
        "metadata": {"name": "hypervisor-reader-test"},
        "rules": [
            {
                "apiGroups": ["kvm.cloud.sap"],
                "resources": ["hypervisors"],
                "verbs": ["get", "list", "watch"],
            }
        ],
    }
    binding = {
        "metadata": {"name": "hypervisor-reader-test"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "hypervisor-reader-test",
        },
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "stranger"}],
    }
    await api.http.post(f"{rbac}/clusterroles", json=role)
    await api.http.post(f"{rbac}/clusterrolebindings", json=binding)
    try:
        await eventually(lambda: store.ready and informer.status.synced, 10)
        assert informer.status.error is None
        assert set(store.snapshot.by_name) == {"node-1"}
    finally:
        await api.http.delete(f"{rbac}/clusterrolebindings/hypervisor-reader-test")
        await api.http.delete(f"{rbac}/clusterroles/hypervisor-reader-test")


@pytest.mark.cluster
async def test_expired_plugin_credentials_are_fetched_again(
    cluster: ControlPlane, api: HypervisorAPI, tmp_path: Path
) -> None:
    """A kubeconfig's exec plugin (or OIDC) hands out tokens that expire."""
    await api.create(reported("node-1"))
    plugin = ExecPlugin.write(cluster, tmp_path, "expired-token")
    async with _reloading_informer(plugin.kubeconfig) as (informer, store):
        await eventually(lambda: informer.status.error is not None, 5)
        assert "401" in informer.status.error
        # Refused at once, refused again with what the plugin hands out anew: then it waits.
        await eventually(lambda: plugin.run_count() >= 3, 5)

        plugin.token.write_text(cluster.tokens["admin"])  # the plugin's next token is valid
        await eventually(lambda: store.ready and informer.status.synced, 5)
        assert informer.status.error is None
        assert set(store.snapshot.by_name) == {"node-1"}


@pytest.mark.cluster
async def test_a_rotated_client_certificate_is_presented_without_a_restart(
    cluster: ControlPlane, api: HypervisorAPI, tmp_path: Path
) -> None:
    """The client builds its TLS context once; a rotated certificate needs a new one."""
    await api.create(reported("node-1"))
    user = CertificateUser.write(cluster, tmp_path, trusted=False)
    async with _reloading_informer(user.kubeconfig) as (informer, store):
        await eventually(lambda: informer.status.error is not None, 5)
        assert "401" in informer.status.error

        user.rotate()  # the files now hold a certificate of the cluster's CA
        await eventually(lambda: store.ready and informer.status.synced, 10)
        assert informer.status.error is None
        assert set(store.snapshot.by_name) == {"node-1"}


@contextlib.asynccontextmanager
async def _reloading_informer(
    kubeconfig: Path,
) -> AsyncIterator[tuple[HypervisorInformer, Store]]:
    """An informer running on ``kubeconfig`` that loads it again when refused."""
    configuration = await load_client_config(str(kubeconfig))
    informer = HypervisorInformer(
        configuration,
        credentials=functools.partial(reload_credentials, configuration, str(kubeconfig)),
        auth_retry=0.5,
    )
    store = Store()
    task = asyncio.create_task(informer.run(store))
    try:
        yield informer, store
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def _version(store, name: str) -> str | None:
    hypervisor = store.snapshot.by_name.get(name)
    return hypervisor.resource_version if hypervisor else None


# Replies a real server gives only at its own discretion, from a scripted endpoint.


@pytest.fixture
async def fake() -> AsyncIterator[FakeHypervisorAPI]:
    server = FakeHypervisorAPI()
    yield server
    await server.close()


async def _run(fake: FakeHypervisorAPI, **options: Any) -> tuple[HypervisorInformer, Store]:
    informer = HypervisorInformer(
        await fake.start(), backoff=Backoff(initial=0.01, cap=0.05), **options
    )
    store = Store()
    fake.clients.append(asyncio.create_task(informer.run(store)))
    return informer, store


async def test_bookmarks_move_the_resume_position_and_in_band_410_relists(
    fake: FakeHypervisorAPI,
) -> None:
    fake.page([hypervisor("a", resource_version="5")], "10")
    fake.watches.append([bookmark("15")])
    fake.watches.append([{"type": "ERROR", "object": {"kind": "Status", "code": 410}}])
    fake.page([hypervisor("b", resource_version="30")], "30")
    fake.watches.append([event("ADDED", "c", "31"), None])
    informer, store = await _run(fake, watch_timeout=(300, 600))

    await eventually(lambda: set(store.snapshot.by_name) == {"b", "c"}, 5)
    streams = [r for r in fake.requests if "sendInitialEvents" in r]
    assert len(streams) == 1  # refused once: the relist is paged without asking again
    watches = [r for r in fake.requests if r.get("watch") == "true" and r not in streams]
    assert [w["resourceVersion"] for w in watches] == ["10", "15", "30"]
    assert all(w["allowWatchBookmarks"] == "true" for w in watches)
    assert all(300 <= int(w["timeoutSeconds"]) <= 600 for w in watches)
    assert store.resource_version == "31"
    assert (informer.status.relists, informer.status.watch_restarts) == (1, 2)


async def test_expired_continue_token_restarts_the_list(fake: FakeHypervisorAPI) -> None:
    fake.page([hypervisor("a", resource_version="5")], "10", token="page-2")
    fake.fail_list(410, "Expired")
    fake.page([hypervisor("a", resource_version="5")], "12", token="page-2b")
    fake.page([hypervisor("b", resource_version="11")], "12")
    fake.watches.append([None])
    _, store = await _run(fake, page_size=1)

    await eventually(lambda: store.ready, 5)
    assert set(store.snapshot.by_name) == {"a", "b"}
    lists = [r for r in fake.requests if r.get("watch") != "true"]
    assert [r.get("continue") for r in lists] == [None, "page-2", None, "page-2b"]
    assert all(r["limit"] == "1" for r in lists)
    assert store.resource_version == "12"


async def test_server_errors_are_retried_and_reported(fake: FakeHypervisorAPI) -> None:
    fake.fail_list(429, "TooManyRequests")
    fake.fail_list(500, "InternalError")
    informer, store = await _run(fake)
    await eventually(lambda: informer.status.error is not None, 5)
    assert not store.ready
    fake.page([hypervisor("a", resource_version="5")], "10")
    fake.watches.append([None])
    await eventually(lambda: store.ready, 5)
    assert informer.status.error is None


async def test_retry_after_of_an_overloaded_server_is_honoured(fake: FakeHypervisorAPI) -> None:
    fake.fail_list(429, "TooManyRequests", headers={"Retry-After": "1"})
    fake.page([hypervisor("a", resource_version="5")], "10")
    fake.watches.append([None])
    informer, store = await _run(fake)  # its own backoff: 10-50 ms
    await eventually(lambda: store.ready, 5)
    lists = [t for t, r in zip(fake.arrivals, fake.requests, strict=True) if "watch" not in r]
    assert lists[1] - lists[0] >= 1.0
    assert informer.status.error is None


async def test_streamed_initial_state_goes_on_as_the_watch(fake: FakeHypervisorAPI) -> None:
    fake.streaming = True
    fake.watches.append(
        [
            *(
                event("ADDED", name, version)
                for name, version in [("a", "5"), ("b", "6"), ("c", "7")]
            ),
            bookmark("8"),  # an ordinary bookmark: not the end
            initial_events_end("9"),
            event("MODIFIED", "a", "10"),
            event("DELETED", "b", "11"),
            None,
        ]
    )
    seen: list[set[str]] = []
    informer, store = await _run(fake, batch_size=2)
    store.listen(lambda snapshot, changes: seen.append(set(snapshot.by_name)))

    await eventually(lambda: set(store.snapshot.by_name) == {"a", "c"}, 5)
    assert seen[0] == {"a", "b", "c"}  # the whole initial state in one step
    assert _version(store, "a") == "10"
    [request] = fake.requests  # one request for the state and the changes after it
    assert request["sendInitialEvents"] == "true"
    assert request["resourceVersionMatch"] == "NotOlderThan"
    assert "resourceVersion" not in request  # a consistent read: nothing older than etcd now
    assert store.resource_version == "11"
    assert (informer.status.events["ADDED"], informer.status.events["MODIFIED"]) == (0, 1)


@pytest.mark.parametrize("line", [b"not json", b'{"type": "MODIFIED", "object": {"meta'])
async def test_a_malformed_event_is_a_retried_failure(
    fake: FakeHypervisorAPI, line: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    fake.streaming = True
    fake.watches.append([event("ADDED", "a", "5"), initial_events_end("6"), line])
    fake.watches.append([event("MODIFIED", "a", "7"), None])
    informer, store = await _run(fake)

    await eventually(lambda: _version(store, "a") == "7", 5)
    assert [r.get("resourceVersion") for r in fake.requests] == [None, "6"]
    [failure] = [r for r in caplog.records if "retrying" in r.getMessage()]
    assert "MalformedJSON: not a watch event" in failure.getMessage()
    assert not [r for r in caplog.records if r.exc_info]  # no "unexpected error"
    assert informer.status.error is None


async def test_in_band_410_in_the_initial_state_streams_again(fake: FakeHypervisorAPI) -> None:
    fake.streaming = True
    fake.watches.append([event("ADDED", "a", "5"), {"type": "ERROR", "object": {"code": 410}}])
    fake.watches.append([event("ADDED", "b", "7"), initial_events_end("8"), None])
    informer, store = await _run(fake)

    await eventually(lambda: store.ready, 5)
    assert set(store.snapshot.by_name) == {"b"}
    assert [r.get("sendInitialEvents") for r in fake.requests] == ["true", "true"]
    assert informer.status.relists == 0


async def test_a_burst_of_events_is_applied_one_a_turn_of_the_loop(
    fake: FakeHypervisorAPI,
) -> None:
    """Thirty changes in one write reach the informer in one chunk; the loop turns
    once a turn's share is spent (here: none, so after every event), so answers and
    messages are not held for the burst."""
    fake.streaming = True
    burst = b"\n".join(json.dumps(event("MODIFIED", "a", str(v))).encode() for v in range(7, 37))
    fake.watches.append([event("ADDED", "a", "5"), initial_events_end("6"), burst, None])
    seen: list[int] = []
    async with loop_turns() as turns:
        _, store = await _run(fake, turn_seconds=0)
        store.listen(lambda snapshot, changes: seen.append(turns()))
        await eventually(lambda: _version(store, "a") == "36", 5)
    changes = seen[1:]  # after the initial state
    assert len(changes) == 30
    assert all(later > earlier for earlier, later in itertools.pairwise(changes))


async def test_a_backlog_is_applied_in_turns_growing_to_32_ms(
    fake: FakeHypervisorAPI,
) -> None:
    """While the next event is there when the loop comes back, each turn is twice the
    last, up to 32 ms: a flood is still kept up with. A clock of the test's, moved 1 ms
    by each change applied, times the turns: the changes between two turns of the loop
    come 1, 4, 8, 16, then 32 at most. (A turn may end early where the stream waits
    for its next chunk: a group is never larger than its turn.)"""
    fake.streaming = True
    burst = b"\n".join(
        json.dumps(event("MODIFIED", "a", str(v))).encode() for v in range(7, 7 + 300)
    )
    fake.watches.append([event("ADDED", "a", "5"), initial_events_end("6"), burst, None])
    clock = Clock(0.0)
    seen: list[int] = []
    async with loop_turns() as turns:

        def applied(snapshot: Any, changes: Any) -> None:
            clock.now += 0.001
            seen.append(turns())

        _, store = await _run(fake, turn_seconds=0.002, clock=clock)
        store.listen(applied)
        await eventually(lambda: _version(store, "a") == "306", 5)
    groups = [len(list(g)) for _, g in itertools.groupby(seen[1:])]  # after the initial state
    assert sum(groups) == 300
    assert groups[:4] == [1, 4, 8, 16]
    assert max(groups) == 32


async def test_stream_cut_before_the_initial_state_ends_is_not_committed(
    fake: FakeHypervisorAPI,
) -> None:
    fake.streaming = True
    fake.watches.append([event("ADDED", "a", "5")])  # the connection ends here
    fake.watches.append(
        [event("ADDED", "a", "5"), event("ADDED", "b", "6"), initial_events_end("6")]
    )
    fake.watches.append([None])
    seen: list[set[str]] = []
    informer, store = await _run(fake)
    store.listen(lambda snapshot, changes: seen.append(set(snapshot.by_name)))

    await eventually(lambda: store.ready, 5)
    assert seen[0] == {"a", "b"}  # the cut stream's part was never committed
    # The second stream ends after its initial state too: the third is the one that stays.
    await eventually(lambda: informer.status.watch_restarts == 2, 5)
    assert informer.status.relists == 0


async def test_server_that_ignores_initial_events_is_listed_in_pages(
    fake: FakeHypervisorAPI,
) -> None:
    fake.streaming = True
    fake.watches.append([None])  # accepted, then silence: an API server older than 1.27
    fake.page([hypervisor("a", resource_version="5")], "10")
    fake.watches.append([event("ADDED", "b", "11"), None])
    _, store = await _run(fake, list_timeout=0.3)

    await eventually(lambda: set(store.snapshot.by_name) == {"a", "b"}, 5)
    assert [r.get("resourceVersion") for r in fake.requests if r.get("watch")] == [None, "10"]
