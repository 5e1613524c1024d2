"""NodePorts and nominated pods in the vectorised scheduler and the scalar chain."""

from __future__ import annotations

import numpy as np

from gpupact.cluster.state import ClusterState
from gpupact.engine.placement import ClusterView, FitResult, Placement, Scheduler, explain_fit
from gpupact.engine.preemption import FilterChainFit
from gpupact.kube import host_ports as hp
from gpupact.kube.objects import parse_node, parse_pod


def node(name, cpu="4"):
    return parse_node(
        {
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}},
        }
    )


def pod(name, *, cpu="1", ports=None, init_ports=None, priority=0, node_name="", nominated=""):
    container = {"name": "c", "resources": {"requests": {"cpu": cpu}}}
    if ports:
        container["ports"] = ports
    spec = {"containers": [container], "priority": priority}
    if node_name:
        spec["nodeName"] = node_name
    if init_ports:
        spec["initContainers"] = [
            {"name": "sidecar", "restartPolicy": "Always", "ports": init_ports},
            {"name": "setup", "ports": [{"containerPort": 9, "hostPort": 9999}]},
        ]
    status = {"phase": "Running" if node_name else "Pending"}
    if nominated:
        status["nominatedNodeName"] = nominated
    return parse_pod({"metadata": {"name": name}, "spec": spec, "status": status})


# --- NodePorts ------------------------------------------------------------------------------


def test_host_ports_of_containers_and_sidecars_with_defaults():
    """util.GetHostPorts: hostPort > 0 of restartable init containers (restartPolicy Always)
    and containers; hostIP "" is 0.0.0.0, protocol "" is TCP (HostPortInfo sanitize)."""
    p = pod(
        "p",
        ports=[{"containerPort": 80, "hostPort": 80}, {"containerPort": 81}],
        init_ports=[{"containerPort": 53, "hostPort": 53, "protocol": "UDP", "hostIP": "10.0.0.1"}],
    )
    assert p.host_ports == (hp.HostPort("10.0.0.1", "UDP", 53), hp.HostPort("0.0.0.0", "TCP", 80))


def test_conflict_rule_of_host_port_info():
    """HostPortInfo.CheckConflict: a wanted 0.0.0.0 conflicts with the protocol/port on any
    ip; a specific ip conflicts with the same ip or 0.0.0.0; protocols differ, no conflict."""
    used = hp.UsedPorts([hp.HostPort("10.0.0.1", "TCP", 80)])
    assert used.conflicts(hp.HostPort("0.0.0.0", "TCP", 80))
    assert used.conflicts(hp.HostPort("10.0.0.1", "TCP", 80))
    assert not used.conflicts(hp.HostPort("10.0.0.2", "TCP", 80))
    assert not used.conflicts(hp.HostPort("10.0.0.1", "UDP", 80))
    everywhere = hp.UsedPorts([hp.HostPort("0.0.0.0", "TCP", 80)])
    assert everywhere.conflicts(hp.HostPort("10.0.0.2", "TCP", 80))
    everywhere.remove([hp.HostPort("0.0.0.0", "TCP", 80)])
    assert not everywhere


def test_node_ports_filter_refuses_taken_ports_and_frees_them_on_unbind():
    """nodeports.Filter: Unschedulable "node(s) didn't have free ports for the requested pod
    ports"; it runs after NodeAffinity and before NodeResourcesFit (default plugin order)."""
    state = ClusterState.from_nodes(
        [node("a"), node("b")],
        [pod("web-0", ports=[{"containerPort": 80, "hostPort": 80}], node_name="a")],
    )
    scheduler = Scheduler(state)
    web = pod("web-1", ports=[{"containerPort": 80, "hostPort": 80}])
    placed = scheduler.schedule_one(web)
    assert isinstance(placed, Placement) and placed.node == "b"
    third = pod("web-2", cpu="8", ports=[{"containerPort": 80, "hostPort": 80}])
    refused = scheduler.schedule_one(third)
    assert isinstance(refused, FitResult)
    assert refused.message == (
        "0/2 nodes are available: 2 node(s) didn't have free ports for the requested pod ports."
    )
    assert [v.status.plugin for v in refused.verdicts] == ["NodePorts", "NodePorts"]
    scalar = explain_fit(third, ClusterView.from_state(state))
    assert [(v.node, v.status, v.detail) for v in scalar.verdicts] == [
        (v.node, v.status, v.detail) for v in refused.verdicts
    ]
    state.unbind(placed.binding)
    assert scheduler.explain(third).verdicts[1].status.plugin == "NodeResourcesFit"


def test_preemption_fit_check_frees_a_victims_host_ports():
    """SelectVictimsOnNode removes the victims from the NodeInfo, so their ports are free."""
    holder = pod("holder", ports=[{"containerPort": 80, "hostPort": 80}], node_name="a")
    check = FilterChainFit([node("a")], [holder])
    wanting = pod("p", ports=[{"containerPort": 80, "hostPort": 80}], priority=10)
    assert check(wanting, node("a"), []).plugin == "NodePorts"
    assert check(wanting, node("a"), [holder]).ok


# --- nominated pods -------------------------------------------------------------------------


def test_nominated_pods_of_no_lower_priority_count_as_placed():
    """RunFilterPluginsWithNominatedPods: a node is checked first with the pods nominated to
    it whose priority is >= the pod's added, then without; both must pass. A lower-priority
    nominated pod is ignored, and a pod never counts its own nomination."""
    state = ClusterState.from_nodes(
        [node("a"), node("b", cpu="2")],
        [pod("big", cpu="3", priority=100, nominated="a")],
    )
    assert set(state.nominated) == {"default/big"}
    scheduler = Scheduler(state)
    low = pod("low", cpu="2", priority=10)
    mask = scheduler.feasible_mask(low)
    assert mask.tolist() == [False, True]  # 2 + 3 nominated > 4 cpu on a
    result = scheduler.explain(low)
    assert result.verdicts[0].status.plugin == "NodeResourcesFit"
    assert result.verdicts[0].detail == "cpu 2000 requested, 3000/4000 used"
    high = pod("high", cpu="2", priority=1000)
    assert Scheduler(state).feasible_mask(high).tolist() == [True, True]
    own = pod("big", cpu="3", priority=100)
    assert Scheduler(state).feasible_mask(own).tolist() == [True, False]


def test_nominated_refusals_are_in_the_fit_error_and_end_with_the_bind():
    state = ClusterState.from_nodes([node("a")])
    nominee = pod("nominee", cpu="3", priority=5)
    state.nominate(nominee, 0)
    scheduler = Scheduler(state)
    refused = scheduler.schedule_one(pod("same-priority", cpu="2", priority=5))
    assert isinstance(refused, FitResult)
    assert refused.message == "0/1 nodes are available: 1 Insufficient cpu."
    assert refused.reasons[0].plugin == "NodeResourcesFit"
    state.bind(nominee, 0)
    assert not state.nominated
    assert scheduler.feasible_mask(pod("small", cpu="1", priority=5)).tolist() == [True]


def test_a_nominated_pod_can_only_refuse_never_admit():
    """The pass without nominated pods still runs: a pod whose required affinity is met only by
    a nominated pod is refused (upstream's second pass fails)."""
    affinity = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "db"}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
    state = ClusterState.from_nodes([node("a"), node("b")])
    db = parse_pod(
        {
            "metadata": {"name": "db", "labels": {"app": "db"}},
            "spec": {"containers": [{"name": "c"}], "priority": 50},
        }
    )
    state.nominate(db, 0)
    web = parse_pod(
        {
            "metadata": {"name": "web"},
            "spec": {"containers": [{"name": "c"}], "affinity": affinity},
        }
    )
    assert not np.any(Scheduler(state).feasible_mask(web))


def test_preemption_fit_check_counts_nominated_pods_like_the_scheduler():
    """SelectVictimsOnNode runs RunFilterPluginsWithNominatedPods too: FilterChainFit built
    from a state with nominations gives, node by node, the scheduler's verdicts; removing
    victims frees room but the nominated pod still holds its share."""
    state = ClusterState.from_nodes(
        [node("a"), node("b", cpu="2")],
        [pod("low", cpu="1", priority=1, node_name="a")],
    )
    state.nominate(pod("big", cpu="3", priority=100), 0)
    check = FilterChainFit.from_state(state)
    scheduler = Scheduler(state)
    for incoming in (pod("mid", cpu="1", priority=50), pod("top", cpu="1", priority=500)):
        verdicts = scheduler.explain(incoming).verdicts
        for n, verdict in zip(state.nodes, verdicts, strict=True):
            assert check(incoming, n, []) == verdict.status, (incoming.name, n.name)
    mid = pod("mid", cpu="1", priority=50)
    assert check(mid, state.nodes[0], []).plugin == "NodeResourcesFit"  # 1 + 3 + 1 > 4
    low = state.binding_of("default/low").pod
    assert check(mid, state.nodes[0], [low]).ok
