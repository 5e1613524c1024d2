"""Classical preemption cases transcribed from Kueue's TestPreemption (facts only)."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.runners.kueue import preemption_targets_only

from .upstream_cases import FUNGIBILITY, admitted, cohort, flavors

CLAIM = "InCohortReclamation"
WHILE_BORROWING = "InCohortReclaimWhileBorrowing"
IN_CQ = "InClusterQueue"
LP, ANY, UNSET = "LowerPriority", "Any", "Never(unset)"
BWC0 = {"policy": "LowerPriority", "maxPriorityThreshold": 0}


def _q(name, cohort_name, groups, within=UNSET, reclaim=UNSET, bwc=None) -> dict[str, Any]:
    """groups: [[(flavor, {resource: (nominal, borrowingLimit, lendingLimit)})]]."""
    out = []
    for index, group in enumerate(groups):
        for flavor, resources in group:
            quotas = {}
            for resource, (nominal, borrowing, lending) in resources.items():
                quotas[resource] = {"nominal": nominal}
                if borrowing is not None:
                    quotas[resource]["borrowingLimit"] = borrowing
                if lending is not None:
                    quotas[resource]["lendingLimit"] = lending
            out.append({"flavor": flavor, "resource_group": index, "resources": quotas})
    preemption: dict[str, Any] = {"withinClusterQueue": within, "reclaimWithinCohort": reclaim}
    if bwc:
        preemption["borrowWithinCohort"] = bwc
    return {
        "name": name,
        "cohort": cohort_name,
        "queueingStrategy": "BestEffortFIFO",
        "flavors": out,
        "preemption": preemption,
        "flavorFungibility": FUNGIBILITY,
    }


def _cpu_mem(cpu, mem, cpu_bl=None, mem_bl=None):
    return [[("default", {"cpu": (cpu, cpu_bl, None), "memory": (mem, mem_bl, None)})]]


def _cpu(nominal, borrowing=None, lending=None):
    return [[("default", {"cpu": (nominal, borrowing, lending)})]]


DEFAULT_CQS = [
    _q(
        "standalone",
        None,
        [
            [("default", {"cpu": (6, None, None)})],
            [("alpha", {"memory": (3, None, None)}), ("beta", {"memory": (3, None, None)})],
        ],
        within=LP,
    ),
    _q("c1", "cohort", _cpu_mem(6, 3, 6, 3), LP, LP),
    _q("c2", "cohort", _cpu_mem(6, 3, 6, 3), "Never", ANY),
    _q("d1", "cohort-no-limits", _cpu_mem(6, 3), LP, LP),
    _q("d2", "cohort-no-limits", _cpu_mem(6, 3), "Never", ANY),
    _q("l1", "legion", _cpu_mem(6, 3, 12, 6), LP, LP),
    _q("preventStarvation", None, _cpu(6), within="LowerOrNewerEqualPriority"),
    _q("a_standard", "with_shared_cq", _cpu(1, 12), "Never", LP, BWC0),
    _q("b_standard", "with_shared_cq", _cpu(1, 12), LP, ANY, BWC0),
    _q("a_best_effort", "with_shared_cq", _cpu(1, 12), "Never", LP, BWC0),
    _q("b_best_effort", "with_shared_cq", _cpu(0, 13), "Never", LP, BWC0),
    _q("shared", "with_shared_cq", _cpu(10)),
    _q("lend1", "cohort-lend", _cpu(6, None, 4), LP, LP),
    _q("lend2", "cohort-lend", _cpu(6, None, 2), LP, LP),
    _q("a", "cohort-three", _cpu_mem(2, 2), LP, ANY),
    _q("b", "cohort-three", _cpu_mem(2, 2)),
    _q("c", "cohort-three", _cpu_mem(2, 2)),
]


def case(
    admitted_workloads,
    target,
    pod_sets,
    want,
    *,
    priority=0,
    cluster_queues=None,
    cohorts=None,
    creation_order=0,
) -> dict[str, Any]:
    """pod_sets: [(name, count, {resource: (per-pod request, flavor, mode)})]."""
    return {
        "cluster_queues": cluster_queues or DEFAULT_CQS,
        "cohorts": cohorts or [],
        "resource_flavors": flavors("default", "alpha", "beta"),
        "admitted_workloads": admitted_workloads,
        "pending_workloads": [
            {
                "name": "in",
                "queue": target,
                "priority": priority,
                "uid": "wl-in",
                "creation_order": creation_order,
                "pod_sets": [
                    {"name": n, "count": c, "requests": {r: v[0] for r, v in reqs.items()}}
                    for n, c, reqs in pod_sets
                ],
                "given_flavor_assignment": {
                    n: {r: f"{v[1]} ({v[2]})" for r, v in reqs.items()} for n, _, reqs in pod_sets
                },
            }
        ],
        "expected": {
            "admitted": {},
            "preempted": [{"name": n, "reason": r} for n, r in sorted(want)],
            "left_pending": [
                {
                    "name": "in",
                    "cluster_queue": target,
                    "state": "active (pending the preemption)" if want else "not admitted",
                }
            ],
        },
    }


def main(**requests) -> list:
    return [("main", 1, {r: (v, "default", "Preempt") for r, v in requests.items()})]


def wl(name, queue, priority=0, flavor="default", **requests) -> dict[str, Any]:
    return admitted(name, queue, priority=priority, flavor=flavor, requests=requests)


CASES = {
    "reclaim quota if workload requests 0 resources for a resource at nominal quota": case(
        [
            wl("c1-low", "c1", -1, cpu=3, memory=3),
            wl("c2-mid", "c2", cpu=3),
            wl("c2-high", "c2", 1, cpu=6),
        ],
        "c1",
        [("main", 1, {"cpu": (3, "default", "Preempt"), "memory": (0, "default", "Fit")})],
        {("c2-mid", CLAIM)},
        priority=1,
    ),
    "no workloads borrowing": case(
        [wl("c1-high", "c1", 1, cpu=4), wl("c2-low-1", "c2", -1, cpu=4)],
        "c1",
        main(cpu=4),
        set(),
        priority=1,
    ),
    "not enough workloads borrowing": case(
        [
            wl("c1-high", "c1", 1, cpu=4),
            wl("c2-low-1", "c2", -1, cpu=4),
            wl("c2-low-2", "c2", -1, cpu=4),
        ],
        "c1",
        main(cpu=4),
        set(),
        priority=1,
    ),
    "preempting locally and borrowing other resources in cohort, without cohort candidates": case(
        [
            wl("c1-low", "c1", -1, cpu=4),
            wl("c2-low-1", "c2", -1, cpu=4),
            wl("c2-high-2", "c2", 1, cpu=4),
        ],
        "c1",
        main(cpu=4, memory=5),
        {("c1-low", IN_CQ)},
        priority=1,
    ),
    "preempting locally and borrowing same resource in cohort": case(
        [
            wl("c1-med", "c1", 0, cpu=4),
            wl("c1-low", "c1", -1, cpu=4),
            wl("c2-low-1", "c2", -1, cpu=4),
        ],
        "c1",
        main(cpu=4),
        {("c1-low", IN_CQ)},
        priority=1,
    ),
    "preempting locally and borrowing same resource in cohort; no borrowing limit": case(
        [
            wl("d1-med", "d1", 0, cpu=4),
            wl("d1-low", "d1", -1, cpu=4),
            wl("d2-low-1", "d2", -1, cpu=4),
        ],
        "d1",
        main(cpu=4),
        {("d1-low", IN_CQ)},
        priority=1,
    ),
    "preempting locally and not borrowing same resource in 1-queue cohort": case(
        [wl("l1-med", "l1", 0, cpu=4), wl("l1-low", "l1", -1, cpu=2)],
        "l1",
        main(cpu=4),
        {("l1-med", IN_CQ)},
        priority=1,
    ),
    "preempt from all ClusterQueues in cohort": case(
        [
            wl("c1-low", "c1", -1, cpu=3),
            wl("c1-mid", "c1", cpu=2),
            wl("c2-low", "c2", -1, cpu=3),
            wl("c2-mid", "c2", cpu=4),
        ],
        "c1",
        main(cpu=4),
        {("c1-low", IN_CQ), ("c2-low", CLAIM)},
    ),
    "can't preempt workloads in ClusterQueue for withinClusterQueue=Never": case(
        [wl("c2-low", "c2", -1, cpu=3)],
        "c2",
        main(cpu=4),
        set(),
        priority=1,
    ),
    "each podset preempts a different flavor": case(
        [
            wl("low-alpha", "standalone", -1, flavor="alpha", memory=2),
            wl("low-beta", "standalone", -1, flavor="beta", memory=2),
        ],
        "standalone",
        [
            ("launcher", 1, {"memory": (2, "alpha", "Preempt")}),
            ("workers", 2, {"memory": (1, "beta", "Preempt")}),
        ],
        {("low-alpha", IN_CQ), ("low-beta", IN_CQ)},
    ),
    "preempt newer workloads with the same priority": case(
        [
            dict(wl("wl1", "preventStarvation", 2, cpu=2), creation_order=0),
            dict(
                wl("wl2", "preventStarvation", 1, cpu=2),
                creation_order=2,
                quota_reserved_at_offset_s=1,
            ),
            dict(wl("wl3", "preventStarvation", 1, cpu=2), creation_order=2),
        ],
        "preventStarvation",
        [("launcher", 1, {"cpu": (2, "default", "Preempt")})],
        {("wl2", IN_CQ)},
        priority=1,
        creation_order=1,
    ),
    "BorrowWithinCohort: preempt a lower-priority workload from another CQ while borrowing": case(
        [
            wl("a_best_effort_low", "a_best_effort", -1, cpu=10),
            wl("b_best_effort_low", "b_best_effort", -1, cpu=1),
        ],
        "a_standard",
        main(cpu=10),
        {("a_best_effort_low", WHILE_BORROWING)},
    ),
    "BorrowWithinCohort: not above threshold if borrowing is required after the preemption": case(
        [wl("b_standard", "b_standard", 1, cpu=10)], "a_standard", main(cpu=10), set(), priority=2
    ),
    "BorrowWithinCohort: not from the same ClusterQueue": case(
        [wl("a_standard", "a_standard", 1, cpu=13)],
        "a_standard",
        main(cpu=1),
        set(),
        priority=2,
    ),
    "BorrowWithinCohort: only from CQ if no workloads below threshold and above nominal": case(
        [
            wl("a_standard_1", "a_standard", 1, cpu=10),
            wl("a_standard_2", "a_standard", 1, cpu=1),
            wl("b_standard_1", "b_standard", 1, cpu=1),
            wl("b_standard_2", "b_standard", 2, cpu=1),
        ],
        "b_standard",
        main(cpu=1),
        {("b_standard_1", IN_CQ)},
        priority=3,
    ),
    "reclaim quota from lender": case(
        [
            wl("lend1-low", "lend1", -1, cpu=3),
            wl("lend2-mid", "lend2", cpu=3),
            wl("lend2-high", "lend2", 1, cpu=4),
        ],
        "lend1",
        main(cpu=3),
        {("lend2-mid", CLAIM)},
        priority=1,
    ),
    "preempt from all ClusterQueues in cohort-lend": case(
        [
            wl("lend1-low", "lend1", -1, cpu=3),
            wl("lend1-mid", "lend1", cpu=2),
            wl("lend2-low", "lend2", -1, cpu=3),
            wl("lend2-mid", "lend2", cpu=4),
        ],
        "lend1",
        main(cpu=4),
        {("lend1-low", IN_CQ), ("lend2-low", CLAIM)},
    ),
    "preemptions from cq when target queue is exhausted for two requested resources": case(
        [
            wl("a1", "a", -2, cpu=1, memory=1),
            wl("a2", "a", -2, cpu=1, memory=1),
            wl("a3", "a", -1, cpu=1, memory=1),
        ]
        + [wl(f"b{i}", "b", cpu=1, memory=1) for i in (1, 2, 3)],
        "a",
        main(cpu=2, memory=2),
        {("a1", IN_CQ), ("a2", IN_CQ)},
    ),
    "preemptions from cq when target queue is exhausted for one resource but not the other": case(
        [wl("a1", "a", -2, cpu=1), wl("a2", "a", -2, cpu=1), wl("a3", "a", -1, cpu=1)]
        + [wl(f"b{i}", "b", cpu=1) for i in (1, 2, 3)],
        "a",
        main(cpu=2, memory=2),
        {("a1", IN_CQ), ("a2", IN_CQ)},
    ),
    "allow preemption from other CQs if target cq is not exhausted": case(
        [wl("a1", "a", -1, cpu=1)]
        + [wl(f"b{i}", "b", cpu=1) for i in (1, 2, 3, 4)]
        + [wl("b5", "b", -1, cpu=1)],
        "a",
        main(cpu=2),
        {("a1", IN_CQ), ("b5", CLAIM)},
    ),
    "long range preemption": case(
        [wl("to-be-preempted", "cq-right", cpu=5)],
        "cq-left",
        main(cpu=8),
        {("to-be-preempted", CLAIM)},
        cluster_queues=[
            _q("cq-left", "cohort-left", _cpu(10), reclaim=ANY),
            _q("cq-right", "cohort-right", _cpu(0)),
        ],
        cohorts=[cohort("cohort-left", "root"), cohort("cohort-right", "root")],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_classical_preemption(name: str) -> None:
    preemption_targets_only.run(CASES[name], {})
