"""kubernetes.json `tolerations`: Toleration.ToleratesTaint on one toleration and one taint."""

from __future__ import annotations

from gpupact.kube.taints import parse_taint, parse_toleration, tolerates


def run(case: dict, meta: dict) -> None:
    # Upstream builds these as Go struct literals (no API validation), so parse types only.
    toleration = parse_toleration(case["toleration"], ("toleration",), validate=False)
    taint = parse_taint(case["taint"], ("taint",), validate=False)
    got = tolerates(
        toleration, taint, enable_comparison_operators=case["enable_comparison_operators"]
    )
    expected = case["expected"]["tolerates"]
    assert got == expected, f"tolerates: got {got}, expected {expected} ({toleration} vs {taint})"
