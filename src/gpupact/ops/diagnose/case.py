"""The subject of one runbook walk (a Pending pod, PodGroup or Kueue Workload) and the pod
predicates every step shares.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from gpupact.kube.objects import Pod
from gpupact.ops.cluster import Analysis, shape_key
from gpupact.ops.findings import Domain, StepResult
from gpupact.ops.memory import status_reason
from gpupact.ops.model import GangObject, KueueObject

SLOW_START_SECONDS = 600


@dataclass
class Case:
    kind: str  # Pod | PodGroup | Workload
    namespace: str
    name: str
    status: str
    created: int | None
    pods: list[Pod] = field(default_factory=list)  # unbound Pending pods to place
    members: list[Pod] = field(default_factory=list)  # every pod of the subject
    group: GangObject | None = None
    workload: KueueObject | None = None
    target: Pod | None = None  # the pod named on the command line / the Pod subject
    notes: list[StepResult] = field(default_factory=list)

    @property
    def subject(self) -> str:
        return f"{self.kind.lower()} {self.namespace}/{self.name}"

    def note(self, domain: Domain, outcome: str, text: str) -> None:
        self.notes.append(StepResult(domain, outcome, text))

    @property
    def placeable(self) -> list[Pod]:
        """Pending pods the scheduler would consider (not held by a scheduling gate)."""
        return [p for p in self.pods if not gates(p)]


def gates(pod: Pod) -> list[str]:
    spec = pod.raw.get("spec") if pod.raw else None
    raw = spec.get("schedulingGates") if isinstance(spec, dict) else None
    if not isinstance(raw, list):
        return []
    return [str(g.get("name", "")) for g in raw if isinstance(g, dict)]


def is_waiting(pod: Pod) -> bool:
    """Pending and not yet bound to a node (what the scheduler still has to place)."""
    return pod.phase == "Pending" and not pod.node_name and not pod.terminating


def is_starting(pod: Pod) -> bool:
    """Bound to a node, containers not started yet (Pending phase)."""
    return pod.phase == "Pending" and bool(pod.node_name) and not pod.terminating


def unique_shapes(pods: Iterable[Pod], a: Analysis | None = None) -> list[Pod]:
    """One pod per placement shape (the first of each), in order."""
    seen: set[Any] = set()
    out = []
    for pod in pods:
        key = a.shape_of(pod) if a is not None else shape_key(pod)
        if key is None or key not in seen:
            out.append(pod)
            if key is not None:
                seen.add(key)
    return out


def pod_status(pod: Pod) -> str:
    reason = status_reason(pod)
    if pod.terminating:
        return f"{pod.phase} (terminating)"
    if is_starting(pod):
        return f"Pending (bound to {pod.node_name}" + (f", {reason})" if reason else ")")
    if is_waiting(pod):
        blocked = gates(pod)
        return "Pending (SchedulingGated)" if blocked else "Pending (unscheduled)"
    return f"{pod.phase} ({reason})" if reason else pod.phase
