"""Reading JSON-like values leniently: the strings shared across a fleet stay bounded."""

from __future__ import annotations

import sys

import pytest

from gateway.domain import lenient
from gateway.domain.lenient import shared_string


def test_shared_strings_are_one_copy_and_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    shared = lenient.SharedStrings(max_entries=10)
    strings = shared.strings
    monkeypatch.setattr(lenient, "STRINGS", shared)
    monkeypatch.setattr(lenient, "share", strings.setdefault)
    first = shared_string("".join(["project-", "1"]))
    assert shared_string("".join(["project-", "1"])) is first
    for i in range(100):  # months of timestamps, say
        shared_string(f"2026-01-01T00:00:{i:02}Z")
    assert len(strings) <= 10
    new = shared_string("".join(["project-", "2"]))  # a project created meanwhile
    assert shared_string("".join(["project-", "2"])) is new


def test_shared_strings_are_bounded_in_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    shared = lenient.SharedStrings(max_bytes=100 * 1024)
    monkeypatch.setattr(lenient, "STRINGS", shared)
    monkeypatch.setattr(lenient, "share", shared.strings.setdefault)
    for i in range(10 * shared.CHECK_EVERY):
        shared_string(f"project-{i:080d}")
        assert shared.figures().bytes <= 100 * 1024 + shared.CHECK_EVERY * 140
    assert shared.figures().evictions > 0


def test_shared_strings_bytes_are_each_strings_once_and_follow_a_letting_go() -> None:
    shared = lenient.SharedStrings()
    for i in range(3000):
        shared.strings.setdefault(f"project-{i}", f"project-{i}")
        if i % 700 == 0:
            assert shared.figures().bytes == sum(map(sys.getsizeof, shared.strings))
    shared.strings.clear()  # as a bound does
    for i in range(10):
        shared.strings.setdefault(f"user-{i}", f"user-{i}")
    assert shared.figures().bytes == sum(map(sys.getsizeof, shared.strings))
