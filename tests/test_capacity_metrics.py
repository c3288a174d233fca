"""The capacity series: what they say, what they leave out, and what Prometheus reads."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import gc
import itertools
import json
import random
import socket
import subprocess
import tempfile
from collections.abc import AsyncIterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from gateway.domain import fleet, slots
from gateway.domain.flavors import load_catalog, parse_catalog
from gateway.http import capacity_metrics
from gateway.http.auth import Decision, Verdict
from gateway.http.capacity_metrics import (
    CONTENT_TYPE,
    FAMILIES,
    CapacityExposition,
    Pace,
    pieces,
)
from gateway.http.capacity_text import HostLines
from gateway.sources.demo.source import generate
from gateway.store.store import Store
from harness.controlplane import free_port
from tests import fleet as hand_made
from tests.objects import hypervisor
from tests.support import eventually, query, run_server, serve
from tests.tcpproxy import TcpProxy

PROMETHEUS = Path("/usr/bin/prometheus")
DASHBOARD = json.loads(
    (Path(__file__).parents[1] / "deploy/monitoring/capacity-dashboard.json").read_text()
)
PROMTOOL = Path("/usr/bin/promtool")
CATALOG = parse_catalog([{"name": "small", "vcpus": 4, "ram": 16384}], "test")
INFO = "hypervisor_gateway_hypervisor_info"
BASIS = "hypervisor_gateway_hypervisor_basis_info"

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def exposition(objects: list[dict[str, Any]], catalog: Any = CATALOG) -> CapacityExposition:
    store = Store()
    store.replace(objects)
    return CapacityExposition(store, catalog)


def samples(text: bytes) -> Samples:
    """Every sample by name and labels, through prometheus-client's own parser."""
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text.decode())
        for s in family.samples
    }


def value(found: Samples, metric: str, /, **labels: str) -> float | None:
    return found.get((metric, frozenset(labels.items())))


def host_labels(name: str, zone: str, bb: str, **more: str) -> dict[str, str]:
    return dict(name=name, zone=zone, building_block=bb, worker_group="") | more


def host_series(found: Samples, name: str) -> set[tuple[str, frozenset[tuple[str, str]]]]:
    """The figure series of one host (not its info series), by name and labels."""
    return {
        key
        for key in found
        if ("name", name) in key[1] and key[0] in FAMILIES and key[0] not in (INFO, BASIS)
    }


def labels_of(found: Samples, family: str, name: str) -> list[dict[str, str]]:
    """The labels of one host's series of ``family``."""
    return [
        dict(labels) for metric, labels in found if metric == family and ("name", name) in labels
    ]


def test_hosts_export_their_figures_and_unknown_ones_are_absent() -> None:
    found = samples(exposition(hand_made.objects()).render())
    a = host_labels("node-a", "qa-de-1a", "bb01", resource="cpu")
    assert value(found, "hypervisor_gateway_hypervisor_physical", **a) == 256
    assert value(found, "hypervisor_gateway_hypervisor_capacity", **a) == 504
    assert value(found, "hypervisor_gateway_hypervisor_reserved", **a) == 4
    assert value(found, "hypervisor_gateway_hypervisor_booked", **a) == 28
    assert value(found, "hypervisor_gateway_hypervisor_free", **a) == 476
    assert value(found, "hypervisor_gateway_hypervisor_allocated", **a) == 30
    assert value(found, "hypervisor_gateway_hypervisor_available", **a) == 476
    b = host_labels("node-b", "qa-de-1b", "bb02", resource="cpu")
    assert value(found, "hypervisor_gateway_hypervisor_free", **b) == -4  # never clamped
    # Not tracked: booked, reserved and free are unknown, so absent (not 0).
    d = host_labels("node-d", "qa-de-1b", "bb02", resource="cpu")
    assert value(found, "hypervisor_gateway_hypervisor_available", **d) == 28
    for figure in ("reserved", "booked", "free"):
        assert value(found, f"hypervisor_gateway_hypervisor_{figure}", **d) is None
    # No status: only what the bookings say.
    names = {name for name, labels in found if ("name", "node-c") in labels}
    assert names == {
        "hypervisor_gateway_hypervisor_booked",
        "hypervisor_gateway_hypervisor_reserved",
        INFO,
    }


def test_what_changes_over_a_hosts_life_is_on_info_series_not_on_its_figures() -> None:
    found = samples(exposition(hand_made.objects()).render())
    for name in ("node-a", "node-b", "node-c", "node-d"):
        for _, labels in host_series(found, name):
            assert {label for label, _ in labels} == {*host_labels(name, "", ""), "resource"}
    d = host_labels("node-d", "qa-de-1b", "bb02")
    assert value(found, INFO, **d, maintenance="manual") == 1
    assert value(found, INFO, **host_labels("node-c", "qa-de-1a", "bb01", maintenance="")) == 1
    assert value(found, BASIS, **d, resource="memory", basis="ALLOCATION") == 1
    a = host_labels("node-a", "qa-de-1a", "bb01", resource="cpu")
    assert value(found, BASIS, **a, basis="BOOKINGS") == 1
    assert labels_of(found, BASIS, "node-c") == []  # no status: no available figure


def test_group_totals_and_slots_are_the_fleet_and_slot_figures() -> None:
    objects = generate(60, seed=3)
    catalog = load_catalog(None)
    rendered = exposition(objects, catalog)
    found = samples(rendered.render())
    records = list(rendered.store.snapshot.by_name.values())
    for zone, in_zone in fleet.group(records, fleet.Grouping.ZONE):
        for bb, members in fleet.group(in_zone, fleet.Grouping.BUILDING_BLOCK):
            group = {"zone": zone or "", "building_block": bb or ""}
            assert value(found, "hypervisor_gateway_fleet_hosts", **group) == len(members)
            ((_, totals),) = [
                (g.key, g.resources) for g in fleet.fleet_capacity(members, fleet.Grouping.NONE)
            ]
            for resource in totals.values():
                for figure in ("physical", "capacity", "booked", "free", "available"):
                    expected = getattr(resource, figure)
                    got = value(
                        found, f"hypervisor_gateway_fleet_{figure}", **group, resource=resource.name
                    )
                    assert got == (None if expected is None else float(expected)), (group, figure)
            for flavor in catalog.flavors:
                (counted,) = slots.slot_groups(members, flavor.demand, fleet.Grouping.NONE)
                got = value(found, "hypervisor_gateway_flavor_slots", **group, flavor=flavor.name)
                assert got == counted.slots
                room = value(
                    found, "hypervisor_gateway_flavor_hosts_with_room", **group, flavor=flavor.name
                )
                assert room == counted.hosts_with_room


def test_a_change_that_moves_no_figure_keeps_the_text_as_it_was() -> None:
    """A status round rewrites every record and mostly no figure: the pieces stay."""
    rendered = exposition(hand_made.objects())
    first = rendered.chunks()
    same = hand_made.objects()[0]
    same["metadata"]["resourceVersion"] = "2"
    same["status"]["numInstances"] = 99  # not a series of its own
    rendered.store.upsert(same)
    assert rendered.chunks() is first
    moved = hand_made.objects()[0]
    moved["metadata"]["resourceVersion"] = "3"
    moved["status"]["allocation"]["cpu"] = "31"
    rendered.store.upsert(moved)
    assert rendered.chunks() is not first


def test_a_change_of_what_the_scheduler_judges_moves_the_slots() -> None:
    """Readiness, maintenance, traits, aggregates and projects move no figure of the
    host, but decide whether its slots count: the flavor's series follow them."""
    rendered = exposition(hand_made.objects())
    group = {"zone": "qa-de-1a", "building_block": "bb01", "flavor": "small"}
    before = value(samples(rendered.render()), "hypervisor_gateway_flavor_slots", **group)
    assert before == 60  # node-a; node-c has no status
    for version, change in enumerate(
        (
            lambda o: o["status"]["conditions"][0].update(status="False"),
            lambda o: o["spec"].update(allowedProjects=["p-only"]),
            lambda o: o["spec"].update(customTraits=["COMPUTE_STATUS_DISABLED"]),
        ),
        start=2,
    ):
        changed = hand_made.objects()[0]
        change(changed)
        changed["metadata"]["resourceVersion"] = str(version)
        rendered.store.upsert(changed)
        found = samples(rendered.render())
        assert value(found, "hypervisor_gateway_flavor_slots", **group) == 0, version
        restored = hand_made.objects()[0]
        restored["metadata"]["resourceVersion"] = f"{version}b"
        rendered.store.upsert(restored)
        found = samples(rendered.render())
        assert value(found, "hypervisor_gateway_flavor_slots", **group) == 60, version


def node_a_allocating(cpu: str, version: str) -> dict[str, Any]:
    """The hand-made fleet's node-a at another resourceVersion, allocating ``cpu``."""
    changed = hand_made.objects()[0]
    changed["metadata"]["resourceVersion"] = version
    changed["status"]["allocation"]["cpu"] = cpu
    return changed


def test_a_scrape_follows_every_change_and_reuses_an_unchanged_snapshot() -> None:
    objects = hand_made.objects()
    rendered = exposition(objects)
    first = rendered.chunks()
    assert rendered.chunks() is first  # same snapshot: the same pieces
    rendered.store.upsert(node_a_allocating("31", version="2"))
    found = samples(rendered.render())
    a = host_labels("node-a", "qa-de-1a", "bb01", resource="cpu")
    assert value(found, "hypervisor_gateway_hypervisor_allocated", **a) == 31
    group = {"zone": "qa-de-1a", "building_block": "bb01", "resource": "cpu"}
    assert value(found, "hypervisor_gateway_fleet_allocated", **group) == 31
    rendered.store.delete("node-a")
    found = samples(rendered.render())
    assert value(found, "hypervisor_gateway_hypervisor_allocated", **a) is None
    assert (
        value(found, "hypervisor_gateway_fleet_hosts", zone="qa-de-1a", building_block="bb01") == 1
    )


def test_a_host_keeps_its_series_when_its_maintenance_or_basis_changes() -> None:
    rendered = exposition(hand_made.objects())
    first = rendered.render()
    again = hand_made.objects()
    for obj in again:  # every record new, as after node agents' status round
        obj["metadata"]["resourceVersion"] = "2"
    rendered.store.replace(again)
    assert rendered.render() == first
    before = samples(first)
    changed = again[3]  # node-d: now in termination, and its bookings tracked
    changed["metadata"]["resourceVersion"] = "3"
    changed["spec"] |= {"maintenance": "termination", "bookings": []}
    rendered.store.replace(again)
    after = samples(rendered.render())
    assert host_series(before, "node-d") <= host_series(after, "node-d")
    d = host_labels("node-d", "qa-de-1b", "bb02")
    assert value(after, "hypervisor_gateway_hypervisor_available", **d, resource="cpu") == 128
    assert labels_of(after, INFO, "node-d") == [d | {"maintenance": "termination"}]
    assert {labels["basis"] for labels in labels_of(after, BASIS, "node-d")} == {"BOOKINGS"}


def one_unit_a_slice(store: Store, catalog: Any = CATALOG) -> CapacityExposition:
    """An exposition whose clock ticks once per look, so each slice renders one shard or
    one group: the finest interleaving with the loop and with store changes."""
    ticks = itertools.count()
    one = Pace(0.5, 0.0)
    return CapacityExposition(store, catalog, prompt=one, upkeep=one, clock=lambda: next(ticks))


async def test_a_scrape_renders_in_slices_the_snapshot_current_when_asked() -> None:
    objects = generate(40, seed=2)
    store = Store()
    store.replace(objects)
    rendered = one_unit_a_slice(store, load_catalog(None))
    others = 0

    async def meanwhile() -> None:
        nonlocal others
        while True:
            others += 1
            moved = copy.deepcopy(objects[others % 40])
            moved["metadata"]["resourceVersion"] = f"moved-{others}"
            moved["metadata"]["labels"]["topology.kubernetes.io/zone"] = f"zone-{others % 3}"
            store.upsert(moved)  # the store moves on between slices
            await asyncio.sleep(0)

    task = asyncio.create_task(meanwhile())
    try:
        text = b"".join(await rendered.current())
    finally:
        task.cancel()
    assert others > 10  # the loop ran, and the store moved on, between slices
    assert text == exposition(objects, load_catalog(None)).render()  # as it was when asked
    assert rendered.render() == CapacityExposition(store, load_catalog(None)).render()


async def test_the_upkeep_runs_what_arrived_during_a_slice_before_its_next_slice() -> None:
    """Rendering ahead of scrapes pauses on a timer between slices: a request whose
    bytes arrive during one slice is read before the next slice starts (a slice that
    yielded at once was queued again ahead of it)."""
    objects = generate(40, seed=2)
    store = Store()
    store.replace(objects)
    looks: list[int] = []  # the clock's reads during the upkeep
    upkeep = False
    ticks = itertools.count()
    receiving, sending = socket.socketpair()

    def clock() -> float:
        looks.append(len(looks))
        if upkeep and len(looks) == 3:  # the upkeep's second slice starts: a request arrives
            sending.send(b"GET")
        return next(ticks)

    one_unit = Pace(0.5, 0.0)  # a slice is two looks: its deadline, then one host's check
    rendered = CapacityExposition(
        store, CATALOG, prompt=one_unit, upkeep=Pace(0.5, 0.001), clock=clock
    )
    await rendered.rendered()
    for index, obj in enumerate(objects[:5]):
        moved = copy.deepcopy(obj)
        moved["metadata"]["resourceVersion"] = f"moved-{index}"
        store.upsert(moved)
    read_at: list[int] = []
    loop = asyncio.get_running_loop()
    loop.add_reader(receiving, lambda: read_at.append(len(looks)) or receiving.recv(8))
    try:
        looks.clear()
        upkeep = True
        await rendered.rendered(rendered.upkeep)
    finally:
        loop.remove_reader(receiving)
        receiving.close()
        sending.close()
    assert len(looks) > 6  # the upkeep took several slices
    assert read_at == [4]  # read after the slice it arrived in, before the third began


@pytest.mark.parametrize("objects", [generate(30, seed=5), hand_made.objects()])
def test_sums_carried_change_by_change_are_the_sums_counted_afresh(
    objects: list[dict[str, Any]],
) -> None:
    """Hosts change figures, move between groups, come and go, several per render."""
    catalog = load_catalog(None)
    rendered = exposition(objects, catalog)
    rendered.render()
    pick = random.Random(5)
    for step in range(40):
        for _ in range(pick.randint(1, 4)):
            obj = copy.deepcopy(pick.choice(objects))
            obj["metadata"]["resourceVersion"] = f"{step}-{pick.random()}"
            what = pick.randrange(4)
            if what == 0:
                obj["metadata"]["labels"]["topology.kubernetes.io/zone"] = pick.choice("abc")
            elif what == 1 and obj.get("status", {}).get("allocation"):
                obj["status"]["allocation"]["cpu"] = pick.randint(0, 64)
            elif what == 2:
                rendered.store.delete(obj["metadata"]["name"])
                continue
            rendered.store.upsert(obj)
        fresh = CapacityExposition(rendered.store, catalog)
        assert rendered.render() == fresh.render(), step


def test_a_look_after_a_change_reads_only_the_hosts_it_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A node agent rewrites every host a minute: a look must cost the changes, not the
    fleet (nor the part of the fleet map a change touched)."""
    objects = generate(1000, seed=3)
    rendered = exposition(objects)
    rendered.render()
    compared: list[str] = []
    same_figures = capacity_metrics.same_figures

    def counted(old: Any, new: Any) -> bool:
        compared.append(new.name)
        return same_figures(old, new)

    monkeypatch.setattr(capacity_metrics, "same_figures", counted)
    for k, obj in enumerate(objects[:3]):
        changed = copy.deepcopy(obj)
        changed["metadata"]["resourceVersion"] = f"changed-{k}"
        rendered.store.upsert(changed)
    rendered.store.delete(objects[3]["metadata"]["name"])
    text = rendered.render()
    assert sorted(compared) == sorted(o["metadata"]["name"] for o in objects[:3])
    assert text == CapacityExposition(rendered.store, CATALOG).render()


async def test_ready_without_waiting_for_the_series_and_a_scrape_meanwhile_waits() -> None:
    """The first rendering is a third of the start at 20,000 hosts, for a text no query
    reads: the gateway answers meanwhile, and a scrape then gets the whole fleet."""
    objects = generate(2000, seed=4)
    async with serve(objects, catalog=load_catalog(None)) as (client, _):
        ready = (await client.get("/readyz")).json()
        assert ready["ready"] is True and ready["capacitySeriesRendered"] is False
        scraped = samples((await client.get("/metrics/capacity")).content)
        hosts = {dict(labels)["name"] for _, labels in scraped if "name" in dict(labels)}
        assert len(hosts) == len(objects)
        assert (await client.get("/readyz")).json()["capacitySeriesRendered"] is True


@pytest.fixture
def formatted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the hosts whose lines are formatted from now on, in order."""
    names: list[str] = []
    host_lines = capacity_metrics.host_lines

    def counted(record: Any) -> Any:
        names.append(record.name)
        return host_lines(record)

    monkeypatch.setattr(capacity_metrics, "host_lines", counted)
    return names


async def test_the_renderer_formats_changes_ahead_once_a_scrape_asked(formatted: list[str]) -> None:
    """Before a scrape, nothing: a gateway nobody scrapes the series of spends nothing
    on them (6 s of rendering and 65-75 MiB at 20,000 hosts). From the first on, each
    change is formatted before the next scrape asks."""
    store = Store()
    rendered = CapacityExposition(store, CATALOG)
    task = asyncio.create_task(rendered.run(coalesce_seconds=0))
    try:
        store.replace(hand_made.objects())
        store.mark_ready()
        store.upsert(node_a_allocating("30", version="2"))
        for _ in range(10):  # the renderer's turns at the loop: it takes one per change
            await asyncio.sleep(0)
        assert formatted == [] and not rendered.primed
        await rendered.current()  # the first scrape renders the fleet
        assert sorted(formatted) == ["node-a", "node-b", "node-c", "node-d"]
        assert rendered.primed
        store.upsert(node_a_allocating("31", version="3"))
        await eventually(lambda: len(formatted) == 5)
    finally:
        task.cancel()
    found = samples(b"".join(await rendered.current()))
    assert len(formatted) == 5  # the scrape had nothing left to format
    a = host_labels("node-a", "qa-de-1a", "bb01", resource="cpu")
    assert value(found, "hypervisor_gateway_hypervisor_allocated", **a) == 31


async def test_with_no_scraper_the_series_are_dropped_and_a_scrape_renders_them_afresh(
    formatted: list[str],
) -> None:
    now = [0.0]
    store = Store()
    rendered = CapacityExposition(store, CATALOG, warm_for=60, clock=lambda: now[0])
    task = asyncio.create_task(rendered.run(coalesce_seconds=0))
    try:
        store.replace(hand_made.objects())
        store.mark_ready()
        await rendered.current()
        assert len(formatted) == 4 and rendered.primed
        now[0] = 61.0  # a minute and more without a scrape
        store.upsert(node_a_allocating("31", version="2"))
        # Dropped, not formatted, nor holding the record the store replaced (frozen,
        # the lines are out of gc.get_referrers' sight: the renderer's state tells).
        await eventually(lambda: not rendered._hosts)
        assert len(formatted) == 4 and not rendered.primed
        found = samples(b"".join(await rendered.current()))
        assert len(formatted) == 8  # the scrape rendered the fleet afresh
        assert rendered.primed  # and the series stay rendered meanwhile
        a = host_labels("node-a", "qa-de-1a", "bb01", resource="cpu")
        assert value(found, "hypervisor_gateway_hypervisor_allocated", **a) == 31
        assert b"".join(await rendered.current()) == CapacityExposition(store, CATALOG).render()
        formatted.clear()
        store.upsert(node_a_allocating("30", version="3"))
        await eventually(lambda: formatted == ["node-a"])  # scraped again: rendered ahead again
    finally:
        task.cancel()


async def test_records_and_snapshots_the_store_let_go_are_not_kept_alive() -> None:
    """Else the next scrape frees a whole fleet's records at once, when it lets go."""
    rendered = exposition(hand_made.objects())
    rendered.render()
    snapshot, before = rendered.store.snapshot, rendered.store.snapshot.by_name["node-a"]
    again = hand_made.objects()
    for obj in again:  # a status round: every record new, no figure changed
        obj["metadata"]["resourceVersion"] = "2"
    rendered.store.replace(again)
    await rendered.rendered()  # as the renderer does between scrapes
    assert rendered.store.snapshot.by_name["node-a"] is not before
    assert not [r for r in gc.get_referrers(before) if isinstance(r, HostLines)]
    assert not [r for r in gc.get_referrers(snapshot) if isinstance(r, tuple)]


def test_label_values_are_escaped() -> None:
    odd = 'we"ird\\zone\nx'
    obj = hypervisor(
        "odd", labels={"topology.kubernetes.io/zone": odd}, status={"capacity": {"cpu": 8}}
    )
    found = samples(exposition([obj]).render())
    labels = host_labels("odd", odd, "", resource="cpu")
    assert value(found, "hypervisor_gateway_hypervisor_physical", **labels) == 8


def test_every_family_has_help_and_type_even_over_an_empty_fleet() -> None:
    text = exposition([]).render().decode()
    for family in FAMILIES:
        assert f"# HELP {family} " in text and f"# TYPE {family} gauge\n" in text


@pytest.mark.skipif(not PROMTOOL.exists(), reason="promtool (Debian's prometheus) not installed")
def test_promtool_finds_nothing_to_complain_about() -> None:
    text = exposition(generate(200, seed=0), load_catalog(None)).render()
    checked = subprocess.run(
        [PROMTOOL, "check", "metrics"], input=text, capture_output=True, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout + checked.stderr == b""


def test_pieces_are_the_chunks_joined_about_a_size_at_a_time() -> None:
    chunks = [b"a" * 3, b"b" * 5, b"c", b"d" * 7, b"e"]
    sent = list(pieces(chunks, size=6))
    assert sent == [b"aaabbbbb", b"cddddddd", b"e"]
    assert list(pieces([], size=6)) == []


async def test_the_path_is_served_beside_metrics_with_the_same_host_check() -> None:
    async with serve(hand_made.objects(), allowed_hosts=()) as (client, _):
        response = await client.get("/metrics/capacity", headers={"host": "127.0.0.1"})
        assert response.status_code == 200
        assert response.headers["content-type"] == CONTENT_TYPE
        assert "hypervisor_gateway_hypervisor_free{" in response.text
        refused = await client.get("/metrics/capacity", headers={"host": "evil.example"})
        assert (
            refused.status_code
            == (await client.get("/metrics", headers={"host": "evil.example"})).status_code
            == 421
        )


async def test_without_capacity_series_nothing_is_rendered_and_ready_waits_for_none() -> None:
    async with serve(hand_made.objects(), capacity_series=False) as (client, _):
        assert (await client.get("/metrics/capacity")).status_code == 404
        assert (await client.get("/readyz")).status_code == 200
        tasks = {t.get_name() for t in asyncio.all_tasks()}
        assert "capacity" not in tasks and "source" in tasks
        assert (await client.get("/metrics")).status_code == 200


async def test_a_scrape_holding_the_rendering_is_answered_304_until_it_changes() -> None:
    async with serve(hand_made.objects()) as (client, store):
        plain = await client.get("/metrics/capacity", headers={"accept-encoding": "identity"})
        zipped = await client.get("/metrics/capacity", headers={"accept-encoding": "gzip"})
        tag, zipped_tag = plain.headers["etag"], zipped.headers["etag"]
        assert zipped_tag != tag and zipped_tag.startswith(tag[:-1])  # one per encoding
        assert zipped.headers["vary"] == plain.headers["vary"] == "Accept-Encoding"
        assert plain.headers["cache-control"] == "no-cache"
        for held in (tag, zipped_tag, f'W/{zipped_tag}, "other"'):
            headers = {"if-none-match": held, "accept-encoding": "gzip"}
            again = await client.get("/metrics/capacity", headers=headers)
            assert (again.status_code, again.content) == (304, b"")
            assert again.headers["etag"] == zipped_tag  # the encoding asked for now
        unchanged = hand_made.objects()[0]
        store.upsert(unchanged)  # a new record, the same figures: the same text
        same = await client.get("/metrics/capacity", headers={"if-none-match": tag})
        assert same.status_code == 304
        store.upsert(node_a_allocating("31", version="2"))
        fresh = await client.get("/metrics/capacity", headers={"if-none-match": tag})
        assert fresh.status_code == 200 and fresh.headers["etag"] != tag
        assert fresh.content != plain.content


class Tokens:
    """An authorizer that knows two tokens: one allowed, one of a user without access."""

    async def check(self, token: str | None) -> Verdict:
        if token == "reader":
            return Verdict(Decision.ALLOWED, "reader", "allowed")
        if token == "stranger":
            return Verdict(Decision.DENIED, "stranger", "no RBAC rule allows it")
        return Verdict(Decision.INVALID, None, "token not accepted")


async def test_the_series_ask_for_a_token_as_graphql_does_and_metrics_does_not() -> None:
    async with serve(hand_made.objects(), authorizer=Tokens()) as (client, _):
        anonymous = await client.get("/metrics/capacity")
        assert anonymous.status_code == 401
        assert anonymous.headers["www-authenticate"].startswith("Bearer")
        assert "hypervisor_gateway" not in anonymous.text
        bad = await client.get("/metrics/capacity", headers={"authorization": "Bearer nope"})
        assert bad.status_code == 401
        stranger = await client.get(
            "/metrics/capacity", headers={"authorization": "Bearer stranger"}
        )
        assert stranger.status_code == 403 and stranger.text.startswith("forbidden")
        reader = await client.get("/metrics/capacity", headers={"authorization": "Bearer reader"})
        assert reader.status_code == 200
        assert "hypervisor_gateway_hypervisor_free{" in reader.text
        assert (await client.get("/metrics")).status_code == 200  # the gateway's own: open


# A real Prometheus scraping the real app.


@contextlib.asynccontextmanager
async def prometheus(*targets: str) -> AsyncIterator[httpx.AsyncClient]:
    """Prometheus on loopback scraping the ``targets``' /metrics/capacity every second."""
    with tempfile.TemporaryDirectory() as directory:
        config = Path(directory) / "prometheus.yml"
        config.write_text(
            yaml.safe_dump(
                {
                    "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                    "scrape_configs": [
                        {
                            "job_name": "capacity",
                            "metrics_path": "/metrics/capacity",
                            "static_configs": [{"targets": list(targets)}],
                        }
                    ],
                }
            )
        )
        port = free_port()
        process = await asyncio.create_subprocess_exec(
            PROMETHEUS,
            f"--config.file={config}",
            f"--storage.tsdb.path={directory}/data",
            f"--web.listen-address=127.0.0.1:{port}",
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=5) as client:
                yield client
        finally:
            process.terminate()
            _, errors = await process.communicate()
            if process.returncode not in (0, -15):
                raise AssertionError(errors.decode())


async def _scraped(client: httpx.AsyncClient, expression: str, seconds: float = 30) -> list[Any]:
    """The result of an instant query, once it is non-empty (Prometheus has scraped)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while loop.time() < deadline:
        with contextlib.suppress(httpx.TransportError):
            response = await client.get("/api/v1/query", params={"query": expression})
            result: list[Any] = (
                response.json()["data"]["result"] if response.status_code == 200 else []
            )
            if result:
                return result
        await asyncio.sleep(0.2)  # how often to ask: Prometheus scrapes on its own clock
    raise AssertionError(f"no series for {expression} after {seconds} s")


FLEET_BY_ZONE = "{ fleetCapacity(groupBy: ZONE) { key resources { name free available } } }"


@pytest.mark.skipif(not PROMETHEUS.exists(), reason="Debian's prometheus not installed")
async def test_prometheus_sums_per_zone_what_the_api_totals_per_zone() -> None:
    async with run_server(generate(120, seed=1)) as (address, _), prometheus(address) as client:
        async with httpx.AsyncClient(base_url=f"http://{address}") as api:
            zones = (await query(api, FLEET_BY_ZONE))["fleetCapacity"]
        for figure in ("free", "available"):
            expression = f'sum by (zone) (hypervisor_gateway_hypervisor_{figure}{{resource="cpu"}})'
            summed = {
                r["metric"].get("zone", ""): Decimal(r["value"][1])
                for r in await _scraped(client, expression)
            }
            expected = {
                group["key"] or "": Decimal(resource[figure])
                for group in zones
                for resource in group["resources"]
                if resource["name"] == "cpu" and resource[figure] is not None
            }
            assert summed == expected, figure
            assert len(expected) > 1


@pytest.mark.skipif(not PROMETHEUS.exists(), reason="Debian's prometheus not installed")
async def test_prometheus_reads_the_series_gzipped() -> None:
    """Prometheus asks for gzip; what crossed the wire is less than one plain scrape."""
    async with run_server(generate(200, seed=2)) as (address, _):
        async with httpx.AsyncClient(base_url=f"http://{address}") as api:
            headers = {"accept-encoding": "identity"}
            plain = (await api.get("/metrics/capacity", headers=headers)).content
        proxy = await TcpProxy(int(address.rsplit(":", 1)[1])).start()
        try:
            async with prometheus(f"127.0.0.1:{proxy.port}") as client:
                hosts = await _scraped(client, "count(hypervisor_gateway_hypervisor_free)")
                returned = proxy.returned
        finally:
            await proxy.close()
    assert int(hosts[0]["value"][1]) == plain.count(b"hypervisor_gateway_hypervisor_free{")
    assert 0 < returned < len(plain) / 2


async def _series(client: httpx.AsyncClient, selector: str) -> dict[str, set[frozenset[Any]]]:
    """Every label set ``selector`` matched since Prometheus started, per metric name."""
    response = await client.get("/api/v1/series", params={"match[]": selector, "start": "0"})
    assert response.status_code == 200, response.text
    found: dict[str, set[frozenset[Any]]] = {}
    for labels in response.json()["data"]:
        found.setdefault(labels.pop("__name__"), set()).add(frozenset(labels.items()))
    return found


async def _joined(
    client: httpx.AsyncClient, expression: str, by: str, label: str
) -> dict[str, str]:
    """Per value of ``by``, the ``label`` the query's series carry ("" when none)."""
    return {r["metric"][by]: r["metric"].get(label, "") for r in await _scraped(client, expression)}


@pytest.mark.skipif(not PROMETHEUS.exists(), reason="Debian's prometheus not installed")
async def test_prometheus_joins_the_info_series_and_keeps_a_hosts_series() -> None:
    maintenance = (
        'max without (instance) (hypervisor_gateway_hypervisor_available{resource="cpu"})'
        f" * on (name) group_left (maintenance) {INFO}"
    )
    basis = (
        'hypervisor_gateway_hypervisor_available{name="node-d"}'
        f" * on (name, resource) group_left (basis) {BASIS}"
    )
    node_d = '{__name__=~"hypervisor_gateway_hypervisor_.+",name="node-d"}'
    async with run_server(hand_made.objects()) as (address, store), prometheus(address) as client:

        async def shows(maintenance_d: str, basis_d: str) -> bool:
            hosts = await _joined(client, maintenance, "name", "maintenance")
            resources = await _joined(client, basis, "resource", "basis")
            expected = {"node-a": "", "node-b": "", "node-d": maintenance_d}
            return hosts == expected and resources == {"cpu": basis_d, "memory": basis_d}

        await eventually(lambda: shows("manual", "ALLOCATION"), within=30, interval=0.2)
        before = await _series(client, node_d)
        changed = hand_made.objects()[3]
        changed["metadata"]["resourceVersion"] = "2"
        changed["spec"] |= {"maintenance": "termination", "bookings": []}  # and tracked
        store.upsert(changed)
        await eventually(lambda: shows("termination", "BOOKINGS"), within=30, interval=0.2)
        after = await _series(client, node_d)
    assert {"hypervisor_gateway_hypervisor_available", INFO, BASIS} <= before.keys()
    for family in before.keys() - {INFO, BASIS}:
        assert after[family] == before[family], family  # one series each, as before
    assert {dict(labels)["maintenance"] for labels in after[INFO]} == {"manual", "termination"}
    assert {dict(labels)["basis"] for labels in after[BASIS]} == {"ALLOCATION", "BOOKINGS"}


@pytest.mark.skipif(not PROMETHEUS.exists(), reason="Debian's prometheus not installed")
async def test_the_dashboards_join_holds_while_the_replicas_disagree() -> None:
    """For a scrape after a change, one replica may export the old maintenance and
    the other the new: two info series for one host, which a join on the host
    refuses unless it takes one of them."""
    (panel,) = (p for p in DASHBOARD["panels"] if "basis_info" in p["targets"][0]["expr"])
    expression = panel["targets"][0]["expr"].replace("$zone", ".*")
    replicas = []
    for maintenance in ("manual", "termination"):
        objects = hand_made.objects()
        objects[3]["spec"]["maintenance"] = maintenance
        objects[3]["status"]["allocation"]["cpu"] = "132"  # available 128 - 132
        replicas.append(run_server(objects))
    one_of_each = "max without (instance) (hypervisor_gateway_hypervisor_info)"
    refused = expression.replace(f"topk by (name) (1, {INFO})", one_of_each)
    assert refused != expression
    async with replicas[0] as (a, _), replicas[1] as (b, _), prometheus(a, b) as client:
        await _scraped(client, f'count by (name) ({INFO}{{name="node-d"}}) > 1')
        rows = [r["metric"] for r in await _scraped(client, expression)]
        response = await client.get("/api/v1/query", params={"query": refused})
    assert response.status_code == 422 and "many-to-many" in response.json()["error"]
    assert sorted((row["name"], row["resource"], row["basis"]) for row in rows) == [
        ("node-b", "cpu", "BOOKINGS"),
        ("node-d", "cpu", "ALLOCATION"),
    ]
    (node_d,) = (row for row in rows if row["name"] == "node-d")
    assert node_d["maintenance"] in ("manual", "termination")
