"""The fleet in name order, read lazily."""

from __future__ import annotations

from gateway.store.ordered import Mapped, Ordered
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


def test_mapped_makes_each_item_only_where_it_is_read() -> None:
    made: list[int] = []

    def double(n: int) -> int:
        made.append(n)
        return 2 * n

    mapped = Mapped(range(1000), double)
    assert len(mapped) == 1000 and made == []
    assert mapped[3] == 6 and mapped[10:12] == [20, 22]
    assert made == [3, 10, 11]
