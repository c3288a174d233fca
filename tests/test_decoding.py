"""Decoding the API server's JSON: exact numbers, and a clear error for what is not JSON."""

from __future__ import annotations

import json

import pytest

from gateway.sources.kubernetes.decoding import MalformedJSON, decode


def test_decodes_as_json_does_with_integers_of_any_size() -> None:
    document = {"n": 2**80, "m": -(2**70), "q": "4Gi", "f": 1.5, "ok": True, "none": None}
    assert decode(json.dumps(document).encode()) == document
    assert type(decode(b"18446744073709551616")) is int  # beyond 64 bits: not a float


@pytest.mark.parametrize("document", [b"not json", b'{"object": {"meta', b"", b"\xff"])
def test_what_is_not_json_is_a_value_error_that_says_so(document: bytes) -> None:
    with pytest.raises(MalformedJSON, match="not JSON") as caught:
        decode(document)
    assert isinstance(caught.value, ValueError)  # the informer retries those
