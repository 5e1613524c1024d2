"""Volcano `predicates`: kube-scheduler's filters run against the session's node snapshot,
which follows every tentative allocate / deallocate of the session (so a gang's members
already placed count for inter-pod anti-affinity, topology spread and host ports), plus the
node's pod count. Free resources are the actions' own check (idle or future idle).

The filters are the placement engine's (`engine/placement/session_filters.py`): one node at
a time for the `predicate` extension point, every node at once for `batchPredicate`. As
upstream, a task's PreFilter state is taken at its PrePredicate and used by its Filter calls
until the next one (in preempt, victims evicted meanwhile still count).
Arguments: predicate.NodePortsEnable, predicate.PodAffinityEnable and
predicate.PodTopologySpreadEnable switch those filters (default on); switching off
NodeAffinity or TaintToleration is not modelled.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from gpupact.engine.placement.session_filters import Enabled, SessionFilters, combine
from gpupact.engine.volcano.framework import EventHandler, NotModelledError
from gpupact.engine.volcano.plugins.arguments import get_bool
from gpupact.engine.volcano.plugins.base import Plugin
from gpupact.kube.status import Code, Status

if TYPE_CHECKING:
    from collections.abc import Callable

    from gpupact.engine.volcano.framework import Session
    from gpupact.engine.volcano.model import NodeInfo, TaskInfo

REASON_TOO_MANY_PODS = "node(s) pod number exceeded"
STATUS_TOO_MANY_PODS = Status(Code.UNSCHEDULABLE, (REASON_TOO_MANY_PODS,), "predicates")
NODE_AFFINITY_ENABLE = "predicate.NodeAffinityEnable"
TAINT_TOLERATION_ENABLE = "predicate.TaintTolerationEnable"
NODE_PORTS_ENABLE = "predicate.NodePortsEnable"
POD_AFFINITY_ENABLE = "predicate.PodAffinityEnable"
POD_TOPOLOGY_SPREAD_ENABLE = "predicate.PodTopologySpreadEnable"


def enabled_filters(arguments) -> Enabled:
    for key in (NODE_AFFINITY_ENABLE, TAINT_TOLERATION_ENABLE):
        if not get_bool(arguments, key, True):
            raise NotModelledError(f"predicates with {key}=false")
    return Enabled(
        node_ports=get_bool(arguments, NODE_PORTS_ENABLE, True),
        pod_affinity=get_bool(arguments, POD_AFFINITY_ENABLE, True),
        topology_spread=get_bool(arguments, POD_TOPOLOGY_SPREAD_ENABLE, True),
    )


class PredicatesPlugin(Plugin):
    name = "predicates"

    def on_session_open(self, ssn: Session) -> None:
        placed = [(held.pod, node.name) for node in ssn.node_list for held in node.ordered_tasks()]
        filters = SessionFilters(
            [node.node for node in ssn.node_list], placed, enabled_filters(self.option.arguments)
        )
        self.filters = filters
        ssn.node_map = filters.state
        ssn.add_event_handler(
            EventHandler(
                lambda task: filters.add(task.pod, task.node_name),
                lambda task: filters.remove(task.pod, task.node_name),
            )
        )
        table = ssn.table
        # PrePredicate: the PreFilter state each task's Filter calls use until its next
        # PrePredicate (codes for the vectorised path, scalar state for the reference)
        prefiltered: dict[str, Any] = {}

        def pre_predicate(task: TaskInfo) -> Status:
            if ssn.vectorised:
                prefiltered[task.uid] = filters.codes(task.pod)
            else:
                prefiltered[task.uid] = filters.prepare(task.pod)
            return Status()

        def predicate(task: TaskInfo, node: NodeInfo) -> Status:
            failures = []
            if node.allocatable.max_task_num <= len(node.tasks):
                failures.append(STATUS_TOO_MANY_PODS)
            status = filters.status(task.pod, node.node, prefiltered.get(task.uid))
            if not status.ok:
                failures.append(status)
            return combine(failures)

        def batch_predicate(task: TaskInfo) -> tuple[np.ndarray, Callable[[int], Status]]:
            codes = prefiltered.get(task.uid) or filters.codes(task.pod)
            if task.pod.host_ports:
                codes = codes.with_ports(filters.live_ports(task.pod))
            full = table.pods_full()

            def status_of(row: int) -> Status:
                failures = [STATUS_TOO_MANY_PODS] if full[row] else []
                status = codes.status(row)
                if not status.ok:
                    failures.append(status)
                return combine(failures)

            return codes.ok & ~full, status_of

        ssn.add_fn("prePredicate", self.name, pre_predicate)
        ssn.add_fn("predicate", self.name, predicate)
        ssn.add_fn("batchPredicate", self.name, batch_predicate)
