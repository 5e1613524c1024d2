"""Volcano `nodeorder`'s preference scores (node affinity, taint toleration, inter-pod
affinity, topology spread): weighted as the plugin arguments say, normalised over the
candidates, read on the predicates plugin's snapshot; and equal to kube-scheduler's
one-node-at-a-time reference (placement framework.score_nodes) with Volcano's weights."""

from __future__ import annotations

import random

import numpy as np
import pytest

from gpupact.engine.gang import parse_podgroup
from gpupact.engine.placement.framework import ClusterView, score_nodes
from gpupact.engine.volcano import PluginOption, Session
from gpupact.engine.volcano.model import parse_queue
from gpupact.kube.objects import parse_node, parse_pod

GANG = PluginOption("gang", frozenset({"jobOrder", "jobReady", "jobPipelined", "preemptable"}))
PREDICATES = PluginOption("predicates", frozenset({"predicate"}))


def nodeorder(**arguments) -> PluginOption:
    return PluginOption("nodeorder", frozenset({"nodeOrder"}), arguments)


def node(name: str, zone: str = "a", taints: list | None = None) -> dict:
    labels = {"kubernetes.io/hostname": name, "zone": zone}
    alloc = {"cpu": "8", "memory": "16Gi", "pods": "110"}
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {"taints": taints or []},
        "status": {"allocatable": alloc},
    }


def pod(name: str, group: str = "job", *, node_name: str = "", labels=None, **spec) -> dict:
    meta = {
        "name": name,
        "namespace": "ns",
        "uid": f"ns-{name}",
        "labels": labels or {},
        "annotations": {"scheduling.k8s.io/group-name": group},
    }
    requests = {"cpu": "1", "memory": "1Gi"}
    body = {"containers": [{"name": "c", "resources": {"requests": requests}}], **spec}
    if node_name:
        body["nodeName"] = node_name
    phase = "Running" if node_name else "Pending"
    return {"metadata": meta, "spec": body, "status": {"phase": phase}}


def group(name: str = "job", min_member: int = 1) -> dict:
    return {
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"minMember": min_member, "queue": "q"},
        "status": {"phase": "Inqueue"},
    }


def session(nodes, pods, groups, tiers, vectorised=True) -> Session:
    return Session(
        nodes=[parse_node(n) for n in nodes],
        pods=[parse_pod(p) for p in pods],
        podgroups=[parse_podgroup(g) for g in groups],
        queues=[parse_queue({"metadata": {"name": "q"}, "spec": {"weight": 1}})],
        tiers=tiers,
        vectorised=vectorised,
    )


def prefer_zone(zone: str, weight: int = 10) -> dict:
    term = {"matchExpressions": [{"key": "zone", "operator": "In", "values": [zone]}]}
    return {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": weight, "preference": term}
    ]}}  # fmt: skip


def avoid(app: str, key: str = "kubernetes.io/hostname", weight: int = 100) -> dict:
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}
    return {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": weight, "podAffinityTerm": term}
    ]}}  # fmt: skip


PREFER_NO_SCHEDULE = [{"key": "k", "value": "v", "effect": "PreferNoSchedule"}]


@pytest.mark.parametrize("vectorised", [True, False])
def test_preferred_node_affinity_steers_the_pod_unless_its_weight_is_zero(vectorised):
    nodes = [node("n1", "a"), node("n2", "b")]
    pods = [pod("p", affinity=prefer_zone("b"))]
    tiers = [[GANG, PREDICATES, nodeorder()]]
    assert session(nodes, pods, [group()], tiers, vectorised).run(["allocate"]).binds == {
        "ns/p": "n2"
    }
    off = [[GANG, PREDICATES, nodeorder(**{"nodeaffinity.weight": 0})]]
    # equal nodes otherwise: the first one
    assert session(nodes, pods, [group()], off, vectorised).run(["allocate"]).binds == {
        "ns/p": "n1"
    }


@pytest.mark.parametrize("vectorised", [True, False])
def test_untolerated_prefer_no_schedule_taint_is_avoided(vectorised):
    nodes = [node("n1", taints=PREFER_NO_SCHEDULE), node("n2")]
    tiers = [[GANG, PREDICATES, nodeorder()]]
    plain = session(nodes, [pod("p")], [group()], tiers, vectorised).run(["allocate"])
    assert plain.binds == {"ns/p": "n2"}
    toleration = [{"key": "k", "operator": "Exists", "effect": "PreferNoSchedule"}]
    tolerant = pod("p", tolerations=toleration)
    assert session(nodes, [tolerant], [group()], tiers, vectorised).run(["allocate"]).binds == {
        "ns/p": "n1"
    }
    off = [[GANG, PREDICATES, nodeorder(**{"tainttoleration.weight": 0})]]
    assert session(nodes, [pod("p")], [group()], off, vectorised).run(["allocate"]).binds == {
        "ns/p": "n1"
    }


@pytest.mark.parametrize("vectorised", [True, False])
def test_gang_members_spread_by_preferred_anti_affinity_on_the_predicates_snapshot(vectorised):
    nodes = [node("n1"), node("n2"), node("n3")]
    members = [pod(f"w{i}", labels={"app": "x"}, affinity=avoid("x")) for i in range(3)]
    tiers = [[GANG, PREDICATES, nodeorder()]]
    binds = session(nodes, members, [group(min_member=3)], tiers, vectorised).run(["allocate"])
    # each member sees the ones placed before it in this session: one per node
    assert sorted(binds.binds.values()) == ["n1", "n2", "n3"]


def test_without_predicates_the_scores_read_the_nodes_as_the_session_opened():
    """Upstream only the predicates plugin updates the session's NodeMap: without it a gang
    member does not see the members placed before it, only pods running at open."""
    nodes = [node("n1"), node("n2"), node("n3")]
    running = pod("old", "other", node_name="n1", labels={"app": "x"})
    members = [pod(f"w{i}", labels={"app": "x"}, affinity=avoid("x")) for i in range(2)]
    groups = [group("other"), group(min_member=2)]
    # resource scores off: only the anti-affinity decides
    order = nodeorder(**{"leastrequested.weight": 0, "balancedresource.weight": 0})
    blind = session(nodes, [running, *members], groups, [[GANG, order]]).run(["allocate"])
    assert blind.binds == {"ns/w0": "n2", "ns/w1": "n2"}  # both avoid only n1
    seeing = session(nodes, [running, *members], groups, [[GANG, PREDICATES, order]])
    assert seeing.run(["allocate"]).binds == {"ns/w0": "n2", "ns/w1": "n3"}


@pytest.mark.parametrize("vectorised", [True, False])
def test_schedule_anyway_spread_prefers_the_emptier_zone(vectorised):
    nodes = [node("n1", "a"), node("n2", "a"), node("n3", "b")]
    running = [pod(f"r{i}", "other", node_name=f"n{i + 1}", labels={"app": "x"}) for i in range(2)]
    spread = [{
        "maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway",
        "labelSelector": {"matchLabels": {"app": "x"}},
    }]  # fmt: skip
    new = pod("p", labels={"app": "x"}, topologySpreadConstraints=spread)
    tiers = [[GANG, PREDICATES, nodeorder()]]
    ssn = session(nodes, [*running, new], [group("other"), group()], tiers, vectorised)
    assert ssn.run(["allocate"]).binds == {"ns/p": "n3"}


WEIGHTS = {"TaintToleration": 3, "NodeAffinity": 2, "PodTopologySpread": 2, "InterPodAffinity": 2}


def _random_case(rng: random.Random):
    zones = ["a", "b", "c"]
    nodes = [
        node(f"n{i}", rng.choice(zones), PREFER_NO_SCHEDULE if rng.random() < 0.3 else None)
        for i in range(8)
    ]
    running = []
    for i in range(10):
        spec = {}
        if rng.random() < 0.4:
            spec["affinity"] = avoid(
                rng.choice(["x", "y"]), rng.choice(["zone", "kubernetes.io/hostname"])
            )
        if rng.random() < 0.3:  # existing pods' required affinity: hardPodAffinityWeight
            term = {"labelSelector": {"matchLabels": {"app": "y"}}, "topologyKey": "zone"}
            required = {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
            spec["affinity"] = {**spec.get("affinity", {}), "podAffinity": required}
        labels = {"app": rng.choice(["x", "y"])}
        running.append(
            pod(f"r{i}", "other", node_name=f"n{rng.randrange(8)}", labels=labels, **spec)
        )
    spec = {"affinity": {**prefer_zone(rng.choice(zones), rng.randint(1, 100)), **avoid("x")}}
    if rng.random() < 0.5:
        spec["tolerations"] = [{"operator": "Exists"}]
    if rng.random() < 0.5:
        spec["topologySpreadConstraints"] = [{
            "maxSkew": rng.randint(1, 3), "topologyKey": "zone",
            "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchLabels": {"app": "y"}},
        }]  # fmt: skip
    new = pod("p", labels={"app": "y"}, **spec)
    return nodes, running, new


@pytest.mark.parametrize("seed", range(12))
def test_candidate_scores_equal_the_kube_reference_with_volcano_weights(seed):
    rng = random.Random(seed)
    nodes, running, new = _random_case(rng)
    ssn = session(
        nodes, [*running, new], [group("other"), group()], [[GANG, PREDICATES, nodeorder()]]
    )
    task = ssn.tasks["ns/p"]
    candidates = rng.sample(ssn.node_list, rng.randint(2, len(ssn.node_list)))
    rows = np.array([n.row for n in candidates], dtype=np.intp)
    got = ssn.fns["candidateNodeOrder"]["nodeorder"](task, rows).tolist()
    assert ssn.node_map is not None
    reference = score_nodes(
        task.pod,
        ClusterView.from_state(ssn.node_map),
        [n.node for n in candidates],
        hard_pod_affinity_weight=0,  # nodeorder's InterPodAffinityArgs{} is not defaulted
    )
    want = [sum(w * reference[n.name][p] for p, w in WEIGHTS.items()) for n in candidates]
    assert got == want


def _gpu_node(name: str) -> dict:
    alloc = {"cpu": "8", "memory": "16Gi", "nvidia.com/gpu": "8", "pods": "110"}
    return {"metadata": {"name": name}, "status": {"allocatable": alloc}}


def _gpu_pod(name: str, cpu: str, memory: str, gpu: str, node_name: str = "", group="job"):
    obj = pod(name, group, node_name=node_name)
    resources = {"requests": {"cpu": cpu, "memory": memory}}
    if gpu != "0":
        resources["limits"] = {"nvidia.com/gpu": gpu}
    obj["spec"]["containers"][0]["resources"] = resources
    return obj


@pytest.mark.parametrize("vectorised", [True, False])
def test_balanced_allocation_weighs_the_gpu_of_a_gpu_task(vectorised):
    """nodeorder configures BalancedAllocation over cpu, memory and nvidia.com/gpu: with cpu
    and memory alike, a GPU task goes where its GPU share stays closest to the others."""
    running = [
        _gpu_pod("r1", "4", "8Gi", "0", node_name="n1", group="other"),
        _gpu_pod("r2", "4", "8Gi", "4", node_name="n2", group="other"),
    ]
    nodes = [_gpu_node("n1"), _gpu_node("n2")]
    tiers = [[GANG, PREDICATES, nodeorder()]]
    gpu_task = _gpu_pod("p", "1", "1Gi", "1")
    ssn = session(nodes, [*running, gpu_task], [group("other"), group()], tiers, vectorised)
    assert ssn.run(["allocate"]).binds == {"ns/p": "n2"}
    # a task without GPUs leaves the GPU out of the score: the nodes tie, the first wins
    cpu_task = _gpu_pod("p", "1", "1Gi", "0")
    ssn = session(nodes, [*running, cpu_task], [group("other"), group()], tiers, vectorised)
    assert ssn.run(["allocate"]).binds == {"ns/p": "n1"}
