"""The memo of what is made of documents: charged by their length, kept within its bytes."""

from __future__ import annotations

import pytest

from gateway.api.documents import BYTES_PER_CHARACTER, Documents


def test_a_text_is_made_once_and_the_least_recently_used_goes_first() -> None:
    made: list[str] = []
    memo: Documents[str, str] = Documents("texts", max_bytes=16 * BYTES_PER_CHARACTER)

    def get(text: str) -> str:
        return memo.get(text, 1, lambda: made.append(text) or text.upper())

    texts = [f"{n:x}" for n in range(16)]  # one character each: sixteen fit
    assert [get(t) for t in texts] == [t.upper() for t in texts]
    assert get("0") == "0" and made == texts  # a hit, and 0 now the most recent
    get("x")  # over the budget: 1, the least recently used, goes
    assert get("0") == "0" and made == [*texts, "x"]
    get("1")
    assert made == [*texts, "x", "1"]
    figures = memo.figures()
    assert figures.entries == 16 and figures.bytes == 16 * BYTES_PER_CHARACTER
    assert figures.evictions == 2 and figures.hits == 2


def test_an_entry_over_a_sixteenth_of_the_budget_is_made_every_time() -> None:
    memo: Documents[str, object] = Documents("texts", max_bytes=16 * BYTES_PER_CHARACTER)
    first = memo.get("xx", 2, object)
    assert memo.get("xx", 2, object) is not first
    assert memo.figures().entries == 0
    assert memo.get("x", 1, object) is memo.get("x", 1, object)


def test_a_failure_is_not_kept() -> None:
    memo: Documents[str, int] = Documents("texts")
    calls = 0

    def failing() -> int:
        nonlocal calls
        calls += 1
        raise ValueError("bad document")

    for _ in range(2):
        with pytest.raises(ValueError):
            memo.get("q", 1, failing)
    assert calls == 2 and memo.figures().entries == 0
