"""Case forms kubernetes.json documents (its `_meta.conventions`) that the shipped file does
not exercise yet: the taint inclusion-filter grammar and preemption pods carrying affinity
(podAntiAffinity) with InterPodAffinity enabled. Each case is transcribed from the upstream
test it names and run through the same runner as the shipped vectors."""

from __future__ import annotations

import pytest

from conformance.runners.kubernetes import preemption, taint_filter

META: dict = {}


def _taint_case(filter_name: str, taints: list, expected_found: bool) -> dict:
    return {
        "node_taints": taints,
        "pod_tolerations": [],
        "enable_comparison_operators": False,
        "inclusion_filter": filter_name,
        "expected": {"untolerated_taint_found": expected_found, "schedulable": not expected_found},
    }


@pytest.mark.parametrize(
    ("name", "effect", "found"),
    [
        ("NoSchedule-only", "NoSchedule", True),
        ("NoSchedule-only", "NoExecute", False),
        ("NoExecute-only", "PreferNoSchedule", False),
        ("PreferNoSchedule|NoExecute", "PreferNoSchedule", True),
        ("PreferNoSchedule|NoExecute", "NoSchedule", False),
        ("NoSchedule|NoExecute", "NoExecute", True),
        ("none", "NoSchedule", False),
        ("all", "PreferNoSchedule", True),
    ],
)
def test_inclusion_filter_grammar(name, effect, found):
    """v1helper.FindMatchingUntoleratedTaint considers only taints its inclusion filter keeps
    (component-helpers scheduling/corev1 helpers_test.go TestFindMatchingUntoleratedTaint)."""
    taint_filter.run(_taint_case(name, [{"key": "k", "value": "v", "effect": effect}], found), META)


def test_inclusion_filter_grammar_catches_a_wrong_expectation():
    case = _taint_case("NoSchedule-only", [{"key": "k", "effect": "NoExecute"}], True)
    with pytest.raises(AssertionError):
        taint_filter.run(case, META)


def _pod(name, priority, node=None, labels=None, affinity=None):
    pod = {
        "name": name,
        "namespace": "",
        "priority": priority,
        "requests": {"cpu": "100m", "memory": "100"},
        "nodeName": node,
        "startTime_unix_nanos": None,
        "labels": labels or {},
    }
    if affinity is not None:
        pod["affinity"] = affinity
    return pod


ANTI_FOO_ON_HOSTNAME = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]},
                "topologyKey": "hostname",
            }
        ]
    }
}


def anti_affinity_case(expected_victims: list[str]) -> dict:
    """default_preemption_test.go TestDryRunPreemption "pod with anti-affinity is preempted":
    the preemptor (label foo) conflicts with p1.1's required anti-affinity on node1's
    hostname; removing p1.1 alone (lower priority) makes room, so node1 is the only candidate
    and p1.1 its only victim (upstream RemovePod on InterPodAffinity's PreFilter state)."""
    nodes = [
        {
            "name": name,
            "allocatable": {"pods": "32", "cpu": "500m", "memory": "500"},
            "labels": {"hostname": name},
        }
        for name in ("node1", "node2")
    ]
    return {
        "kind": "DryRunPreemption (SelectVictimsOnNode on every Unschedulable node)",
        "filter_plugins": ["NodeResourcesFit", "InterPodAffinity"],
        "nodes": nodes,
        "preemptor": _pod("p", 1000, labels={"foo": ""}),
        "running_pods": [
            _pod("p1.1", 0, "node1", {"foo": ""}, ANTI_FOO_ON_HOSTNAME),
            _pod("p1.2", 100, "node1"),
            _pod("p1.3", 1000, "node1"),
            _pod("p2", 1000, "node2"),
        ],
        "pdbs": [],
        "expected": {
            "candidates": [{"node": "node1", "victims": expected_victims, "numPDBViolations": 0}]
        },
    }


def test_preemption_pods_with_pod_anti_affinity():
    preemption.run(anti_affinity_case(["p1.1"]), META)
    with pytest.raises(AssertionError):
        preemption.run(anti_affinity_case(["p1.1", "p1.2"]), META)


def test_preemption_policy_never_is_honoured():
    """PodEligibleToPreemptOthers: preemptionPolicy Never makes Preempt refuse with
    "not eligible due to preemptionPolicy=Never.", which PostFilter returns as Unschedulable
    with its "preemption: " prefix (default_preemption.go PostFilter)."""
    case = anti_affinity_case(["p1.1"])
    case["kind"] = "DefaultPreemption.PostFilter"
    case["preemptor"]["preemptionPolicy"] = "Never"
    case["filtered_node_statuses"] = {"node1": "Unschedulable", "node2": "Unschedulable"}
    case["expected"] = {
        "nominated_node_name": None,
        "status": {
            "code": "Unschedulable",
            "message": "preemption: not eligible due to preemptionPolicy=Never.",
        },
    }
    preemption.run(case, META)


def test_only_the_registered_filter_plugins_run():
    """Upstream's TestDryRunPreemption builds a framework from `registerPlugins` only: with
    InterPodAffinity not registered, p1.1's anti-affinity does not make it a victim (the
    preemptor fits node1 as is, so node1 is no candidate and neither is node2)."""
    case = anti_affinity_case(["p1.1"])
    case["filter_plugins"] = ["NodeResourcesFit"]
    case["expected"] = {"candidates": []}
    preemption.run(case, META)
