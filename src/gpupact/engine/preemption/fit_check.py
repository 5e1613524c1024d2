"""Does the preemptor fit on a node once some pods are gone? (the dry run's only question)

Preemption asks this for every candidate node, first with all potential victims removed, then
once per victim it tries to keep. `FitCheck` is that question as a callback, so the engine can
answer it with its vectorised state; `FilterChainFit` answers it with the scalar filter chain
(`engine.placement.framework.filter_node`), the reference every faster check must agree with.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Protocol

from gpupact.engine.placement.framework import ClusterView, filter_node
from gpupact.kube import topology_spread as pts
from gpupact.kube.objects import Node, Pod
from gpupact.kube.requests import NodeResources, PodFootprint
from gpupact.kube.status import Status


class FitCheck(Protocol):
    def __call__(self, pod: Pod, node: Node, removed: Collection[Pod]) -> Status:
        """The filter verdict for `pod` on `node` as if the `removed` pods (distinct, by key;
        on this node or, for gang victims, elsewhere) were not running."""
        ...


class FilterChainFit:
    """FitCheck over the default filter chain: the node's resources minus the removed pods'
    footprints, and PodTopologySpread counts minus the removed pods (wherever they run).

    PreFilter work (spread counts over the whole cluster) is done once per preemptor and
    reused for every node and every removal set, like upstream's cloned CycleState."""

    __slots__ = ("_assigned", "_footprints", "_nodes", "_spread", "_view")

    def __init__(self, nodes: Sequence[Node], pods: Iterable[Pod]) -> None:
        pods = list(pods)
        self._view = ClusterView(nodes, pods)
        self._nodes = {node.name: node for node in nodes}
        self._assigned = [p for p in pods if p.assigned]
        self._footprints: dict[str, PodFootprint] = {}
        self._spread: tuple[Pod, pts.PreFilterState] | None = None

    def __call__(self, pod: Pod, node: Node, removed: Collection[Pod]) -> Status:
        resources = self._view.node_resources[node.name]
        leaving = [p for p in removed if p.node_name == node.name and p.holds_resources]
        if leaving:
            resources = _copy(resources)
            for victim in leaving:
                resources.remove_pod(self._footprint(victim))
        spread = None
        if pod.topology_spread_constraints:
            spread = self._spread_state(pod)
            if removed:
                spread = spread.copy()
                for victim in removed:
                    where = self._nodes.get(victim.node_name)
                    if where is not None:
                        spread.remove_pod(victim, where)
        return filter_node(pod, node, resources, spread).status

    def _footprint(self, pod: Pod) -> PodFootprint:
        footprint = self._footprints.get(pod.key)
        if footprint is None:
            footprint = self._footprints[pod.key] = pod.footprint()
        return footprint

    def _spread_state(self, pod: Pod) -> pts.PreFilterState:
        if self._spread is None or self._spread[0] is not pod:
            state = pts.prefilter(pod, list(self._nodes.values()), self._assigned)
            self._spread = (pod, state)
        return self._spread[1]


def _copy(resources: NodeResources) -> NodeResources:
    return NodeResources(
        allocatable=resources.allocatable,  # never mutated by remove_pod
        allowed_pods=resources.allowed_pods,
        requested=dict(resources.requested),
        non_zero_cpu=resources.non_zero_cpu,
        non_zero_memory=resources.non_zero_memory,
        pod_count=resources.pod_count,
    )
