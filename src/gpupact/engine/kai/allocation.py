"""Placing one KAI job all-or-nothing: the allocate action's step, which the solver also
takes when it places a preemptor and re-places victims in a scenario."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpupact.engine.gang import Statement
from gpupact.engine.kai import fairshare as fs
from gpupact.engine.kai.model import JobView, KaiNode, KaiTask

if TYPE_CHECKING:
    from gpupact.engine.kai.framework import KaiSession


def quantities(tasks: list[KaiTask], view: str = "request") -> fs.Quantities:
    """The tasks' amounts as a queue sees them: "request" (what they ask for), "accepted"
    (as placed) or "capacity" (what the queue capacity checks charge before placement)."""
    total = fs.zero()
    for task in tasks:
        total = fs.added(total, task.amounts(view))
    return total


def job_over_capacity(ssn: KaiSession, job: JobView, tasks: list[KaiTask]) -> bool:
    """Over a queue limit, or non-preemptible work over a queue quota (up the tree)."""
    requested = quantities(tasks, "capacity")
    if fs.over_limit(ssn.queues, job.queue, requested):
        return True
    return not job.preemptible and fs.non_preemptible_over_quota(ssn.queues, job.queue, requested)


def allocate_job(
    ssn: KaiSession, stmt: Statement, nodes: list[KaiNode], job: JobView, *, pipeline_only: bool
) -> bool:
    """Place the job's next tasks all-or-nothing; on failure nothing of it stays."""
    tasks = ssn.tasks_to_allocate(job, real=not pipeline_only)
    if job_over_capacity(ssn, job, tasks):
        return False
    checkpoint = stmt.checkpoint()
    for task in tasks:
        if not _allocate_task(ssn, stmt, nodes, task, pipeline_only):
            stmt.rollback(checkpoint)
            return False
    return True


def _allocate_task(
    ssn: KaiSession, stmt: Statement, nodes: list[KaiNode], task: KaiTask, pipeline_only: bool
) -> bool:
    for node in ssn.ordered_nodes(task, nodes):
        if not ssn.fitting_node(task, node):
            continue
        if task.shared is not None:
            if _allocate_shared(ssn, stmt, task, node, pipeline_only):
                return True
            continue
        if not pipeline_only and node.fits_idle(task):
            ssn.allocate(stmt, task, node.name)
        else:
            ssn.pipeline(stmt, task, node.name, not pipeline_only)
        return True
    return False


def _allocate_shared(
    ssn: KaiSession, stmt: Statement, task: KaiTask, node: KaiNode, pipeline_only: bool
) -> bool:
    """A fractional GPU pod goes on the node's preferred GPU group(s); it is pipelined when
    they wait for releasing resources."""
    assert task.shared is not None
    choice = node.sharing.choose(task.shared, pipeline_only, node.fits_idle(task))
    if choice is None:
        return False
    if pipeline_only or choice.releasing:
        ssn.pipeline(stmt, task, node.name, False, choice.groups)
    else:
        ssn.allocate(stmt, task, node.name, choice.groups)
    return True
