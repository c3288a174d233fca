"""Sorted keys in chunks: a sorted list to every reader, and a change copies a chunk of it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gateway.store import sortedkeys
from gateway.store.sortedkeys import CHUNK, SortedKeys

keys = st.text(alphabet="abcdef0123", min_size=1, max_size=5)


@given(st.sets(keys), st.lists(st.tuples(st.sets(keys), st.sets(keys)), max_size=12))
def test_reads_as_the_sorted_list_it_stands_for_and_old_ones_never_change(
    start: set[str], steps: list[tuple[set[str], set[str]]]
) -> None:
    sortedkeys.CHUNK = 4  # small chunks: splits and emptied chunks in a few keys
    try:
        expected = set(start)
        history = [(SortedKeys(start), sorted(expected))]
        for wanted, unwanted in steps:
            added, removed = wanted - expected, (unwanted - wanted) & expected
            expected = (expected | added) - removed
            history.append((history[-1][0].changed(added, removed), sorted(expected)))
    finally:
        sortedkeys.CHUNK = CHUNK
    for ordered, model in history:
        assert list(ordered) == model and len(ordered) == len(model)
        assert [ordered[i] for i in range(-len(model), len(model))] == model + model
        assert ordered[1:-1] == model[1:-1] and ordered[::2] == model[::2]
        assert ordered[len(model) :] == []


def test_a_change_copies_the_chunks_it_touches() -> None:
    ordered = SortedKeys(f"{i:08x}" for i in range(10 * CHUNK))
    changed = ordered.changed(["00000002a"], ["00000001"])  # both in the first chunk
    pairs = list(zip(ordered._chunks, changed._chunks, strict=True))
    assert sum(a is not b for a, b in pairs) == 1
    assert changed[1:3] == ["00000002", "00000002a"] and len(changed) == len(ordered)


def test_a_chunk_that_grows_past_twice_its_size_is_halved() -> None:
    ordered = SortedKeys(f"{i:08x}" for i in range(CHUNK))
    grown = ordered.changed([f"{i:08x}z" for i in range(CHUNK + 1)], [])
    assert [len(chunk) for chunk in grown._chunks] == [CHUNK, CHUNK + 1]
    assert list(grown) == sorted([*ordered, *(f"{i:08x}z" for i in range(CHUNK + 1))])
