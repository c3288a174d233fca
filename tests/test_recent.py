"""Values kept by the objects they are made of, for the subscribers of one event."""

from __future__ import annotations

from gateway.api.recent import Recent


class Thing:
    """An object compared by identity (what a payload or an operation node is)."""


def test_a_value_is_found_by_the_same_objects_and_plain_key() -> None:
    kept: Recent[str] = Recent("test", len)
    a, b = Thing(), Thing()
    kept.put((a, b), "ab", plain="{}")
    assert kept.get((a, b), "{}") == "ab"
    assert kept.get((a, b), '{"n": 1}') is None
    assert kept.get((b, a), "{}") is None
    assert kept.get((a, Thing()), "{}") is None


def test_a_reused_id_does_not_find_what_its_predecessor_kept() -> None:
    kept: Recent[str] = Recent("test", len)
    a = Thing()
    kept.put((a,), "a")
    impostor = Thing()
    # Recreate the key as an id reuse would, without relying on the allocator.
    kept._kept[(id(impostor), None)] = kept._kept.pop((id(a), None))
    assert kept.get((impostor,)) is None


def test_the_oldest_is_evicted_and_a_put_again_is_newest() -> None:
    kept: Recent[int] = Recent("test", lambda n: 1, max_kept=2)
    a, b, c = Thing(), Thing(), Thing()
    kept.put((a,), 1)
    kept.put((b,), 2)
    kept.put((a,), 3)  # a again: now the newest
    kept.put((c,), 4)  # evicts b
    assert len(kept) == 2
    assert kept.get((a,)) == 3
    assert kept.get((b,)) is None
    assert kept.get((c,)) == 4


def test_values_are_bounded_in_bytes_and_reported() -> None:
    kept: Recent[str] = Recent("test", len, max_bytes=10)
    things = [Thing() for _ in range(4)]
    for thing, text in zip(things, ["aaaa", "bbbb", "cccc", "d" * 11], strict=True):
        kept.put((thing,), text)
    assert kept.get((things[3],)) is None  # larger than the budget: never kept
    assert kept.get((things[0],)) is None  # evicted for room
    assert kept.get((things[2],)) == "cccc"
    figures = kept.figures()
    assert (figures.entries, figures.bytes, figures.hits, figures.evictions) == (2, 8, 1, 1)
