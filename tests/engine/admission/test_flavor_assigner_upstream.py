"""FlavorAssigner cases transcribed from Kueue's TestAssignFlavors (facts only), run through the
flavor_assignment_only conformance runner."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.runners.kueue import flavor_assignment_only

FLAVORS = [
    {"name": "default", "nodeLabels": {}},
    {"name": "one", "nodeLabels": {"type": "one"}},
    {"name": "two", "nodeLabels": {"type": "two"}},
    {"name": "label-x-a", "nodeLabels": {"x": "a"}},
    {"name": "label-xy-b", "nodeLabels": {"x": "b", "y": "k"}},
    {
        "name": "tainted",
        "nodeLabels": {},
        "nodeTaints": [{"key": "instance", "value": "spot", "effect": "NoSchedule"}],
    },
]
TRY_NEXT = {"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor"}
STOP = {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "MayStopSearch"}


def cq(name, flavors, cohort=None, fungibility=None) -> dict[str, Any]:
    """flavors: [(flavor, {resource: nominal | {nominal, borrowingLimit, lendingLimit}})]."""
    return {
        "name": name,
        "cohort": cohort,
        "queueingStrategy": "BestEffortFIFO",
        "flavors": [
            {
                "flavor": f,
                "resource_group": 0,
                "resources": {
                    r: (v if isinstance(v, dict) else {"nominal": v}) for r, v in res.items()
                },
            }
            for f, res in flavors
        ],
        "preemption": {"withinClusterQueue": "Never", "reclaimWithinCohort": "Never"},
        "flavorFungibility": fungibility
        or {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
    }


def case(
    queues, pod_sets, mode, *, assignment=None, borrowing=None, attempts=None, usage=None
) -> dict[str, Any]:
    expected: dict[str, Any] = {"representative_mode": mode, "preempted": [], "left_pending": []}
    expected["admitted"] = {"wl": assignment} if assignment else {}
    if borrowing is not None:
        expected["borrowing"] = borrowing
    if attempts is not None:
        expected["flavor_attempts"] = attempts
    return {
        "cluster_queues": queues,
        "cohorts": [],
        "resource_flavors": [{"nodeTaints": [], "tolerations": [], **f} for f in FLAVORS],
        "cluster_queue_usage": usage or {},
        "admitted_workloads": [],
        "pending_workloads": [
            {
                "name": "wl",
                "queue": queues[0]["name"],
                "priority": 0,
                "creation_order": 0,
                "pod_sets": pod_sets,
            }
        ],
        "expected": expected,
    }


def ps(name="main", count=1, **requests) -> dict[str, Any]:
    return {"name": name, "count": count, "requests": requests}


def affinity(key, *values) -> list[dict[str, Any]]:
    return [{"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}]


NO_AFFINITY = "NoMatchingFlavor"
MAX = "ExceedsMaxQuota"
SECONDARY = cq("test-secondary-clusterqueue", [("one", {"cpu": 1})], "test-cohort")

CASES = {
    "multiple specs, fit different flavors": case(
        [cq("test-clusterqueue", [("one", {"cpu": 4}), ("two", {"cpu": 10})])],
        [ps("driver", cpu=5), ps("worker", cpu=3)],
        "Fit",
        assignment={"driver": {"cpu": "two"}, "worker": {"cpu": "one"}},
        attempts=[
            {
                "flavor": "one",
                "mode": "NoFit",
                "noFitReason": MAX,
                "reason": "insufficient quota for cpu in flavor one, previously considered podsets "
                "requests (0) + current podset request (5) > maximum capacity (4)",
            },
            {"flavor": "two", "mode": "Fit"},
        ],
    ),
    "multiple specs, fits borrowing": case(
        [
            cq(
                "test-clusterqueue",
                [("default", {"cpu": {"nominal": 2, "borrowingLimit": 98}, "memory": 2})],
                "test-cohort",
            ),
            cq(
                "test-secondary-clusterqueue",
                [("default", {"cpu": 198, "memory": 198})],
                "test-cohort",
            ),
        ],
        [ps("driver", cpu=4, memory=1), ps("worker", cpu=6, memory=4)],
        "Fit",
        assignment="default",
        borrowing=1,
        attempts=[{"flavor": "default", "mode": "Fit", "borrow": 1}],
    ),
    "not enough space to borrow": case(
        [
            cq("test-clusterqueue", [("one", {"cpu": 1})], "test-cohort"),
            cq(
                "test-secondary-clusterqueue",
                [("one", {"cpu": {"nominal": 10, "lendingLimit": 0}})],
                "test-cohort",
            ),
        ],
        [ps(cpu=2)],
        "NoFit",
        usage={"test-secondary-clusterqueue": {"one": {"cpu": 9}}},
        attempts=[{"flavor": "one", "mode": "NoFit", "noFitReason": MAX}],
    ),
    "past min, but can preempt in ClusterQueue": case(
        [cq("test-clusterqueue", [("one", {"cpu": 2})])],
        [ps(cpu=2)],
        "Preempt",
        assignment="one",
        usage={"test-clusterqueue": {"one": {"cpu": 1}}},
        attempts=[
            {
                "flavor": "one",
                "mode": "Preempt",
                "reason": "insufficient unused quota for cpu in flavor one, 1 more needed",
            }
        ],
    ),
    "num pods fit": case(
        [cq("test-clusterqueue", [("default", {"pods": 3, "cpu": 10})])],
        [ps(count=3, cpu=1)],
        "Fit",
        assignment="default",
    ),
    "num pods don't fit": case(
        [cq("test-clusterqueue", [("default", {"pods": 2, "cpu": 10})])],
        [ps(count=3, cpu=1)],
        "NoFit",
        attempts=[
            {
                "flavor": "default",
                "mode": "NoFit",
                "noFitReason": MAX,
                "reason": "insufficient quota for pods in flavor default, previously "
                "considered podsets requests (0) + current podset request (3) > "
                "maximum capacity (2)",
            }
        ],
    ),
    "preempt before try next flavor": case(
        [
            cq(
                "test-clusterqueue",
                [("one", {"pods": 10, "cpu": 10}), ("two", {"pods": 10, "cpu": 10})],
                fungibility=STOP,
            )
        ],
        [ps(cpu=9)],
        "Preempt",
        assignment="one",
        usage={"test-clusterqueue": {"one": {"cpu": 2}}},
        attempts=[{"flavor": "one", "mode": "Preempt"}],
    ),
    "preempt try next flavor": case(
        [
            cq(
                "test-clusterqueue",
                [("one", {"pods": 10, "cpu": 10}), ("two", {"pods": 10, "cpu": 10})],
            )
        ],
        [ps(cpu=9)],
        "Fit",
        assignment="two",
        usage={"test-clusterqueue": {"one": {"cpu": 2}}},
        attempts=[{"flavor": "one", "mode": "Preempt"}, {"flavor": "two", "mode": "Fit"}],
    ),
    "borrow try next flavor, found the first flavor": case(
        [
            cq(
                "test-clusterqueue",
                [
                    ("one", {"pods": 10, "cpu": {"nominal": 10, "borrowingLimit": 1}}),
                    ("two", {"pods": 10, "cpu": 1}),
                ],
                "test-cohort",
                TRY_NEXT,
            ),
            SECONDARY,
        ],
        [ps(cpu=9)],
        "Fit",
        assignment="one",
        borrowing=1,
        usage={"test-clusterqueue": {"one": {"cpu": 2}}},
        attempts=[
            {"flavor": "one", "mode": "Fit", "borrow": 1},
            {"flavor": "two", "mode": "NoFit", "noFitReason": MAX},
        ],
    ),
    "borrow try next flavor, found the second flavor": case(
        [
            cq(
                "test-clusterqueue",
                [
                    ("one", {"pods": 10, "cpu": {"nominal": 10, "borrowingLimit": 1}}),
                    ("two", {"pods": 10, "cpu": 10}),
                ],
                "test-cohort",
                TRY_NEXT,
            ),
            SECONDARY,
        ],
        [ps(cpu=9)],
        "Fit",
        assignment="two",
        borrowing=0,
        usage={"test-clusterqueue": {"one": {"cpu": 2}}},
        attempts=[{"flavor": "one", "mode": "Fit", "borrow": 1}, {"flavor": "two", "mode": "Fit"}],
    ),
    "lend try next flavor, found the first flavor": case(
        [
            cq(
                "test-clusterqueue",
                [
                    ("one", {"pods": 10, "cpu": {"nominal": 10, "lendingLimit": 1}}),
                    ("two", {"pods": 10, "cpu": {"nominal": 1, "lendingLimit": 0}}),
                ],
                "test-cohort",
                TRY_NEXT,
            ),
            SECONDARY,
        ],
        [ps(cpu=9)],
        "Fit",
        assignment="one",
        borrowing=1,
        usage={"test-clusterqueue": {"one": {"cpu": 2}}},
    ),
    "multiple flavors, fits with node affinity": case(
        [
            cq(
                "test-clusterqueue",
                [("one", {"cpu": 4, "memory": 1}), ("two", {"cpu": 4, "memory": 1})],
            )
        ],
        [
            ps(cpu=1, memory=1)
            | {
                "nodeSelector": {"ignored1": "foo"},
                "requiredNodeAffinityTerms": affinity("type", "two"),
            }
        ],
        "Fit",
        assignment="two",
        attempts=[
            {
                "flavor": "one",
                "mode": "NoFit",
                "noFitReason": NO_AFFINITY,
                "reason": "flavor one doesn't match node affinity",
            },
            {"flavor": "two", "mode": "Fit"},
        ],
    ),
    "multiple flavors, node affinity fits any flavor": case(
        [cq("test-clusterqueue", [("one", {"cpu": 4}), ("two", {"cpu": 4})])],
        [
            ps(cpu=1)
            | {
                "requiredNodeAffinityTerms": affinity("ignored2", "bar")
                + affinity("cpuType", "two")
            }
        ],
        "Fit",
        assignment="one",
    ),
    "multiple flavors with different label keys, selector only uses the flavor's keys": case(
        [cq("test-clusterqueue", [("label-x-a", {"cpu": 4}), ("label-xy-b", {"cpu": 4})])],
        [ps(cpu=1) | {"nodeSelector": {"x": "a", "y": "g"}}],
        "Fit",
        assignment="label-x-a",
    ),
    "labelless flavor in group with labeled flavor": case(
        [cq("test-clusterqueue", [("default", {"cpu": 4}), ("two", {"cpu": 4})])],
        [ps(cpu=1) | {"nodeSelector": {"type": "two"}}],
        "Fit",
        assignment="default",
    ),
    "multiple flavors, doesn't fit node affinity": case(
        [cq("test-clusterqueue", [("one", {"cpu": 4}), ("two", {"cpu": 4})])],
        [ps(cpu=1) | {"requiredNodeAffinityTerms": affinity("type", "three")}],
        "NoFit",
        attempts=[
            {"flavor": "one", "mode": "NoFit", "noFitReason": NO_AFFINITY},
            {"flavor": "two", "mode": "NoFit", "noFitReason": NO_AFFINITY},
        ],
    ),
    "single flavor, fits tainted flavor with toleration": case(
        [cq("test-clusterqueue", [("tainted", {"cpu": 4})])],
        [
            ps(cpu=1)
            | {
                "tolerations": [
                    {
                        "key": "instance",
                        "operator": "Equal",
                        "value": "spot",
                        "effect": "NoSchedule",
                    }
                ]
            }
        ],
        "Fit",
        assignment="tainted",
    ),
    "resource not listed in clusterQueue": case(
        [cq("test-clusterqueue", [("one", {"cpu": 4})])],
        [ps(**{"example.com/gpu": 1})],
        "NoFit",
    ),
    "zero resource request not in clusterQueue should succeed": case(
        [cq("test-clusterqueue", [("one", {"cpu": 4})])],
        [ps(cpu=1, **{"example.com/gpu": 0})],
        "Fit",
        assignment="one",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_assign_flavors(name: str) -> None:
    flavor_assignment_only.run(CASES[name], {})
