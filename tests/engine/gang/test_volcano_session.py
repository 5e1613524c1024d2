"""gpupact.engine.volcano: sessions end to end, from Kubernetes / Volcano JSON."""

from __future__ import annotations

from fractions import Fraction

import pytest

from gpupact.engine.gang import TaskStatus, parse_podgroup
from gpupact.engine.volcano import NotModelledError, PluginOption, Session
from gpupact.engine.volcano.model import parse_queue
from gpupact.engine.volcano.resource import INFINITY, ZERO, Resource
from gpupact.errors import FieldError
from gpupact.kube.objects import parse_node, parse_pod

GANG = PluginOption(
    "gang", frozenset({"jobOrder", "jobReady", "jobPipelined", "jobStarving", "preemptable"})
)
PREDICATES = PluginOption("predicates", frozenset({"predicate"}))
PROPORTION = PluginOption("proportion", frozenset({"queueOrder", "reclaimable", "allocatable"}))
PRIORITY = PluginOption("priority", frozenset({"jobOrder", "taskOrder", "preemptable"}))
CONFORMANCE = PluginOption("conformance", frozenset({"preemptable", "reclaimable"}))


def node(name: str, cpu: str = "4", memory: str = "8Gi", gpu: str | None = None, **labels) -> dict:
    alloc = {"cpu": cpu, "memory": memory, "pods": "110"}
    if gpu is not None:
        alloc["nvidia.com/gpu"] = gpu
    return {"metadata": {"name": name, "labels": labels}, "status": {"allocatable": alloc}}


def pod(
    name: str,
    group: str,
    cpu: str = "1",
    *,
    node_name: str = "",
    phase: str = "Pending",
    deleting: bool = False,
    gpu: str | None = None,
    selector: dict | None = None,
) -> dict:
    requests = {"cpu": cpu, "memory": "1Gi"}
    if gpu is not None:
        requests["nvidia.com/gpu"] = gpu
    meta = {
        "name": name,
        "namespace": "ns",
        "uid": f"ns-{name}",
        "annotations": {"scheduling.k8s.io/group-name": group},
    }
    if deleting:
        meta["deletionTimestamp"] = "1970-01-01T00:00:00Z"
    spec = {"containers": [{"name": "c", "resources": {"requests": requests}}]}
    if node_name:
        spec["nodeName"] = node_name
    if selector:
        spec["nodeSelector"] = selector
    return {"metadata": meta, "spec": spec, "status": {"phase": phase}}


def group(name: str, min_member: int, queue: str = "q", phase: str = "Inqueue", **spec) -> dict:
    return {
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"minMember": min_member, "queue": queue, **spec},
        "status": {"phase": phase},
    }


def queue(name: str = "q", weight: int = 1, **spec) -> dict:
    return {"metadata": {"name": name}, "spec": {"weight": weight, **spec}}


def session(nodes, pods, groups, queues=None, tiers=None, **kwargs) -> Session:
    return Session(
        nodes=[parse_node(n) for n in nodes],
        pods=[parse_pod(p) for p in pods],
        podgroups=[parse_podgroup(g) for g in groups],
        queues=[parse_queue(q) for q in (queues or [queue()])],
        tiers=tiers or [[GANG, PREDICATES]],
        **kwargs,
    )


# --- all-or-nothing ------------------------------------------------------------------------------


def test_gang_that_cannot_place_min_member_leaves_cluster_unchanged() -> None:
    ssn = session(
        [node("n1", cpu="2"), node("n2", cpu="1")],
        [pod(f"w{i}", "job", cpu="1") for i in range(4)],
        [group("job", 4)],
    )
    before = {n.name: (n.idle.clone(), n.used.clone()) for n in ssn.node_list}
    result = ssn.run(["allocate"])
    assert result.binds == {} and result.pipelined == {}
    assert all(s is TaskStatus.PENDING for s in result.statuses.values())
    for n in ssn.node_list:
        idle, used = before[n.name]
        assert n.idle == idle and n.used == used and n.tasks == {}


def test_elastic_gang_places_what_fits_beyond_its_minimum() -> None:
    ssn = session(
        [node("n1", cpu="3")], [pod(f"w{i}", "job", cpu="1") for i in range(4)], [group("job", 2)]
    )
    result = ssn.run(["allocate"])
    assert sorted(result.binds) == ["ns/w0", "ns/w1", "ns/w2"]
    assert result.statuses["ns/w3"] is TaskStatus.PENDING


def test_gang_waits_on_releasing_resources_by_pipelining() -> None:
    pods = [
        pod("old", "done", cpu="2", node_name="n1", phase="Running", deleting=True),
        pod("a", "job", cpu="1"),
        pod("b", "job", cpu="2"),
    ]
    ssn = session([node("n1", cpu="3")], pods, [group("done", 1), group("job", 2)])
    result = ssn.run(["allocate"])
    # a fits idle cpu, b only once "old" is gone: pipelined, so the gang is not bound yet
    assert result.binds == {}
    assert result.pipelined == {"ns/b": "n1"}


def test_node_selector_is_honoured_through_the_kube_filters() -> None:
    ssn = session(
        [node("cpu-node"), node("gpu-node", gpu="4", pool="gpu")],
        [pod("trainer", "job", gpu="2", selector={"pool": "gpu"})],
        [group("job", 1)],
    )
    assert ssn.run(["allocate"]).binds == {"ns/trainer": "gpu-node"}


def test_pending_podgroup_waits_for_enqueue_when_enqueue_runs() -> None:
    tiers = [[GANG, PREDICATES, PluginOption("proportion", frozenset({"jobEnqueued"}))]]
    ssn = session(
        [node("n1")],
        [pod("a", "job")],
        [group("job", 1, phase="Pending", minResources={"cpu": "1"})],
        queues=[queue(capability={"cpu": "8"})],
        tiers=tiers,
        enabled_actions=["enqueue", "allocate"],
    )
    result = ssn.run(["enqueue", "allocate"])
    assert result.binds == {"ns/a": "n1"}
    # admitted; Running only once the bind completes (Binding is not yet scheduled)
    assert result.phases["ns/job"].value == "Inqueue"


# --- preempt and reclaim ------------------------------------------------------------------------


def test_preempt_evicts_lower_priority_job_in_same_queue() -> None:
    pods = [
        pod("low-0", "low", cpu="2", node_name="n1", phase="Running"),
        pod("low-1", "low", cpu="2", node_name="n1", phase="Running"),
        pod("high", "high", cpu="2"),
    ]
    groups = [
        group("low", 1, priorityClassName="low"),
        group("high", 1, priorityClassName="high"),
    ]
    ssn = session(
        [node("n1", cpu="4")],
        pods,
        groups,
        tiers=[[CONFORMANCE, GANG, PRIORITY]],
        priority_classes={"low": 10, "high": 1000},
    )
    result = ssn.run(["preempt"])
    # only one replica above the victim's minMember may go (the node's first, by key)
    assert result.evicted == ("ns/low-0",)
    assert result.pipelined == {"ns/high": "n1"}


def test_preempt_never_breaks_a_running_gang_below_its_minimum() -> None:
    pods = [pod(f"g{i}", "gang", cpu="1", node_name="n1", phase="Running") for i in range(2)]
    pods.append(pod("high", "high", cpu="2"))
    groups = [
        group("gang", 2, priorityClassName="low"),
        group("high", 1, priorityClassName="high"),
    ]
    ssn = session(
        [node("n1", cpu="2")],
        pods,
        groups,
        tiers=[[CONFORMANCE, GANG, PRIORITY]],
        priority_classes={"low": 10, "high": 1000},
    )
    result = ssn.run(["preempt"])
    assert result.evicted == () and result.pipelined == {}


def test_reclaim_takes_back_from_queue_over_its_share() -> None:
    tiers = [
        [
            CONFORMANCE,
            PluginOption("gang", frozenset({"reclaimable", "jobStarving"})),
            PluginOption("proportion", frozenset({"reclaimable", "queueOrder", "preemptive"})),
        ]
    ]
    pods = [pod(f"a{i}", "greedy", cpu="1", node_name="n1", phase="Running") for i in range(4)]
    pods.append(pod("b0", "starved", cpu="1"))
    groups = [group("greedy", 1, queue="qa"), group("starved", 1, queue="qb")]
    ssn = session(
        [node("n1", cpu="4")], pods, groups, queues=[queue("qa"), queue("qb")], tiers=tiers
    )
    result = ssn.run(["reclaim"])
    assert len(result.evicted) == 1 and result.evicted[0].startswith("ns/a")
    assert result.pipelined == {"ns/b0": "n1"}


def test_session_is_deterministic() -> None:
    def once():
        ssn = session(
            [node("n1", cpu="2"), node("n2", cpu="2")],
            [pod(f"w{i}", f"j{i % 3}", cpu="1") for i in range(6)],
            [group(f"j{i}", 1) for i in range(3)],
        )
        return ssn.run(["allocate"])

    assert once() == once()


# --- bad input ----------------------------------------------------------------------------------


def test_parse_queue_bad_input() -> None:
    with pytest.raises(FieldError) as err:
        parse_queue({"metadata": {"name": "q"}, "spec": {"weight": -1}})
    assert err.value.path == ("spec", "weight")
    with pytest.raises(FieldError) as err:
        parse_queue({"metadata": {"name": "q"}, "spec": {"capability": {"cpu": "x"}}})
    assert err.value.path == ("spec", "capability", "cpu")
    with pytest.raises(FieldError):
        parse_queue({"metadata": {}})
    with pytest.raises(FieldError):
        parse_queue({"metadata": {"name": "q"}, "spec": {"reclaimable": "yes"}})


def test_session_rejects_inconsistent_snapshots() -> None:
    with pytest.raises(ValueError, match="duplicate node"):
        session([node("n1"), node("n1")], [], [])
    with pytest.raises(ValueError, match="unknown node"):
        session([node("n1")], [pod("a", "job", node_name="nx", phase="Running")], [group("job", 1)])
    with pytest.raises(ValueError, match="duplicate pod"):
        session([node("n1")], [pod("a", "job"), pod("a", "job")], [group("job", 1)])


def test_unknown_configuration_is_reported_not_guessed() -> None:
    with pytest.raises(NotModelledError, match="binpack"):
        session([node("n1")], [], [], tiers=[[PluginOption("binpack", frozenset())]])
    with pytest.raises(ValueError, match="extension point"):
        PluginOption("gang", frozenset({"jobReadyish"}))
    with pytest.raises(NotModelledError, match="action"):
        session([node("n1")], [], []).run(["shuffle"])


# --- resource semantics --------------------------------------------------------------------------


def test_resource_comparisons_follow_upstream_defaults() -> None:
    gpu = Resource(1000, 10, {"nvidia.com/gpu": 2000})
    plain = Resource(2000, 20)
    assert not gpu.less_equal(plain, ZERO)  # the GPU counts as 0 on the right
    assert gpu.less_equal(plain, INFINITY)  # ... or as unbounded
    # only the dimensions the request asks for are compared
    req = Resource(1000, 0)
    assert Resource(1000, 10**12).less_equal_with_dimension(Resource(1000, 0), req)
    # the 0.1 tolerance only matters for fractional (proportional) amounts
    assert Resource(Fraction(10005, 100)).less_equal(Resource(100), ZERO)
    assert not Resource(101).less_equal(Resource(100), ZERO)


def test_resource_from_amounts_units() -> None:
    res = Resource.from_amounts({"cpu": 1500, "memory": 1024, "pods": 10, "nvidia.com/gpu": 2})
    assert (res.cpu, res.memory, res.max_task_num) == (1500, 1024, 10)
    assert res.scalars == {"pods": 10, "nvidia.com/gpu": 2000}  # scalars in milli-units
    assert res.is_empty() is False
    assert Resource(0, 0, {"pods": 10}).is_empty()


def test_backfill_places_best_effort_pods_allocate_skips() -> None:
    best_effort = pod("be", "job")
    best_effort["spec"]["containers"][0]["resources"] = {}
    ssn = session([node("n1", cpu="1")], [best_effort], [group("job", 1)])
    result = ssn.run(["allocate", "backfill"])
    assert result.binds == {"ns/be": "n1"}
    ssn = session([node("n1", cpu="1")], [best_effort], [group("job", 1)])
    assert ssn.run(["allocate"]).binds == {}
