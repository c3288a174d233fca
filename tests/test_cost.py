"""Query cost: estimated before execution, refused over the limit on both transports."""

from __future__ import annotations

import ast
import dataclasses
import functools
import re
from fractions import Fraction
from pathlib import Path

import pytest
from graphql import GraphQLError, OperationDefinitionNode, parse, validate

from gateway.api.cost import SAMPLE, Profile, estimate
from gateway.api.limits import Limits
from gateway.api.schema import schema
from gateway.sources.demo.source import generate
from gateway.store.store import Store
from tests.support import serve

ROOT = Path(__file__).resolve().parent.parent

#: The query of issue 16: depth 12, within every static limit, enormous at run time.
DEPTH_12 = (
    "{ hypervisors { nodes { consumers { consumer { hypervisors { consumers { consumer { "
    "hypervisors { consumers { consumer { hypervisors { name } } } } } } } } } } } }"
)


def readme_queries() -> list[str]:
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```graphql\n(.*?)```", text, re.DOTALL)
    return [re.sub(r"^\s+", "", b, flags=re.MULTILINE) for b in blocks] + [
        q for block in re.findall(r"```python\n(.*?)```", text, re.DOTALL) for q in _strings(block)
    ]


def javascript_queries() -> list[str]:
    """Template-string constants of the dashboard, with ``${NAME}`` put in."""
    constants: dict[str, str] = {}
    for path in sorted((ROOT / "gateway" / "static").glob("*.js")):
        found = re.findall(r"const (\w+) = `(.*?)`;", path.read_text(), re.DOTALL)
        found += re.findall(r'const (\w+) = "([^"]*)";', path.read_text())
        constants.update(found)

    def expand(text: str) -> str:
        return re.sub(r"\$\{(\w+)\}", lambda m: expand(constants[m.group(1)]), text)

    return [q for q in map(expand, constants.values()) if _is_graphql(q)]


def bench_queries() -> list[str]:
    return [q for path in sorted((ROOT / "bench").glob("*.py")) for q in _strings(path.read_text())]


def _strings(source: str) -> list[str]:
    tree = ast.parse(source)
    values = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)]
    return [v for v in values if isinstance(v, str) and _is_graphql(v)]


def _is_graphql(text: str) -> bool:
    if not re.match(r"\s*(#[^\n]*\n\s*)*(\{|query|subscription)", text):
        return False
    try:
        return not validate(schema._schema, parse(text))
    except GraphQLError:
        return False


KNOWN = readme_queries() + javascript_queries() + bench_queries()


@functools.cache
def profile_at_20000_hosts() -> Profile:
    """The benchmark's fleet (40 bookings a host) measured on 1,000 hosts, at 20,000."""
    store = Store()
    store.replace(generate(1000, bookings_per_host=40), None)
    measured = Profile.measure(store.snapshot)
    return dataclasses.replace(measured, hosts=20_000, consumers=measured.consumers * 20)


def test_a_profile_counts_each_list_of_its_sample_hosts() -> None:
    """Bookings are counted by kind in one pass: the means are each list's own, over
    the sample."""
    store = Store()
    store.replace(generate(SAMPLE + 50, seed=1, bookings_per_host=12), None)
    hosts = list(store.snapshot.by_name.values())[:SAMPLE]
    lists = Profile.measure(store.snapshot).lists
    for name in ("bookings", "consumers", "reservations", "instances", "labels"):
        counted = Fraction(sum(len(getattr(h, name)) for h in hosts), len(hosts))
        assert lists[("Hypervisor", name)] == counted, name
    assert lists[("Hypervisor", "reservations")] > 0  # the demo fleet has both kinds
    resources = [len(b.resources) for h in hosts for b in h.bookings]
    assert lists[("ConsumerBooking", "resources")] == Fraction(sum(resources), len(resources))


def cost(query: str, profile: Profile, page: int = 20_000) -> int:
    document = parse(query)
    operation = next(d for d in document.definitions if isinstance(d, OperationDefinitionNode))
    return estimate(schema._schema, document, operation, None, profile, page).total


def test_every_documented_query_is_found() -> None:
    assert len(readme_queries()) >= 8
    assert any("Dashboard" in q for q in javascript_queries())
    assert any("fleetCapacity" in q for q in bench_queries())


@pytest.mark.parametrize("query", KNOWN)
def test_known_queries_pass_at_20000_hosts(query: str) -> None:
    # The benchmark raises the page size limit to the fleet's size: every host per page.
    assert cost(query, profile_at_20000_hosts()) <= Limits().max_cost


def test_the_depth_12_query_is_over_the_limit_even_on_the_demo_fleet() -> None:
    store = Store()
    store.replace(generate(200), None)
    assert cost(DEPTH_12, Profile.measure(store.snapshot)) > Limits().max_cost


def test_lists_multiply_and_pages_bound() -> None:
    profile = Profile(hosts=100, consumers=400, lists={("Hypervisor", "consumers"): Fraction(4)})
    # A page by name is kept by the store; a filter scans every host.
    assert cost("{ hypervisors { nodes { name } } }", profile) == 1 + 1 + 100
    filtered = '{ hypervisors(filter: {zone: "a"}) { nodes { name } } }'
    assert cost(filtered, profile) == 100 + 1 + 1 + 100
    nested = "{ hypervisors(first: 10) { nodes { consumers { uuid } } } }"
    assert cost(nested, profile) == 1 + 1 + 10 * (1 + 4 * 1)
    by_variable = "query($n: Int) { hypervisors(first: $n) { nodes { name } } }"
    document = parse(by_variable)
    operation = document.definitions[0]
    assert isinstance(operation, OperationDefinitionNode)
    assert estimate(schema._schema, document, operation, {"n": 3}, profile, 50).total == 2 + 3
    # Outside the page size range, what is answered: the nearest bound's page.
    assert estimate(schema._schema, document, operation, {"n": -5}, profile, 50).total == 2
    assert estimate(schema._schema, document, operation, {"n": 10**6}, profile, 50).total == 2 + 50


def test_a_page_of_consumers_costs_the_page_and_a_filter_every_consumer() -> None:
    """The consumers' UUIDs are kept in order: a page reads its own consumers only, a
    filter looks at every one of them."""
    profile = Profile(hosts=100, consumers=400, lists={})
    assert cost("{ consumers(first: 10) { nodes { uuid } } }", profile) == 1 + 1 + 10
    filtered = '{ consumers(first: 10, filter: {projectId: "p"}) { nodes { uuid } } }'
    assert cost(filtered, profile) == 400 + 1 + 1 + 10


def test_fragments_cost_what_they_expand_to() -> None:
    profile = Profile(hosts=100, consumers=0, lists={})
    spread = "{ hypervisors { nodes { ...F ...F } } } fragment F on Hypervisor { name zone }"
    expanded = "{ hypervisors { nodes { name zone name zone } } }"
    assert cost(spread, profile) == cost(expanded, profile)


async def test_refused_before_execution_over_http() -> None:
    async with serve(generate(200), limits=Limits(max_seconds=120)) as (client, _):
        response = await client.post(
            "/graphql",
            json={"query": DEPTH_12},
            headers={"accept": "application/json"},
        )
        small = await client.post("/graphql", json={"query": "{ hypervisors { totalCount } }"})
    assert response.status_code == 400
    body = response.json()
    assert "data" not in body
    [error] = body["errors"]
    assert re.fullmatch(
        r"query cost \d+ exceeds the limit of 1000000 \(estimated from the fleet's 200 hosts .*\)",
        error["message"],
    )
    assert error["extensions"] == {"code": "QUERY_TOO_COSTLY"}
    assert small.status_code == 200


def test_the_hosts_of_a_slot_group_cost_a_pass_over_the_fleet() -> None:
    """A group's hosts are found in the fleet when they are asked for: a flavor's
    slots alone are kept, its hosts are not."""
    profile = Profile(hosts=1000, consumers=0, lists={})
    alone = cost('{ slots(flavor: "m1") { key slots } }', profile)
    hosts = cost('{ slots(flavor: "m1") { key hypervisors { slots } } }', profile)
    assert alone < 100 and hosts >= 1000


def test_slots_kept_per_flavor_and_counted_for_a_request_filter_or_project() -> None:
    """The fleet's slots of a catalog flavor are kept per change; those of an explicit
    request, a filter's hosts or a project are counted over every host."""
    profile = Profile(hosts=1000, consumers=0, lists={})
    kept = cost('{ slots(flavor: "m1") { slots } }', profile)
    assert kept < 100
    for counted in (
        '{ slots(flavor: "m1", project: "p") { slots } }',
        '{ slots(flavor: "m1", filter: {zone: "a"}) { slots } }',
        '{ slots(request: [{resource: "cpu", amount: "1"}]) { slots } }',
    ):
        assert cost(counted, profile) == kept + 1000


def test_a_drain_is_priced_as_a_pass_over_the_fleet() -> None:
    profile = Profile(hosts=1000, consumers=0, lists={})
    plan = cost('{ drainPlan(hosts: ["a"]) { exact } }', profile)
    assert plan >= 1000
    kept = cost('{ slots(flavor: "m1") { slots } }', profile)
    assert cost('{ slots(flavor: "m1", drain: ["a"]) { slots } }', profile) == kept + 1000
