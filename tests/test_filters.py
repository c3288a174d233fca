"""A filter's key: the selection it shares with every filter that selects the same hosts."""

from __future__ import annotations

import dataclasses
from decimal import Decimal
from typing import Any

import pytest

from gateway.api.arguments import parse_label_selector
from gateway.api.enums import CapacityView
from gateway.api.filters import HypervisorFilter, ResourceRequest, _key


def _fit(cpu: str = "8") -> list[ResourceRequest]:
    return [ResourceRequest(resource="cpu", amount=Decimal(cpu))]


#: A value for every field of the filter, none of them its default.
GIVEN: dict[str, Any] = {
    "names": ["node-1"],
    "zone": "a",
    "region": "a",
    "building_block": "a",
    "aggregate": "a",
    "trait": "a",
    "label_selector": parse_label_selector("a=b"),
    "ready": False,
    "maintenance": [""],
    "consumer": "00000000-0000-0000-0000-000000000001",
    "project_id": "a",
    "view": CapacityView.BOOKINGS,
    "can_fit": _fit(),
    "overcommitted": False,
    "fits_flavor": "a",
    "project": "a",
    "bookings_tracked": False,
    "has_status": False,
    "evicted": False,
    "tainted": False,
}


def test_every_field_of_the_filter_is_given_a_value() -> None:
    assert set(GIVEN) == {f.name for f in dataclasses.fields(HypervisorFilter)}


@pytest.mark.parametrize("name", GIVEN)
def test_each_field_given_makes_another_key_and_equal_filters_one(name: str) -> None:
    given = HypervisorFilter(**{name: GIVEN[name]})
    assert _key(given) != _key(HypervisorFilter())
    assert _key(given) == _key(HypervisorFilter(**{name: GIVEN[name]}))
    assert hash(_key(given)) == hash(_key(HypervisorFilter(**{name: GIVEN[name]})))


def test_one_value_in_two_fields_makes_two_keys() -> None:
    keys = {_key(HypervisorFilter(**{name: "a"})) for name in ("zone", "region", "trait")}
    assert len(keys) == 3


def test_requests_are_told_apart_by_amount_and_order_and_an_empty_list_from_none() -> None:
    assert _key(HypervisorFilter(can_fit=_fit("8"))) != _key(HypervisorFilter(can_fit=_fit("9")))
    both = [*_fit("8"), ResourceRequest(resource="memory", amount=Decimal(1))]
    assert _key(HypervisorFilter(can_fit=both)) != _key(HypervisorFilter(can_fit=both[::-1]))
    assert _key(HypervisorFilter(names=[])) != _key(HypervisorFilter())
    assert _key(HypervisorFilter(ready=False)) != _key(HypervisorFilter(ready=True))
