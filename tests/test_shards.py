"""The sharded map: a dict to every reader, and a change copies one shard of it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.store.shards import SHARDS, ShardedMap

names = st.text(alphabet="abcdefgh-0123456789", min_size=1, max_size=6)
operations = st.lists(st.tuples(st.booleans(), names, st.integers()), max_size=60)


@given(st.dictionaries(names, st.integers()), operations)
def test_reads_as_the_dict_it_stands_for_and_old_maps_never_change(
    start: dict[str, int], steps: list[tuple[bool, str, int]]
) -> None:
    expected = dict(start)
    current = ShardedMap(start)
    history = [(current, dict(expected))]
    for is_set, key, value in steps:
        if is_set:
            current, expected[key] = current.set(key, value), value
        else:
            current = current.delete(key)
            expected.pop(key, None)
        history.append((current, dict(expected)))
    for shards, model in history:
        assert shards == model and len(shards) == len(model)
        assert sorted(shards) == sorted(model) and sorted(shards.items()) == sorted(model.items())
        for key in [*model, "absent"]:
            assert (key in shards) == (key in model)
            assert shards.get(key) == model.get(key) and shards.get(key, -1) == model.get(key, -1)


def test_a_change_copies_one_shard_and_shares_the_others() -> None:
    fleet = ShardedMap({f"node{i:05d}": i for i in range(2000)})
    changed = fleet.set("node00042", -1)
    shared = sum(a is b for a, b in zip(fleet._shards, changed._shards, strict=True))
    assert shared == SHARDS - 1
    assert fleet["node00042"] == 42 and changed["node00042"] == -1

    removed = changed.delete("node00042")
    shared = sum(a is b for a, b in zip(changed._shards, removed._shards, strict=True))
    assert shared == SHARDS - 1 and "node00042" not in removed and len(removed) == 1999
    assert removed.delete("node00042") is removed  # nothing to delete: the same map


def test_readers_see_the_shards_a_change_shares() -> None:
    fleet = ShardedMap({f"node{i:05d}": i for i in range(500)})
    changed = fleet.set("node00007", -7)
    pairs = list(zip(fleet.shards(), changed.shards(), strict=True))
    assert len(pairs) == SHARDS
    (new,) = [b for a, b in pairs if a is not b]
    assert new["node00007"] == -7
    assert {k: v for shard in changed.shards() for k, v in shard.items()} == dict(changed)


@given(
    st.dictionaries(names, st.integers()),
    st.dictionaries(names, st.integers()),
    st.lists(names),
    st.sampled_from([1, 2, 16, 1024]),
)
def test_a_batch_of_changes_reads_as_the_dict_with_them(
    start: dict[str, int], values: dict[str, int], deleted: list[str], shards: int
) -> None:
    before = ShardedMap(start, shards=shards)
    after = before.changed(values, deleted)
    expected = {k: v for k, v in start.items() if k not in deleted} | values
    assert after == expected and len(after) == len(expected)
    assert len(after.shards()) == shards and before == start  # the old map unchanged


def test_a_batch_copies_each_shard_it_touches_once() -> None:
    consumers = ShardedMap({f"uuid-{i}": i for i in range(5000)}, shards=1024)
    values = {"uuid-1": -1, "uuid-2": -2, "uuid-new": 0}
    changed = consumers.changed(values, ["uuid-3", "absent"])
    touched = {hash(k) & 1023 for k in [*values, "uuid-3"]}
    kept = [
        i
        for i, (a, b) in enumerate(zip(consumers.shards(), changed.shards(), strict=True))
        if a is b
    ]
    assert len(kept) == 1024 - len(touched) and not touched & set(kept)
    assert consumers.changed({}, ["absent"]) is consumers  # nothing to change: the same map


def test_the_number_of_shards_is_a_power_of_two() -> None:
    with pytest.raises(ValueError, match="power of two, not 1000"):
        ShardedMap({}, shards=1000)
