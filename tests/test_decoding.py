"""Decoding the API server's JSON: exact numbers, and a clear error for what is not JSON."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from gateway.domain.parse import parse_hypervisor
from gateway.domain.records import Hypervisor
from gateway.sources.kubernetes.decoding import (
    MalformedJSON,
    decode,
    decode_event,
    document,
    hypervisor,
)
from tests.test_parse import FULL_PATHS, JSON, as_streamed, full_object, replaced


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


# A Hypervisor as a stream's objects reach the parser.


def _read(h: Hypervisor) -> dict[str, Any]:
    """A record's fields but how its parts were spelled, which the two ways digest apart."""
    return {f: getattr(h, f) for f in h.__struct_fields__ if f != "spellings"}


@pytest.mark.parametrize(
    "path",
    [("metadata", "labels"), ("spec", "bookings"), ("status", "instances"), ("status", "cells")],
)
def test_a_hypervisor_leaves_its_parts_json_and_skips_what_the_parser_never_reads(
    path: tuple[str, str],
) -> None:
    obj = full_object()
    obj["metadata"]["managedFields"] = [{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}]
    decoded = as_streamed(obj)
    section, key = path
    assert bytes(decoded[section][key]) == json.dumps(obj[section][key]).encode()
    assert "managedFields" not in decoded["metadata"]
    assert decoded["status"]["hypervisorId"] == obj["status"]["hypervisorId"]  # a value


def test_a_hypervisor_has_every_field_the_parser_reads() -> None:
    """What the parser reads of the object that sets every field the gateway reads
    (tests.test_parse) reads the same, whether decoded whole or as a stream's."""
    obj = full_object()
    assert _read(parse_hypervisor(as_streamed(obj))) == _read(parse_hypervisor(obj))


@given(st.lists(st.tuples(st.sampled_from(FULL_PATHS), JSON), min_size=1, max_size=4))
def test_a_broken_hypervisor_reads_as_it_does_decoded_whole(replacements: list[Any]) -> None:
    """A part that is not what the CRD makes it (a spec that is a list, a status that
    is a number) is decoded whole: the parser warns about it as it always does."""
    obj = replaced(full_object(), replacements)
    try:
        raw = msgspec.Raw(json.dumps(obj, allow_nan=False).encode())
    except ValueError:
        assume(False)  # NaN and infinities: JSON has no spelling for them
    assert _read(parse_hypervisor(hypervisor(raw))) == _read(parse_hypervisor(obj))


@pytest.mark.parametrize("raw", [b"null", b"[]", b'"x"', b'{"spec": 5, "metadata": null}'])
def test_a_hypervisor_that_is_no_object_is_decoded_whole(raw: bytes) -> None:
    assert hypervisor(msgspec.Raw(raw)) == document(msgspec.Raw(raw))
