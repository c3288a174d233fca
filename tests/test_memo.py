"""Memos of what repeats across a fleet: kept once seen twice, parsed once per spelling."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gateway.domain import lenient, memo
from gateway.domain.bounded import deep_size
from gateway.domain.lenient import Reader
from gateway.domain.memo import Memo, by_spelling, readings
from gateway.domain.parse import parse_hypervisor
from tests.objects import hypervisor


def test_an_entry_is_kept_once_asked_for_and_a_lone_one_is_forgotten() -> None:
    m: Memo[str, int] = Memo("test")
    m.add("common", 1, 1)
    assert m.get("common", 2) == 1  # the second sighting: kept for good
    m.add("lone", 2, 3)
    for i in range(memo.CANDIDATES):  # hosts' own entries, each seen once
        m.add(f"host-{i}", i, 4 + i)
    assert m.get("lone", 0) is None
    assert m.get("common", 0) == 1
    assert m.kept("common") == 1 and m.figures().entries == 1


def test_an_object_repeating_itself_is_no_second_sighting() -> None:
    m: Memo[str, int] = Memo("test")
    m.add("own", 1, 7)
    assert m.get("own", 7) == 1  # found again while reading the same object: shared
    assert m.kept("own") is None and m.figures().entries == 0
    assert m.get("own", 8) == 1 and m.kept("own") == 1  # another object: kept


def test_a_hosts_own_maps_are_shared_within_it_but_not_kept() -> None:
    """Both NUMA cells of a host report the same allocation, unlike any other host's."""
    cell = {
        "capacity": {"cpu": "32", "memory": "256Gi"},
        "allocation": {"cpu": "7", "memory": "77Gi"},
    }
    status = {"cells": [{"cellID": 0, **cell}, {"cellID": 1, **cell}]}
    record = parse_hypervisor(hypervisor("own-cells", status=status))
    first, second = record.cells
    assert first.allocation is second.allocation
    assert lenient._READ.kept((("cpu", "7"), ("memory", "77Gi"))) is None
    other = parse_hypervisor(hypervisor("same-hardware", status=status))
    assert other.cells[0].capacity is first.capacity  # hosts of one hardware share
    assert lenient._READ.kept((("cpu", "32"), ("memory", "256Gi"))) is first.capacity


def test_share_hands_out_the_first_of_equal_values() -> None:
    m: Memo[str, list[int]] = Memo("test")
    first, second = [1], [1]
    assert m.share("k", first, readings()) is first
    assert m.share("k", second, readings()) is first
    assert m.share("k", [1], readings()) is first


def _counting() -> tuple[list[Any], Any]:
    calls: list[Any] = []

    @by_spelling
    def parse(reader: Reader, part: Any) -> tuple[Any, ...]:
        calls.append(part)
        if part == [0]:
            reader.warn("spec.part", "zero")
        return ("parsed", part)

    return calls, parse


def test_a_part_is_parsed_once_per_spelling_and_its_warnings_replayed() -> None:
    calls, parse = _counting()
    readers = [Reader() for _ in range(3)]
    results = [parse(r, [0]) for r in readers]
    assert len(calls) == 1
    assert results[0] is results[1] is results[2]
    assert all(r.warnings == ["spec.part: zero"] for r in readers)


@pytest.mark.parametrize("other", [True, 1.0, "1", (1,), {1}])
def test_values_json_would_spell_alike_are_told_apart(other: Any) -> None:
    calls, parse = _counting()
    parse(Reader(), [1])
    parse(Reader(), [other])
    assert calls == [[1], [other]]


def test_a_part_without_a_spelling_is_parsed_every_time() -> None:
    calls, parse = _counting()
    part = [lambda: None]  # cannot be pickled
    parse(Reader(), part)
    parse(Reader(), part)
    assert len(calls) == 2


def test_hosts_of_one_building_block_share_their_memberships() -> None:
    spec = {
        "groups": [{"trait": {"name": "CUSTOM_A"}}, {}],
        "aggregates": ["bb091"],
    }
    status = {
        "aggregates": [{"name": "qa-de-1a", "uuid": "u-1", "metadata": {"az": "qa-de-1a"}}],
        "domainCapabilities": {"arch": "x86_64", "supportedFeatures": ["sev"]},
    }
    first, second = (
        parse_hypervisor(hypervisor(name, spec=copy.deepcopy(spec), status=copy.deepcopy(status)))
        for name in ("a", "b")
    )
    assert first.traits is second.traits
    assert first.aggregates is second.aggregates
    assert first.domain_capabilities is second.domain_capabilities
    assert first.warnings == second.warnings
    assert any(w.startswith("spec.groups[1]") for w in second.warnings)


def test_entries_are_kept_within_the_budget_and_reported() -> None:
    m: Memo[str, str] = Memo("test", max_bytes=1000)
    for i in range(100):
        m.add(f"key-{i}", "v" * 50, 1)
        assert m.get(f"key-{i}", 2) is not None  # asked twice: kept while there is room
    figures = m.figures()
    assert 0 < figures.entries < 100 and figures.bytes <= 1000
    assert figures.hits == 100
    assert m.kept("key-0") is not None and m.kept("key-99") is None  # the first kept stay


def test_a_full_memo_keeps_no_more_until_its_budget_grows() -> None:
    room = deep_size("a", "v" * 100) + deep_size("c", "")  # not for b
    m: Memo[str, str] = Memo("test", max_bytes=room)
    for key, value in (("a", "v" * 100), ("b", "v" * 100), ("c", "")):
        m.add(key, value, 1)
        assert m.get(key, 2) == value  # found all the same
    # c would fit, but b did not: full, the memo measures and keeps no more.
    assert (m.kept("a"), m.kept("b"), m.kept("c")) == ("v" * 100, None, None)
    m.max_bytes *= 4  # memo.set_budget
    m.add("c", "", 1)
    assert m.get("c", 2) == "" and m.kept("c") == ""


def test_an_entry_is_charged_with_all_it_holds() -> None:
    m: Memo[tuple[tuple[str, str], ...], dict[str, str]] = Memo("test")
    key = tuple((f"name-{i}", "x" * 100) for i in range(10))
    value = {f"name-{i}": "y" * 100 for i in range(10)}
    m.add(key, value, 1)
    m.get(key, 2)
    assert m.figures().bytes == deep_size(key, value) > 2 * 10 * 100
