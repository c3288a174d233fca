"""The fleet in name order, read lazily."""

from __future__ import annotations

from gateway.store.ordered import Ordered
from gateway.store.store import Store
from tests.test_store import host


def test_ordered_reads_records_by_position_and_slice() -> None:
    store = Store()
    store.replace([host(name, str(i)) for i, name in enumerate("dcba")])
    ordered = store.snapshot.ordered
    assert isinstance(ordered, Ordered)
    assert len(ordered) == 4
    assert ordered[0].name == "a" and ordered[-1].name == "d"
    assert [h.name for h in ordered[1:3]] == ["b", "c"]
    assert [h.name for h in ordered] == ["a", "b", "c", "d"]
    assert ordered[2] is store.snapshot.by_name["c"]
