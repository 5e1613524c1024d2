"""kubernetes.json `toleration_numeric_compare`: the raw compareNumericValues cases."""

from __future__ import annotations

from gpupact.kube.taints import compare_numeric_values


def run(case: dict, meta: dict) -> None:
    tol, taint, op = case["toleration_value"], case["taint_value"], case["operator"]
    got = compare_numeric_values(tol, taint, op)
    expected = case["expected"]["result"]
    assert got == expected, (
        f"compare_numeric_values({tol!r}, {taint!r}, {op!r}): got {got}, expected {expected}"
    )
