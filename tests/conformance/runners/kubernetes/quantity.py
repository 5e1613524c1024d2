"""kubernetes.json `quantity`: apimachinery resource.Quantity parse / String / Value cases.

Expected fields: `error`, `value_decimal` (exact value), `format`, `canonical` (String()),
`negated_canonical` (String() of "-" + input), `milliValue`, `as_int64` / `as_int64_ok`.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from gpupact.kube.quantity import QuantityError, parse_quantity


def run(case: dict[str, Any], meta: dict[str, Any]) -> None:
    text = case["input"]
    expected = case["expected"]
    if expected["error"]:
        try:
            got = parse_quantity(text)
        except QuantityError:
            return
        raise AssertionError(f"{text!r}: expected a parse error, got {got!r}")

    q = parse_quantity(text)
    if "value_decimal" in expected:
        want = Fraction(expected["value_decimal"])
        assert q.amount == want, f"{text!r}: value {q.amount} != expected {want}"
    if "format" in expected:
        want_format = expected["format"]
        assert q.format == want_format, f"{text!r}: format {q.format} != {want_format}"
    if "canonical" in expected:
        assert str(q) == expected["canonical"], (
            f"{text!r}: String() {str(q)!r} != expected {expected['canonical']!r}"
        )
    if "negated_canonical" in expected:
        want_neg = expected["negated_canonical"]
        negated = parse_quantity("-" + text)
        assert str(negated) == want_neg, f"-{text!r}: String() {str(negated)!r} != {want_neg!r}"
        assert str(-q) == want_neg, f"Neg({text!r}): String() {str(-q)!r} != {want_neg!r}"
        assert negated == -q, f"-{text!r}: {negated!r} != Neg {(-q)!r}"
    if "milliValue" in expected:
        assert q.milli_value == expected["milliValue"], (
            f"{text!r}: MilliValue {q.milli_value} != {expected['milliValue']}"
        )
    if "as_int64_ok" in expected:
        want_ok = expected["as_int64_ok"]
        want_value = expected["as_int64"] if want_ok else 0
        got = q.as_int64()
        assert got == (want_value, want_ok), f"{text!r}: AsInt64 {got} != {(want_value, want_ok)}"
