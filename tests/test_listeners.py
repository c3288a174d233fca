"""Who hears a store's changes: in order, each one, whatever another does."""

from __future__ import annotations

import logging

import pytest

from gateway.store.listeners import Listeners


def test_listeners_hear_every_change_in_order_until_they_leave() -> None:
    heard: list[tuple[str, int, str]] = []
    listeners: Listeners[int, str] = Listeners("test")
    leave = listeners.add(lambda s, c: heard.append(("first", s, c)))
    listeners.add(lambda s, c: heard.append(("second", s, c)))
    listeners.tell(1, "a")
    leave()
    listeners.tell(2, "b")
    assert heard == [("first", 1, "a"), ("second", 1, "a"), ("second", 2, "b")]
    assert len(listeners) == 1


def test_a_failing_listener_is_logged_and_the_others_still_hear(
    caplog: pytest.LogCaptureFixture,
) -> None:
    heard: list[int] = []
    listeners: Listeners[int, None] = Listeners("store")

    def broken(snapshot: int, changes: None) -> None:
        raise RuntimeError("cannot")

    listeners.add(broken)
    listeners.add(lambda s, c: heard.append(s))
    with caplog.at_level(logging.ERROR):
        listeners.tell(7, None)
    assert heard == [7]
    assert "store listener failed" in caplog.text
