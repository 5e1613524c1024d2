"""Volcano `gang`: a job is valid, ready, pipelined or starving by its minMember (and
per-role minTaskMember); victims never take a running gang below its minimum."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpupact.engine.gang import TaskStatus
from gpupact.engine.volcano.framework import PERMIT, REJECT, ValidateResult
from gpupact.engine.volcano.plugins.base import Plugin

if TYPE_CHECKING:
    from gpupact.engine.volcano.framework import Session
    from gpupact.engine.volcano.model import JobInfo, TaskInfo

NOT_ENOUGH_PODS_OF_TASK = "NotEnoughPodsOfTask"
NOT_ENOUGH_PODS = "NotEnoughTasks"


class GangPlugin(Plugin):
    name = "gang"

    def on_session_open(self, ssn: Session) -> None:
        ssn.add_fn("jobValid", self.name, valid_job)

        def evictable(evictor: TaskInfo, evictees: list[TaskInfo]) -> tuple[list, int]:
            occupied: dict[str, int] = {}
            victims = []
            for evictee in evictees:
                job = ssn.jobs.get(evictee.job)
                if job is None:
                    continue
                if job.uid not in occupied:
                    occupied[job.uid] = job.gang.ready_task_num()
                if occupied[job.uid] > job.min_available:
                    occupied[job.uid] -= 1
                    victims.append(evictee)
            return victims, PERMIT

        ssn.add_fn("reclaimable", self.name, evictable)
        ssn.add_fn("preemptable", self.name, evictable)
        ssn.add_fn("jobOrder", self.name, job_order)
        ssn.add_fn(
            "jobReady", self.name, lambda job: job.gang.check_task_ready() and job.gang.is_ready()
        )
        ssn.add_fn("jobPipelined", self.name, job_pipelined)
        ssn.add_fn("jobStarving", self.name, lambda job: job.gang.is_starving())

    def on_session_close(self, ssn: Session) -> None:
        """Mark jobs that could not become ready this session (the Unschedulable condition
        the PodGroup phase reads)."""
        for job in ssn.jobs.values():
            if not job.tasks or job.gang.is_ready():
                continue
            if _releasing_keeps_gang(job):
                continue
            job.unschedulable = True


def valid_job(job: JobInfo) -> ValidateResult | None:
    if not job.gang.check_task_valid():
        return ValidateResult(False, NOT_ENOUGH_PODS_OF_TASK, "Not enough valid pods of each task")
    valid = job.gang.valid_task_num()
    if valid < job.min_available:
        return ValidateResult(
            False,
            NOT_ENOUGH_PODS,
            f"Not enough valid tasks for gang-scheduling, valid: {valid}, min: {job.min_available}",
        )
    return None


def job_order(left: JobInfo, right: JobInfo) -> int:
    """Jobs that are not ready yet go first."""
    left_ready, right_ready = left.gang.is_ready(), right.gang.is_ready()
    if left_ready == right_ready:
        return 0
    return 1 if left_ready else -1


def job_pipelined(job: JobInfo) -> int:
    return PERMIT if job.gang.check_task_pipelined() and job.gang.is_pipelined() else REJECT


def _releasing_keeps_gang(job: JobInfo) -> bool:
    """A gang whose scheduled pods are only terminating keeps its slots: not unschedulable."""
    releasing = job.releasing_scheduled_num()
    if releasing == 0:
        return False
    if job.gang.count(TaskStatus.PENDING, TaskStatus.PIPELINED):
        return False
    return job.gang.scheduled_task_num() + releasing >= job.min_available
