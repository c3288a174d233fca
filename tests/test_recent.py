"""Values kept by the objects they are made of, for the subscribers of one event."""

from __future__ import annotations

from gateway.api.recent import Recent


class Thing:
    """An object compared by identity (what a payload or an operation node is)."""


def test_a_value_is_found_by_the_same_objects_and_plain_key() -> None:
    kept: Recent[str] = Recent()
    a, b = Thing(), Thing()
    kept.put((a, b), "ab", plain="{}")
    assert kept.get((a, b), "{}") == "ab"
    assert kept.get((a, b), '{"n": 1}') is None
    assert kept.get((b, a), "{}") is None
    assert kept.get((a, Thing()), "{}") is None


def test_a_reused_id_does_not_find_what_its_predecessor_kept() -> None:
    kept: Recent[str] = Recent()
    a = Thing()
    kept.put((a,), "a")
    impostor = Thing()
    # Recreate the key as an id reuse would, without relying on the allocator.
    kept._kept[(id(impostor), None)] = kept._kept.pop((id(a), None))
    assert kept.get((impostor,)) is None


def test_the_oldest_is_evicted_and_a_put_again_is_newest() -> None:
    kept: Recent[int] = Recent(max_kept=2)
    a, b, c = Thing(), Thing(), Thing()
    kept.put((a,), 1)
    kept.put((b,), 2)
    kept.put((a,), 3)  # a again: now the newest
    kept.put((c,), 4)  # evicts b
    assert len(kept) == 2
    assert kept.get((a,)) == 3
    assert kept.get((b,)) is None
    assert kept.get((c,)) == 4
