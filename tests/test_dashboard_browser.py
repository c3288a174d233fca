"""The dashboard and GraphiQL in headless Chromium, against the real gateway.

The gateway runs as ``python -m gateway serve --from DIR``; rewriting a file there
changes the fleet, which the page must show without a reload. A mixed demo
(``serve --demo``, 60% of hosts tracked) checks the two views and the slots panel.
Screenshots go to artifacts/ (git-ignored) for a person to look at.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests import fleet
from tests.support import wait_until_ready

playwright = pytest.importorskip("playwright.sync_api")

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "artifacts"
FLAVORS = ROOT / "docs" / "flavors.example.yaml"  # the README's sample catalog
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# The page polls every 5 s without a WebSocket, and the file source looks every second.
CHANGE_TIMEOUT_MS = 20_000

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists() and not os.environ.get("CI"),
    reason="needs Debian's chromium (scripts/test installs it)",
)


ZONES = """{ fleetCapacity(groupBy: ZONE) { key hypervisorCount trackedHosts untrackedHosts
  resources { name physical reserved capacity booked free allocated available used
  untrackedHosts overcommittedHosts unknownCapacityHosts } } }"""
FIGURES = ["available", "used", "capacity", "physical", "free", "booked", "reserved", "allocated"]


class Gateway:
    """``python -m gateway serve --from DIR`` (or, without a directory, the options'
    source) on a free loopback port."""

    def __init__(self, directory: Path | None, *options: str) -> None:
        self.directory = directory
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        command = [sys.executable, "-m", "gateway", "serve"]
        command += ["--from", str(directory)] if directory else []
        command += ["--host", "127.0.0.1", "--port", str(self.port), "--log-level", "warning"]
        command += options
        self.process = subprocess.Popen(command, cwd=ROOT)
        wait_until_ready(self.url, self.process)

    def query(self, document: str, **variables: Any) -> dict[str, Any]:
        response = httpx.post(
            f"{self.url}/graphql", json={"query": document, "variables": variables}
        )
        body = response.json()
        assert response.status_code == 200 and "errors" not in body, body
        data: dict[str, Any] = body["data"]
        return data

    def write(self, obj: dict[str, Any]) -> None:
        assert self.directory, "only a gateway serving a directory has files to write"
        path = self.directory / f"{obj['metadata']['name']}.yaml"
        tmp = path.with_suffix(".tmp")  # not a .yaml: the source never sees half a file
        tmp.write_text(yaml.safe_dump(obj))
        tmp.replace(path)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[Gateway]:
    directory = tmp_path / "fleet"
    directory.mkdir()
    for obj in fleet.objects():
        (directory / f"{obj['metadata']['name']}.yaml").write_text(yaml.safe_dump(obj))
    server = Gateway(directory, "--flavors", str(FLAVORS))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with playwright.sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            tmp_path_factory.mktemp("chromium-profile"),
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_FLAGS,
            viewport={"width": 1400, "height": 900},
        )
        yield context
        context.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    page.close()
    assert not errors, errors


def open_dashboard(page: Any, gateway: Gateway) -> None:
    page.goto(gateway.url + "/")
    page.wait_for_selector("#zones .zone")
    page.wait_for_selector("#hypervisors tbody tr")


def screenshot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)


def amount(resource: str, value: str | None) -> str:
    """What the page must show for an amount, worked out apart from its JavaScript."""
    if value is None:
        return "unknown"
    if resource == "memory":
        number = Decimal(value)
        for unit, exponent, places in (("TiB", 40, 2), ("GiB", 30, 1), ("MiB", 20, 0)):
            if abs(number) >= 2**exponent:
                scaled = (number / 2**exponent).quantize(Decimal(1).scaleb(-places), ROUND_HALF_UP)
                return f"{scaled:,} {unit}"
        return f"{int(number)} B"
    return f"{Decimal(value):,}"


def test_formatting_reference() -> None:
    """The reference above, on figures worked out by hand."""
    assert amount("memory", str(2**40)) == "1.00 TiB"
    assert amount("memory", "1090921693184") == "1,016.0 GiB"  # 1 TiB - 8 GiB
    assert amount("memory", "-4294967296") == "-4.0 GiB"
    assert amount("memory", str(5 * 2**40 + 2**39)) == "5.50 TiB"
    assert amount("cpu", "1008") == "1,008"


def test_zones_show_the_figures_the_api_gives(page: Any, gateway: Gateway) -> None:
    open_dashboard(page, gateway)
    groups = gateway.query(ZONES)["fleetCapacity"]
    assert page.locator("#zones .zone").count() == len(groups) == 2
    for group in groups:
        zone = page.locator(f'.zone[data-zone="{group["key"]}"]')
        assert f"{group['hypervisorCount']} hypervisors" in zone.locator("h3").inner_text()
        for field in ("trackedHosts", "untrackedHosts"):
            count = zone.locator(f'h3 [data-field="{field}"]')
            assert count.get_attribute("data-value") == str(group[field])
        for resource in group["resources"]:
            if resource["name"] not in ("cpu", "memory"):
                continue
            block = zone.locator(f'[data-resource="{resource["name"]}"]')
            for field in FIGURES:
                cell = block.locator(f'dd[data-field="{field}"]')
                assert cell.get_attribute("data-value") == (resource[field] or "")
                assert cell.inner_text() == amount(resource["name"], resource[field])
            badge = block.locator('[data-field="overcommittedHosts"]')
            if resource["overcommittedHosts"]:
                assert badge.inner_text() == f"{resource['overcommittedHosts']} over-subscribed"
            else:
                assert badge.count() == 0

    # Figures from the fleet's comments: node-a and node-c (no status) in qa-de-1a.
    memory = page.locator('.zone[data-zone="qa-de-1a"] [data-resource="memory"]')
    assert memory.locator('dd[data-field="capacity"]').inner_text() == "1,016.0 GiB"
    assert memory.locator('dd[data-field="physical"]').inner_text() == "1.00 TiB"
    assert "1 unknown capacity" in memory.inner_text()

    # qa-de-1b mixes node-b (tracked, free -4) and node-d (untracked, unallocated 28):
    # available 24, of which node-d's 28 and used 100 come from libvirt, hatched.
    cpu = page.locator('.zone[data-zone="qa-de-1b"] [data-resource="cpu"]')
    assert cpu.locator('dd[data-field="available"]').inner_text() == "24"
    assert cpu.locator('[data-field="estimatedAvailable"]').get_attribute("data-value") == "28"
    assert cpu.locator('[data-field="estimatedUsed"]').get_attribute("data-value") == "100"
    assert cpu.locator(".bar .estimate-free").count() == 1
    assert cpu.locator(".bar .estimate-used").count() == 1
    # qa-de-1a has only tracked hosts: nothing is an estimate.
    assert page.locator('.zone[data-zone="qa-de-1a"] .bar [class^="estimate"]').count() == 0


def rows(page: Any) -> list[str]:
    names: list[str] = page.locator("#hypervisors tbody tr").evaluate_all(
        "rows => rows.map(row => row.dataset.name)"
    )
    return names


def test_table_highlights_sorts_and_filters(page: Any, gateway: Gateway) -> None:
    open_dashboard(page, gateway)
    data = gateway.query("{ hypervisors { nodes { name overcommitted } } }")
    assert rows(page) == [n["name"] for n in data["hypervisors"]["nodes"]]
    oversubscribed = [n["name"] for n in data["hypervisors"]["nodes"] if n["overcommitted"]]
    assert oversubscribed == ["node-b"]
    highlighted = page.locator("#hypervisors tr.oversubscribed")
    assert highlighted.evaluate_all("rows => rows.map(row => row.dataset.name)") == oversubscribed
    assert highlighted.locator('[data-field="cpu.available"]').inner_text() == "-4"

    node_c = page.locator('#hypervisors tr[data-name="node-c"]')
    for field in ("basis", "cpu.available", "cpu.capacity", "cpu.utilization", "memory.available"):
        assert node_c.locator(f'[data-field="{field}"]').inner_text() == "unknown"
    assert node_c.locator('[data-field="cpu.used"]').inner_text() == "2"

    # node-d is not tracked: its figures are libvirt's, and marked as an estimate.
    node_d = page.locator('#hypervisors tr[data-name="node-d"]')
    assert node_d.locator('[data-field="basis"]').inner_text() == "allocation"
    assert node_d.locator('[data-field="cpu.available"]').inner_text() == "28"
    assert node_d.locator('[data-field="cpu.used"]').inner_text() == "100"
    assert node_d.locator("td.estimate").count() == 9  # basis and 2 x 4 figures
    assert page.locator('#hypervisors tr[data-name="node-a"] td.estimate').count() == 0

    order = 'query($d: OrderDirection!) { hypervisors(orderBy: {field: AVAILABLE, resource: "cpu", direction: $d}) { nodes { name } } }'
    header = page.locator('#hypervisors th[data-sort="cpu.available"]')
    for direction in ("ASC", "DESC"):
        header.click()
        expected = [n["name"] for n in gateway.query(order, d=direction)["hypervisors"]["nodes"]]
        assert rows(page) == expected, direction

    page.fill("#filter", "qa-de-1b")
    assert sorted(rows(page)) == ["node-b", "node-d"]
    page.fill("#filter", "allocation")
    assert rows(page) == ["node-d"]
    page.fill("#filter", "")
    page.check("#oversubscribed-only")
    assert rows(page) == ["node-b"]
    assert page.inner_text("#count") == "1 of 4 hypervisors"


def test_consumer_search(page: Any, gateway: Gateway) -> None:
    open_dashboard(page, gateway)
    page.fill("#consumer-uuid", fleet.C3.upper())
    page.click("#consumer-form button")
    result = page.wait_for_selector(f'.consumer[data-uuid="{fleet.C3}"]')
    data = gateway.query(
        "query($u: UUID!) { consumer(uuid: $u) { bookings { hypervisor { name } } } }", u=fleet.C3
    )
    hosts = [b["hypervisor"]["name"] for b in data["consumer"]["bookings"]]
    assert hosts == ["node-a", "node-b"]
    shown = page.locator(".consumer tbody tr").evaluate_all(
        "rows => rows.map(r => r.dataset.hypervisor)"
    )
    assert shown == hosts
    assert "migrating" in result.inner_text()
    assert "cpu 4, memory 8.0 GiB" in page.inner_text('.consumer tr[data-hypervisor="node-a"]')

    page.fill("#consumer-uuid", "00000000-0000-0000-0000-000000000000")
    page.click("#consumer-form button")
    page.wait_for_selector("#consumer >> text=is booked anywhere")


def wait_for_value(page: Any, selector: str, value: str) -> None:
    page.wait_for_function(
        "([selector, value]) => document.querySelector(selector)?.dataset.value === value",
        arg=[selector, value],
        timeout=CHANGE_TIMEOUT_MS,
    )


def poll(read: Callable[[], Any], until: Callable[[Any], bool], timeout: float = 10) -> Any:
    """``read()`` once ``until`` holds for it: eventually() for this synchronous test."""
    deadline = time.monotonic() + timeout
    while not until(value := read()):
        assert time.monotonic() < deadline, f"still {value!r}"
        time.sleep(0.2)
    return value


@pytest.mark.parametrize("websocket", ["open", "refused"])
def test_page_follows_changes_to_the_fleet(page: Any, gateway: Gateway, websocket: str) -> None:
    """Through the subscriptions, or by polling when no WebSocket gets through."""
    if websocket == "refused":
        page.route_web_socket("**/graphql", lambda ws: ws.close(code=1011))
    open_dashboard(page, gateway)
    state = "live" if websocket == "open" else "polling"
    page.wait_for_selector(f'#connection[data-state="{state}"]', timeout=CHANGE_TIMEOUT_MS)
    zone_cpu = '.zone[data-zone="qa-de-1a"] [data-resource="cpu"] dd[data-field="{}"]'
    # node-a's free cpu bounds the compute flavor's slots in qa-de-1a: 476 // 8 = 59.
    slots_cell = '#slots-table tr[data-flavor="c_c8_m16"] td[data-zone="qa-de-1a"]'
    slots = 'query { slots(flavor: "c_c8_m16", groupBy: ZONE) { key slots } }'
    slots_before = next(g for g in gateway.query(slots)["slots"] if g["key"] == "qa-de-1a")
    assert page.get_attribute(slots_cell, "data-value") == str(slots_before["slots"]) == "59"
    row_cpu = '#hypervisors tr[data-name="node-a"] [data-field="cpu.{}"]'
    # node-a 28 + node-c 2 (capacity unknown, bookings still count)
    assert page.get_attribute(zone_cpu.format("booked"), "data-value") == "30"

    # Consumer C1 on node-a grows from 16 to 40 cores: booked 28 -> 52, free 476 -> 452.
    node_a = fleet.objects()[0]
    node_a["spec"]["bookings"][1]["consumer"]["resources"]["cpu"] = 40
    node_a["metadata"]["resourceVersion"] = "2"
    gateway.write(node_a)
    booked = 'query { hypervisor(name: "node-a") { resource(name: "cpu") { booked free } } }'
    figures = poll(
        lambda: gateway.query(booked)["hypervisor"]["resource"], lambda r: r["booked"] != "28"
    )
    assert figures == {"booked": "52", "free": "452"}

    zone_a = next(g for g in gateway.query(ZONES)["fleetCapacity"] if g["key"] == "qa-de-1a")
    cpu = next(r for r in zone_a["resources"] if r["name"] == "cpu")
    assert cpu["booked"] == "54"
    wait_for_value(page, zone_cpu.format("booked"), cpu["booked"])
    assert page.get_attribute(zone_cpu.format("free"), "data-value") == cpu["free"]
    wait_for_value(page, row_cpu.format("used"), "52")
    assert page.inner_text(row_cpu.format("available")) == "452"
    # The slots follow the totals (452 // 8 = 56), without a subscription of their own.
    slots_after = next(g for g in gateway.query(slots)["slots"] if g["key"] == "qa-de-1a")
    assert slots_after["slots"] == 56
    wait_for_value(page, slots_cell, "56")

    # A host whose file goes away leaves the table and its zone.
    (gateway.directory / "node-d.yaml").unlink()
    page.wait_for_selector('#hypervisors tr[data-name="node-d"]', state="detached")
    page.wait_for_function(
        "() => document.querySelector('.zone[data-zone=\"qa-de-1b\"] h3 small').innerText"
        " === '1 hypervisor'",
        timeout=CHANGE_TIMEOUT_MS,
    )
    assert page.get_attribute("#connection", "data-state") == state
    screenshot(page, "dashboard.png" if websocket == "open" else "dashboard-polling.png")


MIXED = """{ fleetCapacity(groupBy: ZONE) { key trackedHosts untrackedHosts
  resources { name available free used booked } }
  hypervisors(filter: { bookingsTracked: false }, first: 1) {
    nodes { name resource(name: "cpu") { available basis } } } }"""
SLOTS = """query($flavor: String!) { slots(flavor: $flavor, groupBy: ZONE) {
  key slots allocationSlots excluded { reason hosts } } }"""


@pytest.fixture
def demo() -> Iterator[Gateway]:
    """The demo as a rollout of spec.bookings in progress: 60% of the hosts tracked."""
    server = Gateway(None, "--demo", "--demo-tracked", "0.6")
    yield server
    server.stop()


def test_mixed_demo_shows_both_views_and_slots(page: Any, demo: Gateway) -> None:
    """Tracked and untracked hosts per zone, libvirt's part of each figure, and the
    slots per flavor and zone: the numbers the API gives for a mixed fleet."""
    open_dashboard(page, demo)
    page.wait_for_selector("#slots-table")
    data = demo.query(MIXED)
    groups = data["fleetCapacity"]
    assert page.locator("#zones .zone").count() == len(groups)
    mixed = [g for g in groups if g["trackedHosts"] and g["untrackedHosts"]]
    assert len(mixed) == len(groups)  # every zone of the demo is mixed
    for group in groups:
        head = page.locator(f'.zone[data-zone="{group["key"]}"] h3')
        for field, word in (("trackedHosts", "tracked"), ("untrackedHosts", "untracked")):
            count = head.locator(f'[data-field="{field}"]')
            assert count.inner_text() == f"{group[field]} {word}"

    zone = mixed[0]
    cpu = next(r for r in zone["resources"] if r["name"] == "cpu")
    block = page.locator(f'.zone[data-zone="{zone["key"]}"] [data-resource="cpu"]')
    assert block.locator('dd[data-field="available"]').inner_text() == amount(
        "cpu", cpu["available"]
    )
    assert block.locator('dd[data-field="free"]').inner_text() == amount("cpu", cpu["free"])
    # The tracked hosts' available is their free: the rest is libvirt's estimate.
    estimated = Decimal(cpu["available"]) - Decimal(cpu["free"])
    note = block.locator('[data-field="estimatedAvailable"]')
    assert note.get_attribute("data-value") == str(estimated)
    estimated_used = Decimal(cpu["used"]) - Decimal(cpu["booked"])
    assert block.locator('[data-field="estimatedUsed"]').get_attribute("data-value") == str(
        estimated_used
    )
    assert block.locator(".bar .estimate-free").count() == 1

    host = data["hypervisors"]["nodes"][0]
    assert host["resource"]["basis"] == "ALLOCATION"
    row = page.locator(f'#hypervisors tr[data-name="{host["name"]}"]')
    assert row.locator('[data-field="basis"]').inner_text() == "allocation"
    assert (
        row.locator('[data-field="cpu.available"]').get_attribute("data-value")
        == (host["resource"]["available"])
    )

    flavors = demo.query("{ flavors { name } }")["flavors"]
    assert page.locator("#slots-table tbody tr").count() == len(flavors) > 0
    flavor = "g_c4_m16"
    groups = demo.query(SLOTS, flavor=flavor)["slots"]
    assert any(g["excluded"] for g in groups)  # the demo has hosts the scheduler would not use
    for group in groups:
        cell = page.locator(
            f'#slots-table tr[data-flavor="{flavor}"] td[data-zone="{group["key"]}"]'
        )
        assert cell.get_attribute("data-value") == str(group["slots"])
        estimate = cell.locator('[data-field="allocationSlots"]')
        if group["allocationSlots"]:
            assert estimate.get_attribute("data-value") == str(group["allocationSlots"])
        else:
            assert estimate.count() == 0
        # What the scheduler would not use, and why, as the API counts it.
        excluded = cell.locator('[data-field="excluded"]')
        if not group["excluded"]:
            assert excluded.count() == 0
            continue
        reasons = " ".join(f"{e['reason']}:{e['hosts']}" for e in group["excluded"])
        assert excluded.get_attribute("data-value") == str(
            sum(e["hosts"] for e in group["excluded"])
        )
        assert excluded.get_attribute("data-reasons") == reasons
        assert "not used by the scheduler" in (cell.get_attribute("title") or "")
    screenshot(page, "dashboard-mixed.png")
    # The whole page is long (200 hosts): the two panels of the basis, on their own.
    for panel, name in (("#zones", "zones"), ("#slots", "slots")):
        section = page.locator(f"main > section:has({panel})")
        section.screenshot(path=str(ARTIFACTS / f"dashboard-mixed-{name}.png"))


def set_editor(page: Any, selector: str, text: str) -> None:
    page.evaluate(
        "([selector, text]) => document.querySelector(selector).CodeMirror.setValue(text)",
        [selector, text],
    )


QUERY_EDITOR = ".graphiql-query-editor .CodeMirror"
HEADERS_EDITOR = ".graphiql-editor-tool .graphiql-editor:not(.hidden) .CodeMirror"


def run_in_graphiql(page: Any, document: str, expect: str) -> str:
    set_editor(page, QUERY_EDITOR, document)
    page.click(".graphiql-execute-button")
    page.wait_for_function(
        "expect => document.querySelector('.result-window')?.innerText.includes(expect)",
        arg=expect,
    )
    result: str = page.inner_text(".result-window")
    return result


#: Widths of phones held upright: a small one, and the width the dashboard was measured at.
PHONE_WIDTHS = (360, 400)
OVERFLOW = "document.documentElement.scrollWidth - window.innerWidth"


@pytest.mark.parametrize("width", PHONE_WIDTHS)
def test_a_phone_shows_the_dashboard_without_scrolling_sideways(
    page: Any, demo: Gateway, width: int
) -> None:
    """Wide tables scroll in their own box; nothing else is wider than the screen."""
    page.set_viewport_size({"width": width, "height": 800})
    open_dashboard(page, demo)
    page.wait_for_selector("#slots-table")
    assert page.evaluate(OVERFLOW) <= 0
    screenshot(page, f"dashboard-{width}px.png")


def test_graphiql_fits_a_phone(page: Any, gateway: Gateway) -> None:
    page.set_viewport_size({"width": PHONE_WIDTHS[0], "height": 800})
    page.goto(gateway.url + "/graphql")
    page.wait_for_selector(QUERY_EDITOR)
    viewport = page.get_attribute('meta[name="viewport"]', "content")
    assert viewport == "width=device-width, initial-scale=1"
    assert page.evaluate(OVERFLOW) <= 0


def test_graphiql_runs_from_local_assets(page: Any, gateway: Gateway) -> None:
    requests: list[Any] = []
    frames: list[str] = []
    page.on("request", lambda request: requests.append(request))
    page.on("websocket", lambda ws: ws.on("framesent", lambda frame: frames.append(frame)))
    page.goto(gateway.url + "/graphql")
    page.wait_for_selector(QUERY_EDITOR)

    # A header typed in GraphiQL's header editor goes out with queries and subscriptions.
    page.get_by_role("button", name="Headers").click()
    set_editor(page, HEADERS_EDITOR, '{"x-dashboard-test": "1"}')
    result = run_in_graphiql(page, "{ hypervisors { totalCount nodes { name } } }", "node-d")
    assert '"totalCount": 4' in result
    screenshot(page, "graphiql.png")

    sent = [r for r in requests if r.method == "POST" and "totalCount" in (r.post_data or "")]
    assert sent and sent[0].headers.get("x-dashboard-test") == "1"

    # Subscriptions run over a WebSocket on the same URL (graphql-transport-ws).
    run_in_graphiql(
        page, "subscription { fleetCapacityChanged { hypervisorCount } }", '"hypervisorCount": 4'
    )
    init = json.loads(frames[0])
    assert init == {"type": "connection_init", "payload": {"x-dashboard-test": "1"}}
    assert json.loads(frames[1])["type"] == "subscribe"

    outside = [r.url for r in requests if not r.url.startswith((gateway.url, "data:"))]
    assert outside == []
    assert any(r.url.endswith("/graphiql.min.js") for r in requests)


@pytest.mark.cluster
def test_dashboard_asks_for_a_token_when_the_gateway_checks_them(
    page: Any, tmp_path: Path, cluster: Any
) -> None:
    """With --auth kubernetes the page offers a sign-in, then goes live with the token."""
    directory = tmp_path / "fleet"
    directory.mkdir()
    for obj in fleet.objects():
        (directory / f"{obj['metadata']['name']}.yaml").write_text(yaml.safe_dump(obj))
    kubeconfig = cluster.write_kubeconfig(tmp_path / "kubeconfig")
    server = Gateway(directory, "--auth", "kubernetes", "--kubeconfig", str(kubeconfig))
    try:
        page.goto(server.url + "/")
        page.wait_for_selector("#token-form:not([hidden])")
        assert page.locator("#zones .zone").count() == 0
        page.fill("#token", cluster.tokens["admin"])
        page.click("#token-form button")
        page.wait_for_selector("#zones .zone")
        page.wait_for_selector('#connection[data-state="live"]', timeout=CHANGE_TIMEOUT_MS)
        screenshot(page, "dashboard-signed-in.png")
    finally:
        server.stop()


DRAIN = """query($hosts: [String!]) { drainPlan(hosts: $hosts) {
  exact moves { uuid from to } unplaced { uuid } after(groupBy: ZONE) { key } } }"""
DRAINED = [f"node00{i}-bb046" for i in range(1, 9)]


def test_a_drain_plan_and_the_evictions_under_way(page: Any, demo: Gateway) -> None:
    """The drain panel shows the plan the API gives, on a phone too; the evictions
    panel the running and failed ones, per zone."""
    page.set_viewport_size({"width": PHONE_WIDTHS[0], "height": 800})
    open_dashboard(page, demo)
    page.fill("#drain-hosts", " ".join(DRAINED))
    page.click("#drain-form button")
    page.wait_for_selector("#drain-summary")
    plan = demo.query(DRAIN, hosts=DRAINED)["drainPlan"]
    summary = page.locator("#drain-summary")
    assert summary.get_attribute("data-moves") == str(len(plan["moves"])) != "0"
    assert summary.get_attribute("data-unplaced") == str(len(plan["unplaced"]))
    assert summary.get_attribute("data-exact") == str(plan["exact"]).lower()
    rows = page.locator("#drain-moves tbody tr")
    assert rows.count() == len(plan["moves"])
    first = plan["moves"][0]
    assert rows.nth(0).inner_text().split("\t")[:3] == [first["uuid"], first["from"], first["to"]]
    assert page.locator("#drain-zones tbody tr").count() == len(plan["after"])
    assert page.evaluate(OVERFLOW) <= 0

    evictions = demo.query("{ evictions { name state hypervisor { zone } } }")["evictions"]
    busy = [e for e in evictions if e["state"] in ("RUNNING", "FAILED")]
    assert {e["state"] for e in busy} == {"RUNNING", "FAILED"}
    page.wait_for_selector("#evictions .eviction-zone")
    for eviction in busy:
        zone = page.locator(f'.eviction-zone[data-zone="{eviction["hypervisor"]["zone"]}"]')
        item = zone.locator(f'li[data-eviction="{eviction["name"]}"]')
        assert item.get_attribute("data-state") == eviction["state"]
    assert page.locator("#evictions li").count() == len(busy)
    screenshot(page, "dashboard-drain.png")
