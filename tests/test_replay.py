"""The replay server against the real informer, on a stream recorded from a real API server.

The recording is made here, from the session's kube-apiserver; what is checked
is what the informer relies on: the initial state and its bookmark, every
change in order at a version of its own (the recording looped), a watch the
server ends resumed where it stopped, and evictions unserved.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import yaml
from kubernetes.aio.client import Configuration

from gateway.sources.kubernetes.backoff import Backoff
from gateway.sources.kubernetes.credentials import load_client_config
from gateway.sources.kubernetes.evictions import EvictionInformer
from gateway.sources.kubernetes.informer import HypervisorInformer
from gateway.store.evictions import EvictionStore
from gateway.store.snapshot import Change, Snapshot
from gateway.store.store import Store
from harness.controlplane import ControlPlane, free_port
from harness.replay import ReplayServer
from harness.replay_recording import Line, Recording, record_stream
from tests.kubeapi import HypervisorAPI
from tests.objects import reported
from tests.support import cancelled, eventually

HOSTS = 3
WRITES = 4


def test_a_line_carries_the_version_it_is_given_and_nothing_else_changes() -> None:
    raw = (
        b'{"type":"MODIFIED","object":{"kind":"Hypervisor","metadata":{"name":"node-1",'
        b'"resourceVersion":"812","labels":{"v":"812"}},"status":{"numInstances":812}}}'
    )
    line = Line.of(raw)

    assert (line.type, line.name, line.version) == ("MODIFIED", "node-1", 812)
    assert line.at(812) == raw
    assert line.at(90001) == raw.replace(b'"resourceVersion":"812"', b'"resourceVersion":"90001"')
    assert not line.ends_initial_events


@pytest.fixture
async def recorded(api: HypervisorAPI, cluster: ControlPlane, tmp_path: Path) -> Path:
    """Three hosts, then four status writes, as the API server streamed them."""
    for n in range(HOSTS):
        await api.create(reported(f"node-{n}"))

    async def writes() -> float:
        for i in range(WRITES):
            await api.patch_status(f"node-{i % HOSTS}", {"numInstances": i + 1})
        return time.monotonic() + 0.5  # the last event is on its way

    directory = tmp_path / "recording"
    directory.mkdir()
    verify = ssl.create_default_context(cafile=cluster.ca_file)
    headers = {"Authorization": f"Bearer {cluster.tokens['admin']}"}
    async with httpx.AsyncClient(base_url=cluster.server, verify=verify, headers=headers) as http:
        counts = await record_stream(http, directory, writes)
    assert counts["initial"] == HOSTS + 1
    kinds = [line.type for line in Recording.changes_in(directory)]
    assert kinds.count("MODIFIED") == WRITES and set(kinds) <= {"MODIFIED", "BOOKMARK"}
    return directory


@pytest.fixture
async def replay(recorded: Path) -> AsyncIterator[ReplayServer]:
    server = ReplayServer(Recording.load(recorded), free_port())
    task = asyncio.create_task(server.serve(60))

    async def accepts() -> bool:
        with contextlib.suppress(OSError):
            _, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.close()
            return True
        return False

    await eventually(accepts)
    yield server
    await cancelled([task])


async def _configuration(server: ReplayServer, tmp_path: Path) -> Configuration:
    url = f"http://127.0.0.1:{server.port}"
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "replay", "cluster": {"server": url}}],
        "users": [{"name": "replay", "user": {"token": "replay"}}],
        "contexts": [{"name": "replay", "context": {"cluster": "replay", "user": "replay"}}],
        "current-context": "replay",
    }
    path = tmp_path / "replay.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return await load_client_config(str(path))


@pytest.mark.cluster
async def test_the_informer_is_ready_on_a_replay_and_applies_its_changes_in_order(
    replay: ReplayServer, tmp_path: Path
) -> None:
    recording = replay.feed.recording
    # The server ends each watch after a second: the informer resumes, never relists.
    informer = HypervisorInformer(
        await _configuration(replay, tmp_path),
        watch_timeout=(1, 1),
        backoff=Backoff(initial=0.1, cap=1.0),
    )
    store = Store()
    applied: list[tuple[str, str | None]] = []

    def note(snapshot: Snapshot, changes: list[Change]) -> None:
        applied.extend((c.hypervisor.name, c.hypervisor.resource_version) for c in changes)

    task = asyncio.create_task(informer.run(store))
    try:
        await eventually(lambda: store.ready, 10)
        initial = {Line.of(raw).name: str(Line.of(raw).version) for raw in recording.initial[:-1]}
        assert {h.name: h.resource_version for h in store.snapshot.by_name.values()} == initial
        store.listen(note)

        # Ten changes from four recorded: the recording looped, each at a version of its own.
        planned = replay.feed.play(rate=4, start=time.monotonic(), seconds=2.5)
        assert [version for _, version in planned] == [recording.version + k + 1 for k in range(10)]
        changes = [(name, str(version)) for name, version in planned if name is not None]
        await eventually(lambda: len(applied) == len(changes), 10)
        assert applied == changes
        assert informer.status.watch_restarts >= 1 and informer.status.relists == 0
        assert informer.status.events["MODIFIED"] == len(changes)
        await eventually(lambda: len(replay.feed.sent) == len(planned))
        sent = [replay.feed.sent[k] for k in range(len(planned))]
        assert sent == sorted(sent)
    finally:
        await cancelled([task])


@pytest.mark.cluster
async def test_evictions_are_not_served_as_by_a_cluster_without_their_crd(
    replay: ReplayServer, tmp_path: Path
) -> None:
    informer = EvictionInformer(
        await _configuration(replay, tmp_path),
        backoff=Backoff(initial=0.1, cap=1.0),
    )
    store = EvictionStore()
    task = asyncio.create_task(informer.run(store))
    try:
        await eventually(lambda: "no Eviction CRD" in str(store.snapshot.unavailable), 10)
        assert store.snapshot.by_name == {}
    finally:
        await cancelled([task])
