"""kueue.json integration: envtest runs with real controllers, compared at steady state.

Modelled as repeated scheduling cycles on one AdmissionState until nothing changes any more;
between cycles preempted workloads complete their eviction and return to their queue, as the
job and workload controllers would do.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from conformance.runners.kueue._scenario import (
    NOW,
    Scenario,
    build,
    check_expected,
    check_pending,
    flavor_assignment,
    requested_resources,
    without_notes,
    without_pods,
)

_STEP = 1000  # ms between cycles
_METRIC = re.compile(r"^(\w+)(?:\{([^}]*)\})?$")


def _fingerprint(scenario: Scenario) -> tuple:
    state = scenario.state
    pending = tuple((p.key, p.state) for p in state.pending_workloads())
    return tuple(sorted(state.admitted())), pending


def _metric(scenario: Scenario, text: str, admissions: int) -> int:
    match = _METRIC.match(text)
    if match is None:
        pytest.skip(f"not modelled: metric {text}")
    name, raw_labels = match.groups()
    labels = dict(item.split("=", 1) for item in raw_labels.split(",")) if raw_labels else {}
    state = scenario.state
    pending = [
        p
        for p in state.pending_workloads()
        if labels.get("cluster_queue", p.cluster_queue) == p.cluster_queue
    ]
    if name == "kueue_pending_workloads":
        return sum(1 for p in pending if p.state == labels.get("status", p.state))
    if name == "kueue_pending_scheduling_hashes":
        return len(
            {
                state.workloads[p.key].shape
                for p in pending
                if p.state == labels.get("status", p.state)
            }
        )
    if name == "kueue_reserving_active_workloads":
        return sum(
            1
            for i in state.admitted().values()
            if labels.get("cluster_queue", i.cluster_queue) == i.cluster_queue
            and i.workload.namespace != "kube-system"
        )
    if name == "kueue_admitted_workloads_total":
        return admissions
    pytest.skip(f"not modelled: metric {name}")


def run(case: dict[str, Any], meta: dict[str, Any]) -> None:
    case = without_notes(case)
    check_expected(case, {"admitted", "preempted", "left_pending", "metrics"})
    scenario = build(case)
    state = scenario.state
    expected = case["expected"]
    admitted: dict[str, Any] = {}
    preempted: list[tuple[str, str]] = []
    admissions = 0
    requested = requested_resources(case)
    now = NOW
    previous = None
    for _ in range(20 + 4 * len(case["pending_workloads"])):
        result = state.schedule_cycle(now)
        for a in result.admitted:
            name = scenario.name(a.key)
            admitted[name] = flavor_assignment(without_pods(a.flavors, requested.get(name, {})))
            admissions += 1
        for p in result.preempted:
            name = scenario.name(p.key)
            preempted.append((name, p.reason))
            admitted.pop(name, None)
            state.complete_eviction(p.key)
        fingerprint = _fingerprint(scenario)
        if fingerprint == previous and not result.admitted and not result.preempted:
            break
        previous = fingerprint
        now += _STEP
    else:
        raise AssertionError("no steady state reached")

    assert admitted == expected["admitted"], (
        f"admitted: got {admitted}, expected {expected['admitted']}"
    )
    want_preempted = sorted((p["name"], p["reason"]) for p in expected["preempted"])
    assert sorted(preempted) == want_preempted, (
        f"preempted: got {sorted(preempted)}, expected {want_preempted}"
    )
    check_pending(scenario, expected["left_pending"])
    for text, value in (expected.get("metrics") or {}).items():
        got = _metric(scenario, text, admissions)
        assert got == value, f"{text}: got {got}, expected {value}"
