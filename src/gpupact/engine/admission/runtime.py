"""A ClusterQueue as the scheduler sees it during a cycle: spec, quota node, admitted workloads."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpupact.engine.admission.model import ClusterQueue, ResourceGroup
from gpupact.engine.admission.resource_tree import QuotaNode
from gpupact.engine.admission.workload_info import WorkloadInfo


class AdmittedWorkloads(dict[str, WorkloadInfo]):
    """Admitted workloads of one ClusterQueue by key. Counts its changes so that the priority
    index preemption searches use knows when to rebuild."""

    __slots__ = ("version",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.version = 0

    def __setitem__(self, key: str, value: WorkloadInfo) -> None:
        super().__setitem__(key, value)
        self.version += 1

    def __delitem__(self, key: str) -> None:
        super().__delitem__(key)
        self.version += 1

    def pop(self, key: str, *default: Any) -> Any:
        self.version += 1
        return super().pop(key, *default)

    def popitem(self) -> tuple[str, WorkloadInfo]:
        self.version += 1
        return super().popitem()

    def setdefault(self, key: str, default: Any = None) -> Any:
        self.version += 1
        return super().setdefault(key, default)

    def update(self, *args: Any, **kwargs: Any) -> None:
        super().update(*args, **kwargs)
        self.version += 1

    def clear(self) -> None:
        super().clear()
        self.version += 1

    def __ior__(self, other: Any) -> AdmittedWorkloads:
        self.update(other)
        return self


class ClusterQueueRuntime:
    __slots__ = (
        "_index",
        "_index_version",
        "_workloads",
        "active",
        "generation",
        "node",
        "rg_by_resource",
        "spec",
    )

    def __init__(self, spec: ClusterQueue, node: QuotaNode) -> None:
        self.spec = spec
        self.node = node
        self.rg_by_resource: dict[str, ResourceGroup] = {
            resource: group
            for group in spec.resource_groups
            for resource in group.covered_resources
        }
        # admitted workloads that preemption may consider (keyed by workload key)
        self.workloads = AdmittedWorkloads()
        # bumped when capacity may have been freed: the flavor scan then starts over
        self.generation = 0
        self.active = spec.active

    @property
    def workloads(self) -> AdmittedWorkloads:
        return self._workloads

    @workloads.setter
    def workloads(self, value: Mapping[str, WorkloadInfo]) -> None:
        if not isinstance(value, AdmittedWorkloads):
            value = AdmittedWorkloads(value)
        self._workloads = value
        self._index_version = -1
        self._index: tuple[list[int], list[WorkloadInfo]] = ([], [])

    def by_priority(self) -> tuple[list[int], list[WorkloadInfo]]:
        """Admitted workloads in ascending priority, with their priorities (for bisection).
        Rebuilt only after the admitted set changed: a preemption search reads it for every
        ClusterQueue of the cohort, many times a cycle. Never mutate the lists."""
        workloads = self._workloads
        if self._index_version != workloads.version:
            infos = sorted(workloads.values(), key=_priority)
            self._index = ([i.workload.priority for i in infos], infos)
            self._index_version = workloads.version
        return self._index

    def clone(self, node: QuotaNode, infos: Mapping[str, WorkloadInfo]) -> ClusterQueueRuntime:
        out = ClusterQueueRuntime.__new__(ClusterQueueRuntime)
        out.spec = self.spec
        out.node = node
        out.rg_by_resource = self.rg_by_resource
        out.workloads = AdmittedWorkloads({key: infos[key] for key in self.workloads})
        out.generation = self.generation
        out.active = self.active
        return out

    @property
    def name(self) -> str:
        return self.spec.name

    def __repr__(self) -> str:
        return f"<ClusterQueueRuntime {self.name}>"


def _priority(info: WorkloadInfo) -> int:
    return info.workload.priority
