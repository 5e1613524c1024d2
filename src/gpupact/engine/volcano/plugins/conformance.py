"""Volcano `conformance`: critical pods (system priority classes, kube-system) are never
victims."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpupact.engine.volcano.framework import PERMIT
from gpupact.engine.volcano.plugins.base import Plugin

if TYPE_CHECKING:
    from gpupact.engine.volcano.framework import Session
    from gpupact.engine.volcano.model import TaskInfo

CRITICAL_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})
SYSTEM_NAMESPACE = "kube-system"


class ConformancePlugin(Plugin):
    name = "conformance"

    def on_session_open(self, ssn: Session) -> None:
        def evictable(evictor: TaskInfo, evictees: list[TaskInfo]) -> tuple[list, int]:
            victims = [
                t
                for t in evictees
                if t.pod.priority_class_name not in CRITICAL_CLASSES
                and t.namespace != SYSTEM_NAMESPACE
            ]
            return victims, PERMIT

        ssn.add_fn("preemptable", self.name, evictable)
        ssn.add_fn("reclaimable", self.name, evictable)
