"""A ClusterQueue as the scheduler sees it during a cycle: spec, quota node, admitted workloads."""

from __future__ import annotations

from collections.abc import Mapping

from gpupact.engine.admission.model import ClusterQueue, ResourceGroup
from gpupact.engine.admission.resource_tree import QuotaNode
from gpupact.engine.admission.workload_info import WorkloadInfo


class ClusterQueueRuntime:
    __slots__ = ("active", "generation", "node", "rg_by_resource", "spec", "workloads")

    def __init__(self, spec: ClusterQueue, node: QuotaNode) -> None:
        self.spec = spec
        self.node = node
        self.rg_by_resource: dict[str, ResourceGroup] = {
            resource: group
            for group in spec.resource_groups
            for resource in group.covered_resources
        }
        # admitted workloads that preemption may consider (keyed by workload key)
        self.workloads: dict[str, WorkloadInfo] = {}
        # bumped when capacity may have been freed: the flavor scan then starts over
        self.generation = 0
        self.active = spec.active

    def clone(self, node: QuotaNode, infos: Mapping[str, WorkloadInfo]) -> ClusterQueueRuntime:
        out = ClusterQueueRuntime.__new__(ClusterQueueRuntime)
        out.spec = self.spec
        out.node = node
        out.rg_by_resource = self.rg_by_resource
        out.workloads = {key: infos[key] for key in self.workloads}
        out.generation = self.generation
        out.active = self.active
        return out

    @property
    def name(self) -> str:
        return self.spec.name

    def __repr__(self) -> str:
        return f"<ClusterQueueRuntime {self.name}>"
