"""Volcano `reclaim`: a starving job takes back resources from other queues' running,
preemptable tasks (those the plugins agree are reclaimable, typically from queues over
their deserved share). Evictions on a node are kept only if the reclaimer then fits there;
the job's statement is committed only if the gang is then pipelined."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpupact.engine.gang import Statement, TaskStatus
from gpupact.engine.volcano.actions.preempt import live_tasks_on, validate_victims
from gpupact.engine.volcano.heap import PriorityQueue
from gpupact.engine.volcano.resource import ZERO

if TYPE_CHECKING:
    from gpupact.engine.volcano.framework import Session
    from gpupact.engine.volcano.model import JobInfo, Queue, TaskInfo


def reclaim(ssn: Session) -> None:
    queues: PriorityQueue[Queue] = PriorityQueue(ssn.queue_order_fn)
    seen: set[str] = set()
    preemptors: dict[str, PriorityQueue[JobInfo]] = {}
    preemptor_tasks: dict[str, PriorityQueue[TaskInfo]] = {}
    for job in ssn.valid_jobs_past_enqueue():
        queue = ssn.queues.get(job.queue)
        if queue is None:
            continue
        if queue.name not in seen:
            seen.add(queue.name)
            queues.push(queue)
        if ssn.job_starving(job):
            preemptors.setdefault(job.queue, PriorityQueue(ssn.job_order_fn)).push(job)
            tasks: PriorityQueue[TaskInfo] = PriorityQueue(ssn.task_order_fn)
            for task in sorted(job.tasks_in(TaskStatus.PENDING), key=lambda t: t.uid):
                tasks.push(task)
            preemptor_tasks[job.uid] = tasks

    while not queues.empty():
        queue = queues.pop()
        if ssn.overused(queue):
            continue
        jobs = preemptors.get(queue.name)
        while jobs is not None and not jobs.empty():
            job = jobs.pop()
            stmt = ssn.statement()
            tasks = preemptor_tasks[job.uid]
            while ssn.job_starving(job) and not tasks.empty():
                task = tasks.pop()
                if task.pod.preemption_policy == "Never":
                    continue
                if not ssn.preemptive(queue, [task]):
                    continue
                if not ssn.pre_predicate(task).ok:
                    continue
                reclaim_for_task(ssn, stmt, task, job)
            if ssn.job_pipelined(job):
                stmt.commit()
            else:
                stmt.discard()
            if not jobs.empty():
                queues.push(queue)


def reclaim_for_task(ssn: Session, stmt: Statement, task: TaskInfo, job: JobInfo) -> None:
    nodes = [
        n for n in ssn.nodes_without_unresolvable(task) if ssn.predicate_for_preempt(task, n).ok
    ]
    for node in nodes:
        reclaimees = []
        for running in live_tasks_on(ssn, node):
            if running.status is not TaskStatus.RUNNING or not running.preemptable:
                continue
            owner = ssn.jobs.get(running.job)
            if owner is None or owner.queue == job.queue:
                continue
            if not ssn.queues[owner.queue].reclaimable:
                continue
            reclaimees.append(running)
        if not reclaimees:
            continue
        victims = ssn.reclaimable(task, reclaimees)
        if not validate_victims(task, node, victims):
            continue
        ordered = ssn.build_victims_queue(victims, task)
        available = node.future_idle()
        node_stmt = ssn.statement()
        while not ordered.empty() and not task.init_resreq.less_equal(available, ZERO):
            victim = ordered.pop()
            ssn.evict(node_stmt, victim, "reclaim")
            available.add(victim.resreq)
        if not task.init_resreq.less_equal(available, ZERO):
            node_stmt.discard()
            continue
        ssn.pipeline(node_stmt, task, node.name)
        stmt.merge(node_stmt)
        return
