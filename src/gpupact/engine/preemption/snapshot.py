"""What preemption reads from a cluster, as a small protocol, and a plain implementation.

Preemption needs the nodes in order, the pods running on each node, the PodDisruptionBudgets,
and (for gang protection) every running pod. The vectorised ClusterState can provide the same
protocol; `PreemptionSnapshot` builds it from Node / Pod objects.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from gpupact.engine.preemption.disruption_budget import PodDisruptionBudget
from gpupact.kube.objects import Node, Pod


class PreemptionCluster(Protocol):
    @property
    def nodes(self) -> Sequence[Node]:
        """All nodes, in the scheduler's order (the dry run walks them from an offset)."""
        ...

    @property
    def pdbs(self) -> Sequence[PodDisruptionBudget]: ...

    def node(self, name: str) -> Node | None: ...

    def pods_on(self, node_name: str) -> Sequence[Pod]:
        """Pods bound to the node and still holding resources (the node's NodeInfo pods)."""
        ...

    def running_pods(self) -> Iterable[Pod]:
        """Every pod bound to some node of the cluster and holding resources."""
        ...


class PreemptionSnapshot:
    """Nodes, their pods and the budgets, indexed once."""

    __slots__ = ("_by_name", "_pods_by_node", "nodes", "pdbs")

    def __init__(
        self,
        nodes: Sequence[Node],
        pods: Iterable[Pod] = (),
        pdbs: Sequence[PodDisruptionBudget] = (),
    ) -> None:
        self.nodes: Sequence[Node] = tuple(nodes)
        self.pdbs: Sequence[PodDisruptionBudget] = tuple(pdbs)
        self._by_name = {node.name: node for node in self.nodes}
        self._pods_by_node: dict[str, list[Pod]] = {node.name: [] for node in self.nodes}
        for pod in pods:
            on = self._pods_by_node.get(pod.node_name)
            if on is not None and pod.holds_resources:
                on.append(pod)

    def node(self, name: str) -> Node | None:
        return self._by_name.get(name)

    def pods_on(self, node_name: str) -> Sequence[Pod]:
        return self._pods_by_node.get(node_name, ())

    def running_pods(self) -> Iterable[Pod]:
        for pods in self._pods_by_node.values():
            yield from pods
