"""Kubernetes resource quantities: apimachinery `resource.Quantity` semantics, exactly.

A quantity is held as an exact decimal, `coefficient x 10**exponent` (normalised: no trailing
zeros in the coefficient), plus its `format`. Parsing follows upstream `ParseQuantity`:

- The scanner, not the regular expression quoted in its error, decides what is well formed:
  `[+-]? digits [. digits] letters-of-"eEinumkKMGTP" [+-] digits`. So, as upstream, a string
  without digits such as "Gi", "m" or "-" parses as zero.
- Values finer than 1n are rounded away from zero to the next nano ("0.9n" -> "1n").
- BinarySI values are capped at 2**63-1 in magnitude; a BinarySI value strictly between 0 and
  1 becomes DecimalSI. Decimal values are not capped ("12E" keeps its value).
- `e`/`E` exponents are read as int64 and then truncated to int32, as upstream does.

Upstream keeps short inputs in an int64 form and everything else in an `inf.Dec`; that choice
is visible in two places, both modelled: `as_int64()` (ok only for the int64 form at a
non-negative scale) and `str()`, which returns the input verbatim when upstream judged it
already canonical (e.g. "+5", "1E3" stay as written; "1.0E" prints "1E").

DecimalSI output beyond the "E" suffix (10**18) falls back to exponent notation ("1000E"
prints "1e21"), following the current upstream fix rather than the old value-dropping output.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache

DECIMAL_SI = "DecimalSI"
BINARY_SI = "BinarySI"
DECIMAL_EXPONENT = "DecimalExponent"
FORMATS = frozenset({DECIMAL_SI, BINARY_SI, DECIMAL_EXPONENT})

# Upstream error texts (ErrFormatWrong, ErrSuffix, ErrNumeric).
ERR_FORMAT_WRONG = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
ERR_SUFFIX = "unable to parse quantity's suffix"
ERR_NUMERIC = "unable to parse numeric part of quantity"

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
# Largest power of ten materialised as an int (value, amount); Python's own int/str limit.
_MAX_INT_DIGITS = 4300
_DIGIT_CHUNK = 4000  # below Python's int/str conversion limit

# Possessive quantifiers: no backtracking, so the split is exactly upstream's greedy scanner.
_SCANNER = re.compile(r"([+-]?)([0-9]*+)(?:\.([0-9]*+))?([eEinumkKMGTP]*+[+-]?[0-9]*+)")

_DECIMAL_SUFFIX_EXPONENT = {
    "n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18,
}  # fmt: skip
_BINARY_SUFFIX_EXPONENT = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_SUFFIX_BY_EXPONENT = {e: s for s, e in _DECIMAL_SUFFIX_EXPONENT.items()}
_BINARY_SUFFIX_BY_POWER = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")  # index: power of 1024


class QuantityError(ValueError):
    """The value is not a valid quantity (str() is the upstream error text)."""

    def __init__(self, message: str, text: object = None) -> None:
        super().__init__(message)
        self.message = message
        self.text = text


@dataclass(frozen=True, slots=True, repr=False)
class Quantity:
    """An exact quantity; equality, hashing and ordering are by value (upstream `Cmp`).

    Build with `parse`, `from_int` (NewQuantity), `from_milli` (NewMilliQuantity) or
    `from_scaled` (NewScaledQuantity); `Quantity(c, e, fmt)` is `c x 10**e` (NewDecimalQuantity).
    """

    coefficient: int
    exponent: int = 0
    format: str = field(default=DECIMAL_SI, compare=False)
    # AsInt64 result when upstream would hold this value in its int64 form, else None.
    _as_int64: int | None = field(default=None, compare=False)
    # The input string upstream keeps and returns from String(), when it judged it canonical.
    _text: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise QuantityError(f"unknown quantity format {self.format!r}")
        coefficient, exponent = _normalise(self.coefficient, self.exponent)
        if coefficient != self.coefficient or exponent != self.exponent:
            object.__setattr__(self, "coefficient", coefficient)
            object.__setattr__(self, "exponent", exponent)

    # -- construction ------------------------------------------------------------------------

    @classmethod
    def parse(cls, text: str) -> Quantity:
        """`resource.ParseQuantity`; raises QuantityError with the upstream message."""
        if not isinstance(text, str):
            raise QuantityError(
                f"expected a quantity string, got {type(text).__name__} {text!r}", text
            )
        return _parse_cached(text)

    @classmethod
    def from_int(cls, value: int, format: str = DECIMAL_SI) -> Quantity:
        """`NewQuantity(value, format)`: `value` base units."""
        return cls.from_scaled(value, 0, format)

    @classmethod
    def from_milli(cls, value: int, format: str = DECIMAL_SI) -> Quantity:
        """`NewMilliQuantity(value, format)`: `value` thousandths of a unit."""
        return cls.from_scaled(value, -3, format)

    @classmethod
    def from_scaled(cls, value: int, scale: int, format: str = DECIMAL_SI) -> Quantity:
        """`value x 10**scale`, held like upstream's int64 form (NewScaledQuantity)."""
        if isinstance(value, bool) or not isinstance(value, int):
            raise QuantityError(f"expected an integer, got {type(value).__name__} {value!r}")
        if not _INT64_MIN <= value <= _INT64_MAX:
            raise QuantityError(f"{value} does not fit in an int64")
        return cls(value, scale, format, _int64_as_int64(value, scale))

    # -- values ------------------------------------------------------------------------------

    @property
    def value(self) -> int:
        """`Value()`: the value in base units, rounded up (away from zero)."""
        return self.scaled_value(0)

    @property
    def milli_value(self) -> int:
        """`MilliValue()`: the value in thousandths, rounded up (away from zero)."""
        return self.scaled_value(-3)

    def scaled_value(self, scale: int) -> int:
        """`ScaledValue(scale)`: value / 10**scale rounded away from zero, as an exact int.

        Upstream silently overflows int64 here; this returns the exact integer instead.
        Negative values round away from zero, as upstream's int64 form does.
        """
        coefficient, shift = self.coefficient, self.exponent - scale
        if shift >= 0:
            return coefficient * _pow10(shift, self)
        if coefficient == 0:
            return 0
        rounded = _ceil_shift(abs(coefficient), -shift)
        return rounded if coefficient > 0 else -rounded

    @property
    def amount(self) -> Fraction:
        """The exact value as a Fraction."""
        if self.exponent >= 0:
            return Fraction(self.coefficient * _pow10(self.exponent, self))
        return Fraction(self.coefficient, _pow10(-self.exponent, self))

    def as_int64(self) -> tuple[int, bool]:
        """`AsInt64()`: (value, True) only where upstream's fast int64 form answers.

        Like upstream this is (0, False) for values parsed through its decimal slow path
        (e.g. 19-digit inputs, "1.5Gi") and for int64 forms at a negative scale ("1000m").
        """
        if self._as_int64 is None:
            return 0, False
        return self._as_int64, True

    @property
    def sign(self) -> int:
        return (self.coefficient > 0) - (self.coefficient < 0)

    @property
    def is_zero(self) -> bool:
        return self.coefficient == 0

    # -- text --------------------------------------------------------------------------------

    def canonical(self) -> str:
        """`CanonicalizeBytes`: the canonical form (largest suffix that loses no precision)."""
        coefficient, exponent = self.coefficient, self.exponent
        if coefficient == 0:
            return "0"
        fmt = self.format
        if fmt == BINARY_SI and (
            exponent < 0  # fractional: BinarySI would round, so show it in decimal
            or (exponent < 4 and abs(coefficient) * 10**exponent < 1024)
            or exponent > _MAX_INT_DIGITS
        ):
            fmt = DECIMAL_SI
        if fmt == BINARY_SI:
            number, power = coefficient * 10**exponent, 0
            while power < 6 and abs(number) >= 1024 and number % 1024 == 0:
                number //= 1024
                power += 1
            return _int_to_digits(number) + _BINARY_SUFFIX_BY_POWER[power]
        # Exponent down to a multiple of three, moving the difference into the digits.
        extra = exponent % 3
        number, exponent = coefficient * 10**extra, exponent - extra
        if fmt == DECIMAL_SI and exponent in _DECIMAL_SUFFIX_BY_EXPONENT:
            suffix = _DECIMAL_SUFFIX_BY_EXPONENT[exponent]
        else:
            suffix = f"e{exponent}" if exponent else ""
        return _int_to_digits(number) + suffix

    def __str__(self) -> str:
        """`String()`: the parsed input when upstream kept it, else the canonical form."""
        return self._text if self._text is not None else self.canonical()

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r}, {self.format})"

    # -- arithmetic and order ----------------------------------------------------------------

    def __neg__(self) -> Quantity:
        as_int64 = self._as_int64
        # Upstream's int64 form stays int64 when negated, except -2**63, which moves to inf.Dec.
        negated = None if as_int64 is None or as_int64 == _INT64_MIN else -as_int64
        return Quantity(-self.coefficient, self.exponent, self.format, negated)

    def compare(self, other: Quantity) -> int:
        """`Cmp`: -1, 0 or 1."""
        return _compare(self.coefficient, self.exponent, other.coefficient, other.exponent)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self.compare(other) < 0

    def __le__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self.compare(other) <= 0

    def __gt__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self.compare(other) > 0

    def __ge__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self.compare(other) >= 0


def parse_quantity(text: str) -> Quantity:
    """`resource.ParseQuantity`."""
    return Quantity.parse(text)


def resource_amount(resource: str, text: str | int) -> int:
    """A request or capacity in the scheduler's integer units: cpu in millicores
    (`MilliValue`), everything else (memory, storage, pods, hugepages, extended resources such
    as nvidia.com/gpu) in base units (`Value`). An int is read as that many units."""
    milli = resource == "cpu"
    if isinstance(text, str):
        return _amount_cached(text, milli)
    if isinstance(text, int) and not isinstance(text, bool):
        return text * 1000 if milli else text
    raise QuantityError(
        f"expected a quantity string or integer, got {type(text).__name__} {text!r}", text
    )


def format_quantity(value: int, format: str = DECIMAL_SI) -> str:
    """`NewQuantity(value, format).String()`."""
    return Quantity.from_int(value, format).canonical()


def format_milli_quantity(value: int, format: str = DECIMAL_SI) -> str:
    """`NewMilliQuantity(value, format).String()`."""
    return Quantity.from_milli(value, format).canonical()


def format_resource_amount(resource: str, amount: int) -> str:
    """The inverse of `resource_amount` for messages: cpu millicores as DecimalSI ("1500m"),
    memory, ephemeral-storage and hugepages-* as BinarySI ("2Gi"), the rest as DecimalSI."""
    if resource == "cpu":
        return format_milli_quantity(amount, DECIMAL_SI)
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        return format_quantity(amount, BINARY_SI)
    return format_quantity(amount, DECIMAL_SI)


# -- parsing -----------------------------------------------------------------------------------


@lru_cache(maxsize=8192)
def _amount_cached(text: str, milli: bool) -> int:
    quantity = _parse_cached(text)
    return quantity.milli_value if milli else quantity.value


@lru_cache(maxsize=8192)
def _parse_cached(text: str) -> Quantity:
    if not text:
        raise QuantityError(ERR_FORMAT_WRONG, text)
    match = _SCANNER.fullmatch(text)
    if match is None:
        raise QuantityError(ERR_FORMAT_WRONG, text)
    sign, whole, fraction, suffix = match.groups()
    fraction = fraction or ""
    negative = sign == "-"
    base, exponent, fmt = _interpret_suffix(suffix, text)
    num = whole.lstrip("0") or "0"  # upstream strips leading zeros before counting digits

    # Upstream's int64 fast path; the int64 form decides AsInt64 and the kept input string.
    if base == 10:
        fast = len(num) + len(fraction) <= 18 and exponent - len(fraction) >= -9
    else:
        # decimal digits of precision left after the binary multiplier (2**10 ~ 3 digits)
        fast = not fraction and 14 - len(num) - 3 * (exponent // 10) >= 0
    if fast:
        digits = num + fraction
        magnitude = int(digits)
        if base == 10:
            scale = exponent - len(fraction)
            keep_text = scale % 3 == 0 and not digits.endswith("000") and digits[0] != "0"
        else:
            scale = 0
            keep_text = (magnitude & 7) != 0
            magnitude <<= exponent
        unscaled = -magnitude if negative else magnitude
        return Quantity(
            unscaled, scale, fmt, _int64_as_int64(unscaled, scale), text if keep_text else None
        )

    # Slow path (upstream inf.Dec): exact decimal, rounded up to nano, BinarySI capped.
    if not whole and not fraction:
        raise QuantityError(ERR_NUMERIC, text)
    digits = num + fraction
    significant = digits.rstrip("0") or "0"
    coefficient = _int_from_digits(significant)
    # value = digits x 10**-len(fraction); trailing zeros move into the exponent
    power = len(digits) - len(significant) - len(fraction)
    if base == 10:
        power += exponent
    else:
        coefficient <<= exponent
    if coefficient and power < -9:
        coefficient, power = _ceil_shift(coefficient, -9 - power), -9
    if fmt == BINARY_SI:
        if _compare(coefficient, power, _INT64_MAX, 0) > 0:
            coefficient, power = _INT64_MAX, 0
        if coefficient and power < 0 and coefficient < 10**-power:
            fmt = DECIMAL_SI  # 0 < value < 1: shown in decimal rather than rounded
    return Quantity(-coefficient if negative else coefficient, power, fmt)


def _interpret_suffix(suffix: str, text: str) -> tuple[int, int, str]:
    """(base, exponent, format) of a suffix, as upstream's suffixer interprets it."""
    exponent = _DECIMAL_SUFFIX_EXPONENT.get(suffix)
    if exponent is not None:
        return 10, exponent, DECIMAL_SI
    exponent = _BINARY_SUFFIX_EXPONENT.get(suffix)
    if exponent is not None:
        return 2, exponent, BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE":
        exponent = _parse_int64(suffix[1:])
        if exponent is not None:
            # int32(parsed) upstream: the exponent wraps to 32 bits
            return 10, (exponent + 2**31) % 2**32 - 2**31, DECIMAL_EXPONENT
    raise QuantityError(ERR_SUFFIX, text)


def _parse_int64(text: str) -> int | None:
    """strconv.ParseInt(text, 10, 64), None on error."""
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body or body.strip("0123456789"):
        return None
    if len(body.lstrip("0")) > 19:
        return None
    value = int(text)
    return value if _INT64_MIN <= value <= _INT64_MAX else None


# -- exact decimal helpers ---------------------------------------------------------------------


def _int64_as_int64(value: int, scale: int) -> int | None:
    """AsInt64 of upstream's int64 form {value, scale}."""
    if scale < 0:
        return None
    if scale == 0 or value == 0:
        return value
    if scale > 18:
        return None
    result = value * 10**scale
    return result if _INT64_MIN <= result <= _INT64_MAX else None


def _ceil_shift(magnitude: int, places: int) -> int:
    """ceil(magnitude / 10**places) for magnitude > 0, places > 0."""
    if places > magnitude.bit_length():  # 10**places > magnitude: the result is 1
        return 1
    return -(-magnitude // 10**places)


def _normalise(coefficient: int, exponent: int) -> tuple[int, int]:
    if coefficient == 0:
        return 0, 0
    while coefficient % 10 == 0:
        coefficient //= 10
        exponent += 1
    return coefficient, exponent


def _compare(ca: int, ea: int, cb: int, eb: int) -> int:
    """Order of ca x 10**ea and cb x 10**eb, without building huge powers of ten."""
    sa, sb = (ca > 0) - (ca < 0), (cb > 0) - (cb < 0)
    if sa != sb:
        return (sa > sb) - (sa < sb)
    if sa == 0 or ea == eb:
        return (ca > cb) - (ca < cb)
    # Same sign, different exponents: compare |ca| * 10**shift with |cb| (or vice versa).
    flip = ca < 0
    ca, cb = abs(ca), abs(cb)
    if ea > eb:
        shift = ea - eb
        result = 1 if shift > cb.bit_length() else (ca * 10**shift > cb) - (ca * 10**shift < cb)
    else:
        shift = eb - ea
        result = -1 if shift > ca.bit_length() else (ca > cb * 10**shift) - (ca < cb * 10**shift)
    return -result if flip else result


def _pow10(exponent: int, quantity: Quantity) -> int:
    if exponent > _MAX_INT_DIGITS:
        raise QuantityError(
            f"quantity {quantity.canonical()} is too large to convert to an integer", quantity
        )
    return 10**exponent


def _int_from_digits(digits: str) -> int:
    """int(digits) without Python's 4300-digit conversion limit (upstream has none)."""
    if len(digits) <= _DIGIT_CHUNK:
        return int(digits)
    value = 0
    for start in range(0, len(digits), _DIGIT_CHUNK):
        part = digits[start : start + _DIGIT_CHUNK]
        value = value * 10 ** len(part) + int(part)
    return value


def _int_to_digits(value: int) -> str:
    """str(value) without Python's 4300-digit conversion limit."""
    if -(10**_DIGIT_CHUNK) < value < 10**_DIGIT_CHUNK:
        return str(value)
    sign, value = ("-" if value < 0 else ""), abs(value)
    chunk = 10**_DIGIT_CHUNK
    parts = []
    while value >= chunk:
        value, low = divmod(value, chunk)
        parts.append(str(low).rjust(_DIGIT_CHUNK, "0"))
    parts.append(str(value))
    return sign + "".join(reversed(parts))
