"""Volcano `nodeorder` (pkg/scheduler/plugins/nodeorder/nodeorder.go): kube-scheduler's
score plugins, each weighted by a plugin argument.

Resource scores, per node: LeastAllocated (cpu 50 / memory 50; leastrequested.weight,
default 1), MostAllocated (cpu 1 / memory 1; mostrequested.weight, default 0) and
BalancedAllocation over cpu, memory and nvidia.com/gpu (weight 1 each; balancedresource.weight,
default 1; the GPU only for a task that asks for one on a node that has some, as kube's
calculateResourceAllocatableRequest leaves out an extended resource the pod does not request),
on the node's used amounts plus the task's request. `nodeOrder` scores one node with the
scalar formulas, `batchNodeOrder` every node at once with the placement engine's array
formulas.

Preference scores, over the candidate nodes (`candidateNodeOrder`): upstream's batch
function runs PreScore, Score and NormalizeScore of NodeAffinity (nodeaffinity.weight,
default 2), InterPodAffinity (podaffinity.weight, 2), TaintToleration
(tainttoleration.weight, 3) and PodTopologySpread (podtopologyspread.weight, 2) on the
candidate list the action passes, and multiplies each normalised score by its weight; a
weight of 0 leaves the plugin out. The scores are the placement engine's
(`Scheduler.preference_scores`), read on the kube view upstream scores on: the predicates
plugin's snapshot, which follows the session's allocations (`Session.node_map`), else the
nodes and pods as the session opened. Upstream builds InterPodAffinity with empty args, so
hardPodAffinityWeight is 0 here (kube-scheduler's default profile has 1).

Not modelled: ImageLocality (imagelocality.weight; no image states in the snapshot),
PodTopologySpread's system-default constraints (no Services or workload owners in a
session); the resource scores read the session's node accounting, where upstream reads the
kube NodeInfo the predicates plugin keeps (the same amounts for bound and allocated pods)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from gpupact.engine.placement.plugins import node_resources_fit as nrf
from gpupact.engine.placement.scheduler import (
    NODE_AFFINITY,
    POD_AFFINITY,
    SPREAD,
    TAINT,
    Profile,
    Scheduler,
)
from gpupact.engine.placement.session_filters import SessionFilters
from gpupact.engine.volcano.plugins.arguments import get_int
from gpupact.engine.volcano.plugins.base import Plugin
from gpupact.kube.requests import CPU, MEMORY
from gpupact.kube.resources_fit import (
    score_balanced_allocation,
    score_least_allocated,
    score_most_allocated,
)

if TYPE_CHECKING:
    from gpupact.cluster.state import ClusterState
    from gpupact.engine.volcano.framework import Session
    from gpupact.engine.volcano.model import NodeInfo, TaskInfo

GPU = "nvidia.com/gpu"  # the third BalancedAllocation resource nodeorder configures
LEAST_REQUESTED_WEIGHT = 1
MOST_REQUESTED_WEIGHT = 0
BALANCED_RESOURCE_WEIGHT = 1
# upstream calculateWeight's defaults for the preference scores (argument -> plugin, weight)
PREFERENCE_WEIGHTS = {
    "nodeaffinity.weight": (NODE_AFFINITY, 2),
    "podaffinity.weight": (POD_AFFINITY, 2),
    "tainttoleration.weight": (TAINT, 3),
    "podtopologyspread.weight": (SPREAD, 2),
}
# nodeorder builds InterPodAffinity from an empty InterPodAffinityArgs (no defaulting)
HARD_POD_AFFINITY_WEIGHT = 0
_WEIGHTS = (50, 50)
_MOST_WEIGHTS = (1, 1)


def _gpu_request(task: TaskInfo) -> int:
    return int((task.resreq.scalars or {}).get(GPU, 0))


def _requested_with(task: TaskInfo, node: NodeInfo) -> tuple[list[int], list[int]]:
    """cpu, memory and, for a GPU task, nvidia.com/gpu: used plus the task's request."""
    requested = [int(node.used.cpu + task.resreq.cpu), int(node.used.memory + task.resreq.memory)]
    allocatable = [int(node.allocatable.cpu), int(node.allocatable.memory)]
    gpu = _gpu_request(task)
    if gpu > 0:
        requested.append(int((node.used.scalars or {}).get(GPU, 0)) + gpu)
        allocatable.append(int((node.allocatable.scalars or {}).get(GPU, 0)))
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
            req2, alloc2 = requested[:2], allocatable[:2]
            total = least * score_least_allocated(req2, alloc2, _WEIGHTS)
            if most:
                total += most * score_most_allocated(req2, alloc2, _MOST_WEIGHTS)
            total += balanced * score_balanced_allocation(requested, allocatable)
            return total

        def batch_score(task: TaskInfo) -> np.ndarray:
            cols = [table.col[CPU], table.col[MEMORY]]
            ask = [int(task.resreq.cpu), int(task.resreq.memory)]
            gpu = _gpu_request(task)
            if gpu > 0 and GPU in table.col:
                cols.append(table.col[GPU])
                ask.append(gpu)
            requested = (table.used[:, cols] + np.array(ask, dtype=np.int64)).T
            allocatable = table.alloc[:, cols].T
            req2, alloc2 = requested[:2], allocatable[:2]
            total = least * nrf.score_least_allocated(req2, alloc2, _WEIGHTS)
            if most:
                total = total + most * nrf.score_most_allocated(req2, alloc2, _MOST_WEIGHTS)
            return total + balanced * nrf.score_balanced_allocation(requested, allocatable)

        ssn.add_fn("nodeOrder", self.name, score)
        ssn.add_fn("batchNodeOrder", self.name, batch_score)
        self._open_preferences(ssn)

    def _open_preferences(self, ssn: Session) -> None:
        args = self.option.arguments
        weights: dict[str, int] = {}
        for key, (plugin, default) in PREFERENCE_WEIGHTS.items():
            weight = get_int(args, key, default)
            if weight:
                weights[plugin] = weight
        if not weights:
            return
        snapshot: ClusterState | None = None
        if not any(o.name == "predicates" for tier in ssn.tiers for o in tier):
            # nobody updates upstream's NodeMap: the nodes and pods as the session opened
            placed = [(t.pod, n.name) for n in ssn.node_list for t in n.ordered_tasks()]
            snapshot = SessionFilters([n.node for n in ssn.node_list], placed).state
        scorer: list[Scheduler] = []

        def scheduler() -> Scheduler:
            if not scorer:
                state = ssn.node_map if snapshot is None else snapshot
                assert state is not None, "the predicates plugin opened no node map"
                profile = Profile(hard_pod_affinity_weight=HARD_POD_AFFINITY_WEIGHT)
                scorer.append(Scheduler(state, profile))
            return scorer[0]

        def candidate_scores(task: TaskInfo, rows: np.ndarray) -> np.ndarray:
            parts = scheduler().preference_scores(task.pod, rows)
            total = np.zeros(rows.shape[0], dtype=np.int64)
            for plugin, weight in weights.items():
                total = total + weight * parts[plugin]
            return total

        ssn.add_fn("candidateNodeOrder", self.name, candidate_scores)
