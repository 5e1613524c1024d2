"""Volcano `priority`: order jobs by PriorityClass value and tasks by pod priority; a victim
must have a lower priority (job level across jobs, task level within a job)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpupact.engine.volcano.framework import PERMIT
from gpupact.engine.volcano.plugins.base import Plugin

if TYPE_CHECKING:
    from gpupact.engine.volcano.framework import Session
    from gpupact.engine.volcano.model import JobInfo, TaskInfo


def _desc(left: int, right: int) -> int:
    if left == right:
        return 0
    return -1 if left > right else 1


class PriorityPlugin(Plugin):
    name = "priority"

    def on_session_open(self, ssn: Session) -> None:
        ssn.add_fn("taskOrder", self.name, lambda lt, rt: _desc(lt.priority, rt.priority))
        ssn.add_fn("jobOrder", self.name, lambda lj, rj: _desc(lj.priority, rj.priority))

        def preemptable(preemptor: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list, int]:
            preemptor_job = ssn.jobs.get(preemptor.job)
            if preemptor_job is None:
                return [], PERMIT
            victims = []
            for preemptee in preemptees:
                job = ssn.jobs.get(preemptee.job)
                if job is None:
                    continue
                if job.uid != preemptor_job.uid:
                    if job.priority < preemptor_job.priority:
                        victims.append(preemptee)
                elif preemptee.priority < preemptor.priority:
                    victims.append(preemptee)
            return victims, PERMIT

        ssn.add_fn("preemptable", self.name, preemptable)

        def starving(job: JobInfo) -> bool:
            return job.gang.ready_task_num() + job.gang.waiting_task_num() < len(job.tasks)

        ssn.add_fn("jobStarving", self.name, starving)
