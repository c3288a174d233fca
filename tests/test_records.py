"""The domain records and the operator-style library helpers."""

from __future__ import annotations

import gc
import weakref
from decimal import Decimal
from typing import Any

import msgspec
import pytest

from gateway.domain import records as domain
from gateway.domain.parse import parse_hypervisor
from gateway.domain.records import Aggregate, ConsumerBooking, Hypervisor, Origin
from tests.objects import consumer, hypervisor, reservation, uuid_of


def host(*bookings: dict[str, Any], status: dict[str, Any] | None = None) -> Hypervisor:
    return parse_hypervisor(hypervisor(spec={"bookings": list(bookings)}, status=status))


def test_consumers_and_reservations_in_spec_order() -> None:
    h = host(
        consumer(uuid_of(2), {"cpu": 1}),
        reservation("b", {"cpu": 1}),
        consumer(uuid_of(1), {"cpu": 1}),
        reservation("a", {"cpu": 1}),
    )
    assert [c.uuid for c in domain.consumers(h)] == [uuid_of(2), uuid_of(1)]
    assert [r.name for r in domain.reservations(h)] == ["b", "a"]
    assert h.consumers == domain.consumers(h)
    assert h.reservations == domain.reservations(h)


def test_consumer_lookup_ignores_case() -> None:
    h = host(consumer(uuid_of(10).upper(), {"cpu": 2}))
    found = domain.consumer(h, uuid_of(10).upper())
    assert found is not None
    assert found.uuid == uuid_of(10)
    assert domain.consumer(h, uuid_of(10)) is found
    assert domain.has_consumer(h, uuid_of(10).upper())
    assert not domain.has_consumer(h, uuid_of(11))
    assert domain.consumer(h, uuid_of(11)) is None


def test_consumer_lookup_returns_the_first_of_duplicates() -> None:
    h = host(consumer(uuid_of(1), {"cpu": 2}), consumer(uuid_of(1), {"cpu": 3}))
    found = domain.consumer(h, uuid_of(1))
    assert found is not None
    assert found.resources == {"cpu": 2}


def test_reservation_lookup() -> None:
    h = host(reservation("host", {"memory": "1Gi"}), reservation("host", {"memory": "2Gi"}))
    found = domain.reservation(h, "host")
    assert found is not None
    assert found.resources == {"memory": 2**30}
    assert domain.reservation(h, "HOST") is None  # names are case-sensitive


def test_sum_resources_adds_consumers_and_reservations() -> None:
    h = host(
        reservation("host", {"cpu": 4, "memory": "8Gi"}),
        consumer(uuid_of(1), {"cpu": 16, "DISK_GB": 10}),
        consumer(uuid_of(2), {"cpu": "500m"}),
        status={"capacity": {"cpu": 64}},
    )
    assert domain.sum_resources(h) == {
        "cpu": Decimal("20.5"),
        "memory": 8 * 2**30,
        "DISK_GB": 10,
    }
    # ... which is not Placement usage: capacity math keeps the two apart.
    assert h.resources["cpu"].booked == Decimal("16.5")
    assert h.resources["cpu"].reserved == 4


def test_sum_resources_of_nothing() -> None:
    assert domain.sum_resources(host()) == {}
    assert domain.sum_resources(parse_hypervisor(hypervisor())) == {}


def test_add_amounts_is_exact() -> None:
    total = domain.add_amounts(
        [{"cpu": Decimal("0.1")}] * 10 + [{"memory": Decimal(10**29 + 1)}, {"memory": Decimal(1)}]
    )
    assert total == {"cpu": 1, "memory": 10**29 + 2}


def test_records_are_immutable() -> None:
    h = host(consumer(uuid_of(1), {"cpu": 1}))
    with pytest.raises(AttributeError, match="immutable"):
        h.name = "other"  # type: ignore[misc]
    with pytest.raises(AttributeError, match="immutable"):
        h.consumers[0].uuid = uuid_of(2)  # type: ignore[misc]


def test_records_are_hashable() -> None:
    h = parse_hypervisor(
        hypervisor(
            spec={
                "aggregates": ["a"],
                "groups": [{"aggregate": {"name": "a", "uuid": uuid_of(5), "metadata": {}}}],
                "bookings": [consumer(uuid_of(1), {"cpu": 1}), reservation("r", {"cpu": 1})],
            },
            status={"cells": [{"cellID": 0, "capacity": {"cpu": 1}}], "instances": []},
        )
    )
    assert len({*h.aggregates, *h.aggregates}) == 2
    assert len(set(h.bookings)) == 2
    assert len(set(h.cells)) == 1
    assert h.drift is not None
    assert hash(h.drift) == hash(h.drift)
    assert {h: 1}[h] == 1


def test_records_stay_out_of_the_cyclic_collector() -> None:
    """All but the host's own, one per host: kept answers refer to it weakly."""
    h = host(consumer(uuid_of(1), {"cpu": 1}))
    records = [*h.bookings, *h.resources.values(), h.instances, *h.instances, *h.conditions]
    assert not any(gc.is_tracked(r) for r in records)
    assert weakref.ref(h)() is h


def test_equal_records_with_equal_maps() -> None:
    a = Aggregate("x", None, {"k": "v"}, Origin.STATUS)
    assert a == Aggregate("x", None, {"k": "v"}, Origin.STATUS)
    assert a != Aggregate("x", None, {"k": "w"}, Origin.STATUS)
    assert hash(a) == hash(Aggregate("x", None, {"k": "v"}, Origin.STATUS))
    booking = ConsumerBooking(uuid_of(1), {"cpu": Decimal(1)}, None, None, None, None, "h")
    assert booking != msgspec.structs.replace(booking, resources={"cpu": Decimal(2)})


def test_hypervisors_compare_by_identity() -> None:
    obj = hypervisor(resource_version="1")
    assert parse_hypervisor(obj) != parse_hypervisor(obj)
