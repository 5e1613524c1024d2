"""Volcano `backfill`: best-effort pods (no resource requests) of admitted jobs go to any
node their predicates accept; allocate leaves them to this action."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpupact.engine.gang import TaskStatus
from gpupact.engine.volcano.actions.nodes import best_node
from gpupact.engine.volcano.heap import PriorityQueue

if TYPE_CHECKING:
    from gpupact.engine.volcano.framework import Session
    from gpupact.engine.volcano.model import JobInfo, Queue, TaskInfo


def backfill(ssn: Session) -> None:
    for task in _pending_best_effort(ssn):
        job = ssn.jobs[task.job]
        status = ssn.pre_predicate(task)
        if not status.ok:
            job.nodes_fit_errors[task.uid] = {n.name: status for n in ssn.node_list}
            continue
        fit, errors = [], {}
        for node in ssn.node_list:
            node_status = ssn.predicate(task, node)
            if node_status.ok:
                fit.append(node)
            else:
                errors[node.name] = node_status
        if not fit:
            job.nodes_fit_errors[task.uid] = errors
            continue
        node = best_node(ssn, task, fit)
        if node is not None:
            ssn.allocate_and_dispatch(task, node)


def _pending_best_effort(ssn: Session) -> list[TaskInfo]:
    queues: PriorityQueue[Queue] = PriorityQueue(ssn.queue_order_fn)
    jobs: dict[str, PriorityQueue[JobInfo]] = {}
    tasks: dict[str, PriorityQueue[TaskInfo]] = {}
    for job in ssn.valid_jobs_past_enqueue():
        queue = ssn.queues.get(job.queue)
        if queue is None:
            continue
        for task in sorted(job.tasks_in(TaskStatus.PENDING), key=lambda t: t.uid):
            if task.best_effort:
                tasks.setdefault(job.uid, PriorityQueue(ssn.task_order_fn)).push(task)
        for task in sorted(job.tasks_in(TaskStatus.PIPELINED), key=lambda t: t.uid):
            if task.best_effort:
                ssn.unpipeline(task)
                tasks.setdefault(job.uid, PriorityQueue(ssn.task_order_fn)).push(task)
        if job.uid not in tasks:
            continue
        if queue.name not in jobs:
            queues.push(queue)
            jobs[queue.name] = PriorityQueue(ssn.job_order_fn)
        jobs[queue.name].push(job)
    ordered: list[TaskInfo] = []
    while not queues.empty():
        queue = queues.pop()
        while not jobs[queue.name].empty():
            job = jobs[queue.name].pop()
            while not tasks[job.uid].empty():
                ordered.append(tasks[job.uid].pop())
    return ordered
