"""Reading spec.bookings: records, warnings, shared resource maps and exact totals."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from gateway.domain import lenient
from gateway.domain.bookings import booking_totals, parse_bookings
from gateway.domain.lenient import Reader
from tests.objects import consumer, reservation, uuid_of

GiB = 2**30


@pytest.mark.parametrize("spelling", [1, True, "1", 1.0])
def test_a_remembered_resource_map_is_found_by_equal_strings_only(spelling: Any) -> None:
    parse_bookings(Reader(), [consumer(uuid_of(1), {"cpu": "1"})], "node-1")
    reader = Reader()
    (booking,) = parse_bookings(reader, [consumer(uuid_of(2), {"cpu": spelling})], "node-2")
    if spelling is True:
        assert booking.resources == {}
        assert reader.warnings and "spec.bookings[0].consumer.resources.cpu" in reader.warnings[0]
    else:
        assert booking.resources == {"cpu": 1}
        assert reader.warnings == []


def test_bookings_of_one_flavor_share_one_resource_map() -> None:
    flavor = {"cpu": "2", "memory": "4Gi"}
    entries = [consumer(uuid_of(i), dict(flavor)) for i in range(3)]
    first, second, third = parse_bookings(Reader(), entries, "node-1")
    assert first.resources is second.resources is third.resources


def test_totals_add_every_booking_exactly() -> None:
    small, large = {"cpu": "500m", "memory": "1.5Gi"}, {"cpu": 7, "memory": "3Gi"}
    entries = [consumer(uuid_of(i), small if i % 3 else large) for i in range(30)]
    entries += [reservation(f"r{i}", small) for i in range(4)]
    bookings = parse_bookings(Reader(), entries, "node-1")
    larges = len(range(0, 30, 3))
    reserved, booked = booking_totals(bookings)
    assert booked == {
        "cpu": Decimal("0.5") * (30 - larges) + 7 * larges,
        "memory": Decimal("1.5") * GiB * (30 - larges) + 3 * GiB * larges,
    }
    assert reserved == {"cpu": 2, "memory": 6 * GiB}
    assert booking_totals([]) == ({}, {})
    # A kind absent is an empty total; amounts are summed exactly, whatever their spelling.
    assert booking_totals(bookings[-4:]) == ({"cpu": 2, "memory": 6 * GiB}, {})


def test_the_strings_bookings_share_stay_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Projects and users are shared without a call per booking; host after host of
    new ones (months of churn) still keeps no more than the limit and one host's."""
    monkeypatch.setattr(lenient.STRINGS, "max_entries", 10)
    lenient.STRINGS.strings.clear()  # only sharing is lost: the next strings are shared again
    per_host = 4
    for host in range(20):
        entries = [
            consumer(
                uuid_of(i), {"cpu": "1"}, consumerType="INSTANCE", projectID=f"p{i}", userID=f"u{i}"
            )
            for i in range(host * per_host, (host + 1) * per_host)
        ]
        parse_bookings(Reader(), entries, f"node-{host}")
    assert len(lenient.STRINGS.strings) <= 10 + 3 * per_host
