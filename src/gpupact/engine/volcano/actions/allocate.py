"""Volcano `allocate`: queue by queue (re-ordered after every job), the most deserving job
places its pending tasks; the job's statement is committed only once the gang is ready,
kept (neither bound nor undone) when it is merely pipelined, and discarded otherwise."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpupact.engine.gang import PodGroupPhase, Statement, TaskStatus
from gpupact.engine.volcano.actions.nodes import feasible_rows, prioritize_rows
from gpupact.engine.volcano.heap import PriorityQueue
from gpupact.engine.volcano.resource import ZERO

if TYPE_CHECKING:
    from gpupact.engine.volcano.framework import Session
    from gpupact.engine.volcano.model import JobInfo, NodeInfo, Queue, TaskInfo


def allocate(ssn: Session) -> None:
    queues: PriorityQueue[Queue] = PriorityQueue(ssn.queue_order_fn)
    jobs_by_queue: dict[str, PriorityQueue[JobInfo]] = {}
    pending: dict[str, PriorityQueue[TaskInfo]] = {}
    for job in ssn.jobs.values():
        if job.is_pending():
            if "enqueue" in ssn.enabled_actions:
                continue
            job.podgroup.phase = PodGroupPhase.INQUEUE  # no enqueue action: admit as is
        if ssn.job_valid(job) is not None:
            continue
        if job.queue not in ssn.queues:
            continue
        tasks: PriorityQueue[TaskInfo] = PriorityQueue(ssn.task_order_fn)
        for task in sorted(job.tasks_in(TaskStatus.PENDING), key=lambda t: t.uid):
            if not task.best_effort:  # best-effort pods are backfill's
                tasks.push(task)
        if tasks.empty():
            continue
        if job.queue not in jobs_by_queue:
            jobs_by_queue[job.queue] = PriorityQueue(ssn.job_order_fn)
            queues.push(ssn.queues[job.queue])
        jobs_by_queue[job.queue].push(job)
        pending[job.uid] = tasks

    while not queues.empty():
        queue = queues.pop()
        if ssn.overused(queue):
            continue
        jobs = jobs_by_queue.get(queue.name)
        if jobs is None or jobs.empty():
            continue
        job = jobs.pop()
        tasks = pending[job.uid]
        stmt = allocate_tasks(ssn, job, tasks)
        if stmt is not None and ssn.job_ready(job):
            stmt.commit()
            if not tasks.empty():
                jobs.push(job)
        # re-push so the queue's share, changed by this job, orders it again
        queues.push(queue)


def allocate_tasks(ssn: Session, job: JobInfo, tasks: PriorityQueue[TaskInfo]) -> Statement | None:
    """Place the job's tasks until it is ready; a gang that cannot become ready (or at
    least pipelined) is rolled back entirely."""
    queue = ssn.queues[job.queue]
    nodes = ssn.node_list
    if not nodes:
        return None
    stmt = ssn.statement()
    while not tasks.empty():
        task = tasks.pop()
        if not ssn.allocatable(queue, task):
            continue
        if job.task_has_fit_errors(task):
            # another task of this role found no node this session: so will this one
            job.nodes_fit_errors[task.uid] = {}
            continue
        status = ssn.pre_predicate(task)
        if not status.ok:
            job.nodes_fit_errors[task.uid] = {n.name: status for n in nodes}
            if job.gang.need_continue_allocating(job.fit_failed_roles()):
                continue
            break
        fit, errors = feasible_rows(ssn, task)
        if not fit.size:
            job.nodes_fit_errors[task.uid] = errors()
            # the remaining tasks may still make the gang; otherwise stop trying
            if job.gang.need_continue_allocating(job.fit_failed_roles()):
                continue
            break
        node = prioritize_rows(ssn, task, fit)
        if node is None:
            continue
        place(ssn, stmt, task, node)
        if ssn.job_ready(job):
            break
    if ssn.job_ready(job) or ssn.job_pipelined(job):
        return stmt
    stmt.discard()
    return None


def place(ssn: Session, stmt: Statement, task: TaskInfo, node: NodeInfo) -> None:
    """Allocate on idle resources, else pipeline on resources being released."""
    if task.init_resreq.less_equal(node.idle, ZERO):
        ssn.allocate(stmt, task, node)
    elif task.init_resreq.less_equal(node.future_idle(), ZERO):
        ssn.pipeline(stmt, task, node.name)
