"""Volcano and KAI sessions run the placement engine's filters against the session's own
tentative placements: a gang's members placed earlier in the session count for inter-pod
anti-affinity and topology spread (and host ports once the placement engine has NodePorts).

Each scenario is built so that without the constraint the gang would pack onto one node
(Volcano without nodeorder takes the first feasible node; KAI binpacks), so the constraint
is what spreads it."""

from __future__ import annotations

from typing import Any

import pytest

from gpupact.engine.gang import PodGroupPhase, parse_podgroup
from gpupact.engine.kai import KaiSession, parse_kai_podgroup, parse_kai_queue
from gpupact.engine.volcano import PluginOption, Session
from gpupact.engine.volcano.model import parse_queue
from gpupact.kube.objects import parse_node, parse_pod

GANG = PluginOption("gang", frozenset({"jobOrder", "jobReady", "jobPipelined", "jobStarving"}))
PREDICATES = PluginOption("predicates", frozenset({"predicate"}))
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"

ONE_PER_NODE = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "train"}}, "topologyKey": HOSTNAME}
        ]
    }
}
ZONE_SPREAD = [
    {
        "maxSkew": 1,
        "topologyKey": ZONE,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "train"}},
    }
]


def node(name: str, zone: str = "a", gpus: int = 8) -> dict:
    alloc = {"cpu": "64", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": str(gpus)}
    labels = {HOSTNAME: name, ZONE: zone}
    return {"metadata": {"name": name, "labels": labels}, "status": {"allocatable": alloc}}


def pod(name: str, group_key: str, group: str, **spec: Any) -> dict:
    phase = spec.pop("phase", "Pending")
    labels = spec.pop("labels", {"app": "train"})
    requests = {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"}
    body = {"containers": [{"name": "c", "resources": {"requests": requests}}], **spec}
    meta = {
        "name": name,
        "namespace": "ns",
        "uid": f"ns-{name}",
        "labels": labels,
        "annotations": {group_key: group},
    }
    return {"metadata": meta, "spec": body, "status": {"phase": phase}}


def volcano(nodes, pods, size: int, vectorised: bool = True):
    podgroup = {
        "metadata": {"name": "train", "namespace": "ns"},
        "spec": {"minMember": size, "queue": "q"},
        "status": {"phase": "Inqueue"},
    }
    ssn = Session(
        nodes=[parse_node(n) for n in nodes],
        pods=[parse_pod(p) for p in pods],
        podgroups=[parse_podgroup(podgroup)],
        queues=[parse_queue({"metadata": {"name": "q"}, "spec": {"weight": 1}})],
        tiers=[[GANG, PREDICATES]],
        vectorised=vectorised,
    )
    return ssn.run(["allocate"])


def kai(nodes, pods, size: int, vectorised: bool = True):
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    queue = {
        "metadata": {"name": "q"},
        "spec": {"resources": {"gpu": unlimited, "cpu": unlimited, "memory": unlimited}},
    }
    podgroup = {
        "metadata": {"name": "train", "namespace": "ns"},
        "spec": {"minMember": size, "queue": "q"},
    }
    ssn = KaiSession(
        nodes=[parse_node(n) for n in nodes],
        pods=[parse_pod(p) for p in pods],
        podgroups=[parse_kai_podgroup(podgroup, {})],
        queues=[parse_kai_queue(queue)],
        vectorised=vectorised,
    )
    return ssn.run(["allocate"])


ENGINES = [
    pytest.param(volcano, "scheduling.k8s.io/group-name", id="volcano"),
    pytest.param(kai, "pod-group-name", id="kai"),
]
PATHS = [pytest.param(True, id="vectorised"), pytest.param(False, id="one-node-at-a-time")]


def gang(key: str, size: int, **spec: Any) -> list[dict]:
    return [pod(f"w{i}", key, "train", **spec) for i in range(size)]


@pytest.mark.parametrize("vectorised", PATHS)
@pytest.mark.parametrize(("run", "key"), ENGINES)
def test_without_constraints_the_gang_packs_onto_one_node(run, key, vectorised):
    nodes = [node(f"n{i}") for i in range(4)]
    result = run(nodes, gang(key, 4), 4, vectorised)
    assert len(result.binds) == 4
    assert len(set(result.binds.values())) == 1


@pytest.mark.parametrize("vectorised", PATHS)
@pytest.mark.parametrize(("run", "key"), ENGINES)
def test_required_one_per_node_anti_affinity_lands_on_distinct_nodes(run, key, vectorised):
    nodes = [node(f"n{i}") for i in range(4)]
    result = run(nodes, gang(key, 4, affinity=ONE_PER_NODE), 4, vectorised)
    assert len(result.binds) == 4
    assert sorted(result.binds.values()) == ["n0", "n1", "n2", "n3"]


@pytest.mark.parametrize("vectorised", PATHS)
@pytest.mark.parametrize(("run", "key"), ENGINES)
def test_anti_affinity_gang_larger_than_the_cluster_places_nothing(run, key, vectorised):
    nodes = [node(f"n{i}") for i in range(3)]
    result = run(nodes, gang(key, 4, affinity=ONE_PER_NODE), 4, vectorised)
    assert result.binds == {}


@pytest.mark.parametrize("vectorised", PATHS)
@pytest.mark.parametrize(("run", "key"), ENGINES)
def test_running_pods_count_for_the_gangs_anti_affinity(run, key, vectorised):
    nodes = [node(f"n{i}") for i in range(4)]
    running = pod("old", key, "other", nodeName="n0", phase="Running")
    result = run(nodes, [running, *gang(key, 3, affinity=ONE_PER_NODE)], 3, vectorised)
    assert sorted(result.binds.values()) == ["n1", "n2", "n3"]


@pytest.mark.parametrize("vectorised", PATHS)
@pytest.mark.parametrize(("run", "key"), ENGINES)
def test_gang_respects_topology_spread_max_skew_among_its_own_members(run, key, vectorised):
    nodes = [node("a1", "a"), node("a2", "a"), node("b1", "b"), node("b2", "b")]
    result = run(nodes, gang(key, 4, topologySpreadConstraints=ZONE_SPREAD), 4, vectorised)
    assert len(result.binds) == 4
    zones = sorted(name[0] for name in result.binds.values())
    assert zones == ["a", "a", "b", "b"]  # never 3 + 1: maxSkew 1


@pytest.mark.parametrize("vectorised", PATHS)
@pytest.mark.parametrize(("run", "key"), ENGINES)
def test_spread_that_cannot_be_met_keeps_the_whole_gang_pending(run, key, vectorised):
    # zone b has no room: every member beyond the first in zone a would exceed maxSkew 1
    nodes = [node("a1", "a"), node("b1", "b", gpus=0)]
    result = run(nodes, gang(key, 3, topologySpreadConstraints=ZONE_SPREAD), 3, vectorised)
    assert result.binds == {}


def test_volcano_gang_that_fails_leaves_no_trace_in_the_filter_mirror():
    nodes = [node(f"n{i}") for i in range(3)]
    pods = gang("scheduling.k8s.io/group-name", 4, affinity=ONE_PER_NODE)
    podgroup = {
        "metadata": {"name": "train", "namespace": "ns"},
        "spec": {"minMember": 4, "queue": "q"},
        "status": {"phase": "Inqueue"},
    }
    ssn = Session(
        nodes=[parse_node(n) for n in nodes],
        pods=[parse_pod(p) for p in pods],
        podgroups=[parse_podgroup(podgroup)],
        queues=[parse_queue({"metadata": {"name": "q"}, "spec": {"weight": 1}})],
        tiers=[[GANG, PREDICATES]],
    )
    result = ssn.run(["allocate"])
    assert result.phases["ns/train"] is PodGroupPhase.INQUEUE
    mirror = ssn.plugins[1].filters.state
    assert mirror.num_pods == 0  # the discarded statement removed every tentative placement


def test_predicates_arguments_switch_filters_off():
    nodes = [node(f"n{i}") for i in range(4)]
    pods = gang("scheduling.k8s.io/group-name", 4, affinity=ONE_PER_NODE)
    off = PluginOption(
        "predicates", frozenset({"predicate"}), {"predicate.PodAffinityEnable": "false"}
    )
    podgroup = {
        "metadata": {"name": "train", "namespace": "ns"},
        "spec": {"minMember": 4, "queue": "q"},
        "status": {"phase": "Inqueue"},
    }
    ssn = Session(
        nodes=[parse_node(n) for n in nodes],
        pods=[parse_pod(p) for p in pods],
        podgroups=[parse_podgroup(podgroup)],
        queues=[parse_queue({"metadata": {"name": "q"}, "spec": {"weight": 1}})],
        tiers=[[GANG, off]],
    )
    assert len(set(ssn.run(["allocate"]).binds.values())) == 1


HOST_PORT = {"containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 8080}]}]}


@pytest.mark.parametrize("vectorised", PATHS)
@pytest.mark.parametrize(("run", "key"), ENGINES)
def test_host_port_conflicts_inside_a_gang(run, key, vectorised):
    nodes = [node(f"n{i}") for i in range(4)]
    pods = []
    for i in range(4):
        obj = pod(f"w{i}", key, "train")
        obj["spec"]["containers"][0]["ports"] = HOST_PORT["containers"][0]["ports"]
        pods.append(obj)
    result = run(nodes, pods, 4, vectorised)
    assert sorted(result.binds.values()) == ["n0", "n1", "n2", "n3"]
    # a fifth member has no node with the port free: the whole gang waits
    extra = pod("w4", key, "train")
    extra["spec"]["containers"][0]["ports"] = HOST_PORT["containers"][0]["ports"]
    assert run(nodes, [*pods, extra], 5, vectorised).binds == {}


@pytest.mark.parametrize("vectorised", PATHS)
def test_preempt_frees_a_host_port_for_the_preemptor(vectorised):
    """NodePorts reads the node's ports as they are (not PreFilter state): evicting the
    victim that holds the port makes room within the same preempt."""
    key = "scheduling.k8s.io/group-name"
    ports = HOST_PORT["containers"][0]["ports"]
    victim = pod("victim", key, "low", nodeName="n0", phase="Running", priority=1)
    victim["spec"]["containers"][0]["ports"] = ports
    preemptor = pod("p", key, "high", priority=100)
    preemptor["spec"]["containers"][0]["ports"] = ports
    podgroups = [
        {
            "metadata": {"name": name, "namespace": "ns"},
            "spec": {"minMember": size, "queue": "q", "priorityClassName": name},
            "status": {"phase": phase},
        }
        for name, size, phase in (("low", 0, "Running"), ("high", 1, "Inqueue"))
    ]
    tiers = [
        [
            PluginOption("priority", frozenset({"jobOrder", "taskOrder", "preemptable"})),
            PluginOption("gang", frozenset({"jobStarving", "jobPipelined", "preemptable"})),
            PREDICATES,
        ]
    ]
    ssn = Session(
        nodes=[parse_node(node("n0", gpus=8))],
        pods=[parse_pod(victim), parse_pod(preemptor)],
        podgroups=[parse_podgroup(g) for g in podgroups],
        queues=[parse_queue({"metadata": {"name": "q"}, "spec": {"weight": 1}})],
        tiers=tiers,
        priority_classes={"low": 10, "high": 1000},
        vectorised=vectorised,
    )
    result = ssn.run(["preempt"])
    assert result.evicted == ("ns/victim",)
    assert result.pipelined == {"ns/p": "n0"}


@pytest.mark.parametrize("anti", [True, False])
@pytest.mark.parametrize("vectorised", PATHS)
def test_preempt_keeps_the_prefilter_state_of_its_prepredicate(vectorised, anti):
    """Upstream preempt runs PrePredicate once per preemptor: a victim evicted afterwards
    still counts for the preemptor's anti-affinity, so evicting it cannot make room."""
    key = "scheduling.k8s.io/group-name"
    victim = pod("victim", key, "low", nodeName="n0", phase="Running", priority=1)
    victim["metadata"]["labels"] = {"app": "train"}
    preemptor = pod("p", key, "high", priority=100, **({"affinity": ONE_PER_NODE} if anti else {}))
    preemptor["metadata"]["labels"] = {"app": "serve"}
    one_node = node("n0", gpus=1)
    podgroups = [
        {
            "metadata": {"name": name, "namespace": "ns"},
            "spec": {"minMember": size, "queue": "q", "priorityClassName": name},
            "status": {"phase": phase},
        }
        for name, size, phase in (("low", 0, "Running"), ("high", 1, "Inqueue"))
    ]
    tiers = [
        [
            PluginOption("priority", frozenset({"jobOrder", "taskOrder", "preemptable"})),
            PluginOption("gang", frozenset({"jobStarving", "jobPipelined", "preemptable"})),
            PREDICATES,
        ]
    ]
    ssn = Session(
        nodes=[parse_node(one_node)],
        pods=[parse_pod(victim), parse_pod(preemptor)],
        podgroups=[parse_podgroup(g) for g in podgroups],
        queues=[parse_queue({"metadata": {"name": "q"}, "spec": {"weight": 1}})],
        tiers=tiers,
        priority_classes={"low": 10, "high": 1000},
        vectorised=vectorised,
    )
    result = ssn.run(["preempt"])
    if anti:
        assert result.evicted == ()
        assert result.pipelined == {}
    else:  # the same preemption without the anti-affinity takes the node
        assert result.evicted == ("ns/victim",)
        assert result.pipelined == {"ns/p": "n0"}
