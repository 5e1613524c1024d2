"""The twin's control plane deletes pods as the API server does: a preempted pod keeps its
node's resources for its terminationGracePeriodSeconds while the preemptor waits nominated to
that node, and a `preemptionPolicy: Never` pod never preempts.

Upstream values reproduced:
- core/v1 defaulting: terminationGracePeriodSeconds 30 when unset
  (https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#pod-termination);
- kube-scheduler preemption sets status.nominatedNodeName and the preemptor binds only once
  the victims are gone; nominated pods' resources are held against pods of lower or equal
  priority (https://kubernetes.io/docs/concepts/scheduling-eviction/pod-priority-preemption/
  "graceful termination of preemption victims", RunFilterPluginsWithNominatedPods);
- PodEligibleToPreemptOthers is false for preemptionPolicy Never
  (https://kubernetes.io/docs/concepts/scheduling-eviction/pod-priority-preemption/#non-preempting-priority-class).
"""

from __future__ import annotations

from typing import Any

from gpupact.cluster.state import ClusterState
from gpupact.engine.gang import parse_podgroup
from gpupact.engine.placement.scheduler import Scheduler
from gpupact.engine.preemption import NO_PROTECTION
from gpupact.engine.volcano.model import parse_queue
from gpupact.kube.objects import parse_node, parse_pod
from gpupact.twin.control import (
    DEFAULT_GRACE_S,
    VOLCANO,
    VOLCANO_ACTIONS,
    ControlPlane,
    PodRecord,
)

T0 = 1_800_000_000.0


def _node(name: str) -> Any:
    return parse_node(
        {
            "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {
                "allocatable": {
                    "cpu": "64",
                    "memory": "512Gi",
                    "pods": "110",
                    "nvidia.com/gpu": "8",
                }
            },
        }
    )


def _record(
    name: str,
    priority: int,
    *,
    grace: int | None = None,
    policy: str | None = None,
    created: float = 0.0,
) -> PodRecord:
    spec: dict[str, Any] = {
        "priority": priority,
        "containers": [
            {
                "name": "c",
                "resources": {
                    "requests": {"cpu": "1", "nvidia.com/gpu": "8"},
                    "limits": {"nvidia.com/gpu": "8"},
                },
            }
        ],
    }
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    if policy is not None:
        spec["preemptionPolicy"] = policy
    pod = parse_pod(
        {
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": name},
            "spec": spec,
            "status": {"phase": "Pending"},
        }
    )
    return PodRecord(pod, name, "c", "t", 8.0, created)


def _plane() -> ControlPlane:
    state = ClusterState.from_nodes([_node("n1")])
    return ControlPlane(state, Scheduler(state, seed=1), NO_PROTECTION, (), {}, t0=T0)


def test_victim_holds_its_gpus_for_its_grace_period_and_the_preemptor_waits_nominated() -> None:
    plane = _plane()
    plane.submit(_record("low", 10, grace=45))
    placed, _ = plane.schedule(0.0)
    assert [r.key for r in placed] == ["default/low"]

    plane.submit(_record("high", 1000))
    placed, preempted = plane.schedule(100.0)
    assert placed == []
    assert [(p.victim.key, p.node, p.until) for p in preempted] == [("default/low", "n1", 145.0)]
    assert "default/low" in plane.terminating
    assert plane.state.binding_of("default/low") is not None  # still holds the 8 GPUs
    high = plane.pending["default/high"]
    assert high.pod.nominated_node_name == "n1"

    # a pod of equal priority, ahead in the queue (older), does not take the nominated
    # pod's room once it frees
    plane.submit(_record("peer", 1000, created=-1.0))
    plane.capacity_changed()
    placed, preempted = plane.schedule(120.0)
    assert placed == [] and preempted == []  # nor does the nominated pod preempt again

    plane.release("default/low")
    placed, _ = plane.schedule(145.0)
    assert [r.key for r in placed] == ["default/high"]
    assert "default/peer" in plane.pending
    assert high.bound_at == 145.0  # time to GPU includes the victim's 45 s of termination


def test_unset_grace_is_the_api_default_of_30_seconds() -> None:
    plane = _plane()
    plane.submit(_record("low", 10))
    plane.schedule(0.0)
    plane.submit(_record("high", 1000))
    _, preempted = plane.schedule(10.0)
    assert DEFAULT_GRACE_S == 30.0
    assert [p.until for p in preempted] == [40.0]


def test_zero_grace_frees_the_node_at_once() -> None:
    plane = _plane()
    plane.submit(_record("low", 10, grace=0))
    plane.schedule(0.0)
    plane.submit(_record("high", 1000))
    placed, preempted = plane.schedule(10.0)
    assert [p.until for p in preempted] == [10.0]
    assert [r.key for r in placed] == ["default/high"]


def test_preemption_policy_never_waits_by_priority_and_never_preempts() -> None:
    plane = _plane()
    plane.submit(_record("low", 10))
    plane.schedule(0.0)
    plane.submit(_record("finetune", 1000, policy="Never"))
    placed, preempted = plane.schedule(10.0)
    assert placed == [] and preempted == []
    assert "default/low" in plane.bound
    # it is first in the queue by priority once the node frees
    plane.submit(_record("batch", 500))
    plane.remove("default/low", 20.0)
    placed, _ = plane.schedule(20.0)
    assert [r.key for r in placed] == ["default/finetune"]


# --- Volcano's preempt action, when the compiled volcano-scheduler.conf lists it ------------
# Volcano's gang plugin lets a job lose only tasks above its minMember, so the victim job runs
# two 4-GPU tasks with minMember 1 (upstream gang.go preemptableFn: ReadyTaskNum > MinAvailable)


def _gang_record(name: str, group_name: str, priority: int, gpus: int = 4) -> PodRecord:
    record = _record(name, priority)
    raw = record.pod.raw
    container = {
        "name": "c",
        "resources": {
            "requests": {"cpu": "1", "nvidia.com/gpu": str(gpus)},
            "limits": {"nvidia.com/gpu": str(gpus)},
        },
    }
    pod = parse_pod(
        {
            **raw,
            "metadata": {
                **raw["metadata"],
                "annotations": {"scheduling.k8s.io/group-name": group_name},
            },
            "spec": {
                **raw["spec"],
                "containers": [container],
                "schedulerName": "volcano",
                "priorityClassName": group_name,
            },
        }
    )
    group = parse_podgroup(
        {
            "metadata": {"name": group_name, "namespace": "default"},
            "spec": {"minMember": 1, "queue": "default", "priorityClassName": group_name},
            "status": {"phase": "Inqueue"},
        }
    )
    return PodRecord(pod, group_name, "c", "t", float(gpus), 0.0, scheduler=VOLCANO, group=group)


def _volcano_plane(actions: tuple[str, ...]) -> ControlPlane:
    state = ClusterState.from_nodes([_node("n1")])
    queues = [parse_queue({"metadata": {"name": "default"}, "spec": {"weight": 1}})]
    return ControlPlane(
        state,
        Scheduler(state, seed=1),
        NO_PROTECTION,
        queues,
        {"low": 10, "high": 1000},
        volcano_actions=actions,
        t0=T0,
    )


def test_volcano_preempt_runs_only_when_configured_and_its_victim_terminates_gracefully() -> None:
    for actions, evicts in ((VOLCANO_ACTIONS, False), (("enqueue", "allocate", "preempt"), True)):
        plane = _volcano_plane(actions)
        plane.submit(_gang_record("low-0", "low", 10))
        plane.submit(_gang_record("low-1", "low", 10))
        placed, _ = plane.schedule(0.0)
        assert sorted(r.key for r in placed) == ["default/low-0", "default/low-1"]
        plane.submit(_gang_record("high-0", "high", 1000))
        placed, preempted = plane.schedule(60.0)
        assert placed == []
        if not evicts:  # Volcano's default actions (enqueue, allocate, backfill) never evict
            assert preempted == [] and len(plane.bound) == 2
            continue
        assert [(p.preemptor.key, p.until) for p in preempted] == [("default/high-0", 90.0)]
        [victim] = [p.victim.key for p in preempted]
        assert victim in plane.terminating  # holds its 4 GPUs for the default 30 s
        plane.release(victim)
        placed, _ = plane.schedule(90.0)
        assert [r.key for r in placed] == ["default/high-0"]
