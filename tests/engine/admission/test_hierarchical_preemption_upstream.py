"""Classical preemption in hierarchical cohorts, transcribed from Kueue's
TestHierarchicalPreemptions (facts only)."""

from __future__ import annotations

import pytest

from conformance.runners.kueue import preemption_targets_only

from .upstream_cases import admitted, cohort, cq, preemption_case

CLAIM = "InCohortReclamation"
WHILE_BORROWING = "InCohortReclaimWhileBorrowing"
IN_CQ = "InClusterQueue"
BWC0 = {"policy": "LowerPriority", "maxPriorityThreshold": 0}
EMPTY = {"default": {}}


def q(name: str, parent: str, quotas=EMPTY, *, reclaim: str = "Any", bwc=None) -> dict:
    return cq(name, parent, quotas, within="LowerPriority", reclaim=reclaim, bwc=bwc)


def r_and_c(c_cpu, r_cpu=None) -> list[dict]:
    return [cohort("r", cpu=r_cpu), cohort("c", "r", cpu=c_cpu)]


CASES = {
    "preempt with hierarchical advantage": preemption_case(
        [q("q", "c"), q("q_borrowing", "r")],
        [admitted("admitted2", "q_borrowing", 2)],
        "q",
        2,
        {("admitted2", CLAIM)},
        cohorts=r_and_c(2),
        fair=False,
    ),
    "avoid queues within nominal quota": preemption_case(
        [q("q_nominal", "r", {"default": 2}), q("q", "c"), q("q_borrowing", "r")],
        [admitted("admitted1", "q_nominal", 2, -10), admitted("admitted2", "q_borrowing", 2)],
        "q",
        2,
        {("admitted2", CLAIM)},
        cohorts=r_and_c(2),
        fair=False,
    ),
    "preempt multiple with hierarchical advantage": preemption_case(
        [q("q", "c"), q("q_borrowing", "r")],
        [admitted("admitted1", "q_borrowing", 1, 1), admitted("admitted2", "q_borrowing", 1, 2)],
        "q",
        2,
        {("admitted1", CLAIM), ("admitted2", CLAIM)},
        cohorts=r_and_c(2),
        fair=False,
    ),
    "preempt in cohort and own CQ": preemption_case(
        [q("q", "c", bwc=BWC0), q("q_same_cohort", "c")],
        [
            admitted("admitted_not_preemptible", "q_same_cohort", 1, 1),
            admitted("admitted_preemptible", "q_same_cohort", 1, 0),
            admitted("admitted_own_queue", "q", 1, -1),
        ],
        "q",
        2,
        {("admitted_own_queue", IN_CQ), ("admitted_preemptible", WHILE_BORROWING)},
        priority=1,
        cohorts=r_and_c(3),
        fair=False,
    ),
    "prefer to preempt hierarchical candidate": preemption_case(
        [q("q", "c"), q("q_borrowing", "r")],
        [
            admitted("admitted_borrowing", "q_borrowing", 1, 1),
            admitted("admitted_same_queue", "q", 1, -2),
        ],
        "q",
        1,
        {("admitted_borrowing", CLAIM)},
        cohorts=r_and_c(2),
        fair=False,
    ),
    "forced to preempt priority candidate": preemption_case(
        [q("q", "c", bwc=BWC0), q("q_nominal", "r", {"default": 2}), q("q_same_cohort", "c")],
        [
            admitted("admitted_nominal", "q_nominal", 2, -10),
            admitted("admitted_same_cohort", "q_same_cohort", 2, -1),
        ],
        "q",
        2,
        {("admitted_same_cohort", WHILE_BORROWING)},
        cohorts=r_and_c(2),
        fair=False,
    ),
    "incoming workload fits in CQ nominal quota": preemption_case(
        [q("q", "c", {"default": 4}), q("q_borrowing", "r"), q("q_same_cohort", "c")],
        [
            admitted("admitted_borrowing", "q_borrowing", 3, 10),
            admitted("admitted_same_cohort", "q_same_cohort", 3, 10),
        ],
        "q",
        4,
        {("admitted_borrowing", CLAIM), ("admitted_same_cohort", CLAIM)},
        cohorts=r_and_c(2),
        fair=False,
    ),
    "preempt hierarchical and priority candidates": preemption_case(
        [
            q("q", "c", reclaim="LowerPriority", bwc=BWC0),
            q("q_borrowing", "r"),
            q("q_same_cohort", "c"),
        ],
        [
            admitted("admitted_borrowing", "q_borrowing", 2, -1),
            admitted("admitted_same_cohort_preemptible", "q_same_cohort", 1, -1),
            admitted("admitted_borrowing_not_preemptible", "q_borrowing", 2, 1),
        ],
        "q",
        3,
        {("admitted_borrowing", CLAIM), ("admitted_same_cohort_preemptible", WHILE_BORROWING)},
        cohorts=r_and_c(4, r_cpu=1),
        fair=False,
    ),
    "preempt hierarchical candidates and inside CQ": preemption_case(
        [
            q("q", "c", reclaim="LowerPriority", bwc=BWC0),
            q("q_borrowing", "r"),
            q("q_same_cohort", "c"),
        ],
        [
            admitted("admitted_borrowing", "q_borrowing", 2, -1),
            admitted("admitted_same_queue_preemptible", "q", 1, -1),
            admitted("admitted_borrowing_not_preemptible", "q_borrowing", 2, 1),
        ],
        "q",
        3,
        {("admitted_borrowing", CLAIM), ("admitted_same_queue_preemptible", IN_CQ)},
        cohorts=r_and_c(4, r_cpu=1),
        fair=False,
    ),
    "reclaim nominal quota from lowest priority workload, excluding non-borrowing": preemption_case(
        [q("q", "c"), q("q_borrowing", "r"), q("q_nominal", "r", {"default": 2})],
        [
            admitted("admitted_borrowing_prio_8", "q_borrowing", 1, 8),
            admitted("admitted_borrowing_prio_9", "q_borrowing", 1, 9),
            admitted("admitted_borrowing_prio_10", "q_borrowing", 1, 9),
            admitted("admitted_nominal", "q_nominal", 2, -2),
        ],
        "q",
        1,
        {("admitted_borrowing_prio_8", CLAIM)},
        cohorts=r_and_c(3),
        fair=False,
    ),
    "infeasible preemption all available workloads in pruned subtrees": preemption_case(
        [q("q_other", "c_other"), q("q", "c"), q("q_same_cohort", "c")],
        [
            admitted("admitted_other_1", "q_other", 1, -10),
            admitted("admitted_other_2", "q_other", 1, -10),
            admitted("admitted_same_cohort", "q_same_cohort", 2, 0),
        ],
        "q",
        2,
        set(),
        cohorts=[*r_and_c(2), cohort("c_other", "r", cpu=2)],
        fair=False,
    ),
    "hierarchical preemption with multiple resources": preemption_case(
        [q("q", "c"), q("q_borrowing", "r"), q("q_same_cohort", "c")],
        [
            admitted("admitted_borrowing", "q_borrowing", requests={"cpu": 3, "memory": 1}),
            admitted(
                "admitted_same_cohort",
                "q_same_cohort",
                priority=-2,
                requests={"cpu": 1, "memory": 3},
            ),
        ],
        "q",
        None,
        {("admitted_borrowing", CLAIM)},
        priority=-2,
        requests={"cpu": 2, "memory": 1},
        cohorts=[
            cohort("r", cpu=3),
            cohort("c", "r", resources={"cpu": {"nominal": 4}, "memory": {"nominal": 4}}),
        ],
        fair=False,
    ),
    "respect lending limits": preemption_case(
        [
            q("q", "c", {"default": {"cpu": {"nominal": 3, "lendingLimit": 2}}}),
            q("q_borrowing", "r"),
        ],
        [admitted("admitted_borrowing", "q_borrowing", 4, 0)],
        "q",
        5,
        {("admitted_borrowing", CLAIM)},
        priority=-2,
        cohorts=r_and_c(2),
        fair=False,
    ),
    "reclaim in complex hierarchy": preemption_case(
        [
            cq(n, parent, None, within="LowerPriority", reclaim="Any")
            for n, parent in (
                ("q1", "c12"),
                ("q2", "c23"),
                ("q3", "c22"),
                ("q4", "c32"),
                ("q5", "c31"),
            )
        ],
        [
            admitted("admitted_borrowing_1", "q1", 4, -6),
            admitted("admitted_borrowing_2", "q1", 4, -5),
            admitted("admitted_borrowing_3", "q2", 4, -9),
            admitted("admitted_borrowing_4", "q2", 4, -10),
            admitted("admitted_borrowing_5", "q3", 4, -4),
            admitted("admitted_borrowing_6", "q3", 3, -3),
            admitted("admitted_borrowing_7", "q4", 2, 4),
            admitted("admitted_borrowing_8", "q4", 3, 2),
        ],
        "q5",
        7,
        {("admitted_borrowing_1", CLAIM), ("admitted_borrowing_4", CLAIM)},
        priority=-2,
        cohorts=[
            cohort("r"),
            cohort("c11", "r", cpu=4),
            cohort("c12", "r", cpu=4),
            cohort("c21", "c11", cpu=4),
            cohort("c22", "c11", cpu=4),
            cohort("c23", "c11", cpu=4),
            cohort("c31", "c21", cpu=4),
            cohort("c32", "c21", cpu=4),
        ],
        fair=False,
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_hierarchical_preemption(name: str) -> None:
    preemption_targets_only.run(CASES[name], {})
