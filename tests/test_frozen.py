"""Quick-to-build frozen records: the same records as the dataclass's own __init__ builds."""

from __future__ import annotations

import dataclasses
from decimal import Decimal

import pytest

from gateway.domain.frozen import quick
from gateway.domain.records import ConsumerBooking, Instance


@dataclasses.dataclass(frozen=True, slots=True)
class Plain:
    a: int
    b: str
    c: dict[str, int] = dataclasses.field(hash=False)


@quick
@dataclasses.dataclass(frozen=True, slots=True)
class Quick:
    a: int
    b: str
    c: dict[str, int] = dataclasses.field(hash=False)


def test_builds_the_record_the_dataclass_builds() -> None:
    built = Quick(1, "x", {"k": 1})
    assert dataclasses.astuple(built) == dataclasses.astuple(Plain(1, "x", {"k": 1}))
    assert built == Quick(a=1, b="x", c={"k": 1}) == Quick(1, c={"k": 1}, b="x")
    assert hash(built) == hash(Quick(1, "x", {}))
    assert repr(built) == "Quick(a=1, b='x', c={'k': 1})"
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.a = 2  # type: ignore[misc]
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'c'"):
        Quick(1, "x")  # type: ignore[call-arg]


def test_the_records_are_quick() -> None:
    uuid = "7f1c2a9e-3b4d-4e5f-8a6b-0c1d2e3f4a5b"
    booking = ConsumerBooking(uuid, {"cpu": Decimal(2)}, 3, "INSTANCE", "p", "u", "node-1")
    assert booking.resources == {"cpu": 2} and booking.hypervisor == "node-1"
    assert Instance(id="i", name="n", active=True) == Instance("i", "n", True)
    assert ConsumerBooking.__init__.__qualname__ == "ConsumerBooking.__init__"


@pytest.mark.parametrize(
    "cls",
    [
        dataclasses.dataclass(frozen=True)(type("NoSlots", (), {"__annotations__": {"a": int}})),
        dataclasses.dataclass(slots=True)(type("Mutable", (), {"__annotations__": {"a": int}})),
        dataclasses.dataclass(frozen=True, slots=True)(
            type("Default", (), {"__annotations__": {"a": int}, "a": 1})
        ),
        type("NotADataclass", (), {}),
    ],
)
def test_refuses_what_it_would_build_differently(cls: type) -> None:
    with pytest.raises(TypeError):
        quick(cls)
