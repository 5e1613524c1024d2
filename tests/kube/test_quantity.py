"""Unit tests for gpupact.kube.quantity (apimachinery resource.Quantity semantics)."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpupact.kube.quantity import (
    BINARY_SI,
    DECIMAL_EXPONENT,
    DECIMAL_SI,
    ERR_FORMAT_WRONG,
    ERR_NUMERIC,
    ERR_SUFFIX,
    Quantity,
    QuantityError,
    format_milli_quantity,
    format_quantity,
    format_resource_amount,
    parse_quantity,
    resource_amount,
)

INT64_MAX = 2**63 - 1
DSI, BSI, DEX = DECIMAL_SI, BINARY_SI, DECIMAL_EXPONENT


def dec(coefficient: int, exponent: int) -> Fraction:
    return Fraction(coefficient) * Fraction(10) ** exponent


# (input, exact value, format) -- upstream TestQuantityParse's table.
PARSE_TABLE = [
    ("0", dec(0, 0), DSI),
    ("0n", dec(0, 0), DSI),
    ("0u", dec(0, 0), DSI),
    ("0m", dec(0, 0), DSI),
    ("0Ki", dec(0, 0), BSI),
    ("0k", dec(0, 0), DSI),
    ("0Mi", dec(0, 0), BSI),
    ("0M", dec(0, 0), DSI),
    ("0Gi", dec(0, 0), BSI),
    ("0G", dec(0, 0), DSI),
    ("0Ti", dec(0, 0), BSI),
    ("0T", dec(0, 0), DSI),
    ("1", dec(1, 0), DSI),
    ("1Ki", dec(1024, 0), BSI),
    ("8Ki", dec(8 * 1024, 0), BSI),
    ("7Mi", dec(7 * 2**20, 0), BSI),
    ("6Gi", dec(6 * 2**30, 0), BSI),
    ("5Ti", dec(5 * 2**40, 0), BSI),
    ("4Pi", dec(4 * 2**50, 0), BSI),
    ("3Ei", dec(3 * 2**60, 0), BSI),
    ("10Ti", dec(10 * 2**40, 0), BSI),
    ("100Ti", dec(100 * 2**40, 0), BSI),
    ("5n", dec(5, -9), DSI),
    ("4u", dec(4, -6), DSI),
    ("3m", dec(3, -3), DSI),
    ("9", dec(9, 0), DSI),
    ("8k", dec(8, 3), DSI),
    ("50k", dec(5, 4), DSI),
    ("7M", dec(7, 6), DSI),
    ("6G", dec(6, 9), DSI),
    ("5T", dec(5, 12), DSI),
    ("40T", dec(4, 13), DSI),
    ("300T", dec(3, 14), DSI),
    ("2P", dec(2, 15), DSI),
    ("1E", dec(1, 18), DSI),
    ("1E-3", dec(1, -3), DEX),
    ("1e3", dec(1, 3), DEX),
    ("1E6", dec(1, 6), DEX),
    ("1e9", dec(1, 9), DEX),
    ("1E12", dec(1, 12), DEX),
    ("1e15", dec(1, 15), DEX),
    ("1E18", dec(1, 18), DEX),
    ("1e14", dec(1, 14), DEX),
    ("1e13", dec(1, 13), DEX),
    ("100.035k", dec(100035, 0), DSI),
    ("0.001", dec(1, -3), DSI),
    ("0.0005k", dec(5, -1), DSI),
    ("0.005", dec(5, -3), DSI),
    ("0.05", dec(5, -2), DSI),
    ("0.5", dec(5, -1), DSI),
    ("0.00050k", dec(5, -1), DSI),
    ("0.00500", dec(5, -3), DSI),
    ("0.05000", dec(5, -2), DSI),
    ("0.50000", dec(5, -1), DSI),
    ("0.5e0", dec(5, -1), DEX),
    ("0.5e-1", dec(5, -2), DEX),
    ("0.5e-2", dec(5, -3), DEX),
    ("10.035M", dec(10035, 3), DSI),
    ("1.2e3", dec(12, 2), DEX),
    ("1.3E+6", dec(13, 5), DEX),
    ("1.40e9", dec(14, 8), DEX),
    ("1.53E12", dec(153, 10), DEX),
    ("1.6e15", dec(16, 14), DEX),
    ("1.7E18", dec(17, 17), DEX),
    ("9.01", dec(901, -2), DSI),
    ("8.1k", dec(81, 2), DSI),
    ("7.123456M", dec(7123456, 0), DSI),
    ("6.987654321G", dec(6987654321, 0), DSI),
    ("5.444T", dec(5444, 9), DSI),
    ("40.1T", dec(401, 11), DSI),
    ("300.2T", dec(3002, 11), DSI),
    ("2.5P", dec(25, 14), DSI),
    ("1.01E", dec(101, 16), DSI),
    # rounded up to the nano, or saturated
    ("3.001n", dec(4, -9), DSI),
    ("1.1E-9", dec(2, -9), DEX),
    ("0.0000000001", dec(1, -9), DSI),
    ("0.0000000005", dec(1, -9), DSI),
    ("0.00000000050", dec(1, -9), DSI),
    ("0.5e-9", dec(1, -9), DEX),
    ("0.9n", dec(1, -9), DSI),
    ("0.00000012345", dec(124, -9), DSI),
    ("0.00000012354", dec(124, -9), DSI),
    ("9Ei", dec(INT64_MAX, 0), BSI),
    ("9223372036854775807Ki", dec(INT64_MAX, 0), BSI),
    ("12E", dec(12, 18), DSI),
    # fractional binary
    ("100.035Ki", dec(10243584, -2), BSI),
    ("0.5Mi", dec(2**19, 0), BSI),
    ("0.05Gi", dec(536870912, -1), BSI),
    ("0.025Ti", dec(274877906944, -1), BSI),
    # odd but valid
    ("0.000000000001Ki", dec(2, -9), DSI),
    (".001", dec(1, -3), DSI),
    (".0001k", dec(100, -3), DSI),
    ("1.", dec(1, 0), DSI),
    ("1.G", dec(1, 9), DSI),
]


@pytest.mark.parametrize(("text", "value", "fmt"), PARSE_TABLE)
def test_parse_table(text: str, value: Fraction, fmt: str) -> None:
    for prefix, sign in (("", 1), ("+", 1), ("-", -1)):
        q = parse_quantity(prefix + text)
        assert q.amount == sign * value, prefix + text
        assert q.format == fmt, prefix + text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", ERR_FORMAT_WRONG),
        ("1.1.M", ERR_FORMAT_WRONG),
        ("1+1.0M", ERR_FORMAT_WRONG),
        ("0.1mi", ERR_SUFFIX),
        ("0.1am", ERR_FORMAT_WRONG),
        ("aoeu", ERR_FORMAT_WRONG),
        (".5i", ERR_SUFFIX),
        ("1i", ERR_SUFFIX),
        ("-3.01i", ERR_SUFFIX),
        ("-3.01e-", ERR_SUFFIX),
        (" 1", ERR_FORMAT_WRONG),
        ("1 ", ERR_FORMAT_WRONG),
        ("1e", ERR_SUFFIX),
        ("1k5", ERR_SUFFIX),
        ("--1", ERR_SUFFIX),
        ("1e9223372036854775808", ERR_SUFFIX),  # exponent overflows int64
        ("1_000", ERR_FORMAT_WRONG),
        ("１", ERR_FORMAT_WRONG),  # only ASCII digits
        (".e-10", ERR_NUMERIC),  # no digits, and too fine for the int64 path
    ],
)
def test_parse_errors(text: str, message: str) -> None:
    with pytest.raises(QuantityError) as info:
        parse_quantity(text)
    assert str(info.value) == message
    assert info.value.text == text


def test_error_messages_are_upstream_text() -> None:
    assert ERR_FORMAT_WRONG == (
        "quantities must match the regular expression "
        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )
    assert ERR_SUFFIX == "unable to parse quantity's suffix"


@pytest.mark.parametrize(
    ("text", "fmt"), [("Gi", BSI), ("m", DSI), ("-", DSI), ("+", DSI), (".", DSI), ("e5", DEX)]
)
def test_digitless_strings_parse_as_zero_like_upstream(text: str, fmt: str) -> None:
    # upstream's scanner accepts these; only a digitless value on its slow path fails
    q = parse_quantity(text)
    assert q.is_zero and q.format == fmt and str(q) == "0"


# (in, expect, alternate) -- upstream TestQuantityString, incl. the DecimalSI > "E" fix.
STRING_TABLE = [
    (Quantity(2**30, 0, BSI), "1Gi", "1024Mi"),
    (Quantity(300 * 2**20, 0, BSI), "300Mi", "307200Ki"),
    (Quantity(6 * 1024, 0, BSI), "6Ki", ""),
    (Quantity(1001 * 2**30, 0, BSI), "1001Gi", "1025024Mi"),
    (Quantity(2**40, 0, BSI), "1Ti", "1024Gi"),
    (Quantity(5, 0, BSI), "5", "5000m"),
    (Quantity(500, -3, BSI), "500m", "0.5"),
    (Quantity(1, 9, DSI), "1G", "1000M"),
    (Quantity(1000, 6, DSI), "1G", "0.001T"),
    (Quantity(1000000, 3, DSI), "1G", ""),
    (Quantity(1000000000, 0, DSI), "1G", ""),
    (Quantity(1, -3, DSI), "1m", "1000u"),
    (Quantity(80, -3, DSI), "80m", ""),
    (Quantity(1080, -3, DSI), "1080m", "1.08"),
    (Quantity(108, -2, DSI), "1080m", "1080000000n"),
    (Quantity(10800, -4, DSI), "1080m", ""),
    (Quantity(300, 6, DSI), "300M", ""),
    (Quantity(1, 12, DSI), "1T", ""),
    (Quantity(1, 18, DSI), "1E", ""),
    (Quantity(1, 21, DSI), "1e21", "1000E"),
    (Quantity(5, 21, DSI), "5e21", "5000E"),
    (Quantity(1, 24, DSI), "1e24", "1000000E"),
    (Quantity(1234567, 6, DSI), "1234567M", ""),
    (Quantity(1234567, -3, BSI), "1234567m", ""),
    (Quantity(3, 3, DSI), "3k", ""),
    (Quantity(1025, 0, BSI), "1025", ""),
    (Quantity(0, 0, DSI), "0", ""),
    (Quantity(0, 0, BSI), "0", ""),
    (Quantity(1, 9, DEX), "1e9", ".001e12"),
    (Quantity(1, -3, DEX), "1e-3", "0.001e0"),
    (Quantity(1, -9, DEX), "1e-9", "1000e-12"),
    (Quantity(80, -3, DEX), "80e-3", ""),
    (Quantity(300, 6, DEX), "300e6", ""),
    (Quantity(1, 12, DEX), "1e12", ""),
    (Quantity(1, 3, DEX), "1e3", ""),
    (Quantity(3, 3, DEX), "3e3", ""),
    (Quantity(0, 0, DEX), "0", "00"),
    (Quantity(1, -9, DSI), "1n", ""),
    (Quantity(80, -9, DSI), "80n", ""),
    (Quantity(1080, -9, DSI), "1080n", ""),
    (Quantity(108, -8, DSI), "1080n", ""),
    (Quantity(10800, -10, DSI), "1080n", ""),
    (Quantity(1, -6, DSI), "1u", ""),
    (Quantity(80, -6, DSI), "80u", ""),
    (Quantity(1080, -6, DSI), "1080u", ""),
]


@pytest.mark.parametrize(("q", "expect", "alternate"), STRING_TABLE)
def test_string_table(q: Quantity, expect: str, alternate: str) -> None:
    assert str(q) == expect
    assert str(parse_quantity(expect)) == expect
    if alternate:
        parsed = parse_quantity(alternate)
        assert str(parsed) == expect
        assert parsed == q
    if not q.is_zero:
        assert str(-q) == "-" + expect


@pytest.mark.parametrize(
    ("text", "expect"),
    [
        ("1Ki", "1Ki"),
        ("1Mi", "1Mi"),
        ("1Gi", "1Gi"),
        ("1024Mi", "1Gi"),
        ("1000M", "1G"),
        (".001Ki", "1024m"),
        (".000001Ki", "1024u"),
        (".000000001Ki", "1024n"),
        (".000000000001Ki", "2n"),
        ("1.5Gi", "1536Mi"),
        ("0.5e0", "500e-3"),  # DecimalExponent keeps exponent notation
        ("0.5", "500m"),
        ("1.5", "1500m"),
        ("100.035Ki", "102435840m"),  # not whole: BinarySI would round, so DecimalSI
        ("0.5Mi", "512Ki"),
        ("10E", "10E"),
        ("1e4", "10e3"),
        ("12e-4", "1200e-6"),
        ("1.0E", "1E"),
    ],
)
def test_parse_emit(text: str, expect: str) -> None:
    assert str(parse_quantity(text)) == expect
    assert str(parse_quantity("-" + text)) == "-" + expect


@pytest.mark.parametrize(
    ("text", "string", "canonical"),
    [
        # upstream String() returns the input when its fast path judged it canonical
        ("+5", "+5", "5"),
        ("05", "05", "5"),
        ("1E3", "1E3", "1e3"),
        ("1.500", "1.500", "1500m"),
        ("+1Ki", "+1Ki", "1Ki"),
        ("8Ki", "8Ki", "8Ki"),
        ("1.5", "1500m", "1500m"),
    ],
)
def test_string_keeps_input_like_upstream(text: str, string: str, canonical: str) -> None:
    q = parse_quantity(text)
    assert str(q) == string
    assert q.canonical() == canonical
    negated = -q
    assert str(-negated) == canonical  # arithmetic drops the kept string


def test_new_quantity_tables() -> None:
    # upstream TestNewSet / TestMilliNewSet / TestNewScaledSet / ExampleFormat
    assert format_quantity(1) == "1"
    assert format_quantity(1000) == "1k"
    assert format_quantity(1234000) == "1234k"
    assert format_quantity(1024, BSI) == "1Ki"
    assert format_quantity(1024 * 1024, BSI) == "1Mi"
    assert format_quantity(1000000, DEX) == "1e6"
    assert format_quantity(5 * 2**30, BSI) == "5Gi"
    assert format_quantity(5 * 10**9, DSI) == "5G"
    assert format_milli_quantity(1) == "1m"
    assert format_milli_quantity(1000) == "1"
    assert format_milli_quantity(1234000) == "1234"
    assert format_milli_quantity(1024, BSI) == "1024m"
    assert format_milli_quantity(1024 * 1024, BSI) == "1048576m"
    assert format_milli_quantity(1000000, DEX) == "1e3"
    assert format_milli_quantity(5300) == "5300m"
    for value, scale, expect in [
        (1, -9, "1n"),
        (1000, -9, "1u"),
        (1, -6, "1u"),
        (1000, -6, "1m"),
        (1, -3, "1m"),
        (1000, -3, "1"),
        (1, 0, "1"),
        (0, -9, "0"),
    ]:
        q = Quantity.from_scaled(value, scale)
        assert str(q) == expect
        assert parse_quantity(expect).scaled_value(scale) == value


def test_scaled_value() -> None:
    for from_scale, to_scale, expected in [
        (-9, -9, 1),
        (-9, -6, 1),
        (-9, -3, 1),
        (-9, 0, 1),
        (-6, -9, 1000),
        (-3, -9, 10**6),
        (0, -9, 10**9),
        (0, -3, 1000),
        (2, -2, 10**4),
    ]:
        assert Quantity.from_scaled(1, from_scale).scaled_value(to_scale) == expected


@pytest.mark.parametrize(
    ("text", "value", "milli"),
    [
        ("5Gi", 5 * 2**30, 5 * 2**30 * 1000),
        ("5G", 5 * 10**9, 5 * 10**12),
        ("5300m", 6, 5300),
        ("5.4", 6, 5400),
        ("1n", 1, 1),
        ("1.0001", 2, 1001),
        ("0", 0, 0),
        ("-1.5", -2, -1500),  # negatives round away from zero
        ("-1n", -1, -1),
        ("-0.0000000001", -1, -1),
        ("10E", 10**19, 10**22),  # exact, where upstream's int64 would overflow
    ],
)
def test_value_and_milli_value_round_up(text: str, value: int, milli: int) -> None:
    q = parse_quantity(text)
    assert q.value == value
    assert q.milli_value == milli


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", (0, True)),
        ("1Ki", (1024, True)),
        ("1E", (10**18, True)),
        ("-1.0E", (-(10**18), True)),
        ("1000m", (0, False)),  # int64 form at a negative scale
        ("10E", (0, False)),  # overflows int64
        ("9223372036854775807", (0, False)),  # 19 digits: inf.Dec path
        ("1.5Gi", (0, False)),
        ("0e2000000000", (0, True)),
    ],
)
def test_as_int64(text: str, expected: tuple[int, bool]) -> None:
    assert parse_quantity(text).as_int64() == expected


def test_as_int64_of_constructed_and_negated() -> None:
    assert Quantity.from_int(7).as_int64() == (7, True)
    assert Quantity.from_milli(1000).as_int64() == (0, False)
    assert Quantity(7, 0).as_int64() == (0, False)  # NewDecimalQuantity: inf.Dec form
    assert (-parse_quantity("1Ki")).as_int64() == (-1024, True)
    assert (-Quantity.from_int(-(2**63))).as_int64() == (0, False)


def test_equality_hash_and_order_are_by_value() -> None:
    gi = parse_quantity("1Gi")
    assert gi == parse_quantity("1073741824") == parse_quantity("1024Mi")
    assert hash(gi) == hash(parse_quantity("1073741824"))
    assert parse_quantity("1000m") == parse_quantity("1") == Quantity(10, -1)
    assert parse_quantity("100m") > parse_quantity("50m")
    assert parse_quantity("10000T") > parse_quantity("100Gi")
    assert parse_quantity("-1") < parse_quantity("0") < parse_quantity("1n")
    assert parse_quantity("1e30") > parse_quantity("999999E")
    assert parse_quantity("-1e30") < parse_quantity("-999999E")
    assert parse_quantity("1e-9") < parse_quantity("1e2000000000")
    assert parse_quantity("-1e2000000000") < parse_quantity("-1")
    texts = ["1Gi", "1G", "-5", "0", "100m", "1e2000000000", "1n"]
    ordered = sorted(map(parse_quantity, texts))
    assert [str(q) for q in ordered] == ["-5", "0", "1n", "100m", "1G", "1Gi", "100e1999999998"]
    assert gi.compare(parse_quantity("1Gi")) == 0
    assert gi != "1Gi"
    with pytest.raises(TypeError):
        _ = gi < 5  # type: ignore[operator]


def test_negation() -> None:
    assert str(-Quantity(901, -2)) == "-9010m"
    negated = -parse_quantity("1.5Gi")
    assert -negated == parse_quantity("1.5Gi")
    assert (-parse_quantity("1Gi")).format == BSI
    assert str(-parse_quantity("0")) == "0"


def test_binary_cap_and_format_change() -> None:
    assert parse_quantity("-8Ei").amount == -INT64_MAX
    assert parse_quantity("-9Ei").amount == -INT64_MAX
    assert parse_quantity("1e30").amount == 10**30  # decimal: not capped
    assert parse_quantity("0.5Ki").format == BSI  # 512: whole, stays BinarySI
    assert str(parse_quantity("0.5Ki")) == "512"  # below 1Ki: printed in decimal
    assert parse_quantity("0.0001Ki").format == DSI  # 0.1024 < 1


def test_huge_and_long_inputs() -> None:
    assert str(parse_quantity("1e2147483647")) == "10e2147483646"
    with pytest.raises(QuantityError, match="too large"):
        _ = parse_quantity("1e2147483647").value
    assert parse_quantity("1e4294967296") == parse_quantity("1")  # int32 exponent, as upstream
    assert parse_quantity("1e-2000000000").amount == Fraction(1, 10**9)
    long_digits = "7" * 5000
    q = parse_quantity(long_digits)
    assert str(q) == long_digits
    assert parse_quantity(long_digits + ".5").canonical() == long_digits + "500m"


def test_constructor_validation() -> None:
    with pytest.raises(QuantityError):
        Quantity(1, 0, "Decimal")
    with pytest.raises(QuantityError):
        Quantity.from_int(2**63)
    with pytest.raises(QuantityError):
        Quantity.from_int(1.5)  # type: ignore[arg-type]
    with pytest.raises(QuantityError):
        Quantity.parse(5)  # type: ignore[arg-type]
    assert Quantity(1500, 0) == Quantity(15, 2)
    assert Quantity(1500, 0).coefficient == 15
    assert repr(parse_quantity("1.5Gi")) == "Quantity('1536Mi', BinarySI)"


@pytest.mark.parametrize(
    ("resource", "text", "amount"),
    [
        ("cpu", "100m", 100),
        ("cpu", "1", 1000),
        ("cpu", "0.5", 500),
        ("cpu", "1.0001", 1001),
        ("cpu", "4000", 4_000_000),
        ("cpu", 2, 2000),
        ("memory", "1Gi", 2**30),
        ("memory", "1.5Gi", 1536 * 2**20),
        ("memory", "100m", 1),
        ("memory", "20", 20),
        ("memory", 512, 512),
        ("nvidia.com/gpu", "8", 8),
        ("pods", "110", 110),
        ("ephemeral-storage", "10G", 10**10),
    ],
)
def test_resource_amount(resource: str, text: str | int, amount: int) -> None:
    assert resource_amount(resource, text) == amount


@pytest.mark.parametrize("bad", [1.5, True, None, b"1", ["1"]])
def test_resource_amount_rejects_non_quantities(bad: object) -> None:
    with pytest.raises(QuantityError, match="expected a quantity string or integer"):
        resource_amount("cpu", bad)  # type: ignore[arg-type]


def test_resource_amount_bad_string() -> None:
    with pytest.raises(QuantityError) as info:
        resource_amount("memory", "1GB")
    assert str(info.value) == ERR_FORMAT_WRONG
    with pytest.raises(QuantityError) as info:
        resource_amount("memory", "1Kii")
    assert str(info.value) == ERR_SUFFIX


def test_format_resource_amount() -> None:
    assert format_resource_amount("cpu", 1500) == "1500m"
    assert format_resource_amount("cpu", 2000) == "2"
    assert format_resource_amount("memory", 2 * 2**30) == "2Gi"
    assert format_resource_amount("memory", 1500) == "1500"
    assert format_resource_amount("hugepages-2Mi", 4 * 2**20) == "4Mi"
    assert format_resource_amount("nvidia.com/gpu", 8) == "8"
    assert format_resource_amount("ephemeral-storage", 10**10) == "9765625Ki"


# -2**63 excluded: as BinarySI it prints "-8Ei", which parses capped to -(2**63-1)
INT64 = st.integers(min_value=-INT64_MAX, max_value=INT64_MAX)
FORMAT = st.sampled_from([DSI, BSI, DEX])


@given(INT64, FORMAT)
def test_int_round_trip(value: int, fmt: str) -> None:
    text = format_quantity(value, fmt)
    parsed = parse_quantity(text)
    assert parsed.value == value
    # a bare integer re-parses as DecimalSI, so only the canonical form is a fixed point
    canonical = parsed.canonical()
    assert parse_quantity(canonical).canonical() == canonical


@given(INT64, FORMAT)
def test_milli_round_trip(value: int, fmt: str) -> None:
    parsed = parse_quantity(format_milli_quantity(value, fmt))
    assert parsed.milli_value == value


@given(
    st.from_regex(
        r"[+-]?[0-9]{1,25}(\.[0-9]{0,12})?(|n|u|m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)", fullmatch=True
    )
)
def test_parse_string_round_trip(text: str) -> None:
    if not text:
        return
    q = parse_quantity(text)
    again = parse_quantity(str(q))
    assert again == q
    assert again.canonical() == q.canonical()
    assert q.amount >= 0 or text.startswith("-")
