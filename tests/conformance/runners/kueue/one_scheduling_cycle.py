"""kueue.json one_scheduling_cycle: `scheduler.schedule()` called once on the given state."""

from __future__ import annotations

from typing import Any

from conformance.runners.kueue._scenario import (
    NOW,
    build,
    check_expected,
    check_pending,
    flavor_assignment,
    requested_resources,
    without_notes,
    without_pods,
)


def run(case: dict[str, Any], meta: dict[str, Any]) -> None:
    case = without_notes(case)
    check_expected(
        case,
        {
            "admitted",
            "preempted",
            "left_pending",
            "admitted_pod_counts",
            "skipped_preemptions_metric",
        },
    )
    scenario = build(case)
    result = scenario.state.schedule_cycle(NOW)
    expected = case["expected"]
    requested = requested_resources(case)

    got_admitted = {}
    got_counts = {}
    for admitted in result.admitted:
        name = scenario.name(admitted.key)
        flavors = without_pods(admitted.flavors, requested.get(name, {}))
        got_admitted[name] = flavor_assignment(flavors)
        got_counts[name] = admitted.counts
    assert got_admitted == expected["admitted"], (
        f"admitted: got {got_admitted}, expected {expected['admitted']}"
    )
    for name, counts in (expected.get("admitted_pod_counts") or {}).items():
        assert got_counts.get(name) == counts, (
            f"admitted pod counts of {name}: got {got_counts.get(name)}, expected {counts}"
        )

    got_preempted = sorted((scenario.name(p.key), p.reason) for p in result.preempted)
    want_preempted = sorted((p["name"], p["reason"]) for p in expected["preempted"])
    assert got_preempted == want_preempted, (
        f"preempted: got {got_preempted}, expected {want_preempted}"
    )

    check_pending(scenario, expected["left_pending"])

    for cq, skips in (expected.get("skipped_preemptions_metric") or {}).items():
        got = result.skipped_preemptions.get(cq, 0)
        assert got == skips, f"skipped preemptions of {cq}: got {got}, expected {skips}"
