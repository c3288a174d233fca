"""Kubernetes quantities as exact decimals.

Kubernetes writes amounts as quantity strings (``"4Gi"``, ``"1500m"``, ``"1e3"``) or
as plain JSON integers. Everything the gateway computes from them is exact: values
are :class:`decimal.Decimal` in base units (cores, bytes, or the opaque unit of any
other resource) and never pass through a float.

The grammar is Kubernetes' own (``k8s.io/apimachinery/pkg/api/resource``), which is
stricter than ``kubernetes.utils.parse_quantity``: no spaces, no underscores, no
``NaN`` or ``Infinity``, integer exponents only. So is the value: like Kubernetes,
an amount finer than 10**-9 is rounded up (away from zero) to the next nano unit,
which is what every Go reader of the same object (operator, agent, scheduler) sees.
"""

from __future__ import annotations

import decimal
import re
import reprlib
import sys
from decimal import Decimal
from typing import Any

from gateway.domain.bounded import Figures
from gateway.domain.memo import BUDGET, PARSING

__all__ = [
    "CONTEXT",
    "SPELLINGS",
    "QuantityError",
    "Spellings",
    "format_quantity",
    "parse_number",
    "parse_quantity",
    "respelled",
]

#: Arithmetic context for every sum and product of quantities. Quantities are
#: bounded to 10**MAX_EXPONENT and have at most 9 decimal places, so 100 digits
#: keep every sum exact, and a floored product keeps its exact floor.
CONTEXT = decimal.Context(
    prec=100,
    rounding=decimal.ROUND_FLOOR,
    traps=[decimal.InvalidOperation, decimal.Overflow, decimal.DivisionByZero],
)

#: Largest magnitude exponent accepted. Real capacities stay far below 10**30;
#: the bound keeps a hostile "1e999999999" from becoming a billion-digit string.
MAX_EXPONENT = 30

_QUANTITY = re.compile(
    r"(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?:(?P<binary>[KMGTPE]i)|(?P<exponent>[eE][+-]?[0-9]+)|(?P<decimal>[numkMGTPE])?)"
)
_BINARY = {p: 1024**i for i, p in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"), start=1)}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
#: Longest quantity string accepted: far beyond any real amount, and short enough
#: that its digits times any suffix stay exact within CONTEXT's precision.
MAX_LENGTH = 64
#: Kubernetes' finest unit; anything finer is rounded up to it.
NANO = Decimal("1e-9")
#: Integers beyond this cannot be in range, and are too long to show in a message.
_INT_LIMIT = 10 ** (MAX_EXPONENT + 1)


class QuantityError(ValueError):
    """A value that is not a valid Kubernetes quantity."""


def parse_quantity(value: Any) -> Decimal:
    """Parse a quantity string or JSON number into an exact decimal in base units.

    ``"1G"`` is 10**9 and ``"1Gi"`` is 2**30; ``"1500m"`` is ``Decimal("1.5")``.
    JSON integers are taken as they are; a float (only YAML files can carry one) is
    read from its shortest decimal representation. Raises :class:`QuantityError`.
    """
    # A fleet spells the same few amounts hundreds of thousands of times: remember
    # them (Decimals are immutable, so sharing one is safe, and it saves memory).
    # Only exact str and int keys: True == 1 must not find 1's entry.
    kind = type(value)
    if kind is str or kind is int:
        cached = SPELLINGS.values.get(value)
        if cached is not None:
            SPELLINGS.hits += 1
            return cached
    result = _parse_quantity(value)
    if kind is str or kind is int:
        SPELLINGS.remember(value, result)
    return result


class Spellings:
    """Quantity spellings with their values, taking at most ``max_bytes`` (sys.getsizeof).

    Clients spell amounts too, up to MAX_LENGTH characters each. A fleet's take 163
    bytes apiece (66,000 of them at 20,000 demo hosts): 16 MiB keeps about 100,000.
    Once full, it keeps what it has: a fleet's spellings come first.
    """

    name = "quantity spellings"

    def __init__(self, max_bytes: int = BUDGET) -> None:
        self.max_bytes = max_bytes
        self.values: dict[str | int, Decimal] = {}
        self.bytes = 0
        self.hits = 0

    def remember(self, value: str | int, result: Decimal) -> None:
        """Keep ``result`` under its spelling, unless that would pass the budget."""
        size = sys.getsizeof(value) + sys.getsizeof(result)
        if self.bytes + size <= self.max_bytes:
            self.values[value] = result
            self.bytes += size

    def figures(self) -> Figures:
        return Figures(len(self.values), self.bytes, self.hits, 0)


SPELLINGS = PARSING.add(Spellings())


def _parse_quantity(value: Any) -> Decimal:
    result = _exact(value, units=True)
    if result.is_zero():
        return result
    if result.adjusted() <= MAX_EXPONENT:
        # Rounding up can carry into the next power of ten: the bound is checked after.
        rounded = result.quantize(NANO, rounding=decimal.ROUND_UP, context=CONTEXT)
        result = result if rounded == result else rounded
    if result.adjusted() > MAX_EXPONENT:
        raise QuantityError(f"invalid quantity {_show(value)}: magnitude out of range")
    return result


def parse_number(value: Any) -> Decimal:
    """Parse a plain number, without unit, exactly: a JSON number or a string of one.

    For fields the CRD types as ``number``, such as overcommit ratios. Go reads them
    as float64, not as quantities, so they are not rounded to nano units; they are
    bounded to 10**±MAX_EXPONENT instead. Raises :class:`QuantityError`.
    """
    result = _exact(value, units=False)
    if not result.is_zero() and abs(result.adjusted()) > MAX_EXPONENT:
        raise QuantityError(f"invalid number {_show(value)}: magnitude out of range")
    return result


def _exact(value: Any, *, units: bool) -> Decimal:
    """The exact value ``value`` spells, with or without a unit suffix."""
    if isinstance(value, bool):
        raise QuantityError(f"invalid quantity {value!r}: a boolean is not an amount")
    if isinstance(value, int):
        if abs(value) >= _INT_LIMIT:
            raise QuantityError("invalid quantity: integer magnitude out of range")
        return Decimal(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise QuantityError(f"invalid quantity {value!r}: not a finite number")
        return Decimal(repr(value))
    if not isinstance(value, str):
        raise QuantityError(f"invalid quantity {_show(value)}: expected a string or a number")
    if len(value) > MAX_LENGTH:
        raise QuantityError(f"invalid quantity {_show(value)}: longer than {MAX_LENGTH}")
    match = _QUANTITY.fullmatch(value)
    if match is None:
        raise QuantityError(f"invalid quantity {_show(value)}")
    if not units and (match["binary"] or match["decimal"]):
        raise QuantityError(f"invalid number {_show(value)}: a plain number has no unit")
    number = Decimal(match["number"])
    if match["binary"]:
        return CONTEXT.multiply(number, _BINARY[match["binary"]])
    if match["exponent"]:
        exponent = int(match["exponent"][1:])
        if abs(exponent) > MAX_EXPONENT:
            raise QuantityError(f"invalid quantity {_show(value)}: exponent out of range")
        return number.scaleb(exponent, CONTEXT)
    if match["decimal"]:
        return number.scaleb(_DECIMAL[match["decimal"]], CONTEXT)
    return number


#: A unit as people write it (``GiB``, ``gb``, ``Gi B``): the prefix and its binary ``i``.
_NEAR_MISS = re.compile(r"(?P<number>[0-9.eE+-]+)\s*(?P<prefix>[kKmMgGtTpPeE]?)(?P<i>[iI]?)[bB]?")


def respelled(text: str) -> str | None:
    """The Kubernetes spelling of an amount written the way people write units
    (``16GiB``, ``16 Gi``, ``16gi``, ``2TB``), or None when there is no such reading.

    Only unambiguous readings: ``16GB`` is ``16G`` (decimal, as written), never
    ``16Gi``; a lower-case ``m`` (milli) or ``k`` is never turned into another unit.
    """
    match = _NEAR_MISS.fullmatch(text.strip())
    if match is None:
        return None
    prefix = match["prefix"]
    if match["i"]:
        prefix = prefix.upper() if prefix != "k" else "K"
        prefix = f"{prefix}i" if prefix else ""
    elif prefix in ("g", "t", "p"):
        prefix = prefix.upper()
    candidate = match["number"] + prefix
    try:
        _exact(candidate, units=True)
    except (QuantityError, decimal.InvalidOperation):
        return None
    return candidate if candidate != text else None


def _show(value: Any) -> str:
    """A value for an error message, cut short: a hostile object can be megabytes long."""
    return reprlib.repr(value)


def format_quantity(value: Decimal) -> str:
    """Render an exact decimal as plain digits: no exponent, no unit, no trailing zeros."""
    if value == 0:
        return "0"
    return format(value.normalize(CONTEXT), "f")
