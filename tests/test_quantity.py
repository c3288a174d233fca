"""Quantities against an independent reference: a hand-written scanner over fractions.

The reference follows Kubernetes' ``resource.ParseQuantity`` (apimachinery
``pkg/api/resource/quantity.go``): grammar, suffix values, and rounding of anything
finer than 10**-9 up, away from zero. It shares no code with ``gateway.domain.quantity``;
only the gateway's documented safety bounds (string length, exponent size and
magnitude) are imported as the policy they are.
"""

from __future__ import annotations

import math
import re
import sys
from decimal import Decimal
from fractions import Fraction

import kubernetes.utils
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from gateway.domain.quantity import (
    MAX_EXPONENT,
    MAX_LENGTH,
    QuantityError,
    format_quantity,
    parse_number,
    parse_quantity,
    respelled,
)
from tests.objects import crd_schema

DIGITS = "0123456789"
BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
DECIMAL_SI = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
ONE_NANO = Fraction(1, 10**9)


def _signed_integer(text: str) -> int | None:
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body or any(c not in DIGITS for c in body):
        return None
    return -int(body) if text[:1] == "-" else int(body)


def exact(text: str) -> Fraction | None:
    """The value ``text`` spells, before any rounding; None if Kubernetes rejects it."""
    position, sign = 0, 1
    if text[:1] in ("+", "-"):
        sign, position = (-1 if text[0] == "-" else 1), 1
    start = position
    while position < len(text) and text[position] in DIGITS:
        position += 1
    whole = text[start:position]
    fraction = ""
    if position < len(text) and text[position] == ".":
        position += 1
        start = position
        while position < len(text) and text[position] in DIGITS:
            position += 1
        fraction = text[start:position]
    if not whole and not fraction:
        return None
    magnitude = int(whole or "0") + Fraction(int(fraction or "0"), 10 ** len(fraction))
    suffix = text[position:]
    if suffix in BINARY:
        scale = Fraction(1024) ** BINARY[suffix]
    elif suffix in DECIMAL_SI:
        scale = Fraction(10) ** DECIMAL_SI[suffix]
    elif suffix[:1] in ("e", "E") and (exponent := _signed_integer(suffix[1:])) is not None:
        if abs(exponent) > MAX_EXPONENT:
            return None  # the gateway's bound, not Kubernetes'
        scale = Fraction(10) ** exponent
    else:
        return None
    return sign * magnitude * scale


def reference(text: str) -> Fraction | None:
    """The Kubernetes value of ``text``: its magnitude rounded up to whole nano units."""
    value = exact(text)
    if value is None:
        return None
    nanos = math.ceil(abs(value) / ONE_NANO)
    return (-1 if value < 0 else 1) * nanos * ONE_NANO


def expected(text: str) -> Fraction | None:
    """The reference value, or None where the gateway's bounds reject it."""
    value = reference(text)
    if value is None or len(text) > MAX_LENGTH or abs(value) >= 10 ** (MAX_EXPONENT + 1):
        return None
    return value


def outcome(value: object) -> Fraction | None:
    try:
        return Fraction(parse_quantity(value))
    except QuantityError:
        return None


QUANTITY_TEXT = st.text(alphabet="0123456789+-.eEinumkKMGTP ", max_size=12)

SUFFIXES = st.sampled_from([*BINARY, *DECIMAL_SI]) | st.builds(
    lambda e, sign, exponent: f"{e}{sign}{exponent}",
    st.sampled_from("eE"),
    st.sampled_from(["", "+", "-"]),
    st.integers(0, 40).map(str) | st.just("007"),
)


@st.composite
def quantities(draw: st.DrawFn) -> str:
    """A string of Kubernetes' grammar, built from sign, digits, point and suffix."""
    sign = draw(st.sampled_from(["", "+", "-"]))
    whole = draw(st.text(DIGITS, max_size=14))
    dot = draw(st.booleans()) or not whole
    fraction = draw(st.text(DIGITS, min_size=0 if whole else 1, max_size=14)) if dot else None
    number = whole + ("." + fraction if fraction is not None else "")
    return sign + number + draw(SUFFIXES)


@given(quantities())
@example("2")
@example("1500m")
@example("4Gi")
@example("4096Mi")
@example("4227289164Ki")
@example("1G")
@example("8589934592")
@example("1e3")
@example("+1")
@example(".5")
@example("-2")
@example("5.")
@example("0.1n")
@example("-0.0000000001")
@example("9999999999999999999999999999999.9999999999")  # rounds up out of range
def test_valid_quantities_match_the_reference(text: str) -> None:
    assert outcome(text) == expected(text)


@given(QUANTITY_TEXT)
@example("")
@example(".")
@example("+")
@example("e3")
@example("1e")
@example("1e1.5")
@example("1ki")
@example("1K")
@example("1Gi ")
@example("1 Gi")
@example(" 1")
@example("1.5.5")
@example("--1")
def test_any_string_matches_the_reference(text: str) -> None:
    assert outcome(text) == expected(text)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("2", 2),
        ("1500m", Fraction(3, 2)),
        ("4Gi", 4 * 2**30),
        ("4096Mi", 4 * 2**30),
        ("4227289164Ki", 4227289164 * 1024),
        ("1G", 10**9),
        ("1E", 10**18),
        ("1Ei", 2**60),
        ("8589934592", 8589934592),
        ("1e3", 1000),
        ("1E3", 1000),
        ("1e-3", Fraction(1, 1000)),
        ("+1", 1),
        (".5", Fraction(1, 2)),
        ("-2", -2),
        ("0.5Ki", 512),
        ("1.5Gi", 3 * 2**29),
        ("100n", Fraction(1, 10**7)),
        ("0.1n", ONE_NANO),
        ("-0.1n", -ONE_NANO),
        ("1.0000000001", 1 + ONE_NANO),
        ("1e30", 10**30),
    ],
)
def test_domain_examples(text: str, value: Fraction) -> None:
    assert Fraction(parse_quantity(text)) == value


def test_json_integers_are_taken_as_they_are() -> None:
    assert parse_quantity(2) == 2
    assert parse_quantity(-2) == -2
    assert parse_quantity(4227289164 * 1024) == 4328744103936
    assert parse_quantity(10**30) == 10**30


def test_yaml_floats_are_read_from_their_shortest_decimal() -> None:
    assert parse_quantity(1.5) == Decimal("1.5")
    assert parse_quantity(0.1) == Decimal("0.1")  # not 0.1000000000000000055511151231257827
    assert parse_quantity(1e-20) == Decimal("1e-9")


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity", "1 Gi", "1_000", "1K", " 1"])
def test_rejects_what_only_the_python_client_accepts(text: str) -> None:
    kubernetes.utils.parse_quantity(text)  # accepted there, which is why we do not use it
    with pytest.raises(QuantityError):
        parse_quantity(text)


@pytest.mark.parametrize(
    "value",
    [
        True,
        False,
        None,
        [1],
        {"a": 1},
        Decimal(1),
        float("nan"),
        float("inf"),
        -float("inf"),
        1e300,
        10**31,
        -(10**31),
        pytest.param(10**5000, id="10**5000"),  # too long for int -> str: not attempted
        "1e31",
        "10e30",
        "1e-31",
        "1e999999999",
        pytest.param("1e" + "9" * 5000, id="1e9999..."),  # too long for str -> int
        "1" * (MAX_LENGTH + 1),
        "1" * 32,
        "٣",  # a digit, but not an ASCII one
        "\uff11",  # FULLWIDTH DIGIT ONE
        "1\n",
    ],
)
def test_rejects(value: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(value)


def test_error_messages_stay_short() -> None:
    with pytest.raises(QuantityError) as error:
        parse_quantity("x" * 1_000_000)
    assert len(str(error.value)) < 200


def test_longest_accepted_quantity_is_exact() -> None:
    text = "0.000000000000000000867361737988403547205962240695953369140625Ei"
    assert len(text) == MAX_LENGTH
    assert parse_quantity(text) == 1  # 2**-60 * 2**60: no digit lost on the way


# The operator's CRD: every quantity it admits and Go can parse, we parse the same.


def _crd_quantity_pattern() -> re.Pattern[str] | None:
    schema = crd_schema()
    if schema is None:
        return None
    capacity = schema["properties"]["status"]["properties"]["capacity"]
    return re.compile(capacity["additionalProperties"]["pattern"], re.ASCII)


CRD_PATTERN = _crd_quantity_pattern()
needs_crd = pytest.mark.skipif(CRD_PATTERN is None, reason="operator CRD reference not present")


@needs_crd
@given(st.data())
def test_crd_pattern_strings_match_the_reference(data: st.DataObject) -> None:
    assert CRD_PATTERN is not None
    text = data.draw(st.from_regex(CRD_PATTERN, fullmatch=True))
    # The pattern also admits fractional exponents ("1e1.5"), which Go's parser rejects.
    assert outcome(text) == expected(text)


@needs_crd
@given(QUANTITY_TEXT | quantities())
def test_everything_accepted_passes_the_crd_pattern(text: str) -> None:
    assert CRD_PATTERN is not None
    if outcome(text) is not None:
        assert CRD_PATTERN.fullmatch(text)


@given(quantities())
def test_agrees_with_the_python_client_where_that_is_exact(text: str) -> None:
    """A second, unrelated oracle. The client neither rounds to nano units nor keeps
    more than 28 digits, so only values it can represent exactly are compared."""
    value = exact(text)
    if value is None or value != reference(text) or len(str(value.numerator)) > 25:
        return
    if abs(value) >= 10 ** (MAX_EXPONENT + 1) or len(text) > MAX_LENGTH:
        return
    assert Fraction(parse_quantity(text)) == Fraction(kubernetes.utils.parse_quantity(text))


# format_quantity: plain decimal digits that parse back to the same value.

PLAIN = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]*[1-9])?")


@given(quantities())
def test_format_round_trips(text: str) -> None:
    if expected(text) is None:
        return
    value = parse_quantity(text)
    formatted = format_quantity(value)
    assert PLAIN.fullmatch(formatted), formatted
    assert formatted != "-0"
    assert parse_quantity(formatted) == value


@given(
    st.decimals(
        allow_nan=False, allow_infinity=False, places=9, min_value=-(10**30), max_value=10**30
    )
)
@example(Decimal("-0"))
@example(Decimal("-0E+5"))
@example(Decimal("1E+30"))
@example(Decimal("1.500000000"))
@example(Decimal("0E-9"))
def test_format_is_plain_and_exact(value: Decimal) -> None:
    formatted = format_quantity(value)
    assert PLAIN.fullmatch(formatted), formatted
    assert Decimal(formatted) == value


def test_format_examples() -> None:
    assert format_quantity(parse_quantity("4Gi")) == "4294967296"
    assert format_quantity(parse_quantity("1e3")) == "1000"
    assert format_quantity(parse_quantity("1500m")) == "1.5"
    assert format_quantity(parse_quantity("-0")) == "0"
    assert format_quantity(parse_quantity("0.000")) == "0"
    assert format_quantity(Decimal("-0")) == "0"
    assert format_quantity(parse_quantity("4227289164Ki")) == "4328744103936"
    assert format_quantity(parse_quantity("1n")) == "0.000000001"
    assert format_quantity(Decimal(1) / Decimal(3)) == "0.3333333333333333333333333333"


# parse_number: plain numbers such as overcommit ratios, which Go reads as float64.


@pytest.mark.parametrize(
    ("value", "number"),
    [
        (2, 2),
        (2.0, 2),
        (1.5, Fraction(3, 2)),
        (
            1.1,
            Fraction(11, 10),
        ),  # the float's shortest decimal, not 1.100000000000000088817841970012523
        ("1.3333333333", Fraction(13333333333, 10**10)),  # no rounding to nano units
        ("1e3", 1000),
        (".5", Fraction(1, 2)),
        ("1e-30", Fraction(1, 10**30)),
        ("-4", -4),
    ],
)
def test_parse_number(value: object, number: Fraction) -> None:
    assert Fraction(parse_number(value)) == number


@pytest.mark.parametrize(
    "value", ["1500m", "2Gi", "1k", "NaN", "1 ", True, None, float("nan"), 1e31, 1e-31, "1e31"]
)
def test_parse_number_rejects(value: object) -> None:
    with pytest.raises(QuantityError):
        parse_number(value)


def test_remembered_spellings_are_bounded_in_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Clients spell amounts too (a slots request): long spellings, each remembered,
    take no more memory than the bound, and are still parsed right past it."""
    from gateway.domain import quantity

    remembered = quantity.Spellings(max_bytes=10_000)
    monkeypatch.setattr(quantity, "SPELLINGS", remembered)
    spellings = [f"{n:0{MAX_LENGTH - 2}d}Gi" for n in range(200)]
    assert [parse_quantity(s) for s in spellings] == [n * 2**30 for n in range(200)]
    cache = remembered.values
    kept = sum(sys.getsizeof(k) + sys.getsizeof(v) for k, v in cache.items())
    assert 0 < kept <= 10_000 and remembered.figures().bytes == kept
    assert parse_quantity(spellings[0]) is cache[spellings[0]]
    assert remembered.figures().hits == 1


@pytest.mark.parametrize(
    ("text", "meant"),
    [
        ("16GiB", "16Gi"),
        ("16 Gi", "16Gi"),
        ("16gi", "16Gi"),
        ("1.5gib", "1.5Gi"),
        ("16kib", "16Ki"),
        ("2TB", "2T"),  # decimal as written, never turned binary
        ("16GB", "16G"),
        ("16Gi", None),  # already right
        ("500m", None),
        ("5 cores", None),
        ("abc", None),
    ],
)
def test_respelled_reads_units_as_people_write_them(text: str, meant: str | None) -> None:
    assert respelled(text) == meant
    if meant is not None:
        parse_quantity(meant)
