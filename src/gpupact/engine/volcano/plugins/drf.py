"""Volcano `drf`: dominant resource fairness between jobs. A job's share is its largest
fraction of any cluster resource; smaller shares go first, and a preemptor may only take
from jobs that would still hold at least its own share."""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING

from gpupact.engine.volcano.framework import PERMIT, EventHandler, NotModelledError
from gpupact.engine.volcano.plugins.base import Plugin
from gpupact.engine.volcano.resource import Resource, share

if TYPE_CHECKING:
    from gpupact.engine.volcano.framework import Session
    from gpupact.engine.volcano.model import JobInfo, TaskInfo

SHARE_DELTA = Fraction(1, 1_000_000)


def dominant_share(allocated: Resource, total: Resource) -> Fraction:
    return max(
        (share(allocated.get(n), total.get(n)) for n in total.resource_names()), default=Fraction(0)
    )


class DrfPlugin(Plugin):
    name = "drf"

    def on_session_open(self, ssn: Session) -> None:
        if "hierarchy" in self.option.points:
            raise NotModelledError("drf hierarchy (hierarchical DRF)")
        total = ssn.total_resource.clone()
        allocated: dict[str, Resource] = {}
        shares: dict[str, Fraction] = {}
        for job in ssn.jobs.values():
            allocated[job.uid] = job.allocated.clone()
            shares[job.uid] = dominant_share(allocated[job.uid], total)

        def preemptable(preemptor: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list, int]:
            if preemptor.job not in allocated:
                return [], PERMIT
            mine = dominant_share(allocated[preemptor.job].clone().add(preemptor.resreq), total)
            remaining: dict[str, Resource] = {}
            victims = []
            for preemptee in preemptees:
                if preemptee.job not in allocated:
                    continue
                if preemptee.job not in remaining:
                    remaining[preemptee.job] = allocated[preemptee.job].clone()
                theirs = dominant_share(remaining[preemptee.job].sub(preemptee.resreq), total)
                if mine < theirs or abs(mine - theirs) <= SHARE_DELTA:
                    victims.append(preemptee)
            return victims, PERMIT

        ssn.add_fn("preemptable", self.name, preemptable)

        def job_order(left: JobInfo, right: JobInfo) -> int:
            ls, rs = shares[left.uid], shares[right.uid]
            if ls == rs:
                return 0
            return -1 if ls < rs else 1

        ssn.add_fn("jobOrder", self.name, job_order)

        def on_change(task: TaskInfo, sign: int) -> None:
            if task.job not in allocated:
                return
            if sign > 0:
                allocated[task.job].add(task.resreq)
            else:
                allocated[task.job].sub(task.resreq)
            shares[task.job] = dominant_share(allocated[task.job], total)

        ssn.add_event_handler(EventHandler(lambda t: on_change(t, 1), lambda t: on_change(t, -1)))
