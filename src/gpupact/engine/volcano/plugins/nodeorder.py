"""Volcano `nodeorder` at its default weights: LeastAllocated (cpu 50 / memory 50, weight 1)
plus BalancedAllocation (weight 1); MostAllocated has weight 0. The affinity, taint, image
and spread scores it also sums are equal on every node for pods without preferences, which
is all this model reads, so they cannot change the order.

`nodeOrder` scores one node with the scalar formulas; `batchNodeOrder` every node at once
with the placement engine's array formulas (the same numbers)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from gpupact.engine.placement.plugins import node_resources_fit as nrf
from gpupact.engine.volcano.plugins.arguments import get_int
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
        least = get_int(args, "leastrequested.weight", LEAST_REQUESTED_WEIGHT)
        balanced = get_int(args, "balancedresource.weight", BALANCED_RESOURCE_WEIGHT)
        table = ssn.table

        def score(task: TaskInfo, node: NodeInfo) -> int:
            requested, allocatable = _requested_with(task, node)
            total = least * score_least_allocated(requested, allocatable, _WEIGHTS)
            total += balanced * score_balanced_allocation(requested, allocatable)
            return total

        def batch_score(task: TaskInfo) -> np.ndarray:
            ask = np.array([int(task.resreq.cpu), int(task.resreq.memory)], dtype=np.int64)
            requested = (table.used + ask).T
            allocatable = table.alloc.T
            total = least * nrf.score_least_allocated(requested, allocatable, _WEIGHTS)
            return total + balanced * nrf.score_balanced_allocation(requested, allocatable)

        ssn.add_fn("nodeOrder", self.name, score)
        ssn.add_fn("batchNodeOrder", self.name, batch_score)
