"""kueue.json flavor_assignment_only: FlavorAssigner.Assign on a snapshot (chosen flavor,
representative mode, borrowing level and the flavors tried)."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.runners.kueue._scenario import (
    NOW,
    build,
    check_expected,
    flavor_assignment,
    requested_resources,
    without_notes,
    without_pods,
)
from gpupact.engine.admission.flavor_assigner import Mode, Possibility

_MODE_NAMES = {Mode.NO_FIT: "NoFit", Mode.PREEMPT: "Preempt", Mode.FIT: "Fit"}


class _AssumePreemptionPossible:
    """The preemption oracle of upstream's FlavorAssigner tests: every simulation reports that
    preemption would make room, without borrowing (the test's fixed answer, an input)."""

    def simulate_preemption(self, cq, info, fr, quantity):
        return Possibility.PREEMPT, 0


def run(case: dict[str, Any], meta: dict[str, Any]) -> None:
    case = without_notes(case)
    check_expected(
        case,
        {
            "admitted",
            "representative_mode",
            "borrowing",
            "flavor_attempts",
            "preempted",
            "left_pending",
            "noFitReason",
        },
    )
    scenario = build(case)
    expected = case["expected"]
    (pending,) = case["pending_workloads"]
    name = pending["name"]
    assignment = scenario.state.assign_flavors(
        scenario.key(name), NOW, oracle=_AssumePreemptionPossible()
    )

    mode = _MODE_NAMES[assignment.representative_mode()]
    assert mode == expected["representative_mode"], (
        f"representative mode: got {mode}, expected {expected['representative_mode']}"
    )
    if expected.get("admitted"):
        flavors = without_pods(
            {ps.name: {r: c.flavor for r, c in ps.flavors.items()} for ps in assignment.pod_sets},
            requested_resources(case)[name],
        )
        got = {name: flavor_assignment(flavors)}
        assert got == expected["admitted"], (
            f"assignment: got {got}, expected {expected['admitted']}"
        )
    if "noFitReason" in expected:
        # the assignment's reason class when it does not fit (Workload condition reason)
        assert assignment.no_fit_reason == expected["noFitReason"], (
            f"noFitReason: got {assignment.no_fit_reason!r}, expected {expected['noFitReason']!r}"
        )
    if "borrowing" in expected:
        assert assignment.borrowing == expected["borrowing"], (
            f"borrowing level: got {assignment.borrowing}, expected {expected['borrowing']}"
        )
    if "flavor_attempts" in expected:
        attempts = assignment.pod_sets[0].attempts
        got_attempts = [a.flavor for a in attempts]
        want_attempts = [a["flavor"] for a in expected["flavor_attempts"]]
        assert got_attempts == want_attempts, (
            f"flavors tried: got {got_attempts}, expected {want_attempts}"
        )
        known = {"flavor", "mode", "borrow", "reason", "noFitReason"}
        for want in expected["flavor_attempts"]:
            if set(want) - known:
                pytest.skip(f"not modelled: flavor attempt field(s) {sorted(set(want) - known)}")
        for got, want in zip(attempts, expected["flavor_attempts"], strict=True):
            assert _MODE_NAMES[got.mode] == want["mode"], (
                f"flavor {got.flavor} mode: got {_MODE_NAMES[got.mode]}, expected {want['mode']}"
            )
            assert got.borrow == want.get("borrow", 0), (
                f"flavor {got.flavor} borrow: got {got.borrow}, expected {want.get('borrow', 0)}"
            )
            if "reason" in want:
                assert want["reason"] in got.reasons, (
                    f"flavor {got.flavor} reasons: got {got.reasons}, expected {want['reason']!r}"
                )
            assert got.no_fit_reason == want.get("noFitReason", ""), (
                f"flavor {got.flavor} noFitReason: got {got.no_fit_reason!r}, "
                f"expected {want.get('noFitReason', '')!r}"
            )
    assert not expected.get("preempted"), "flavor assignment alone preempts nothing"
