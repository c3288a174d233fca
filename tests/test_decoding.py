"""Decoding the API server's JSON: exact numbers, and a clear error for what is not JSON."""

from __future__ import annotations

import json

import pytest

from gateway.sources.kubernetes.decoding import MalformedJSON, decode, decode_event, document


def test_decodes_as_json_does_with_integers_of_any_size() -> None:
    document = {"n": 2**80, "m": -(2**70), "q": "4Gi", "f": 1.5, "ok": True, "none": None}
    assert decode(json.dumps(document).encode()) == document
    assert type(decode(b"18446744073709551616")) is int  # beyond 64 bits: not a float


@pytest.mark.parametrize("document", [b"not json", b'{"object": {"meta', b"", b"\xff"])
def test_what_is_not_json_is_a_value_error_that_says_so(document: bytes) -> None:
    with pytest.raises(MalformedJSON, match="not JSON") as caught:
        decode(document)
    assert isinstance(caught.value, ValueError)  # the informer retries those


def test_an_event_keeps_its_object_undecoded_until_asked() -> None:
    event = decode_event(b'{"type": "ADDED", "object": {"metadata": {"name": "a"}}, "x": 1}')
    assert event.type == "ADDED"
    assert bytes(event.object) == b'{"metadata": {"name": "a"}}'
    assert document(event.object) == {"metadata": {"name": "a"}}


@pytest.mark.parametrize("line", [b"{}", b'{"type": 5, "object": null}'])
def test_an_event_without_an_object_has_an_empty_one(line: bytes) -> None:
    event = decode_event(line)
    assert document(event.object) == {}
    assert event.type in (None, 5)  # judged by the informer, not here


@pytest.mark.parametrize("line", [b"[]", b'"ADDED"', b'{"type": "ADDED", "object": {"a":}}'])
def test_a_line_that_is_no_event_is_malformed(line: bytes) -> None:
    with pytest.raises(MalformedJSON, match="not a watch event"):
        decode_event(line)
