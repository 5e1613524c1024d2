"""A workload as the admission engine tracks it: total requests per PodSet, the quota it holds
once admitted, and the flavor-scan progress carried between scheduling cycles."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field

from gpupact.engine.admission.model import Admission, FlavorResource, Workload


@dataclass(slots=True)
class PodSetResources:
    """Requests of a whole PodSet (`count` pods) and, once admitted, the flavor per resource."""

    name: str
    count: int
    requests: dict[str, int]
    flavors: dict[str, str] = field(default_factory=dict)

    def scaled_to(self, count: int) -> PodSetResources:
        # integer per-pod division, as Kueue does; a zero-count PodSet is left alone
        if self.count == 0 or self.count == count:
            return PodSetResources(self.name, self.count, dict(self.requests), dict(self.flavors))
        requests = {r: v // self.count * count for r, v in self.requests.items()}
        return PodSetResources(self.name, count, requests, dict(self.flavors))


@dataclass(slots=True)
class LastAssignment:
    """Flavor-scan progress (Kueue AssignmentClusterQueueState): per PodSet and resource the
    index of the last flavor tried, -1 when the scan went through every flavor."""

    tried_flavor_idx: list[dict[str, int]]
    generation: int
    cycle: int
    shape: Hashable

    def pending_flavors(self) -> bool:
        return any(
            idx != -1 for per_pod_set in self.tried_flavor_idx for idx in per_pod_set.values()
        )

    def next_flavor(self, pod_set_index: int, resource: str) -> int:
        if pod_set_index >= len(self.tried_flavor_idx):
            return 0
        idx = self.tried_flavor_idx[pod_set_index].get(resource)
        return 0 if idx is None else idx + 1


def scheduling_shape(workload: Workload) -> Hashable:
    """Scheduling equivalence: workloads with the same shape get the same verdict from the flavor
    assigner (priority, and per PodSet its pod spec, count, requests and minCount)."""
    return (
        workload.priority,
        tuple(
            (
                ps.name,
                ps.count,
                tuple(sorted(ps.requests.items())),
                ps.min_count,
                tuple(sorted(ps.node_selector.items())),
                ps.required_affinity,
                ps.tolerations,
            )
            for ps in workload.pod_sets
        ),
    )


class WorkloadInfo:
    """Mutable engine-side record of one workload (pending or admitted)."""

    __slots__ = (
        "admission",
        "cluster_queue",
        "evicted",
        "held",
        "key",
        "last_assignment",
        "nomination",
        "quota_reserved_at",
        "shape",
        "total_requests",
        "usage",
        "workload",
    )

    def __init__(self, workload: Workload, cluster_queue: str) -> None:
        self.workload = workload
        # "namespace/name", read constantly by queues and the cycle: computed once
        self.key = workload.key
        self.cluster_queue = cluster_queue
        self.total_requests = [
            PodSetResources(ps.name, ps.count, {r: v * ps.count for r, v in ps.requests.items()})
            for ps in workload.pod_sets
        ]
        self.usage: dict[FlavorResource, int] = {}
        # once admitted: every (flavor, resource) a PodSet got a flavor for
        self.held: frozenset[FlavorResource] = frozenset()
        self.admission: Admission | None = None
        self.quota_reserved_at: int | None = None
        # a preemption was issued against this admitted workload; it still holds its quota
        self.evicted = False
        self.last_assignment: LastAssignment | None = None
        # flavors chosen at nomination, pinned while an assignment is recomputed in the cycle
        self.nomination: dict[str, dict[str, str]] | None = None
        self.shape = scheduling_shape(workload)

    def __repr__(self) -> str:
        return f"<WorkloadInfo {self.key} cq={self.cluster_queue}>"

    def clone(self) -> WorkloadInfo:
        """A copy for an independent state; the request lists and scan progress are never
        mutated in place, so they are shared."""
        out = WorkloadInfo.__new__(WorkloadInfo)
        out.workload = self.workload
        out.key = self.key
        out.cluster_queue = self.cluster_queue
        out.total_requests = self.total_requests
        out.usage = dict(self.usage)
        out.held = self.held
        out.admission = self.admission
        out.quota_reserved_at = self.quota_reserved_at
        out.evicted = self.evicted
        out.last_assignment = self.last_assignment
        out.nomination = self.nomination
        out.shape = self.shape
        return out

    @property
    def priority(self) -> int:
        return self.workload.priority

    def set_admission(self, admission: Admission, reserved_at: int) -> None:
        self.admission = admission
        self.cluster_queue = admission.cluster_queue
        self.quota_reserved_at = reserved_at
        self.total_requests = [
            PodSetResources(psa.name, psa.count, dict(psa.usage), dict(psa.flavors))
            for psa in admission.pod_sets
        ]
        self.held = frozenset(
            (flavor, resource)
            for ps in self.total_requests
            for resource, flavor in ps.flavors.items()
        )
        usage: dict[FlavorResource, int] = {}
        for psa in admission.pod_sets:
            for resource, amount in psa.usage.items():
                flavor = psa.flavors.get(resource)
                if flavor is not None:
                    fr = (flavor, resource)
                    usage[fr] = usage.get(fr, 0) + amount
        self.usage = usage

    def uses_any(self, frs: Mapping[FlavorResource, object] | set[FlavorResource]) -> bool:
        """Does the admitted workload hold any of these flavor-resources?"""
        return not self.held.isdisjoint(frs)
