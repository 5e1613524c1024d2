"""Volcano `nodeorder` at its default weights: LeastAllocated (cpu 50 / memory 50, weight 1)
plus BalancedAllocation (weight 1); MostAllocated has weight 0. The affinity, taint, image
and spread scores it also sums are equal on every node for pods without preferences, which
is all this model reads, so they cannot change the order."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpupact.engine.volcano.plugins.base import Plugin
from gpupact.kube.resources_fit import score_balanced_allocation, score_least_allocated

if TYPE_CHECKING:
    from gpupact.engine.volcano.model import NodeInfo, TaskInfo
    from gpupact.engine.volcano.session import Session

LEAST_REQUESTED_WEIGHT = 1
BALANCED_RESOURCE_WEIGHT = 1
_WEIGHTS = (50, 50)


def _requested_with(task: TaskInfo, node: NodeInfo) -> tuple[list[int], list[int]]:
    requested = [int(node.used.cpu + task.resreq.cpu), int(node.used.memory + task.resreq.memory)]
    allocatable = [int(node.allocatable.cpu), int(node.allocatable.memory)]
    return requested, allocatable


class NodeOrderPlugin(Plugin):
    name = "nodeorder"

    def on_session_open(self, ssn: Session) -> None:
        args = self.option.arguments
        least = int(args.get("leastrequested.weight", LEAST_REQUESTED_WEIGHT))
        balanced = int(args.get("balancedresource.weight", BALANCED_RESOURCE_WEIGHT))

        def score(task: TaskInfo, node: NodeInfo) -> int:
            requested, allocatable = _requested_with(task, node)
            total = least * score_least_allocated(requested, allocatable, _WEIGHTS)
            total += balanced * score_balanced_allocation(requested, allocatable)
            return total

        ssn.add_fn("nodeOrder", self.name, score)
