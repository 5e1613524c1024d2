"""A ClusterQueue as the scheduler sees it during a cycle: spec, quota node, admitted workloads."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Mapping
from typing import Any

from gpupact.engine.admission.model import ClusterQueue, ResourceGroup
from gpupact.engine.admission.resource_tree import QuotaNode
from gpupact.engine.admission.workload_info import WorkloadInfo


class AdmittedWorkloads(dict[str, WorkloadInfo]):
    """Admitted workloads of one ClusterQueue by key, with the priority index preemption
    searches read (ascending priority). Single inserts and removals update the index in place
    of a rebuild: a preemption search removes and restores candidates many times a cycle.
    The order among equal priorities is not kept (every reader re-sorts candidates by a total
    key); any other mutation drops the index and the next read rebuilds it."""

    __slots__ = ("_infos", "_priorities")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._priorities: list[int] | None = None
        self._infos: list[WorkloadInfo] = []

    def by_priority(self) -> tuple[list[int], list[WorkloadInfo]]:
        """Never mutate the lists: they are replaced, not edited, on every change."""
        if self._priorities is None:
            infos = sorted(self.values(), key=_priority)
            self._priorities = [i.workload.priority for i in infos]
            self._infos = infos
        return self._priorities, self._infos

    def _drop_index(self) -> None:
        self._priorities = None
        self._infos = []

    def _index_add(self, info: WorkloadInfo) -> None:
        if self._priorities is None:
            return
        priority = info.workload.priority
        at = bisect_right(self._priorities, priority)
        self._priorities = [*self._priorities[:at], priority, *self._priorities[at:]]
        self._infos = [*self._infos[:at], info, *self._infos[at:]]

    def _index_remove(self, info: WorkloadInfo) -> None:
        if self._priorities is None:
            return
        priority = info.workload.priority
        lo = bisect_left(self._priorities, priority)
        hi = bisect_right(self._priorities, priority)
        for at in range(lo, hi):
            if self._infos[at] is info:
                self._priorities = self._priorities[:at] + self._priorities[at + 1 :]
                self._infos = self._infos[:at] + self._infos[at + 1 :]
                return
        self._drop_index()

    def __setitem__(self, key: str, value: WorkloadInfo) -> None:
        old = self.get(key)
        super().__setitem__(key, value)
        if old is not None:
            self._drop_index()
        else:
            self._index_add(value)

    def __delitem__(self, key: str) -> None:
        info = self[key]
        super().__delitem__(key)
        self._index_remove(info)

    def pop(self, key: str, *default: Any) -> Any:
        if key not in self:
            return super().pop(key, *default)
        info = super().pop(key)
        self._index_remove(info)
        return info

    def popitem(self) -> tuple[str, WorkloadInfo]:
        self._drop_index()
        return super().popitem()

    def setdefault(self, key: str, default: Any = None) -> Any:
        self._drop_index()
        return super().setdefault(key, default)

    def update(self, *args: Any, **kwargs: Any) -> None:
        super().update(*args, **kwargs)
        self._drop_index()

    def clear(self) -> None:
        super().clear()
        self._drop_index()

    def __ior__(self, other: Any) -> AdmittedWorkloads:
        self.update(other)
        return self


class ClusterQueueRuntime:
    __slots__ = (
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

    def by_priority(self) -> tuple[list[int], list[WorkloadInfo]]:
        """Admitted workloads in ascending priority, with their priorities (for bisection).
        Never mutate the lists."""
        return self._workloads.by_priority()

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
