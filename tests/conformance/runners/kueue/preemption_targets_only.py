"""kueue.json preemption_targets_only: Preemptor.GetTargets with the given flavor assignment,
then IssuePreemptions (the victims and their Preempted reasons)."""

from __future__ import annotations

from typing import Any

from conformance.runners.kueue._scenario import NOW, build, check_expected, without_notes
from gpupact.engine.admission.flavor_assigner import Assignment


def _parse(given: dict[str, dict[str, str]]) -> tuple[dict[str, dict[str, str]], set]:
    flavors: dict[str, dict[str, str]] = {}
    preempt = set()
    for pod_set, per_resource in given.items():
        for resource, text in per_resource.items():
            flavor, _, mode = text.partition(" ")
            flavors.setdefault(pod_set, {})[resource] = flavor
            if mode.strip("()") == "Preempt":
                preempt.add((flavor, resource))
    return flavors, preempt


def run(case: dict[str, Any], meta: dict[str, Any]) -> None:
    case = without_notes(case)
    check_expected(case, {"admitted", "preempted", "left_pending"})
    scenario = build(case)
    state = scenario.state
    expected = case["expected"]
    (preemptor,) = case["pending_workloads"]
    key = scenario.key(preemptor["name"])
    flavors, preempt = _parse(preemptor["given_flavor_assignment"])
    assignment = Assignment.fixed(state.workloads[key], flavors, preempt)

    targets = state.preemption_targets(key, assignment, NOW)
    assert not expected["admitted"], "finding preemption targets admits nothing"

    got = sorted((scenario.name(t.key), t.reason) for t in targets)
    want = sorted((p["name"], p["reason"]) for p in expected["preempted"])
    assert got == want, f"preemption targets: got {got}, expected {want}"
    (pending,) = expected["left_pending"]
    waits_for_victims = pending["state"].startswith("active")
    assert bool(targets) == waits_for_victims, (
        f"{pending['name']}: got {len(targets)} targets, expected state {pending['state']!r}"
    )
