"""Shared fixtures: a real control plane per session, informers and API clients per test."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.informer import HypervisorInformer
from gateway.kube import load_client_config
from gateway.store import Store
from gateway.wire import Backoff
from scripts.controlplane import PROJECT_CRD, ROOT, ControlPlane, ControlPlaneError
from tests.kubeapi import HypervisorAPI
from tests.tcpproxy import TcpProxy


def _reference_crd() -> Path:
    """The operator's own CRD manifest, kept beside the repository, never inside it.

    It is looked for in ``$HGW_REFERENCE_DIR``, else in ``shared/reference/`` next
    to the checkout or next to any directory above it (a worktree sits deeper
    than its main clone).
    """
    name = "hypervisors.kvm.cloud.sap.bookings.yaml"
    if os.environ.get("HGW_REFERENCE_DIR"):
        return Path(os.environ["HGW_REFERENCE_DIR"], name)
    candidates = [parent / "shared" / "reference" / name for parent in ROOT.parents]
    return next((path for path in candidates if path.exists()), candidates[0])


REFERENCE_CRD = _reference_crd()


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _control_plane(crd: Path, *flags: str) -> Iterator[ControlPlane]:
    plane = ControlPlane(crd=crd, apiserver_flags=flags)
    try:
        plane.start()
    except (ControlPlaneError, OSError) as error:
        plane.stop()
        # Only a machine without Go may skip, and never in CI: there a cluster
        # test that does not run must turn the build red, not green.
        if shutil.which("go") is None and not _in_ci():
            pytest.skip(f"no Go toolchain to build kube-apiserver and etcd ({error})")
        pytest.fail(f"the control plane did not start: {error}", pytrace=False)
    try:
        yield plane
    finally:
        plane.stop()


@pytest.fixture(scope="session")
def cluster() -> Iterator[ControlPlane]:
    """etcd + kube-apiserver with the project's CRD, shared by the whole session."""
    yield from _control_plane(PROJECT_CRD)


@pytest.fixture(scope="session")
def reference_cluster() -> Iterator[ControlPlane]:
    """A second control plane serving the operator's CRD instead of the project's."""
    if not REFERENCE_CRD.exists():
        pytest.skip(f"operator CRD not found at {REFERENCE_CRD}")
    yield from _control_plane(REFERENCE_CRD)


@pytest.fixture(scope="session")
def unstreaming_cluster() -> Iterator[ControlPlane]:
    """A control plane whose API server cannot stream a watch's initial state."""
    yield from _control_plane(PROJECT_CRD, "--feature-gates=WatchList=false")


@pytest.fixture(params=["project", "reference"])
def any_cluster(request: pytest.FixtureRequest) -> ControlPlane:
    """Each cluster in turn: for the tests that prove compatibility with the operator's CRD."""
    name = "cluster" if request.param == "project" else "reference_cluster"
    plane: ControlPlane = request.getfixturevalue(name)
    return plane


@pytest.fixture
async def api(cluster: ControlPlane) -> AsyncIterator[HypervisorAPI]:
    """Admin access to the project cluster, emptied of Hypervisors before the test."""
    async for client in _api(cluster):
        yield client


@pytest.fixture
async def any_api(any_cluster: ControlPlane) -> AsyncIterator[HypervisorAPI]:
    async for client in _api(any_cluster):
        yield client


async def _api(plane: ControlPlane) -> AsyncIterator[HypervisorAPI]:
    client = HypervisorAPI(plane)
    await client.delete_all()
    try:
        yield client
    finally:
        await client.aclose()


@pytest.fixture
async def proxy(cluster: ControlPlane) -> AsyncIterator[TcpProxy]:
    """A breakable network path to the project cluster's API server."""
    async for p in _proxy(cluster):
        yield p


@pytest.fixture
async def any_proxy(any_cluster: ControlPlane) -> AsyncIterator[TcpProxy]:
    async for p in _proxy(any_cluster):
        yield p


async def _proxy(plane: ControlPlane) -> AsyncIterator[TcpProxy]:
    p = await TcpProxy(plane.apiserver_port).start()
    try:
        yield p
    finally:
        await p.close()


StartInformer = Callable[..., Awaitable[tuple[HypervisorInformer, Store]]]


@pytest.fixture
async def start_informer(tmp_path: Path) -> AsyncIterator[StartInformer]:
    """Start informers (as ``user``, optionally through a proxy); all stop after the test.

    Retries are fast here so that recovery fits in test time; the retry logic
    itself is the production one.
    """
    tasks: list[asyncio.Task[None]] = []

    async def start(
        plane: ControlPlane,
        user: str = "admin",
        token: str | None = None,
        via: TcpProxy | None = None,
        **options: Any,
    ) -> tuple[HypervisorInformer, Store]:
        path = tmp_path / f"kubeconfig-{len(tasks)}"
        plane.write_kubeconfig(path, user, server=via.address if via else None, token=token)
        options.setdefault("backoff", Backoff(initial=0.1, cap=1.0))
        options.setdefault("auth_retry", 0.5)
        informer = HypervisorInformer(await load_client_config(str(path)), **options)
        store = Store()
        tasks.append(asyncio.create_task(informer.run(store)))
        return informer, store

    yield start
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError):
            await task
