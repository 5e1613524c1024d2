"""DefaultPreemption against the scenarios of upstream default_preemption_test.go that the
conformance vectors leave out (candidate counts and offsets, more PostFilter messages,
eligibility, end-to-end Preempt)."""

from __future__ import annotations

import pytest
from preemption_helpers import (
    HIGH,
    LARGE,
    LOW,
    MEDIUM,
    MID,
    NEG,
    NOW,
    SMALL,
    VERY_HIGH,
    VERY_LARGE,
    names,
    node,
    pdb,
    pod,
    snapshot,
    statuses,
)

from gpupact.engine.preemption import (
    DefaultPreemption,
    DefaultPreemptionArgs,
    FilterChainFit,
    PreemptionSnapshot,
)
from gpupact.kube.status import Code, Status


def dry_run(cluster: PreemptionSnapshot, preemptor, *, args=None, offset=0):
    plugin = DefaultPreemption(args)
    fits = FilterChainFit(cluster.nodes, cluster.running_pods())
    return plugin.dry_run_preemption(
        preemptor, list(cluster.nodes), cluster, fits, now=NOW, offset=offset
    )


def by_node(dry) -> dict[str, tuple[list[str], int]]:
    return {c.node: (sorted(names(c.victims)), c.num_pdb_violations) for c in dry.candidates}


# --- TestDryRunPreemption ------------------------------------------------------------------------


def test_higher_priority_running_pods_give_no_candidate():
    nodes = [node("node1"), node("node2")]
    pods = [
        pod("p1", on="node1", priority=MID, req=LARGE),
        pod("p2", on="node2", priority=MID, req=LARGE),
    ]
    dry = dry_run(snapshot(nodes, pods), pod("p", priority=LOW, req=LARGE))
    assert dry.candidates == ()
    assert {n: s.message for n, s in dry.node_statuses.items()} == {
        "node1": "No preemption victims found for incoming pod",
        "node2": "No preemption victims found for incoming pod",
    }


def test_victim_in_disrupted_pods_does_not_violate():
    nodes = [node("node1")]
    pods = [
        pod("p1.1", on="node1", priority=MID, req=MEDIUM, labels={"app": "foo"}),
        pod("p1.2", on="node1", priority=MID, req=MEDIUM, labels={"app": "foo"}),
    ]
    budgets = [pdb({"app": "foo"}, 1, disrupted=["p1.2"])]
    dry = dry_run(snapshot(nodes, pods, budgets), pod("p", priority=HIGH, req=VERY_LARGE))
    assert by_node(dry) == {"node1": (["p1.1", "p1.2"], 0)}


def test_disrupted_victim_is_non_violating_others_violate():
    nodes = [node("node1")]
    pods = [
        pod(f"p1.{i}", on="node1", priority=MID, req=MEDIUM, labels={"app": "foo"})
        for i in (1, 2, 3)
    ]
    budgets = [pdb({"app": "foo"}, 1, disrupted=["p1.3"])]
    dry = dry_run(snapshot(nodes, pods, budgets), pod("p", priority=HIGH, req=VERY_LARGE))
    assert by_node(dry) == {"node1": (["p1.1", "p1.2", "p1.3"], 1)}


def test_pdb_in_another_namespace_does_not_apply():
    nodes = [node("node1")]
    pods = [pod("p1", on="node1", priority=MID, req=VERY_LARGE, labels={"app": "foo"})]
    budgets = [pdb({"app": "foo"}, 0, namespace="other")]
    dry = dry_run(snapshot(nodes, pods, budgets), pod("p", priority=HIGH, req=VERY_LARGE))
    assert by_node(dry) == {"node1": (["p1"], 0)}


def five_nodes(priorities, labels=None):
    nodes = [node(f"node{i}") for i in range(1, 6)]
    labels = labels or {}
    pods = [
        pod(f"p{i}", on=f"node{i}", priority=prio, req=LARGE, labels=labels.get(i))
        for i, prio in enumerate(priorities, start=1)
    ]
    return nodes, pods


LIMIT_TO_TWO = DefaultPreemptionArgs(
    min_candidate_nodes_percentage=40, min_candidate_nodes_absolute=1
)


def test_candidate_count_limits_the_dry_run():
    # upstream: offset 4 -> node5 (yes), node1 (yes), then stop
    nodes, pods = five_nodes([MID] * 5)
    dry = dry_run(
        snapshot(nodes, pods), pod("p", priority=HIGH, req=LARGE), args=LIMIT_TO_TWO, offset=4
    )
    assert [c.node for c in dry.candidates] == ["node5", "node1"]


def test_candidate_count_skips_nodes_without_candidates():
    # upstream: offset 4 -> node5 (no), node1 (yes), node2 (no), node3 (yes)
    nodes, pods = five_nodes([MID, VERY_HIGH, MID, MID, VERY_HIGH])
    dry = dry_run(
        snapshot(nodes, pods), pod("p", priority=HIGH, req=LARGE), args=LIMIT_TO_TWO, offset=4
    )
    assert sorted(c.node for c in dry.candidates) == ["node1", "node3"]


@pytest.mark.parametrize(("offset", "expected"), [(1, ["node2", "node3"]), (3, ["node4", "node5"])])
def test_offset_wraps_around(offset, expected):
    nodes, pods = five_nodes([MID] * 5)
    dry = dry_run(
        snapshot(nodes, pods), pod("tp", priority=HIGH, req=LARGE), args=LIMIT_TO_TWO, offset=offset
    )
    assert [c.node for c in dry.candidates] == expected


def test_dry_run_looks_past_count_for_a_non_violating_candidate():
    # upstream: offset 4 -> node5 (pdb), node1 (pdb), node2 (pdb, no victim), node3 (yes)
    foo = {"app": "foo"}
    nodes, pods = five_nodes([MID] * 5, labels={1: foo, 2: foo, 5: foo})
    budgets = [pdb(foo, 0)]
    dry = dry_run(
        snapshot(nodes, pods, budgets),
        pod("p", priority=HIGH, req=LARGE),
        args=DefaultPreemptionArgs(40, 2),
        offset=4,
    )
    assert by_node(dry) == {"node1": (["p1"], 1), "node3": (["p3"], 0), "node5": (["p5"], 1)}
    # candidates violating no budget come first
    assert dry.candidates[0].node == "node3"


# --- TestSelectBestCandidate ---------------------------------------------------------------------


def select(nodes_count: int, victims: list[tuple[str, int, dict[str, str]]], preemptor_priority):
    nodes = [node(f"node{i}") for i in range(1, nodes_count + 1)]
    pods = [
        pod(name, on=f"node{name[1]}", priority=prio, req=req, start=0)
        for name, prio, req in victims
    ]
    cluster = snapshot(nodes, pods)
    dry = dry_run(cluster, pod("p", priority=preemptor_priority, req=VERY_LARGE))
    best = DefaultPreemption().select_candidate(dry.candidates, now=NOW)
    return best.node if best else None


def test_node_with_min_highest_priority_is_picked():
    victims = [
        ("p1.1", MID, MEDIUM),
        ("p1.2", MID, LARGE),
        ("p2.1", MID, MEDIUM),
        ("p2.2", LOW, MEDIUM),
        ("p3.1", LOW, MEDIUM),
        ("p3.2", LOW, MEDIUM),
    ]
    assert select(3, victims, HIGH) == "node3"


def test_equal_highest_and_sum_then_fewest_pods():
    victims = [
        ("p1.1", MID, SMALL),
        ("p1.2", NEG, SMALL),
        ("p1.3", MID, SMALL),
        ("p1.4", NEG, SMALL),
        ("p2.1", MID, LARGE),
        ("p2.2", NEG, MEDIUM),
        ("p3.1", MID, MEDIUM),
        ("p3.2", NEG, SMALL),
        ("p3.3", LOW, SMALL),
    ]
    assert select(3, victims, HIGH) == "node2"


def test_sum_uses_adjusted_priorities():
    victims = [
        ("p1.1", MID, SMALL),
        ("p1.2", NEG, SMALL),
        ("p1.3", NEG, SMALL),
        ("p2.1", MID, LARGE),
        ("p2.2", NEG, MEDIUM),
        ("p3.1", MID, MEDIUM),
        ("p3.2", NEG, SMALL),
        ("p3.3", LOW, SMALL),
    ]
    assert select(3, victims, HIGH) == "node2"


# --- TestPostFilter ------------------------------------------------------------------------------

ONE_POD = {}  # allocatable pods=1 only (no cpu, memory)
NODE_RES = {"cpu": "200m", "memory": "400"}


def post_filter(nodes, pods, filtered, preemptor, **kwargs):
    plugin = DefaultPreemption()
    return plugin.post_filter(preemptor, snapshot(nodes, pods), filtered, now=NOW, **kwargs)


def test_tied_priority_is_still_unschedulable():
    outcome = post_filter(
        [node("node1", ONE_POD, pods="1")],
        [pod("p1", on="node1")],
        statuses(Code.UNSCHEDULABLE, "node1"),
        pod("p"),
    )
    assert outcome.result is not None and outcome.result.nominated_node_name == ""
    assert outcome.status.code is Code.UNSCHEDULABLE
    assert outcome.status.message == (
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )


def test_not_enough_resource_after_removing_lower_priority_pods():
    outcome = post_filter(
        [node("node1", NODE_RES), node("node2", NODE_RES)],
        [pod("p1", on="node1"), pod("p2", on="node2")],
        statuses(Code.UNSCHEDULABLE, "node1", "node2"),
        pod("p", priority=HIGH, req=LARGE),
    )
    assert outcome.status.message == "preemption: 0/2 nodes are available: 2 Insufficient cpu."
    assert outcome.result is not None and outcome.result.nominated_node_name == ""


def test_mixed_reasons_no_lower_priority_pod_and_no_cpu():
    outcome = post_filter(
        [
            node("node1", ONE_POD, pods="1"),
            node("node2", NODE_RES),
            node("node3", ONE_POD, pods="1"),
        ],
        [
            pod("p1", on="node1", priority=HIGH),
            pod("p2", on="node2"),
            pod("p3", on="node3", priority=HIGH),
        ],
        statuses(Code.UNSCHEDULABLE, "node1", "node2", "node3"),
        pod("p", priority=HIGH, req=LARGE),
    )
    assert outcome.status.message == (
        "preemption: 0/3 nodes are available: 1 Insufficient cpu, "
        "2 No preemption victims found for incoming pod."
    )


def test_unresolvable_and_absent_nodes_are_not_helpful():
    filtered = statuses(Code.UNSCHEDULABLE, "node1", "node2")
    filtered["node4"] = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
    outcome = post_filter(
        [node(f"node{i}", NODE_RES) for i in range(1, 5)],
        [pod("p1", on="node1"), pod("p2", on="node2")],
        filtered,
        pod("p", priority=HIGH, req=LARGE),
    )
    assert outcome.status.message == (
        "preemption: 0/4 nodes are available: 2 Insufficient cpu, "
        "2 Preemption is not helpful for scheduling."
    )
    assert outcome.node_statuses["node3"].message == "Preemption is not helpful for scheduling"


def test_success_returns_victims_to_evict():
    outcome = post_filter(
        [node("node1", ONE_POD, pods="1")],
        [pod("p1", on="node1")],
        statuses(Code.UNSCHEDULABLE, "node1"),
        pod("p", priority=HIGH),
    )
    assert outcome.status.ok and outcome.status.message == ""
    assert outcome.result is not None and outcome.result.nominated_node_name == "node1"
    assert names(outcome.victims) == ["p1"]


def test_no_nodes_is_an_error():
    outcome = post_filter([], [], {}, pod("p", priority=HIGH))
    assert outcome.result is None
    assert outcome.status.code is Code.ERROR
    assert outcome.status.message == "preemption: no nodes available"


def test_fit_check_error_without_candidates_is_an_error():
    def broken(_pod, node, _removed):
        return Status(Code.ERROR, (f"failed on {node.name}",))

    outcome = post_filter(
        [node("node1"), node("node2")],
        [pod("p1", on="node1", req=LARGE), pod("p2", on="node2", req=LARGE)],
        statuses(Code.UNSCHEDULABLE, "node1", "node2"),
        pod("p", priority=HIGH, req=LARGE),
        fits=broken,
    )
    assert outcome.result is None
    assert outcome.status.code is Code.ERROR
    assert outcome.status.message == "preemption: [failed on node1, failed on node2]"


def test_error_on_one_node_does_not_hide_a_candidate_elsewhere():
    def fails_on_node1(p, node, removed):
        if node.name == "node1":
            return Status(Code.ERROR, ("boom",))
        return FilterChainFit(cluster.nodes, cluster.running_pods())(p, node, removed)

    nodes = [node("node1", LARGE), node("node2", LARGE)]
    pods = [pod("p1", on="node1"), pod("p2", on="node2", req=MEDIUM)]
    cluster = snapshot(nodes, pods)
    outcome = DefaultPreemption().post_filter(
        pod("p", priority=HIGH, req=LARGE),
        cluster,
        statuses(Code.UNSCHEDULABLE, "node1", "node2"),
        now=NOW,
        fits=fails_on_node1,
    )
    assert outcome.status.ok
    assert outcome.result is not None and outcome.result.nominated_node_name == "node2"


def test_node_where_pod_already_fits_is_an_error_status():
    # a node marked Unschedulable where nothing needs to go: upstream reports an error status
    dry = dry_run(
        snapshot([node("node1")], [pod("p1", on="node1", req=SMALL)]),
        pod("p", priority=HIGH, req=SMALL),
    )
    assert dry.candidates == ()
    assert dry.node_statuses["node1"].code is Code.ERROR
    assert dry.errors == ('expected at least one victim pod on node "node1"',)


# --- TestPodEligibleToPreemptOthers --------------------------------------------------------------

PREEMPTED = {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}


@pytest.mark.parametrize(
    ("preemptor", "victims", "nominated_status", "expected"),
    [
        pytest.param(
            pod("p", priority=HIGH, nominated="node1"),
            [pod("p1", priority=LOW, on="node1", terminating=True)],
            Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) had untolerated taint",)),
            True,
            id="nominated node now unresolvable",
        ),
        pytest.param(pod("p", priority=HIGH), [], None, True, id="no nominated node"),
        pytest.param(pod("p", priority=HIGH, policy="Never"), [], None, False, id="Never"),
        pytest.param(
            pod("p", priority=HIGH, nominated="node1"),
            [pod("p1", priority=LOW, on="node1", terminating=True, conditions=[PREEMPTED])],
            None,
            False,
            id="victim terminating by preemption",
        ),
        pytest.param(
            pod("p", priority=HIGH, nominated="node1"),
            [pod("p1", priority=LOW, on="node1", terminating=True)],
            None,
            True,
            id="non-victim pod terminating",
        ),
        pytest.param(
            pod("p", priority=HIGH, nominated="node1"),
            [pod("p1", priority=HIGH, on="node1", terminating=True, conditions=[PREEMPTED])],
            None,
            True,
            id="terminating pod of equal priority",
        ),
    ],
)
def test_pod_eligible_to_preempt_others(preemptor, victims, nominated_status, expected):
    cluster = snapshot([node("node1")], victims)
    got, _ = DefaultPreemption().pod_eligible_to_preempt_others(
        preemptor, cluster, nominated_status
    )
    assert got is expected


def test_preemption_policy_never_message():
    outcome = post_filter(
        [node("node1")],
        [pod("p1", on="node1", req=VERY_LARGE)],
        statuses(Code.UNSCHEDULABLE, "node1"),
        pod("p", priority=HIGH, req=VERY_LARGE, policy="Never"),
    )
    assert outcome.result is None
    assert outcome.status.code is Code.UNSCHEDULABLE
    assert outcome.status.message == "preemption: not eligible due to preemptionPolicy=Never."


def test_waits_for_victims_terminating_on_nominated_node():
    outcome = post_filter(
        [node("node1")],
        [pod("p1", on="node1", req=VERY_LARGE, terminating=True, conditions=[PREEMPTED])],
        statuses(Code.UNSCHEDULABLE, "node1"),
        pod("p", priority=HIGH, req=VERY_LARGE, nominated="node1"),
    )
    assert outcome.result is None
    assert outcome.status.message == (
        "preemption: not eligible due to a terminating pod on the nominated node."
    )


# --- TestPreempt ---------------------------------------------------------------------------------


def test_basic_preemption():
    nodes = [node("node1"), node("node2"), node("node3")]
    pods = [
        pod("p1.1", on="node1", priority=LOW, req=SMALL),
        pod("p1.2", on="node1", priority=LOW, req=SMALL),
        pod("p2.1", on="node2", priority=HIGH, req=LARGE),
        pod("p3.1", on="node3", priority=MID, req=MEDIUM),
    ]
    outcome = post_filter(
        nodes,
        pods,
        statuses(Code.UNSCHEDULABLE, "node1", "node2", "node3"),
        pod("p", priority=HIGH, req=VERY_LARGE),
    )
    assert outcome.result is not None and outcome.result.nominated_node_name == "node1"
    assert sorted(names(outcome.victims)) == ["p1.1", "p1.2"]


def test_preemption_for_topology_spread():
    foo = {"foo": ""}
    exists = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": k,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": exists,
        }
        for k in ("zone", "hostname")
    ]
    nodes = [
        node("node-a", labels={"hostname": "node-a", "zone": "zone1"}),
        node("node-b", labels={"hostname": "node-b", "zone": "zone1"}),
        node("node-x", labels={"hostname": "node-x", "zone": "zone2"}),
    ]
    pods = [
        pod("p-a1", on="node-a", labels=foo, priority=HIGH),
        pod("p-a2", on="node-a", labels=foo, priority=HIGH),
        pod("p-b1", on="node-b", labels=foo, priority=LOW),
        pod("p-x1", on="node-x", labels=foo, priority=HIGH),
        pod("p-x2", on="node-x", labels=foo, priority=HIGH),
    ]
    outcome = post_filter(
        nodes,
        pods,
        statuses(Code.UNSCHEDULABLE, "node-a", "node-b", "node-x"),
        pod("p", labels=foo, priority=HIGH, spread=spread),
    )
    assert outcome.result is not None and outcome.result.nominated_node_name == "node-b"
    assert names(outcome.victims) == ["p-b1"]
