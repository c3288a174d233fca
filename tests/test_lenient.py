"""Reading JSON-like values leniently: the strings shared across a fleet stay bounded."""

from __future__ import annotations

import pytest

from gateway.domain import lenient
from gateway.domain.lenient import shared_string


def test_shared_strings_are_one_copy_and_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lenient, "_SHARED_LIMIT", 10)
    monkeypatch.setattr(lenient, "_STRINGS", strings := {})
    monkeypatch.setattr(lenient, "share", strings.setdefault)
    first = shared_string("".join(["project-", "1"]))
    assert shared_string("".join(["project-", "1"])) is first
    for i in range(100):  # months of timestamps, say
        shared_string(f"2026-01-01T00:00:{i:02}Z")
    assert len(strings) <= 10
    new = shared_string("".join(["project-", "2"]))  # a project created meanwhile
    assert shared_string("".join(["project-", "2"])) is new
