"""Parts spelled as in the version before: kept with their warnings, and only those."""

from __future__ import annotations

import dataclasses
from typing import Any

import msgspec
import pytest

from gateway.domain.spellings import Parts, decoded, digest, is_list

PARTS = Parts({"cells": ("status.cells",), "memberships": ("spec.groups", "status.traits")})


@dataclasses.dataclass
class Version:
    """A record as the parser reads against it: spellings, warnings, one field per part."""

    spellings: bytes
    warnings: tuple[str, ...]
    cells: Any


def sections(cells: Any, groups: Any = None, traits: Any = None) -> dict[str, dict[str, Any]]:
    return {"spec": {"groups": groups}, "status": {"cells": cells, "traits": traits}}


def version(
    cells: Any, groups: Any = None, traits: Any = None, warnings: tuple[str, ...] = ()
) -> Version:
    """The record of a version read alone: its cells as read, its parts' digests."""
    spelled = PARTS.read(sections(cells, groups, traits), [], None)
    assert spelled.kept("memberships") is None  # no version before: nothing kept
    read = spelled.read("cells", lambda value: ("read", value))
    return Version(spelled.packed(), warnings, read)


def test_a_part_spelled_as_before_is_taken_from_the_version_before() -> None:
    before = version([{"cellID": 0}], ["a"], ["b"])
    spelled = PARTS.read(sections([{"cellID": 0}], ["a"], ["b"]), [], before)
    assert spelled.read("cells", lambda value: ("read again", value)) is before.cells
    assert spelled.kept("memberships") is before
    assert spelled.packed() == before.spellings
    assert len(before.spellings) == 8 * len(PARTS)


@pytest.mark.parametrize(
    ("now", "kept"),
    [
        (([{"cellID": 1}], ["a"], ["b"]), (False, True)),
        (([{"cellID": 0}], ["a"], ["c"]), (True, False)),  # one place of two
        (([{"cellID": 0}], ["b"], ["a"]), (True, False)),  # the same values, swapped
        (([{"cellID": 0}], None, ["b"]), (True, False)),
    ],
)
def test_a_part_spelled_otherwise_anywhere_is_read(
    now: tuple[Any, Any, Any], kept: tuple[bool, bool]
) -> None:
    before = version([{"cellID": 0}], ["a"], ["b"])
    spelled = PARTS.read(sections(*now), [], before)
    cells = spelled.read("cells", lambda value: ("read again", value))
    assert (cells is before.cells, spelled.kept("memberships") is before) == kept
    assert cells in (before.cells, ("read again", now[0]))


def test_a_part_json_cannot_spell_is_read_every_time() -> None:
    """A YAML file's null key has no digest: nothing can say it is the same."""
    unspellable = [{"capacity": {None: 1}}]
    assert digest(unspellable) is None
    spelled = PARTS.read(sections(unspellable), [], version(unspellable))
    assert spelled.kept("cells") is None


def test_a_kept_part_brings_its_own_warnings_in_their_order_and_no_others() -> None:
    earlier = (
        "metadata.labels: not a map",
        "status.cells[1]: cell without cellID; ignored",
        "status.cellsExtra: not read",
        "status.cells: expected a list",
        "status.traits.x: not a string",
    )
    before = version([{"cellID": 0}], warnings=earlier)
    warnings = ["spec: first"]
    PARTS.read(sections([{"cellID": 0}]), warnings, before).kept("cells")
    assert warnings == [
        "spec: first",
        "status.cells[1]: cell without cellID; ignored",
        "status.cells: expected a list",
    ]


def test_a_part_still_json_is_digested_by_its_own_bytes_and_read_decoded() -> None:
    raw = msgspec.Raw(b'[{"cellID": 0}]')
    assert digest(raw) == hash(b'[{"cellID": 0}]')
    spelled = PARTS.read(sections(raw), [], None)
    assert spelled.read("cells", lambda value: value) == [{"cellID": 0}]
    assert decoded([1]) == [1]


def test_a_parts_values_are_its_places_in_order_decoded() -> None:
    spelled = PARTS.read(sections(None, msgspec.Raw(b'["a"]'), ["b"]), [], None)
    assert spelled.values("memberships") == (["a"], ["b"])


@pytest.mark.parametrize(
    ("part", "listed"),
    [
        (msgspec.Raw(b"[]"), True),
        (msgspec.Raw(b"{}"), False),
        (msgspec.Raw(b"null"), False),
        ([], True),
        ("[]", False),
        (None, False),
    ],
)
def test_a_list_is_told_whether_decoded_or_still_json(part: Any, listed: bool) -> None:
    assert is_list(part) is listed
