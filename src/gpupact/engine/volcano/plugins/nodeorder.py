"""Volcano `nodeorder`: LeastAllocated (cpu 50 / memory 50, weight 1), MostAllocated (cpu 1 /
memory 1, weight 0) and BalancedAllocation (weight 1), weights from the plugin arguments
(leastrequested.weight, mostrequested.weight, balancedresource.weight), on the node's used
cpu / memory plus the task's request.

Not modelled (upstream scores on the kube snapshot the predicates plugin keeps): non-zero
default requests, nvidia.com/gpu as a third BalancedAllocation resource, and the node
affinity, inter-pod affinity, taint and spread scores normalised over the candidates. They
are equal on every node for pods without preferences or GPUs, which the current vectors
use.

`nodeOrder` scores one node with the scalar formulas; `batchNodeOrder` every node at once
with the placement engine's array formulas (the same numbers)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from gpupact.engine.placement.plugins import node_resources_fit as nrf
from gpupact.engine.volcano.plugins.arguments import get_int
from gpupact.engine.volcano.plugins.base import Plugin
from gpupact.kube.resources_fit import (
    score_balanced_allocation,
    score_least_allocated,
    score_most_allocated,
)

if TYPE_CHECKING:
    from gpupact.engine.volcano.framework import Session
    from gpupact.engine.volcano.model import NodeInfo, TaskInfo

LEAST_REQUESTED_WEIGHT = 1
MOST_REQUESTED_WEIGHT = 0
BALANCED_RESOURCE_WEIGHT = 1
_WEIGHTS = (50, 50)
_MOST_WEIGHTS = (1, 1)


def _requested_with(task: TaskInfo, node: NodeInfo) -> tuple[list[int], list[int]]:
    requested = [int(node.used.cpu + task.resreq.cpu), int(node.used.memory + task.resreq.memory)]
    allocatable = [int(node.allocatable.cpu), int(node.allocatable.memory)]
    return requested, allocatable


class NodeOrderPlugin(Plugin):
    name = "nodeorder"

    def on_session_open(self, ssn: Session) -> None:
        args = self.option.arguments
        least = get_int(args, "leastrequested.weight", LEAST_REQUESTED_WEIGHT)
        most = get_int(args, "mostrequested.weight", MOST_REQUESTED_WEIGHT)
        balanced = get_int(args, "balancedresource.weight", BALANCED_RESOURCE_WEIGHT)
        table = ssn.table

        def score(task: TaskInfo, node: NodeInfo) -> int:
            requested, allocatable = _requested_with(task, node)
            total = least * score_least_allocated(requested, allocatable, _WEIGHTS)
            if most:
                total += most * score_most_allocated(requested, allocatable, _MOST_WEIGHTS)
            total += balanced * score_balanced_allocation(requested, allocatable)
            return total

        def batch_score(task: TaskInfo) -> np.ndarray:
            ask = np.array([int(task.resreq.cpu), int(task.resreq.memory)], dtype=np.int64)
            requested = (table.used + ask).T
            allocatable = table.alloc.T
            total = least * nrf.score_least_allocated(requested, allocatable, _WEIGHTS)
            if most:
                total = total + most * nrf.score_most_allocated(
                    requested, allocatable, _MOST_WEIGHTS
                )
            return total + balanced * nrf.score_balanced_allocation(requested, allocatable)

        ssn.add_fn("nodeOrder", self.name, score)
        ssn.add_fn("batchNodeOrder", self.name, batch_score)
