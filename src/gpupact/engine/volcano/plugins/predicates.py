"""Volcano `predicates`: the kube-scheduler filters that do not depend on free resources
(cordon, nodeName, taints, node affinity / selector) plus the node's pod count. Free
resources are the actions' own check (against idle or future-idle resources)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpupact.engine.volcano.node_fit import static_fit
from gpupact.engine.volcano.plugins.base import Plugin
from gpupact.kube.status import Code, Status

if TYPE_CHECKING:
    from gpupact.engine.volcano.model import NodeInfo, TaskInfo
    from gpupact.engine.volcano.session import Session

REASON_TOO_MANY_PODS = "node(s) pod number exceeded"


class PredicatesPlugin(Plugin):
    name = "predicates"

    def on_session_open(self, ssn: Session) -> None:
        def predicate(task: TaskInfo, node: NodeInfo) -> Status:
            if node.allocatable.max_task_num <= len(node.tasks):
                return Status(Code.UNSCHEDULABLE, (REASON_TOO_MANY_PODS,), self.name)
            return static_fit(task.pod, node.node)

        ssn.add_fn("predicate", self.name, predicate)
