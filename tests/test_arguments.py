"""The API's own argument scalars: what a parsed value is equal to."""

from __future__ import annotations

from gateway.api.arguments import parse_label_selector


def test_a_label_selector_is_its_text() -> None:
    """Parsed twice (two requests, two subscribers), one selector is one value."""
    text = "zone in (a,b),!legacy"
    first, second = parse_label_selector(text), parse_label_selector(text)
    assert first.matches is not second.matches
    assert first == second and hash(first) == hash(second)
    assert repr(first) == repr(second) == f"LabelSelector(text={text!r})"
    assert first != parse_label_selector("zone in (a)")
    assert first.matches({"zone": "a"}) and not first.matches({"zone": "a", "legacy": ""})
