"""Shared fixtures: a real control plane per session, informers and API clients per test."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest
from hypothesis import settings

from gateway.sources.kubernetes.backoff import Backoff
from gateway.sources.kubernetes.credentials import load_client_config
from gateway.sources.kubernetes.informer import HypervisorInformer
from gateway.store.store import Store
from harness import controlplane
from harness.controlplane import PROJECT_CRD, ControlPlane, ControlPlaneError
from harness.placement import PLACEMENT_PYTHON, start_placement
from tests.kubeapi import HypervisorAPI
from tests.objects import BOOKINGS_CRD, EVICTION_CRD, RELEASED_CRD, reference_dir
from tests.support import cancelled
from tests.tcpproxy import TcpProxy

REFERENCE_DIR = reference_dir()

# No per-example deadline: speed is measured by the benchmarks, and on a shared
# two-core machine a slow example says nothing about the property being checked.
settings.register_profile("gateway", deadline=None)
settings.load_profile("gateway")


def _reference_crd(name: str) -> Path:
    """One of the operator's CRDs; skip only when the reference directory is absent."""
    if REFERENCE_DIR is None:
        pytest.skip("no ../shared/reference beside the repository (or $HGW_REFERENCE_DIR)")
    path = REFERENCE_DIR / name
    if not path.is_file():
        pytest.fail(f"{path} is missing from the reference directory", pytrace=False)
    return path


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _without(what: str, error: Exception) -> NoReturn:
    # Only a machine without Go may skip, and never in CI: there a cluster
    # test that does not run must turn the build red, not green.
    if shutil.which("go") is None and not _in_ci():
        pytest.skip(f"no Go toolchain to build kube-apiserver and etcd ({error})")
    pytest.fail(f"{what}: {error}", pytrace=False)


def _control_plane(crd: Path, *flags: str) -> Iterator[ControlPlane]:
    plane = ControlPlane(crd=crd, apiserver_flags=flags)
    try:
        plane.start()
    except (ControlPlaneError, OSError) as error:
        plane.stop()
        _without("the control plane did not start", error)
    try:
        yield plane
    finally:
        plane.stop()


@pytest.fixture(scope="session")
def kubectl() -> Path:
    """The kubectl built with the control plane (same version), for tests of deploy/.

    Built like the API server, so missing like it: the tests that use it are marked
    ``cluster`` too.
    """
    try:
        return controlplane.kubectl()
    except (ControlPlaneError, OSError) as error:
        _without("kubectl was not built", error)


@pytest.fixture(scope="session")
def cluster() -> Iterator[ControlPlane]:
    """etcd + kube-apiserver with the project's CRD, shared by the whole session."""
    yield from _control_plane(PROJECT_CRD)


@pytest.fixture(scope="session")
def reference_cluster() -> Iterator[ControlPlane]:
    """A second control plane serving the operator's CRD with spec.bookings."""
    yield from _control_plane(_reference_crd(BOOKINGS_CRD))


@pytest.fixture(scope="session")
def released_cluster() -> Iterator[ControlPlane]:
    """A control plane serving the operator's released CRD, as real clusters do today."""
    yield from _control_plane(_reference_crd(RELEASED_CRD))


@pytest.fixture(scope="session")
def released_crd() -> Path:
    """The operator's released Hypervisor CRD (no spec.bookings), for tests to install."""
    return _reference_crd(RELEASED_CRD)


@pytest.fixture(scope="session")
def eviction_crd() -> Path:
    """The operator's released Eviction CRD, for tests to install and remove."""
    return _reference_crd(EVICTION_CRD)


@pytest.fixture(scope="session")
def unstreaming_cluster() -> Iterator[ControlPlane]:
    """A control plane whose API server cannot stream a watch's initial state."""
    yield from _control_plane(PROJECT_CRD, "--feature-gates=WatchList=false")


@pytest.fixture(scope="session")
def placement(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a real OpenStack Placement (harness/placement.py), shared by the session.

    Its providers outlive a test: a test adds its own and looks only at those.
    Only a machine without ``.venv-placement`` may skip, and never in CI.
    """
    if not PLACEMENT_PYTHON.exists() and not _in_ci():
        pytest.skip(f"no {PLACEMENT_PYTHON} to run OpenStack Placement (scripts/test creates it)")
    log = tmp_path_factory.mktemp("placement") / "placement.log"
    try:
        server = start_placement(log)
    except (RuntimeError, OSError) as error:
        pytest.fail(f"OpenStack Placement did not start ({error}); see {log}", pytrace=False)
    try:
        yield server.url
    finally:
        server.stop()


#: Each CRD a cluster may serve -> the fixture of a control plane serving it.
CLUSTERS = {"project": "cluster", "bookings": "reference_cluster", "released": "released_cluster"}
#: The CRDs that have spec.bookings: for tests of the bookings' own rules.
BOOKING_CLUSTERS = pytest.mark.parametrize("any_cluster", ["project", "bookings"], indirect=True)


@pytest.fixture(params=list(CLUSTERS))
def any_cluster(request: pytest.FixtureRequest) -> ControlPlane:
    """Each cluster in turn: for the tests that prove compatibility with the operator's CRDs."""
    plane: ControlPlane = request.getfixturevalue(CLUSTERS[request.param])
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
    await cancelled(tasks)
