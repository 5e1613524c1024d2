"""Fair-sharing preemption cases transcribed from Kueue's TestFairPreemptions (facts only)."""

from __future__ import annotations

import pytest

from conformance.runners.kueue import preemption_targets_only

from .upstream_cases import admitted, cohort, cq, preemption_case

CLAIM = "InCohortReclamation"
FAIR = "InCohortFairSharing"
IN_CQ = "InClusterQueue"
BWC = {"policy": "LowerPriority", "maxPriorityThreshold": -3}


def base() -> list[dict]:
    out = [
        cq(n, "all", {"default": 3}, within="LowerPriority", reclaim="Any", bwc=BWC)
        for n in ("a", "b", "c")
    ]
    out.append(cq("preemptible", "all", {"default": 0}))
    return out


def units(prefix: str, queue: str, n: int, priority: int = 0) -> list[dict]:
    return [admitted(f"{prefix}{i}", queue, 1, priority) for i in range(1, n + 1)]


def three_queues(weight_a=None, weight_b=None) -> list[dict]:
    return [
        cq("a", "all", {"default": 3}, within="LowerPriority", reclaim="Any", weight=weight_a),
        cq("b", "all", {"default": 3}, within="LowerPriority", reclaim="Any", weight=weight_b),
        cq("c", "all", {"default": 3}, within="LowerPriority", reclaim="Any"),
    ]


CASES = {
    "reclaim nominal from user using the most": preemption_case(
        base(),
        units("a", "a", 3) + units("b", "b", 5) + units("c", "c", 1),
        "c",
        1,
        {("b1", CLAIM)},
    ),
    "can reclaim from queue using less if the most used is not enough": preemption_case(
        base(),
        [
            admitted("a1", "a", 3),
            admitted("a2", "a", 1),
            admitted("b1", "b", 2),
            admitted("b2", "b", 3),
        ],
        "c",
        3,
        {("a1", CLAIM)},
    ),
    "reclaim borrowable quota from user using the most": preemption_case(
        base(),
        units("a", "a", 3) + units("b", "b", 5) + units("c", "c", 1),
        "a",
        1,
        {("b1", FAIR)},
    ),
    "preempt one from each CQ borrowing": preemption_case(
        base(),
        [
            admitted("a1", "a", 0.5),
            admitted("a2", "a", 0.5),
            admitted("a3", "a", 3),
            admitted("b1", "b", 0.5),
            admitted("b2", "b", 0.5),
            admitted("b3", "b", 3),
        ],
        "c",
        2,
        {("a1", CLAIM), ("b1", CLAIM)},
    ),
    "can't preempt when everyone under nominal": preemption_case(
        base(),
        units("a", "a", 3) + units("b", "b", 3) + units("c", "c", 3),
        "c",
        1,
        set(),
    ),
    "can't preempt when it would switch the imbalance": preemption_case(
        base(),
        units("a", "a", 3) + units("b", "b", 5),
        "a",
        2,
        set(),
    ),
    "can preempt lower priority workloads from same CQ": preemption_case(
        base(),
        [
            admitted("a1_low", "a", 1, -1),
            admitted("a2_low", "a", 1, -1),
            admitted("a3", "a"),
            admitted("a4", "a"),
            *units("b", "b", 5),
        ],
        "a",
        2,
        {("a1_low", IN_CQ), ("a2_low", IN_CQ)},
    ),
    "can preempt a combination of same CQ and highest user": preemption_case(
        base(),
        [
            admitted("a_low", "a", 1, -1),
            admitted("a2", "a"),
            admitted("a3", "a"),
            *units("b", "b", 6),
        ],
        "a",
        2,
        {("a_low", IN_CQ), ("b1", FAIR)},
    ),
    "preempt huge workload if there is no other option": preemption_case(
        base(),
        [admitted("b1", "b", 9)],
        "a",
        2,
        {("b1", CLAIM)},
    ),
    "can't preempt huge workload if the incoming is also huge": preemption_case(
        base(),
        [admitted("a1", "a", 2), admitted("b1", "b", 7)],
        "a",
        5,
        set(),
    ),
    "can't preempt 2 smaller workloads if the incoming is huge": preemption_case(
        base(),
        [admitted("b1", "b", 2), admitted("b2", "b", 2), admitted("b3", "b", 3)],
        "a",
        6,
        set(),
    ),
    "preempt from target and others even if over nominal": preemption_case(
        base(),
        [
            admitted("a1_low", "a", 2, -1),
            admitted("a2_low", "a", 1, -1),
            admitted("b1", "b", 3),
            admitted("b2", "b", 3),
        ],
        "a",
        4,
        {("a1_low", IN_CQ), ("b1", FAIR)},
    ),
    "prefer workloads that don't make the target CQ have the biggest share": preemption_case(
        base(),
        [
            admitted("b1", "b", 2),
            admitted("b2", "b", 1),
            admitted("b3", "b", 2),
            admitted("c1", "c", 1),
        ],
        "a",
        3.5,
        {("b2", FAIR)},
    ),
    "preempt from different CQs if the end result has a smaller max share": preemption_case(
        base(),
        [
            admitted("b1", "b", 2),
            admitted("b2", "b", 2.5),
            admitted("c1", "c", 2),
            admitted("c2", "c", 2.5),
        ],
        "a",
        3.5,
        {("b1", FAIR), ("c1", FAIR)},
    ),
    "scenario above does not flap": preemption_case(
        base(),
        [admitted("a1", "a", 3.5), admitted("b2", "b", 2.5), admitted("c2", "c", 2.5)],
        "b",
        2,
        set(),
    ),
    "cannot preempt if it would make the candidate CQ go under nominal": preemption_case(
        base(),
        [admitted("b1", "b", 3), admitted("b2", "b", 3), admitted("c1", "c", 3)],
        "a",
        4,
        set(),
    ),
    "workloads under priority threshold not capriciously preempted": preemption_case(
        base(),
        units("a", "a", 3) + units("b", "b", 3) + units("preemptible", "preemptible", 3, -3),
        "a",
        2,
        set(),
    ),
    "preempt lower priority first, even if big": preemption_case(
        base(),
        [admitted("a1", "a", 3), admitted("b_low", "b", 5, 0), admitted("b_high", "b", 1, 1)],
        "a",
        1,
        {("b_low", FAIR)},
        strategies=["LessThanInitialShare"],
    ),
    "preempt workload that doesn't transfer the imbalance, even if high priority": preemption_case(
        base(),
        [admitted("a1", "a", 3), admitted("b_low", "b", 5, 0), admitted("b_high", "b", 1, 1)],
        "a",
        1,
        {("b_high", FAIR)},
        strategies=["LessThanOrEqualToFinalShare"],
    ),
    "CQ with higher weight can preempt more": preemption_case(
        three_queues(weight_a=2),
        units("a", "a", 3) + units("b", "b", 6),
        "a",
        2,
        {("b1", FAIR), ("b2", FAIR)},
    ),
    "can preempt anything borrowing from CQ with 0 weight": preemption_case(
        three_queues(weight_b=0),
        units("a", "a", 3) + units("b", "b", 6),
        "a",
        3,
        {("b1", FAIR), ("b2", FAIR), ("b3", FAIR)},
    ),
    "can't preempt nominal from CQ with 0 weight": preemption_case(
        three_queues(weight_b=0)[:2],
        units("a", "a", 3) + units("b", "b", 3),
        "a",
        1,
        set(),
    ),
    "can't preempt nominal from Cohort with 0 weight": preemption_case(
        [
            cq("left-cq", "root", {"default": 0}, reclaim="Any"),
            cq("right-cq", "right-cohort", {"default": 0}, reclaim="Any", weight=0),
        ],
        [admitted("right-1", "right-cq")],
        "left-cq",
        1,
        set(),
        cohorts=[cohort("right-cohort", "root", cpu=1, weight=0)],
    ),
    "can preempt within cluster queue when no cohort": preemption_case(
        [cq("a", None, {"default": 1}, within="LowerPriority")],
        [admitted("a1", "a")],
        "a",
        1,
        {("a1", IN_CQ)},
        priority=1000,
    ),
    "hierarchical preemption": preemption_case(
        [
            cq("a", "LEFT", {"default": 1}, weight=2, reclaim="Any"),
            cq("b", "LEFT", {"default": 1}),
            cq("c", "ROOT", {"default": 1}),
            cq("d", "RIGHT", {"default": 1}),
            cq("e", "RIGHT", {"default": 1}, weight="0.99"),
        ],
        [admitted(f"{q}{i}", q, 1, i) for q in "bcde" for i in range(1, 6)],
        "a",
        5,
        {("b1", FAIR), ("b2", FAIR), ("c1", FAIR), ("c2", FAIR), ("e1", FAIR)},
        cohorts=[
            cohort("ROOT", cpu=5),
            cohort("LEFT", "ROOT", cpu=5, weight=2),
            cohort("RIGHT", "ROOT", cpu=5),
        ],
    ),
    "borrowing cq in non-borrowing cohort is protected": preemption_case(
        [
            cq("a", "ROOT", {"default": 5}, weight=10, reclaim="Any", within="LowerPriority"),
            cq("b", "RIGHT", None, weight="0.1"),
        ],
        [
            admitted("a1", "a", 1, -1),
            admitted("a2", "a", 1, -1),
            admitted("a3", "a", 1, -1),
            admitted("b1", "b", 1, -1),
        ],
        "a",
        5,
        {("a1", IN_CQ), ("a2", IN_CQ), ("a3", IN_CQ)},
        cohorts=[cohort("ROOT"), cohort("RIGHT", "ROOT", cpu=1, weight="0.1")],
    ),
    "forced to preempt within the CQ: the borrowing workload is too important": preemption_case(
        [
            cq(
                "a",
                "ROOT",
                {"default": 5},
                weight=10,
                reclaim="LowerPriority",
                within="LowerPriority",
            ),
            cq("b", "RIGHT", None, weight="0.1"),
        ],
        [
            admitted("a1", "a", 1, -1),
            admitted("a2", "a", 1, -1),
            admitted("a3", "a", 1, -1),
            admitted("b1", "b", 4, 100),
        ],
        "a",
        4,
        {("a1", IN_CQ), ("a2", IN_CQ), ("a3", IN_CQ)},
        cohorts=[cohort("ROOT"), cohort("RIGHT", "ROOT", cpu=3, weight="0.1")],
    ),
    "deep preemption": preemption_case(
        [cq("a", "AAA", {"default": 0}, reclaim="Any"), cq("b", "BBB", {"default": 0})],
        [admitted("b1", "b")],
        "a",
        1,
        {("b1", FAIR)},
        cohorts=[
            cohort("ROOT"),
            cohort("A", "ROOT", weight="1.01"),
            cohort("AA", "A"),
            cohort("AAA", "AA"),
            cohort("B", "ROOT", weight="0.99"),
            cohort("BB", "B"),
            cohort("BBB", "BB"),
            cohort("C", "ROOT"),
            cohort("CC", "C"),
            cohort("CCC", "CC"),
            cohort("CCCC", "CCC", cpu=1),
        ],
    ),
    "cq with zero weight can reclaim nominal quota": preemption_case(
        [
            cq("a", "ROOT", {"default": 1}, weight="0.0", reclaim="Any"),
            cq("b", "ROOT", {"default": 0}, weight="1.0"),
        ],
        [admitted("b1", "b")],
        "a",
        1,
        {("b1", CLAIM)},
    ),
    "cohort with zero weight can reclaim nominal quota": preemption_case(
        [
            cq("a", "A", {"default": 0}, weight="0.0", reclaim="Any"),
            cq("b", "ROOT", {"default": 0}, weight="1.0"),
        ],
        [admitted("b1", "b")],
        "a",
        1,
        {("b1", FAIR)},
        cohorts=[cohort("A", "ROOT", cpu=1, weight="0.0")],
    ),
    "nominal first: fitting within nominal can preempt despite high aggregate DRS": preemption_case(
        [
            cq(
                "a",
                "all",
                {"premium": 3, "cheap": 0},
                reclaim="Any",
                fungibility={"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "MayStopSearch"},
            ),
            cq("b", "all", {"premium": 0, "cheap": 6}),
        ],
        [admitted("a_prem1", "a", flavor="premium"), admitted("a_prem2", "a", flavor="premium")]
        + [admitted(f"a_cheap{i}", "a", flavor="cheap") for i in range(1, 6)]
        + [admitted("b_prem1", "b", flavor="premium")],
        "a",
        1,
        {("b_prem1", CLAIM)},
        flavor="premium",
        resource_flavors=["premium", "cheap"],
    ),
    "zero weight borrowing preemptor cannot preempt from a non-zero weight CQ": preemption_case(
        [
            cq("a", "all", {"default": 1}, weight=0, reclaim="Any"),
            cq("b", "all", {"default": 1}, weight=1),
        ],
        [admitted("a1", "a"), admitted("b1", "b"), admitted("b2", "b")],
        "a",
        1,
        set(),
    ),
    "zero weight borrowing preemptor can preempt from a zero weight CQ": preemption_case(
        [
            cq("a", "all", {"default": 1}, weight=0, reclaim="Any"),
            cq("b", "all", {"default": 0}, weight=0),
        ],
        units("b", "b", 3),
        "a",
        2,
        {("b1", FAIR)},
        cohorts=[cohort("all", cpu=3)],
    ),
    "non-zero weight borrowing preemptor preempts from a borrowing CQ": preemption_case(
        [
            cq("a", "all", {"default": 1}, weight=1, reclaim="Any"),
            cq("b", "all", {"default": 0}, weight=1),
        ],
        units("b", "b", 3),
        "a",
        2,
        {("b1", FAIR)},
        cohorts=[cohort("all", cpu=3)],
    ),
    "candidates skipped by the first strategy are still available to the second": preemption_case(
        [
            cq("p", "A", {"default": 2}, weight=1, reclaim="Any"),
            cq("y", "A", {"default": 2}, weight=1),
            cq("x", "ROOT", {"default": 1}, weight=1),
        ],
        [
            admitted("p1", "p", 2),
            admitted("y1", "y", 2),
            admitted("y2", "y", 2),
            admitted("x1", "x"),
            admitted("x2", "x"),
        ],
        "p",
        1,
        {("y1", FAIR), ("x1", FAIR)},
        cohorts=[cohort("A", "ROOT", cpu=1, weight=0)],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_fair_preemption(name: str) -> None:
    preemption_targets_only.run(CASES[name], {})
