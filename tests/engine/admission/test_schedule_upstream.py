"""One scheduling cycle: cases transcribed from Kueue's TestSchedule (facts only), run through
the conformance runner, plus the condition messages Kueue writes for heads left pending."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.runners.kueue import one_scheduling_cycle
from conformance.runners.kueue._scenario import NOW, build

from .upstream_cases import FUNGIBILITY, cohort, flavors

LP, ANY, UNSET = "LowerPriority", "Any", "Never(unset)"


def q(
    name,
    cohort_name,
    groups,
    *,
    within=UNSET,
    reclaim=UNSET,
    bwc=None,
    strategy="BestEffortFIFO",
    fungibility=None,
) -> dict[str, Any]:
    """groups: [[(flavor, {resource: nominal | (nominal, borrowingLimit, lendingLimit)})]]."""
    out = []
    for index, group in enumerate(groups):
        for flavor, resources in group:
            quotas = {}
            for resource, value in resources.items():
                nominal, borrowing, lending = (
                    value if isinstance(value, tuple) else (value, None, None)
                )
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
        "queueingStrategy": strategy,
        "flavors": out,
        "preemption": preemption,
        "flavorFungibility": fungibility or FUNGIBILITY,
    }


SALES = q("sales", None, [[("default", {"cpu": (50, 0, None)})]], strategy="StrictFIFO")
ENG_ALPHA = q(
    "eng-alpha",
    "eng",
    [[("on-demand", {"cpu": (50, 50, None)}), ("spot", {"cpu": (100, 0, None)})]],
    strategy="StrictFIFO",
)
ENG_BETA = q(
    "eng-beta",
    "eng",
    [
        [("on-demand", {"cpu": (50, 10, None)}), ("spot", {"cpu": (0, 100, None)})],
        [("model-a", {"example.com/gpu": (20, 0, None)})],
    ],
    within=LP,
    reclaim=ANY,
    strategy="StrictFIFO",
)
BASE = [SALES, ENG_ALPHA, ENG_BETA]
FLAVORS = ["default", "on-demand", "spot", "model-a"]


def ps(name="main", count=1, min_count=None, **requests) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "count": count, "requests": requests}
    if min_count is not None:
        out["min_count"] = min_count
    return out


def pending(name, queue, pod_sets, priority=0, order=0, lq="main", uid="") -> dict[str, Any]:
    out = {
        "name": name,
        "local_queue": lq,
        "queue": queue,
        "priority": priority,
        "creation_order": order,
        "pod_sets": pod_sets,
    }
    if uid:
        out["uid"] = uid
    return out


def held(name, queue, pod_sets, assignment, priority=0) -> dict[str, Any]:
    return {
        "name": name,
        "queue": queue,
        "priority": priority,
        "pod_sets": pod_sets,
        "flavor_assignment": assignment,
    }


TAINTED = {
    "spot-tainted": [{"key": "key", "value": "val", "effect": "NoSchedule"}],
    "spot-tainted-2": [{"key": "key", "value": "val2", "effect": "NoSchedule"}],
}


def case(
    cqs,
    pending_workloads,
    admitted_now,
    left,
    *,
    admitted=(),
    preempted=(),
    cohorts=(),
    counts=None,
    gates=None,
    resource_flavors=FLAVORS,
    messages=None,
) -> dict[str, Any]:
    rfs = flavors(*resource_flavors)
    for rf in rfs:
        rf["nodeTaints"] = TAINTED.get(rf["name"], [])
    out = {
        "cluster_queues": cqs,
        "cohorts": list(cohorts),
        "resource_flavors": rfs,
        "admitted_workloads": list(admitted),
        "pending_workloads": pending_workloads,
        "expected": {
            "admitted": admitted_now,
            "preempted": [{"name": n, "reason": r} for n, r in preempted],
            "left_pending": [{"name": n, "cluster_queue": c, "state": s} for n, c, s in left],
        },
        "messages": messages or {},
    }
    if counts:
        out["expected"]["admitted_pod_counts"] = counts
    if gates:
        out["feature_gates"] = gates
    return out


CASES = {
    "use second flavor when the first has no preemption candidates; MayStopSearch": case(
        [
            q(
                "other-alpha",
                None,
                [[("on-demand", {"cpu": (50, 50, None)}), ("spot", {"cpu": (100, 0, None)})]],
                within=LP,
                fungibility={"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "MayStopSearch"},
            )
        ],
        [pending("eng-alpha/new", "other-alpha", [ps(cpu=20)], lq="other")],
        {"eng-alpha/new": "spot"},
        [],
        admitted=[held("eng-alpha/admitted", "other-alpha", [ps(cpu=50)], "on-demand")],
    ),
    "flavors with mixed misconfiguration and insufficient quota": case(
        [
            q(
                "custom-cq",
                None,
                [
                    [
                        ("spot-tainted", {"cpu": (20, 20, None)}),
                        ("on-demand", {"cpu": (15, 15, None)}),
                    ]
                ],
                strategy="StrictFIFO",
            )
        ],
        [pending("sales/new-job", "custom-cq", [ps(cpu=10)], lq="custom-q")],
        {},
        [("sales/new-job", "custom-cq", "active")],
        admitted=[held("sales/existing-on-demand-job", "custom-cq", [ps(cpu=10)], "on-demand")],
        resource_flavors=[*FLAVORS, "spot-tainted"],
        messages={
            "sales/new-job": "couldn't assign flavors to pod set main: insufficient unused "
            "quota for cpu in flavor on-demand, 5 more needed, untolerated taint "
            "{key val NoSchedule <nil>} in flavor spot-tainted"
        },
    ),
    "flavors are structurally incompatible": case(
        [
            q(
                "custom-cq3",
                None,
                [
                    [
                        ("spot-tainted", {"cpu": (20, 20, None)}),
                        ("spot-tainted-2", {"cpu": (5, 5, None)}),
                    ]
                ],
                strategy="StrictFIFO",
            )
        ],
        [pending("sales/new-job3", "custom-cq3", [ps(cpu=1)], lq="custom-q3")],
        {},
        [("sales/new-job3", "custom-cq3", "active")],
        resource_flavors=[*FLAVORS, "spot-tainted", "spot-tainted-2"],
        messages={
            "sales/new-job3": "couldn't assign flavors to pod set main: untolerated taint "
            "{key val NoSchedule <nil>} in flavor spot-tainted, untolerated taint "
            "{key val2 NoSchedule <nil>} in flavor spot-tainted-2"
        },
    ),
    "admit in different cohorts": case(
        BASE,
        [
            pending("sales/new", "sales", [ps("one", 1, cpu=1)]),
            pending("eng-alpha/new", "eng-alpha", [ps("one", 51, cpu=1)]),
        ],
        {"sales/new": "default", "eng-alpha/new": "on-demand"},
        [],
    ),
    "admit in same cohort with no borrowing": case(
        BASE,
        [
            pending("eng-alpha/new", "eng-alpha", [ps("one", 40, cpu=1)]),
            pending("eng-beta/new", "eng-beta", [ps("one", 40, cpu=1)]),
        ],
        {"eng-alpha/new": "on-demand", "eng-beta/new": "on-demand"},
        [],
    ),
    "can borrow if cohort was assigned and will not result in overadmission": case(
        BASE,
        [
            pending("eng-alpha/new", "eng-alpha", [ps("one", 45, cpu=1)]),
            pending("eng-beta/new", "eng-beta", [ps("one", 55, cpu=1)]),
        ],
        {"eng-alpha/new": "on-demand", "eng-beta/new": "on-demand"},
        [],
    ),
    "cannot borrow resource not listed in clusterQueue": case(
        BASE,
        [pending("eng-alpha/new", "eng-alpha", [ps(**{"example.com/gpu": 1})])],
        {},
        [("eng-alpha/new", "eng-alpha", "active")],
        messages={
            "eng-alpha/new": "couldn't assign flavors to pod set main: resource "
            "example.com/gpu unavailable in ClusterQueue"
        },
    ),
    "not enough resources to borrow, fallback to next flavor": case(
        BASE,
        [pending("eng-alpha/new", "eng-alpha", [ps("one", 60, cpu=1)])],
        {"eng-alpha/new": "spot"},
        [],
        admitted=[held("eng-beta/existing", "eng-beta", [ps("one", 45, cpu=1)], "on-demand")],
    ),
    "workload should not fit in clusterQueue with nonexistent flavor": case(
        [
            q(
                "flavor-nonexistent-cq",
                None,
                [[("nonexistent-flavor", {"cpu": 50})]],
                strategy="StrictFIFO",
            )
        ],
        [pending("sales/foo", "flavor-nonexistent-cq", [ps(cpu=1)], lq="flavor-nonexistent-queue")],
        {},
        [("sales/foo", "flavor-nonexistent-cq", "active")],
        resource_flavors=["default"],
    ),
    "no overadmission while borrowing": case(
        [
            *BASE,
            q(
                "eng-gamma",
                "eng",
                [[("on-demand", {"cpu": (50, 10, None)}), ("spot", {"cpu": (0, 100, None)})]],
                within=LP,
                reclaim=ANY,
            ),
        ],
        [
            pending("eng-beta/new", "eng-beta", [ps("one", 50, cpu=1)], order=0),
            pending("eng-alpha/new-alpha", "eng-alpha", [ps("one", 1, cpu=1)], order=1),
            pending("eng-gamma/new-gamma", "eng-gamma", [ps("one", 50, cpu=1)], order=2),
        ],
        {"eng-beta/new": "on-demand", "eng-alpha/new-alpha": "on-demand"},
        [("eng-gamma/new-gamma", "eng-gamma", "inadmissible")],
        admitted=[
            held(
                "eng-gamma/existing",
                "eng-gamma",
                [ps("borrow-on-demand", 51, cpu=1), ps("use-all-spot", 100, cpu=1)],
                {"borrow-on-demand": {"cpu": "on-demand"}, "use-all-spot": {"cpu": "spot"}},
            )
        ],
        messages={
            "eng-gamma/new-gamma": "couldn't assign flavors to pod set one: insufficient "
            "unused quota for cpu in flavor on-demand, 41 more needed, insufficient unused "
            "quota for cpu in flavor spot, 50 more needed"
        },
    ),
    "partial admission single variable pod set, preempt first": case(
        BASE,
        [
            pending(
                "eng-beta/new",
                "eng-beta",
                [ps("one", 20, min_count=10, **{"example.com/gpu": 1})],
                priority=4,
            )
        ],
        {},
        [("eng-beta/new", "eng-beta", "active")],
        admitted=[
            held(
                "eng-beta/old",
                "eng-beta",
                [ps("one", 10, **{"example.com/gpu": 1})],
                "model-a",
                priority=-4,
            )
        ],
        preempted=[("eng-beta/old", "InClusterQueue")],
        messages={
            "eng-beta/new": "couldn't assign flavors to pod set one: insufficient unused "
            "quota for example.com/gpu in flavor model-a, 10 more needed. Pending the "
            "preemption of 1 workload(s)"
        },
    ),
    "partial admission multiple variable pod sets": case(
        BASE,
        [
            pending(
                "sales/new",
                "sales",
                [
                    ps("one", 20, cpu=1),
                    ps("two", 30, min_count=10, cpu=1),
                    ps("three", 15, min_count=5, cpu=1),
                ],
            )
        ],
        {"sales/new": "default"},
        [],
        counts={"sales/new": {"one": 20, "two": 20, "three": 10}},
    ),
    "partial admission disabled, multiple variable pod sets": case(
        BASE,
        [
            pending(
                "sales/new",
                "sales",
                [
                    ps("one", 20, cpu=1),
                    ps("two", 30, min_count=10, cpu=1),
                    ps("three", 15, min_count=5, cpu=1),
                ],
            )
        ],
        {},
        [("sales/new", "sales", "active")],
        gates={"PartialAdmission": False},
        messages={
            "sales/new": "couldn't assign flavors to pod set three: insufficient quota for "
            "cpu in flavor default, previously considered podsets requests (50) + current "
            "podset request (15) > maximum capacity (50)"
        },
    ),
    "two workloads can borrow different resources from the same flavor in the same cycle": case(
        [
            q(
                n,
                "co",
                [[("default", {"r1": (10, 10, None), "r2": (10, 10, None)})]],
                within=LP,
                reclaim=ANY,
            )
            for n in ("cq1", "cq2", "cq3")
        ],
        [
            pending("sales/wl1", "cq1", [ps(r1=16)], -1, lq="lq1"),
            pending("sales/wl2", "cq2", [ps(r2=16)], -2, lq="lq2"),
        ],
        {"sales/wl1": "default", "sales/wl2": "default"},
        [],
    ),
    "two workloads can borrow the same resources if it fits in the cohort quota": case(
        [
            q(
                n,
                "co",
                [[("default", {"r1": (10, 10, None), "r2": (10, 10, None)})]],
                within=LP,
                reclaim=ANY,
            )
            for n in ("cq1", "cq2", "cq3")
        ],
        [
            pending("sales/wl1", "cq1", [ps(r1=16)], -1, lq="lq1"),
            pending("sales/wl2", "cq2", [ps(r1=14)], -2, lq="lq2"),
        ],
        {"sales/wl1": "default", "sales/wl2": "default"},
        [],
    ),
    "A workload is only eligible to do preemptions if it fits fully within nominal quota": case(
        [
            q("other-alpha", "other", [[("on-demand", {"cpu": 2})]], within=LP, reclaim=ANY),
            q("other-beta", "other", [[("on-demand", {"cpu": 2})]]),
        ],
        [pending("eng-alpha/incoming", "other-alpha", [ps(cpu=3)], 1, lq="other")],
        {},
        [("eng-alpha/incoming", "other-alpha", "inadmissible")],
        admitted=[
            held("eng-alpha/a1", "other-alpha", [ps(cpu=1)], "on-demand", -1),
            held("eng-beta/b1", "other-beta", [ps(cpu=1)], "on-demand", -1),
        ],
        messages={
            "eng-alpha/incoming": "couldn't assign flavors to pod set main: insufficient "
            "unused quota for cpu in flavor on-demand, 1 more needed"
        },
    ),
    "multiple preemptions preemption possible after earlier workload fits": case(
        [
            q("other-alpha", "other", [[("default", {"cpu": 1})]], within=LP),
            q("other-beta", "other", [[("default", {"cpu": 2})]], within=LP),
        ],
        [
            pending("eng-alpha/fit", "other-alpha", [ps(cpu=1)], 100, lq="other"),
            pending(
                "eng-beta/preemptor", "other-beta", [ps(cpu=2)], 99, lq="other", uid="wl-preemptor"
            ),
        ],
        {"eng-alpha/fit": "default"},
        [("eng-beta/preemptor", "other-beta", "active")],
        admitted=[held("eng-beta/b1", "other-beta", [ps(cpu=2)], "default", 0)],
        preempted=[("eng-beta/b1", "InClusterQueue")],
        messages={
            "eng-beta/preemptor": "couldn't assign flavors to pod set main: insufficient "
            "unused quota for cpu in flavor default, 1 more needed. Pending the preemption "
            "of 1 workload(s)"
        },
    ),
    "not enough resources": case(
        BASE,
        [pending("sales/new", "sales", [ps("one", 1, cpu=100)])],
        {},
        [("sales/new", "sales", "active")],
        messages={
            "sales/new": "couldn't assign flavors to pod set one: insufficient quota for "
            "cpu in flavor default, previously considered podsets requests (0) + current "
            "podset request (100) > maximum capacity (50)"
        },
    ),
    "prefer reclamation over cq priority based preemption": case(
        [
            q(
                "other-alpha",
                "other",
                [[("on-demand", {"gpu": 10}), ("spot", {"gpu": 10})]],
                within=LP,
                reclaim=LP,
            ),
            q(
                "other-beta",
                "other",
                [[("on-demand", {"gpu": 0}), ("spot", {"gpu": 0})]],
                within=LP,
                reclaim=LP,
            ),
        ],
        [pending("eng-alpha/preemptor", "other-alpha", [ps(gpu=6)], 100, lq="other")],
        {},
        [("eng-alpha/preemptor", "other-alpha", "active")],
        admitted=[
            held("eng-alpha/a1", "other-alpha", [ps(gpu=5)], "on-demand", 50),
            held("eng-beta/b1", "other-beta", [ps(gpu=5)], "spot", 50),
        ],
        preempted=[("eng-beta/b1", "InCohortReclamation")],
    ),
    "prefer first preemption flavor when second flavor also requires cq preemption": case(
        [
            q(
                "other-alpha",
                "other",
                [[("on-demand", {"gpu": 10}), ("spot", {"gpu": 10})]],
                within=LP,
                reclaim=LP,
            ),
            q("other-beta", "other", [[("on-demand", {"gpu": 0}), ("spot", {"gpu": 0})]]),
        ],
        [pending("eng-alpha/preemptor", "other-alpha", [ps(gpu=5)], 100, lq="other")],
        {},
        [("eng-alpha/preemptor", "other-alpha", "active")],
        admitted=[
            held("eng-alpha/a1", "other-alpha", [ps(gpu=6)], "on-demand", 50),
            held("eng-alpha/a2", "other-alpha", [ps(gpu=5)], "spot", 50),
            held("eng-beta/b1", "other-beta", [ps(gpu=5)], "spot", 9001),
        ],
        preempted=[("eng-alpha/a1", "InClusterQueue")],
    ),
    "capacity not blocked when lending clusterqueue can reclaim (Any)": case(
        [
            q("ClusterQueueA", "root", [[("on-demand", {"gpu": 2})]], reclaim=ANY),
            q("ClusterQueueB", "root", [[("on-demand", {"gpu": 0})]]),
        ],
        [
            pending("eng-alpha/a2-pending", "ClusterQueueA", [ps(gpu=2)], lq="lq", order=0),
            pending("eng-beta/b1-pending", "ClusterQueueB", [ps(gpu=1)], lq="lq", order=1),
        ],
        {"eng-beta/b1-pending": "on-demand"},
        [("eng-alpha/a2-pending", "ClusterQueueA", "inadmissible")],
        admitted=[held("eng-alpha/a1-admitted", "ClusterQueueA", [ps(gpu=1)], "on-demand")],
    ),
    "capacity blocked when lending clusterqueue not guaranteed to reclaim (Never)": case(
        [
            q("ClusterQueueA", "root", [[("on-demand", {"gpu": 2})]], reclaim="Never"),
            q("ClusterQueueB", "root", [[("on-demand", {"gpu": 0})]]),
        ],
        [
            pending("eng-alpha/a2-pending", "ClusterQueueA", [ps(gpu=2)], lq="lq", order=0),
            pending("eng-beta/b1-pending", "ClusterQueueB", [ps(gpu=1)], lq="lq", order=1),
        ],
        {},
        [
            ("eng-alpha/a2-pending", "ClusterQueueA", "inadmissible"),
            ("eng-beta/b1-pending", "ClusterQueueB", "active"),
        ],
        admitted=[held("eng-alpha/a1-admitted", "ClusterQueueA", [ps(gpu=1)], "on-demand")],
        messages={
            "eng-beta/b1-pending": "Workload no longer fits after processing another workload"
        },
    ),
    "admit workload with zero-quantity request for resource not in ClusterQueue": case(
        BASE,
        [pending("sales/zero-resource-wl", "sales", [ps(cpu=1, **{"example.com/gpu": 0})])],
        {"sales/zero-resource-wl": "default"},
        [],
    ),
    "preempt when workload requests zero of a resource not defined in ClusterQueue": case(
        [q("preempt-zero-gpu-cq", None, [[("default", {"cpu": 4})]], within=LP)],
        [
            pending(
                "sales/preemptor",
                "preempt-zero-gpu-cq",
                [ps(cpu=2, **{"example.com/gpu": 0})],
                lq="preempt-zero-gpu-lq",
            )
        ],
        {},
        [("sales/preemptor", "preempt-zero-gpu-cq", "active")],
        admitted=[held("sales/low-priority", "preempt-zero-gpu-cq", [ps(cpu=4)], "default", -1)],
        preempted=[("sales/low-priority", "InClusterQueue")],
    ),
    "PreemptionOverBorrowing: fitting second flavor over first without candidates": case(
        [
            q(
                "nopc-cq",
                "nopc-mid",
                [[("on-demand", {"cpu": (5, 0, None)}), ("spot", {"cpu": 0})]],
                within=LP,
                fungibility={
                    "whenCanBorrow": "TryNextFlavor",
                    "whenCanPreempt": "TryNextFlavor",
                    "preference": "PreemptionOverBorrowing",
                },
            ),
            q("nopc-sibling", "nopc-mid", [[("on-demand", {"cpu": 5}), ("spot", {"cpu": 0})]]),
        ],
        [pending("default/pending-nopc", "nopc-cq", [ps(cpu=5)], lq="nopc-queue")],
        {"default/pending-nopc": "spot"},
        [],
        admitted=[held("default/admitted-nopc", "nopc-cq", [ps(cpu=5)], "on-demand")],
        cohorts=[
            {
                "name": "nopc-root",
                "parent": None,
                "flavors": [
                    {
                        "flavor": "on-demand",
                        "resource_group": 0,
                        "resources": {"cpu": {"nominal": 0}},
                    },
                    {"flavor": "spot", "resource_group": 0, "resources": {"cpu": {"nominal": 5}}},
                ],
            },
            cohort("nopc-mid", "nopc-root"),
        ],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_schedule(name: str) -> None:
    vector = dict(CASES[name])
    messages = vector.pop("messages")
    one_scheduling_cycle.run(vector, {})
    if messages:
        result = build(vector).state.schedule_cycle(NOW)
        got = {h.key: h.message for h in result.left_pending}
        for key, message in messages.items():
            assert got.get(key) == message, f"{key}: got {got.get(key)!r}, expected {message!r}"


# --- TestScheduleForFairSharing -----------------------------------------------------------------

FAIR = {"fairSharing": {}}


def fair(vector: dict[str, Any]) -> dict[str, Any]:
    vector["config"] = FAIR
    return vector


def cohort_quota(name, parent=None, **per_flavor) -> dict[str, Any]:
    """per_flavor: {flavor: {resource: nominal}}."""
    return {
        "name": name,
        "parent": parent,
        "flavors": [
            {
                "flavor": f,
                "resource_group": 0,
                "resources": {r: {"nominal": n} for r, n in res.items()},
            }
            for f, res in per_flavor.items()
        ],
    }


def one(cq, cpu, cohort_name, **kw) -> dict[str, Any]:
    return q(cq, cohort_name, [[("on-demand", {"cpu": cpu})]], **kw)


FAIR_CASES = {
    "fs: nominal-first ordering admits workload fitting within nominal": fair(
        case(
            [
                q(
                    "fs-nom-a",
                    "fs-nom",
                    [[("on-demand", {"cpu": (50, 0, None)}), ("spot", {"cpu": (50, 50, None)})]],
                ),
                q(
                    "fs-nom-b",
                    "fs-nom",
                    [[("on-demand", {"cpu": (10, 50, None)}), ("spot", {"cpu": (50, 0, None)})]],
                ),
            ],
            [
                pending(
                    "eng-beta/borrow-wl", "fs-nom-b", [ps("one", 15, cpu=1)], order=0, lq="fs-nom"
                ),
                pending(
                    "eng-alpha/nom-wl", "fs-nom-a", [ps("one", 45, cpu=1)], order=1, lq="fs-nom"
                ),
            ],
            {"eng-alpha/nom-wl": "on-demand"},
            [("eng-beta/borrow-wl", "fs-nom-b", "active")],
            admitted=[
                held("eng-alpha/spot-heavy", "fs-nom-a", [ps("one", 80, cpu=1)], "spot"),
                held("eng-beta/light-usage", "fs-nom-b", [ps("one", 5, cpu=1)], "on-demand"),
            ],
        )
    ),
    "fs: hierarchical nominal-first prefers non-borrowing subtree": fair(
        case(
            [one("cq-a", 0, "Cohort-A"), one("cq-b", 5, "Cohort-B"), one("cq-c", 0, "Cohort-B")],
            [
                pending("eng-alpha/wl-a", "cq-a", [ps("one", 1, cpu=5)], lq="lq-a"),
                pending("eng-alpha/wl-b", "cq-b", [ps("one", 1, cpu=5)], lq="lq-b"),
            ],
            {"eng-alpha/wl-a": "on-demand"},
            [("eng-alpha/wl-b", "cq-b", "active")],
            admitted=[held("eng-alpha/c0", "cq-c", [ps("one", 1, cpu=10)], "on-demand")],
            cohorts=[
                cohort("root"),
                cohort_quota("Cohort-A", "root", **{"on-demand": {"cpu": 10}}),
                cohort("Cohort-B", "root"),
            ],
        )
    ),
    "fs: hierarchical nominal-first with deeper nesting": fair(
        case(
            [one("cq-a", 0, "SUB-A"), one("cq-b", 5, "Cohort-B"), one("cq-c", 0, "Cohort-B")],
            [
                pending("eng-alpha/wl-a", "cq-a", [ps("one", 1, cpu=5)], lq="lq-a"),
                pending("eng-alpha/wl-b", "cq-b", [ps("one", 1, cpu=5)], lq="lq-b"),
            ],
            {"eng-alpha/wl-a": "on-demand"},
            [("eng-alpha/wl-b", "cq-b", "active")],
            admitted=[held("eng-alpha/c0", "cq-c", [ps("one", 1, cpu=10)], "on-demand")],
            cohorts=[
                cohort("root"),
                cohort("Cohort-A", "root"),
                cohort_quota("SUB-A", "Cohort-A", **{"on-demand": {"cpu": 10}}),
                cohort("Cohort-B", "root"),
            ],
        )
    ),
    "fs: hierarchical nominal-first with mixed CQ and cohort quotas": fair(
        case(
            [
                one("cq-a1", 5, "Cohort-A"),
                one("cq-a2", 3, "Cohort-A"),
                one("cq-b", 5, "Cohort-B"),
                one("cq-c", 3, "Cohort-B"),
            ],
            [
                pending("eng-alpha/wl-a1", "cq-a1", [ps("one", 1, cpu=7)], lq="lq-a1"),
                pending("eng-alpha/wl-b", "cq-b", [ps("one", 1, cpu=4)], lq="lq-b"),
            ],
            {"eng-alpha/wl-a1": "on-demand"},
            [("eng-alpha/wl-b", "cq-b", "active")],
            admitted=[
                held("eng-alpha/a2-admitted", "cq-a2", [ps("one", 1, cpu=6)], "on-demand"),
                held("eng-alpha/c-admitted", "cq-c", [ps("one", 1, cpu=20)], "on-demand"),
            ],
            cohorts=[
                cohort("root"),
                cohort_quota("Cohort-A", "root", **{"on-demand": {"cpu": 10}}),
                cohort_quota("Cohort-B", "root", **{"on-demand": {"cpu": 10}}),
            ],
        )
    ),
    "fs: hierarchical nominal-first per-flavor ignores cross-flavor borrowing": fair(
        case(
            [
                q("cq-a", "Cohort-A", [[("on-demand", {"cpu": 0}), ("spot", {"cpu": 0})]]),
                q("cq-b", "Cohort-B", [[("on-demand", {"cpu": 5}), ("spot", {"cpu": 0})]]),
            ],
            [
                pending("eng-alpha/wl-a", "cq-a", [ps("one", 1, cpu=4)], lq="lq-a"),
                pending("eng-alpha/wl-b", "cq-b", [ps("one", 1, cpu=4)], lq="lq-b"),
            ],
            {"eng-alpha/wl-a": "on-demand"},
            [("eng-alpha/wl-b", "cq-b", "active")],
            admitted=[
                held("eng-alpha/spot-admitted", "cq-a", [ps("one", 1, cpu=5)], "spot"),
                held("eng-alpha/od-admitted", "cq-b", [ps("one", 1, cpu=8)], "on-demand"),
            ],
            cohorts=[
                cohort("root"),
                cohort_quota("Cohort-A", "root", **{"on-demand": {"cpu": 10}}),
                cohort_quota("Cohort-B", "root", spot={"cpu": 10}),
            ],
        )
    ),
    "fs: hierarchical fair sharing schedule workload which wins tournament": fair(
        case(
            [one(n, 0, c) for n, c in (("d", "B"), ("e", "B"), ("f", "C"), ("g", "C"))],
            [
                pending("eng-alpha/d1", "d", [ps("one", 1, cpu=70)], lq="lq-d"),
                pending("eng-alpha/e1", "e", [ps("one", 1, cpu=61)], lq="lq-e"),
                pending("eng-alpha/f1", "f", [ps("one", 1, cpu=1)], lq="lq-f"),
                pending("eng-alpha/g1", "g", [ps("one", 1, cpu=1)], lq="lq-g"),
            ],
            {"eng-alpha/d1": "on-demand"},
            [
                ("eng-alpha/e1", "e", "active"),
                ("eng-alpha/f1", "f", "active"),
                ("eng-alpha/g1", "g", "active"),
            ],
            admitted=[
                held("eng-alpha/d0", "d", [ps("one", 1, cpu=10)], "on-demand"),
                held("eng-alpha/e0", "e", [ps("one", 1, cpu=20)], "on-demand"),
                held("eng-alpha/g0", "g", [ps("one", 1, cpu=100)], "on-demand"),
            ],
            cohorts=[
                cohort_quota("A", **{"on-demand": {"cpu": 200}}),
                cohort("B", "A"),
                cohort("C", "A"),
            ],
        )
    ),
    "fs: two queues with weight 0 schedules workload which borrows less": fair(
        case(
            [
                q(n, "A", [[("on-demand", {"cpu": 0})]], reclaim=ANY, within="Never")
                | {"fairSharing": {"weight": "0"}}
                for n in ("b", "c")
            ],
            [
                pending("eng-alpha/b1", "b", [ps("one", 1, cpu=4)], 9001, lq="lq-b"),
                pending("eng-alpha/c1", "c", [ps("one", 1, cpu=4)], 0, lq="lq-c"),
            ],
            {"eng-alpha/c1": "on-demand"},
            [("eng-alpha/b1", "b", "active")],
            admitted=[held("eng-alpha/b0", "b", [ps("one", 1, cpu=4)], "on-demand")],
            cohorts=[cohort_quota("A", **{"on-demand": {"cpu": 8}})],
        )
    ),
    "fs: two queues with high weight schedules workload which borrows less": fair(
        case(
            [
                q(n, "A", [[("on-demand", {"cpu": 0})]], reclaim=ANY, within="Never")
                | {"fairSharing": {"weight": "123456789"}}
                for n in ("b", "c")
            ],
            [
                pending("eng-alpha/b1", "b", [ps("one", 1, cpu=4)], 9001, lq="lq-b"),
                pending("eng-alpha/c1", "c", [ps("one", 1, cpu=4)], 0, lq="lq-c"),
            ],
            {"eng-alpha/c1": "on-demand"},
            [("eng-alpha/b1", "b", "active")],
            admitted=[held("eng-alpha/b0", "b", [ps("one", 1, cpu=4)], "on-demand")],
            cohorts=[cohort_quota("A", **{"on-demand": {"cpu": 8}})],
        )
    ),
    "fs: schedule singleton cqs and cq without cohort": fair(
        case(
            [one("a", 0, "A"), one("b", 10, "B"), one("c", 10, None)],
            [
                pending("eng-alpha/a1", "a", [ps("one", 1, cpu=10)], lq="lq-a"),
                pending("eng-alpha/b1", "b", [ps("one", 1, cpu=10)], lq="lq-b"),
                pending("eng-alpha/c1", "c", [ps("one", 1, cpu=10)], lq="lq-c"),
            ],
            {"eng-alpha/a1": "on-demand", "eng-alpha/b1": "on-demand", "eng-alpha/c1": "on-demand"},
            [],
            cohorts=[cohort_quota("A", **{"on-demand": {"cpu": 10}}), cohort("B")],
        )
    ),
    "fs: schedule highest priority first": fair(
        case(
            [one("b", 0, "A"), one("c", 0, "A")],
            [
                pending("eng-alpha/b1", "b", [ps("one", 1, cpu=10)], 99, lq="lq-b"),
                pending("eng-alpha/c1", "c", [ps("one", 1, cpu=10)], 101, lq="lq-c"),
            ],
            {"eng-alpha/c1": "on-demand"},
            [("eng-alpha/b1", "b", "active")],
            cohorts=[cohort_quota("A", **{"on-demand": {"cpu": 10}}), cohort("B")],
        )
    ),
    "fs: schedule earliest timestamp first": fair(
        case(
            [one("b", 0, "A"), one("c", 0, "A")],
            [
                pending("eng-alpha/b1", "b", [ps("one", 1, cpu=10)], 101, order=1, lq="lq-b"),
                pending("eng-alpha/c1", "c", [ps("one", 1, cpu=10)], 101, order=0, lq="lq-c"),
            ],
            {"eng-alpha/c1": "on-demand"},
            [("eng-alpha/b1", "b", "active")],
            cohorts=[cohort_quota("A", **{"on-demand": {"cpu": 10}}), cohort("B")],
        )
    ),
    "fs: multiple preemptions within cq": fair(
        case(
            [
                *(
                    q(n, "other", [[("default", {"cpu": 2})]], within=LP)
                    for n in ("other-alpha", "other-beta", "other-gamma")
                ),
                q("resource-bank", "other", [[("default", {"cpu": 3})]]),
            ],
            [
                pending(f"{ns}/preemptor", cq, [ps(cpu=3)], 100, lq="other")
                for ns, cq in (
                    ("eng-alpha", "other-alpha"),
                    ("eng-beta", "other-beta"),
                    ("eng-gamma", "other-gamma"),
                )
            ],
            {},
            [
                ("eng-alpha/preemptor", "other-alpha", "active"),
                ("eng-beta/preemptor", "other-beta", "active"),
                ("eng-gamma/preemptor", "other-gamma", "active"),
            ],
            admitted=[
                held("eng-alpha/a1", "other-alpha", [ps(cpu=3)], "default"),
                held("eng-beta/b1", "other-beta", [ps(cpu=3)], "default"),
                held("eng-gamma/c1", "other-gamma", [ps(cpu=3)], "default"),
            ],
            preempted=[
                ("eng-alpha/a1", "InClusterQueue"),
                ("eng-beta/b1", "InClusterQueue"),
                ("eng-gamma/c1", "InClusterQueue"),
            ],
        )
    ),
    "fs: prefer reclamation over cq priority preemption; preemption while borrowing": fair(
        case(
            [
                q(
                    "other-alpha",
                    "other",
                    [[("on-demand", {"gpu": 7}), ("spot", {"gpu": 7})]],
                    within=LP,
                    reclaim=LP,
                ),
                q("other-beta", "other", [[("on-demand", {"gpu": 3}), ("spot", {"gpu": 3})]]),
            ],
            [pending("eng-alpha/preemptor", "other-alpha", [ps(gpu=8)], 100, lq="other")],
            {},
            [("eng-alpha/preemptor", "other-alpha", "active")],
            admitted=[
                held("eng-alpha/a1", "other-alpha", [ps(gpu=5)], "on-demand", 50),
                held("eng-beta/b1", "other-beta", [ps(gpu=5)], "spot", 50),
            ],
            preempted=[("eng-beta/b1", "InCohortFairSharing")],
        )
    ),
}
for _fs_on in (True, False):
    _v = case(
        [
            q(
                "queue1",
                "child-cohort",
                [[("on-demand", {"gpu": 3}), ("spot", {"gpu": 3})]],
                within=LP,
                reclaim=ANY,
                fungibility={"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor"},
            )
        ],
        [pending("default/a3", "queue1", [ps(gpu=1)], lq="queue1")],
        {"default/a3": "spot"},
        [],
        admitted=[
            held("default/a1", "queue1", [ps(gpu=8)], "on-demand"),
            held("default/a2", "queue1", [ps(gpu=3)], "spot"),
        ],
        cohorts=[
            cohort_quota("root-cohort", **{"on-demand": {"gpu": 2}, "spot": {"gpu": 0}}),
            cohort_quota(
                "child-cohort", "root-cohort", **{"on-demand": {"gpu": 5}, "spot": {"gpu": 7}}
            ),
        ],
    )
    FAIR_CASES[f"prefer flavor with most local capacity (FS={_fs_on})"] = fair(_v) if _fs_on else _v


@pytest.mark.parametrize("name", sorted(FAIR_CASES))
def test_schedule_fair_sharing(name: str) -> None:
    vector = dict(FAIR_CASES[name])
    vector.pop("messages")
    one_scheduling_cycle.run(vector, {})


# --- TestScheduleRecomputePreemptionTargets -----------------------------------------------------

RECOMPUTE_CQS = [
    q(n, c, [[("default", {"cpu": cpu})]], within=LP, reclaim=ANY)
    for n, c, cpu in (
        ("cq-hero", "parent-cohort-a", 3000),
        ("cq-noisy", "parent-cohort-a", 0),
        ("cq-tiny", "parent-cohort-b", 50),
        ("cq-rest", "parent-cohort-c", 0),
    )
]
RECOMPUTE_COHORTS = [
    cohort_quota("root-cohort", default={"cpu": 3005}),
    cohort_quota("parent-cohort-a", "root-cohort", default={"cpu": 0}),
    cohort("parent-cohort-b", "root-cohort"),
    cohort("parent-cohort-c", "root-cohort"),
]


def held_uid(name, queue, cpu, assignment="default", priority=0) -> dict[str, Any]:
    return held(name, queue, [ps(cpu=cpu)], assignment, priority) | {"uid": name.split("/")[1]}


def two_flavor_cqs() -> list[dict[str, Any]]:
    return [
        q(n, "root", [[("default", {"cpu": 5}), ("on-demand", {"cpu": 5})]], within=LP, reclaim=ANY)
        for n in ("cq-1", "cq-2")
    ]


def stickiness(gates=None) -> dict[str, Any]:
    return fair(
        case(
            two_flavor_cqs(),
            [
                pending(
                    "default/wl-pending-high-prio-1",
                    "cq-1",
                    [ps(cpu=10)],
                    11,
                    order=0,
                    lq="lq-1",
                    uid="wl-pending-high-prio-1-uid",
                ),
                pending(
                    "default/wl-pending-high-prio-2",
                    "cq-2",
                    [ps(cpu=10)],
                    10,
                    order=1,
                    lq="lq-2",
                    uid="wl-pending-high-prio-2-uid",
                ),
            ],
            {},
            [
                ("default/wl-pending-high-prio-1", "cq-1", "active" if gates else "inadmissible"),
                ("default/wl-pending-high-prio-2", "cq-2", "active"),
            ],
            admitted=[
                held("default/wl-admitted-default", "cq-1", [ps(cpu=10)], "default")
                | {"uid": "wl-admitted-default-uid"},
                held("default/wl-admitted-on-demand", "cq-1", [ps(cpu=10)], "on-demand")
                | {"uid": "wl-admitted-on-demand-uid"},
            ],
            preempted=[("default/wl-admitted-default", "InCohortFairSharing")],
            cohorts=[cohort("root")],
            gates=gates,
            messages={
                "default/wl-pending-high-prio-1": "Workload has overlapping preemption "
                "targets with another workload"
                if gates
                else "couldn't assign flavors to pod "
                "set main: insufficient unused quota for cpu in flavor default, 10 more "
                "needed, skipping flavor on-demand as it is not found in the nomination "
                "mapping for resource cpu"
            },
        )
    )


RECOMPUTE_CASES = {
    "fs: hierarchical nominal-first prefers non-borrowing leaf CQ (new targets)": fair(
        case(
            RECOMPUTE_CQS,
            [
                pending(
                    "eng-alpha/wl-hero",
                    "cq-hero",
                    [ps(cpu=2990)],
                    order=1,
                    lq="lq-hero",
                    uid="wl-hero",
                ),
                pending(
                    "eng-alpha/wl-tiny-pending",
                    "cq-tiny",
                    [ps(cpu=10)],
                    order=0,
                    lq="lq-tiny",
                    uid="wl-tiny-pending",
                ),
            ],
            {},
            [
                ("eng-alpha/wl-hero", "cq-hero", "active"),
                ("eng-alpha/wl-tiny-pending", "cq-tiny", "active"),
            ],
            admitted=[
                held_uid("eng-alpha/wl-noisy-admitted", "cq-noisy", 3000),
                held_uid("eng-alpha/wl-tiny-admitted", "cq-tiny", 60),
                held_uid("eng-alpha/wl-rest-admitted", "cq-rest", 2995),
            ],
            preempted=[
                ("eng-alpha/wl-noisy-admitted", "InCohortReclamation"),
                ("eng-alpha/wl-rest-admitted", "InCohortFairSharing"),
            ],
            cohorts=RECOMPUTE_COHORTS,
        )
    ),
    "fs: two workloads reclaim nominal quota (deferred fit)": fair(
        case(
            RECOMPUTE_CQS,
            [
                pending(
                    "eng-alpha/wl-hero",
                    "cq-hero",
                    [ps(cpu=2950)],
                    order=1,
                    lq="lq-hero",
                    uid="wl-hero",
                ),
                pending(
                    "eng-alpha/wl-tiny-pending",
                    "cq-tiny",
                    [ps(cpu=50)],
                    order=0,
                    lq="lq-tiny",
                    uid="wl-tiny-pending",
                ),
                pending(
                    "eng-alpha/wl-rest-pending",
                    "cq-rest",
                    [ps(cpu=4000)],
                    10,
                    order=2,
                    lq="lq-rest",
                    uid="wl-rest-pending",
                ),
            ],
            {},
            [
                ("eng-alpha/wl-hero", "cq-hero", "active"),
                ("eng-alpha/wl-tiny-pending", "cq-tiny", "active"),
                ("eng-alpha/wl-rest-pending", "cq-rest", "inadmissible"),
            ],
            admitted=[held_uid("eng-alpha/wl-rest-admitted", "cq-rest", 6055)],
            preempted=[("eng-alpha/wl-rest-admitted", "InCohortReclamation")],
            cohorts=RECOMPUTE_COHORTS,
            messages={
                "eng-alpha/wl-hero": "Workload has overlapping preemption targets with "
                "another workload, but will fit after these preemptions complete"
            },
        )
    ),
    "two workloads reclaim nominal quota (deferred fit)": case(
        RECOMPUTE_CQS,
        [
            pending(
                "eng-alpha/wl-hero", "cq-hero", [ps(cpu=2950)], order=1, lq="lq-hero", uid="wl-hero"
            ),
            pending(
                "eng-alpha/wl-tiny-pending",
                "cq-tiny",
                [ps(cpu=50)],
                order=0,
                lq="lq-tiny",
                uid="wl-tiny-pending",
            ),
        ],
        {},
        [
            ("eng-alpha/wl-hero", "cq-hero", "active"),
            ("eng-alpha/wl-tiny-pending", "cq-tiny", "active"),
        ],
        admitted=[held_uid("eng-alpha/wl-rest-admitted", "cq-rest", 6055)],
        preempted=[("eng-alpha/wl-rest-admitted", "InCohortReclamation")],
        cohorts=RECOMPUTE_COHORTS,
        messages={
            "eng-alpha/wl-hero": "Workload has overlapping preemption targets with "
            "another workload, but will fit after these preemptions complete"
        },
    ),
    "fs: flavor stickiness with recomputation": stickiness(),
    "fs: legacy overlap skip without recomputation": stickiness(
        {"RecomputeAssignmentUponPreemptionTargetsOverlap": False}
    ),
}


@pytest.mark.parametrize("name", sorted(RECOMPUTE_CASES))
def test_schedule_recompute(name: str) -> None:
    vector = dict(RECOMPUTE_CASES[name])
    messages = vector.pop("messages")
    one_scheduling_cycle.run(vector, {})
    result = build(vector).state.schedule_cycle(NOW)
    got = {h.key: h.message for h in result.left_pending}
    for key, message in messages.items():
        assert got.get(key) == message, f"{key}: got {got.get(key)!r}, expected {message!r}"
