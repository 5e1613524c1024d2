"""Kubernetes resource quantities (apimachinery `resource.Quantity`).

PRELIMINARY: exact value parsing only; canonical formatting, rounding below nano and the
int64 caps are being completed. The public interface below is stable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

_RE = re.compile(r"^([+-]?)(\d*)(?:\.(\d*))?([a-zA-Z]*|[eE][+-]?\d+)$")
_BIN = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DEC = {"n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": 1,
        "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}


class QuantityError(ValueError):
    """The string is not a valid quantity."""


@dataclass(frozen=True, slots=True)
class Quantity:
    amount: Fraction
    format: str  # "DecimalSI" | "BinarySI" | "DecimalExponent"

    @classmethod
    def parse(cls, text: str) -> Quantity:
        m = _RE.match(text.strip()) if isinstance(text, str) else None
        if not m or (not m.group(2) and not m.group(3)):
            raise QuantityError(f"quantities must match the regular expression "
                                f"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': {text!r}")
        sign, whole, frac, suffix = m.groups()
        number = Fraction(int(whole or "0")) + (Fraction(int(frac), 10 ** len(frac)) if frac else 0)
        if suffix in _BIN:
            number *= _BIN[suffix]
            fmt = "BinarySI"
        elif suffix in _DEC:
            number *= _DEC[suffix]
            fmt = "DecimalSI"
        elif suffix[:1] in "eE" and suffix:
            number *= Fraction(10) ** int(suffix[1:])
            fmt = "DecimalExponent"
        else:
            raise QuantityError(f"unable to parse quantity's suffix: {text!r}")
        return cls(-number if sign == "-" else number, fmt)

    @property
    def value(self) -> int:
        """Value rounded up to an integer (Quantity.Value())."""
        return -((-self.amount.numerator) // self.amount.denominator)

    @property
    def milli_value(self) -> int:
        """Value x 1000 rounded up (Quantity.MilliValue())."""
        a = self.amount * 1000
        return -((-a.numerator) // a.denominator)


def parse_quantity(text: str) -> Quantity:
    return Quantity.parse(text)


def resource_amount(resource: str, text: str | int | float) -> int:
    """A request or capacity in the scheduler's integer units: cpu in millicores, everything
    else (memory, ephemeral-storage, pods, hugepages, extended resources) in base units."""
    q = Quantity.parse(str(text))
    return q.milli_value if resource == "cpu" else q.value
