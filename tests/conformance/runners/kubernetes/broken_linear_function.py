"""kubernetes.json `broken_linear_function`: helper.BuildBrokenLinearFunction point checks.

The vector's points are already on the node-score scale (no x10)."""

from __future__ import annotations

from gpupact.kube.resources_fit import build_broken_linear_function


def run(case: dict, meta: dict) -> None:
    function = build_broken_linear_function(
        [(point["utilization"], point["score"]) for point in case["points"]]
    )
    got = [{"p": check["p"], "value": function(check["p"])} for check in case["expected"]]
    assert got == case["expected"], f"got {got}, expected {case['expected']}"
