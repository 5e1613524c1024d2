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
from gpupact.engine.placement.scheduler import Scheduler
from gpupact.engine.preemption import NO_PROTECTION
from gpupact.kube.objects import parse_node, parse_pod
from gpupact.twin.control import DEFAULT_GRACE_S, ControlPlane, PodRecord

T0 = 1_800_000_000.0


def _node(name: str) -> Any:
    return parse_node(
        {
            "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {
                "allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": "8"}
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
