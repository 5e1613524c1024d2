"""gpupact.engine.kai: fair share, gang allocation, preempt / reclaim / consolidation and
stale-gang release, from Kubernetes / KAI JSON with injected time."""

from __future__ import annotations

import pytest

from gpupact.engine.gang import TaskStatus
from gpupact.engine.kai import (
    KaiConfig,
    KaiSession,
    NotModelledError,
    parse_kai_podgroup,
    parse_kai_queue,
)
from gpupact.engine.kai import fairshare as fs
from gpupact.errors import FieldError
from gpupact.kube.objects import parse_node, parse_pod

CLASSES = {"train": 50, "build": 100, "inference": 125}


def node(name: str, gpus: int) -> dict:
    alloc = {"cpu": "64", "memory": "256Gi", "nvidia.com/gpu": str(gpus), "pods": "110"}
    return {"metadata": {"name": name}, "status": {"allocatable": alloc}}


def pod(name: str, job: str, gpus: int, node_name: str = "", phase: str = "Pending") -> dict:
    spec = {
        "containers": [
            {"name": "c", "resources": {"requests": {"cpu": "1", "nvidia.com/gpu": str(gpus)}}}
        ]
    }
    if node_name:
        spec["nodeName"] = node_name
    meta = {"name": name, "namespace": "ns", "uid": name, "annotations": {"pod-group-name": job}}
    return {"metadata": meta, "spec": spec, "status": {"phase": phase}}


def queue(name: str, gpu_quota: float, parent: str = "dept", weight: float = 1, limit=-1) -> dict:
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    gpu = {"quota": gpu_quota, "limit": limit, "overQuotaWeight": weight}
    spec = {"resources": {"gpu": gpu, "cpu": unlimited, "memory": unlimited}}
    if parent:
        spec["parentQueue"] = parent
    return {"metadata": {"name": name}, "spec": spec}


DEPT = queue("dept", -1, parent="", weight=1)


def group(name: str, q: str, min_member: int = 1, cls: str = "train", **spec) -> dict:
    return {
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"minMember": min_member, "queue": q, "priorityClassName": cls, **spec},
    }


def make(nodes, pods, groups, queues, config=None, now=0.0, stale=None) -> KaiSession:
    stale = stale or {}
    podgroups = [
        parse_kai_podgroup(
            g, CLASSES, creation=float(i), stale_since=stale.get(g["metadata"]["name"])
        )
        for i, g in enumerate(groups)
    ]
    return KaiSession(
        nodes=[parse_node(n) for n in nodes],
        pods=[parse_pod(p) for p in pods],
        podgroups=podgroups,
        queues=[parse_kai_queue(q) for q in [DEPT, *queues]],
        config=config,
        now=now,
    )


# --- fair share ---------------------------------------------------------------------------------


def test_fair_share_quota_then_over_quota_by_weight() -> None:
    pods = [pod(f"a{i}", "a", 1) for i in range(8)] + [pod(f"b{i}", "b", 1) for i in range(8)]
    ssn = make(
        [node("n1", 8)],
        pods,
        [group("a", "qa", 8), group("b", "qb", 8)],
        [queue("qa", 1, weight=1), queue("qb", 1, weight=3)],
    )
    # 8 GPUs: quotas 1 + 1; the 6 left split 1:3 by over-quota weight is 1.5 : 4.5, given
    # in whole GPUs (1 and 4); the last GPU goes to the larger remainder, on a tie the
    # older queue
    assert ssn.queues["qa"].shares["gpu"].fair_share == 1 + 1 + 1
    assert ssn.queues["qb"].shares["gpu"].fair_share == 1 + 4
    assert ssn.queues["dept"].shares["gpu"].fair_share == 8


def test_fair_share_never_exceeds_request() -> None:
    ssn = make([node("n1", 8)], [pod("a0", "a", 1)], [group("a", "qa")], [queue("qa", 4)])
    assert ssn.queues["qa"].shares["gpu"].fair_share == 1


# --- allocate -----------------------------------------------------------------------------------


def test_gang_that_does_not_fit_leaves_cluster_unchanged() -> None:
    ssn = make(
        [node("n1", 2)],
        [pod("g0", "g", 2), pod("g1", "g", 2)],
        [group("g", "qa", 2)],
        [queue("qa", 4)],
    )
    idle = dict(ssn.nodes["n1"].idle)
    result = ssn.run(["allocate"])
    assert result.binds == {} and result.pipelined == {}
    assert ssn.nodes["n1"].idle == idle and ssn.nodes["n1"].tasks == {}
    assert ssn.queues["qa"].shares["gpu"].allocated == 0


def test_gang_that_fits_is_bound() -> None:
    ssn = make(
        [node("n1", 4)],
        [pod("g0", "g", 2), pod("g1", "g", 2)],
        [group("g", "qa", 2)],
        [queue("qa", 4)],
    )
    assert ssn.run(["allocate"]).binds == {"ns/g0": "n1", "ns/g1": "n1"}


def test_non_preemptible_job_stays_within_quota() -> None:
    ssn = make(
        [node("n1", 8)],
        [pod("b0", "b", 2), pod("b1", "b", 2)],
        [group("b", "qa", 2, cls="build")],
        [queue("qa", 3)],
    )
    result = ssn.run(["allocate"])
    assert result.binds == {}
    assert result.statuses["ns/b0"] is TaskStatus.PENDING


# --- preempt / reclaim / consolidation ------------------------------------------------------------


def test_preempt_takes_lowest_priority_job_of_the_same_queue() -> None:
    pods = [pod("t0", "t", 1, "n1", "Running"), pod("b0", "b", 1)]
    ssn = make(
        [node("n1", 1)],
        pods,
        [group("t", "qa"), group("b", "qa", cls="build")],
        [queue("qa", 1)],
    )
    result = ssn.run(["preempt"])
    assert result.evicted == ("ns/t0",)
    assert result.pipelined == {"ns/b0": "n1"}


def test_reclaim_brings_queues_back_to_fair_share() -> None:
    pods = [pod("a0", "a0", 1, "n1", "Running"), pod("a1", "a1", 1, "n1", "Running")]
    pods.append(pod("b0", "b0", 1))
    groups = [group("a0", "qa"), group("a1", "qa"), group("b0", "qb")]
    ssn = make([node("n1", 2)], pods, groups, [queue("qa", 1), queue("qb", 1)])
    result = ssn.run(["reclaim"])
    assert result.evicted == ("ns/a1",)  # the newer of the over-share queue's jobs
    assert result.pipelined == {"ns/b0": "n1"}


def test_consolidation_moves_instead_of_evicting() -> None:
    pods = [pod("r0", "r0", 2, "n0", "Running"), pod("r1", "r1", 2, "n1", "Running")]
    pods.append(pod("p0", "p0", 3))
    groups = [group("r0", "qa"), group("r1", "qa"), group("p0", "qa")]
    ssn = make([node("n0", 4), node("n1", 4)], pods, groups, [queue("qa", 2)])
    result = ssn.run(["consolidation"])
    assert result.evicted == ()
    assert result.relocated == {"ns/r1": "n0"}
    assert result.pipelined == {"ns/p0": "n1", "ns/r1": "n0"}


# --- stale gangs ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stale_for", "evicted"), [(61.0, ("ns/g0",)), (60.0, ("ns/g0",)), (1.0, ())]
)
def test_stale_gang_is_released_after_grace_period(stale_for: float, evicted: tuple) -> None:
    pods = [pod("g0", "g", 1, "n1", "Running"), pod("g1", "g", 1, "n1", "Failed")]
    ssn = make(
        [node("n1", 2)],
        pods,
        [group("g", "qa", 2)],
        [queue("qa", 2)],
        config=KaiConfig(staleness_grace_period=60),
        now=1000.0,
        stale={"g": 1000.0 - stale_for},
    )
    result = ssn.run(["stalegangeviction"])
    assert result.evicted == evicted
    assert result.statuses["ns/g1"] is TaskStatus.FAILED


def test_gang_at_its_minimum_is_not_stale() -> None:
    pods = [pod("g0", "g", 1, "n1", "Running"), pod("g1", "g", 1, "n1", "Running")]
    ssn = make(
        [node("n1", 2)], pods, [group("g", "qa", 2)], [queue("qa", 2)], now=1e6, stale={"g": 0.0}
    )
    assert ssn.run(["stalegangeviction"]).evicted == ()


# --- bad input -----------------------------------------------------------------------------------


def test_parse_kai_queue_and_podgroup_bad_input() -> None:
    with pytest.raises(FieldError) as err:
        parse_kai_queue({"metadata": {"name": "q"}, "spec": {"resources": {"gpu": {"quota": "2"}}}})
    assert err.value.path == ("spec", "resources", "gpu", "quota")
    with pytest.raises(FieldError):
        parse_kai_queue({"metadata": {}})
    with pytest.raises(FieldError) as err:
        parse_kai_podgroup(group("g", "q", cls="nope"), CLASSES)
    assert err.value.path == ("spec", "priorityClassName")
    with pytest.raises(FieldError) as err:
        parse_kai_podgroup(group("g", "q", preemptibility="sometimes"), CLASSES)
    assert err.value.path == ("spec", "preemptibility")
    with pytest.raises(FieldError):
        parse_kai_podgroup(group("g", "q", min_member=-2), CLASSES)


def test_preemptibility_defaults_by_priority() -> None:
    assert parse_kai_podgroup(group("g", "q", cls="train"), CLASSES).preemptible
    assert not parse_kai_podgroup(group("g", "q", cls="build"), CLASSES).preemptible
    explicit = parse_kai_podgroup(
        group("g", "q", cls="build", preemptibility="preemptible"), CLASSES
    )
    assert explicit.preemptible


def test_session_rejects_inconsistent_or_unmodelled_input() -> None:
    with pytest.raises(ValueError, match="unknown queue"):
        make([node("n1", 1)], [], [group("g", "nope")], [queue("qa", 1)])
    with pytest.raises(ValueError, match="unknown parent"):
        make([node("n1", 1)], [], [], [queue("qa", 1, parent="ghost")])
    with pytest.raises(NotModelledError):
        make([node("n1", 1)], [], [], [queue("qa", 1)]).run(["shuffle"])


def test_unlimited_compares_above_everything() -> None:
    assert fs.less_equal({"cpu": 5, "memory": 5, "gpu": 5}, {"cpu": -1, "memory": -1, "gpu": 5})
    assert not fs.less_equal(
        {"cpu": -1, "memory": 0, "gpu": 0}, {"cpu": 10**9, "memory": 0, "gpu": 0}
    )
