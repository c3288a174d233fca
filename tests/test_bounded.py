"""Every memo of the app bounded in bytes and reported: under abuse, within its budget."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from gateway.domain.bounded import Figures, Memos, deep_size
from gateway.domain.records import Aggregate, Origin
from gateway.http.app import Budgets
from gateway.http.cache import BoundedMemoryCache, ResponseCache
from gateway.sources.demo.source import generate
from tests.test_metrics import P, gateway

#: Small budgets, so that a few answers fill them.
BUDGETS = Budgets(views=1 << 20, completed=2 << 20, events=1 << 20)


class Fixed:
    def __init__(self, name: str, max_bytes: int) -> None:
        self.name = name
        self.max_bytes = max_bytes

    def figures(self) -> Figures:
        return Figures(1, self.max_bytes // 2, 0, 0)


def test_a_deep_size_counts_what_containers_and_records_hold_once_each() -> None:
    text = "x" * 1000
    assert deep_size(text) == sys.getsizeof(text)
    pair = (text, text)
    assert deep_size(pair) == sys.getsizeof(pair) + sys.getsizeof(text)
    mapping = {"key": [text]}
    inner = sys.getsizeof(["list"]) + sys.getsizeof(text)
    assert deep_size(mapping) == sys.getsizeof(mapping) + sys.getsizeof("key") + inner
    record = Aggregate(text, None, {}, Origin.SPEC)  # None and the enum are not its own
    assert deep_size(record) == sys.getsizeof(record) + sys.getsizeof(text) + sys.getsizeof({})
    assert deep_size(text, pair) == deep_size(pair)


def test_the_budget_is_the_sum_of_every_memo_and_a_name_is_reported_once() -> None:
    memos = Memos()
    first = memos.add(Fixed("a", 100))
    memos.add(Fixed("b", 20))
    assert memos.budget == 120
    again = memos.add(Fixed("a", 5))  # made again under its name: reported instead
    assert memos.get("a") is again is not first
    assert memos.budget == 25 and [m.name for m in memos] == ["a", "b"]


def abuse(query: int, aliases: int = 50) -> str:
    """One of the distinct queries of #26: every instance of 200 hosts, 50 times."""
    fields = " ".join(f"q{query}a{i}: instances {{ id name active }}" for i in range(aliases))
    return f"{{ hypervisors(first: 200) {{ nodes {{ name {fields} }} }} }}"


def reported(found: dict[tuple[str, frozenset[Any]], float], name: str) -> dict[str, float]:
    return {
        dict(labels)["memo"]: value
        for (metric, labels), value in found.items()
        if metric == P + name
    }


@pytest.mark.parametrize("cache", ["memory", "off"])
async def test_distinct_large_queries_keep_every_memo_within_its_budget(cache: str) -> None:
    options: dict[str, Any] = {"budgets": BUDGETS}
    if cache == "memory":
        options["cache"] = ResponseCache(BoundedMemoryCache(max_entries=100))
    async with gateway(generate(200, seed=0), **options) as gw:
        for query in range(4):
            response = await gw.post(abuse(query))
            assert response.status_code == 200 and "errors" not in response.json()
            found = await gw.scrape()
            used, budgets = reported(found, "memo_bytes"), reported(found, "memo_budget_bytes")
            assert used.keys() == budgets.keys() >= {"completed objects", "views"}
            assert all(used[memo] <= budgets[memo] for memo in used), used
        assert budgets["completed objects"] == 2 << 20
        assert used["completed objects"] > 1 << 20  # filled, not idle
        assert reported(found, "memo_evictions_total")["completed objects"] > 0
        assert found[(P + "snapshots_live", frozenset())] >= 1


async def test_serve_help_states_the_sum_of_every_budget_the_app_reports() -> None:
    from gateway.cli import PARSING
    from gateway.settings import Settings

    settings = Settings()
    cache = ResponseCache(BoundedMemoryCache(max_bytes=settings.cache_bytes))
    async with gateway([], cache=cache) as gw:
        budgets = reported(await gw.scrape(), "memo_budget_bytes")
    outside = settings.cache_bytes + settings.persisted_bytes  # their own bounds, reported apart
    assert settings.memory_budget(len(list(PARSING))) == sum(budgets.values()) + outside
