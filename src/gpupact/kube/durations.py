"""Go's `time.ParseDuration`, exactly: the duration strings Kubernetes-ecosystem schedulers
read from annotations and plugin arguments ("1h2m3s4ms5us6ns", "1.5h", "-3m", "300ms")."""

from __future__ import annotations

import re
from fractions import Fraction

# unit -> nanoseconds
_UNITS = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,  # U+00B5 micro sign
    "μs": 1_000,  # U+03BC Greek mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60 * 1_000_000_000,
    "h": 3600 * 1_000_000_000,
}
_TERM = re.compile(r"(\d*)(?:\.(\d*))?(ns|us|µs|μs|ms|s|m|h)")
MAX_DURATION = (1 << 63) - 1


def parse_go_duration(text: str) -> int:
    """The duration in nanoseconds; ValueError where Go returns an error (empty text, a
    missing unit, an unknown unit, overflow of int64). "0" alone needs no unit."""
    rest = text
    sign = 1
    if rest[:1] in ("+", "-"):
        sign = -1 if rest[0] == "-" else 1
        rest = rest[1:]
    if rest == "0":
        return 0
    if not rest:
        raise ValueError(f"invalid duration {text!r}")
    total = Fraction(0)
    pos = 0
    while pos < len(rest):
        match = _TERM.match(rest, pos)
        if match is None or (not match.group(1) and not match.group(2)):
            raise ValueError(f"invalid duration {text!r}")
        whole, fraction, unit = match.groups()
        value = Fraction(int(whole or "0"))
        if fraction:
            value += Fraction(int(fraction), 10 ** len(fraction))
        total += value * _UNITS[unit]
        pos = match.end()
    # Go truncates a fractional nanosecond count and refuses values past int64
    nanos = int(total)
    if nanos > MAX_DURATION + (1 if sign < 0 else 0):
        raise ValueError(f"invalid duration {text!r}")
    return sign * nanos
