"""Volcano `enqueue`: admit Pending PodGroups to their queue (phase Inqueue) while the
queue's capability leaves room for their minResources; queues take turns by queue order."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpupact.engine.gang import PodGroupPhase
from gpupact.engine.volcano.heap import PriorityQueue

if TYPE_CHECKING:
    from gpupact.engine.volcano.framework import Session
    from gpupact.engine.volcano.model import JobInfo, Queue


def enqueue(ssn: Session) -> None:
    queues: PriorityQueue[Queue] = PriorityQueue(ssn.queue_order_fn)
    seen: set[str] = set()
    pending: dict[str, PriorityQueue[JobInfo]] = {}
    for job in ssn.jobs.values():
        queue = ssn.queues.get(job.queue)
        if queue is None:
            continue
        if queue.name not in seen:
            seen.add(queue.name)
            queues.push(queue)
        if job.is_pending():
            pending.setdefault(job.queue, PriorityQueue(ssn.job_order_fn)).push(job)

    while not queues.empty():
        queue = queues.pop()
        jobs = pending.get(queue.name)
        if jobs is None or jobs.empty():
            continue
        job = jobs.pop()
        if job.podgroup.min_resources is None or ssn.job_enqueueable(job):
            ssn.job_enqueued(job)
            job.podgroup.phase = PodGroupPhase.INQUEUE
        queues.push(queue)
