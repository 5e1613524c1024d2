"""Volcano `preempt`: within a queue, a starving job's pending tasks evict lower-priority
running tasks (those the plugins agree are victims). Evictions for one node are tentative
until the preemptor fits there (queue allowance, resources, predicates); the job's
statement is committed only if the gang is then pipelined. Afterwards, tasks of a job may
preempt other tasks of the same job."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from gpupact.engine.gang import Statement, TaskStatus
from gpupact.engine.volcano.actions.nodes import sorted_by_score
from gpupact.engine.volcano.framework import NotModelledError
from gpupact.engine.volcano.heap import PriorityQueue
from gpupact.engine.volcano.resource import ZERO, Resource

if TYPE_CHECKING:
    from gpupact.engine.volcano.framework import Session
    from gpupact.engine.volcano.model import JobInfo, NodeInfo, Queue, TaskInfo

PREEMPTABLE_STATUSES = (TaskStatus.BOUND, TaskStatus.RUNNING)


def preempt(ssn: Session) -> None:
    args = ssn.action_arguments.get("preempt", {})
    if str(args.get("enableTopologyAwarePreemption", "false")).lower() == "true":
        raise NotModelledError("preempt with enableTopologyAwarePreemption")
    preemptors: dict[str, PriorityQueue[JobInfo]] = {}
    preemptor_tasks: dict[str, PriorityQueue[TaskInfo]] = {}
    under_request: dict[str, list[JobInfo]] = {}
    for job in ssn.valid_jobs_past_enqueue():
        if job.queue not in ssn.queues or not ssn.job_starving(job):
            continue
        preemptors.setdefault(job.queue, PriorityQueue(ssn.job_order_fn)).push(job)
        under_request.setdefault(job.queue, []).append(job)
        preemptor_tasks[job.uid] = _pending_queue(ssn, job)

    queues: PriorityQueue[Queue] = PriorityQueue(ssn.queue_order_fn)
    for name in preemptors:
        queues.push(ssn.queues[name])

    while not queues.empty():
        queue = queues.pop()
        jobs = preemptors[queue.name]
        while not jobs.empty():
            job = jobs.pop()
            stmt = ssn.statement()
            while ssn.job_starving(job) and not preemptor_tasks[job.uid].empty():
                preemptor = preemptor_tasks[job.uid].pop()
                preempt_task(ssn, stmt, preemptor, _other_job_filter(ssn, preemptor, job))
            if ssn.job_pipelined(job):
                stmt.commit()
            else:
                stmt.discard()

        for job in under_request.get(queue.name, []):
            tasks = _pending_queue(ssn, job)
            while not tasks.empty():
                preemptor = tasks.pop()
                stmt = ssn.statement()
                if not preempt_task(ssn, stmt, preemptor, _same_job_filter(preemptor)):
                    stmt.discard()
                    break
                stmt.commit()


def _pending_queue(ssn: Session, job: JobInfo) -> PriorityQueue[TaskInfo]:
    tasks: PriorityQueue[TaskInfo] = PriorityQueue(ssn.task_order_fn)
    for task in sorted(job.tasks_in(TaskStatus.PENDING), key=lambda t: t.uid):
        tasks.push(task)
    return tasks


def _base_victim(preemptor: TaskInfo, task: TaskInfo) -> bool:
    if task.status not in PREEMPTABLE_STATUSES:
        return False
    if preemptor.best_effort and not task.best_effort:
        return False  # a best-effort pod may not push out one that requests resources
    return task.preemptable


def _other_job_filter(
    ssn: Session, preemptor: TaskInfo, preemptor_job: JobInfo
) -> Callable[[TaskInfo], bool]:
    def accept(task: TaskInfo) -> bool:
        if not _base_victim(preemptor, task):
            return False
        job = ssn.jobs.get(task.job)
        return job is not None and job.queue == preemptor_job.queue and task.job != preemptor.job

    return accept


def _same_job_filter(preemptor: TaskInfo) -> Callable[[TaskInfo], bool]:
    return lambda task: _base_victim(preemptor, task) and task.job == preemptor.job


def live_tasks_on(ssn: Session, node: NodeInfo) -> list[TaskInfo]:
    """The session's current task objects on a node, in key order."""
    out = []
    for held in node.ordered_tasks():
        job = ssn.jobs.get(held.job)
        live = job.tasks.get(held.uid) if job is not None else None
        out.append(live if live is not None else held)
    return out


def validate_victims(preemptor: TaskInfo, node: NodeInfo, victims: list[TaskInfo]) -> bool:
    """Could evicting every victim make room at all?"""
    future = node.future_idle()
    for victim in victims:
        future.add(victim.resreq)
    return preemptor.init_resreq.less_equal(future, ZERO)


def preempt_task(
    ssn: Session, stmt: Statement, preemptor: TaskInfo, accept: Callable[[TaskInfo], bool]
) -> bool:
    if preemptor.pod.preemption_policy == "Never":
        return False
    if not ssn.pre_predicate(preemptor).ok:
        return False
    candidates = [
        n
        for n in ssn.nodes_without_unresolvable(preemptor)
        if ssn.predicate_for_preempt(preemptor, n).ok
    ]
    job = ssn.jobs[preemptor.job]
    queue = ssn.queues[job.queue]
    for node in sorted_by_score(ssn, preemptor, candidates):
        preemptees = [t for t in live_tasks_on(ssn, node) if accept(t)]
        victims = ssn.preemptable(preemptor, preemptees)
        if not validate_victims(preemptor, node, victims):
            continue
        node_stmt = ssn.statement()
        ordered = ssn.build_victims_queue(victims, preemptor)
        preempted = Resource()
        fits = _fits(ssn, queue, preemptor, node)
        while not ordered.empty() and not fits:
            victim = ordered.pop()
            ssn.evict(node_stmt, victim, "preempt")
            preempted.add(victim.resreq)
            fits = _fits(ssn, queue, preemptor, node)
        if fits:
            ssn.pipeline(node_stmt, preemptor, node.name)
            stmt.merge(node_stmt)
            return True
        node_stmt.discard()  # evictions on a node that did not make room are not kept
    return False


def _fits(ssn: Session, queue: Queue, preemptor: TaskInfo, node: NodeInfo) -> bool:
    return (
        ssn.allocatable(queue, preemptor)
        and preemptor.init_resreq.less_equal(node.future_idle(), ZERO)
        and ssn.predicate(preemptor, node).ok
    )
