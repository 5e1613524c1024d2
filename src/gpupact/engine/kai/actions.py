"""KAI's actions: allocate, preempt, reclaim, stalegangeviction.

- allocate: jobs in queue order place their gang all-or-nothing; a gang that needs
  resources still being released is pipelined as a whole.
- preempt: within a queue, a pending job evicts preemptible jobs of lower priority.
- reclaim: a queue within its fair share takes back from other queues, within the
  proportion plugin's reclaim rules.
- stalegangeviction: a gang running below its minimum for longer than the grace period
  is released (all its active pods evicted).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from gpupact.engine.gang import (
    ACTIVE_ALLOCATED_STATUSES,
    StalenessTracker,
    TaskStatus,
    gang_is_stale,
)
from gpupact.engine.kai import fairshare as fs
from gpupact.engine.kai.allocation import allocate_job, quantities
from gpupact.engine.kai.model import JobView, KaiNode, KaiTask
from gpupact.engine.kai.ordering import JobsOrder
from gpupact.engine.kai.solver import JobSolver, Scenario

if TYPE_CHECKING:
    from gpupact.engine.kai.framework import KaiSession


def should_pipeline(job: JobView) -> bool:
    """Some pod waits for releasing resources while fewer than the minimum are placed."""
    pipelined = any(t.status is TaskStatus.PIPELINED for t in job.tasks)
    placed = sum(
        1
        for t in job.tasks
        if t.status in ACTIVE_ALLOCATED_STATUSES and t.status is not TaskStatus.PIPELINED
    )
    return pipelined and placed < job.min_available


def _node_list(ssn: KaiSession) -> list[KaiNode]:
    return list(ssn.nodes.values())


def _pending_ready(ssn: KaiSession) -> list[JobView]:
    views = [JobView.whole(j) for j in ssn.jobs.values()]
    return [v for v in views if v.ready_for_scheduling() and v.has_pending()]


# --- actions ---------------------------------------------------------------------------------


def allocate(ssn: KaiSession) -> None:
    order = JobsOrder(ssn, _pending_ready(ssn))
    while not order.empty():
        job = order.pop()
        stmt = ssn.statement()
        if not allocate_job(ssn, stmt, _node_list(ssn), job, pipeline_only=False):
            stmt.discard()
            continue
        if should_pipeline(job):
            ssn.convert_allocated_to_pipelined(stmt, job.job)
        stmt.commit()
        if any(t.should_allocate(True) for t in job.tasks):
            order.push(job)


def _feasible_nodes(ssn: KaiSession, job: JobView) -> list[KaiNode]:
    """GPU jobs only look at nodes with idle or releasing GPUs."""
    nodes = _node_list(ssn)
    if not all(t.requires_gpu for t in job.tasks):
        return nodes
    return [n for n in nodes if n.idle_gpus() > 0 or n.releasing_gpus() > 0]


def _has_active(job: JobView) -> bool:
    return any(t.status in ACTIVE_ALLOCATED_STATUSES for t in job.tasks)


def _victims_order(ssn: KaiSession, accept: Callable[[JobView], bool]) -> Callable[[], JobsOrder]:
    def build() -> JobsOrder:
        views = [JobView.whole(j) for j in ssn.jobs.values()]
        alive = [v for v in views if v.alive() > 0 and accept(v)]
        return JobsOrder(ssn, alive, victims=True)

    return build


def preempt(ssn: KaiSession) -> None:
    order = JobsOrder(ssn, _pending_ready(ssn))
    while not order.empty():
        job = order.pop()
        tasks = ssn.tasks_to_allocate(job, real=False)
        if not job.preemptible and fs.non_preemptible_over_quota(
            ssn.queues, job.queue, quantities(tasks, "capacity")
        ):
            continue

        def accept(victim: JobView, job: JobView = job) -> bool:
            return (
                victim.preemptible
                and victim.priority < job.priority
                and victim.queue == job.queue
                and victim.uid != job.uid
                and victim.active_allocated() > 0
            )

        solver = JobSolver(
            ssn, _feasible_nodes(ssn, job), lambda _s: True, _victims_order(ssn, accept)
        )
        solved, stmt, _ = solver.solve(job)
        if solved and stmt is not None:
            stmt.commit()


def _reclaimer(ssn: KaiSession, job: JobView) -> fs.Reclaimer:
    return fs.Reclaimer(job.queue, job.preemptible, ssn.requested(job))


def _victim_amounts(ssn: KaiSession, victim: JobView, tasks: list[KaiTask]) -> list[fs.Quantities]:
    """A gang's core pods are one amount, each pod beyond its minimum its own amount;
    pods only moved elsewhere (still placed) do not count as taken."""
    minimum = victim.min_available
    core, elastic = (tasks, []) if minimum >= len(tasks) else (tasks[:minimum], tasks[minimum:])
    consolidating = ssn.config.allow_consolidating_reclaim

    def taken(group: list[KaiTask]) -> fs.Quantities | None:
        kept = [t for t in group if not (consolidating and t.status in ACTIVE_ALLOCATED_STATUSES)]
        return quantities(kept, "accepted") if kept else None

    amounts = [a for a in (taken([t]) for t in elastic) if a is not None]
    core_amount = taken(core)
    if core_amount is not None:
        amounts.append(core_amount)
    return amounts


def reclaim(ssn: KaiSession) -> None:
    order = JobsOrder(ssn, _pending_ready(ssn))
    while not order.empty():
        job = order.pop()
        reclaimer = _reclaimer(ssn, job)
        if not fs.can_reclaim(ssn.queues, reclaimer):
            continue
        snapshot = {name: q.clone() for name, q in ssn.queues.items()}

        def validate(scenario: Scenario, snapshot: dict = snapshot) -> bool:
            by_queue: dict[str, list[fs.Quantities]] = {}
            for view, tasks in scenario.victims().values():
                amounts = _victim_amounts(ssn, view, tasks)
                if amounts:
                    by_queue.setdefault(view.queue, []).extend(amounts)
            # the partial job's request as it was before the simulation placed it
            partial = scenario.preemptor
            reclaimer = fs.Reclaimer(partial.queue, partial.preemptible, quantities(partial.tasks))
            return fs.reclaimable(snapshot, reclaimer, by_queue, ssn.config.saturation_multiplier)

        def accept(victim: JobView, job: JobView = job) -> bool:
            return victim.queue != job.queue and victim.preemptible and _has_active(victim)

        solver = JobSolver(ssn, _feasible_nodes(ssn, job), validate, _victims_order(ssn, accept))
        solved, stmt, _ = solver.solve(job)
        if solved and stmt is not None:
            stmt.commit()


def consolidation(ssn: KaiSession) -> None:
    """Move running preemptible pods to other nodes (never evict them) so a pending
    preemptible job fits."""
    limit = ssn.config.max_consolidation_preemptees
    if limit == 0:
        return
    pending = [v for v in _pending_ready(ssn) if v.preemptible]
    order = JobsOrder(ssn, pending)
    while not order.empty():
        job = order.pop()
        available = sum(n.idle_gpus() + n.releasing_gpus() for n in _node_list(ssn))
        requested = quantities(ssn.tasks_to_allocate(job, real=False), "capacity")
        if available < requested["gpu"]:  # IsEnoughGPUsAllocatableForJob
            continue
        solver = JobSolver(
            ssn, _feasible_nodes(ssn, job), _all_moved, _consolidation_victims(ssn, job, limit)
        )
        solved, stmt, _ = solver.solve(job)
        if solved and stmt is not None:
            stmt.commit()


def _consolidation_victims(ssn: KaiSession, job: JobView, limit: int) -> Callable[[], JobsOrder]:
    """Running preemptible jobs other than the preemptor; at most `limit` of them per
    scenario search (-1: all)."""

    def build() -> JobsOrder:
        counted = 0

        def accept(victim: JobView) -> bool:
            nonlocal counted
            if not victim.preemptible or victim.uid == job.uid:
                return False
            if limit != -1 and counted > limit:
                return False
            if victim.active_allocated() == 0:
                return False
            counted += 1
            return True

        return _victims_order(ssn, accept)()

    return build


def _all_moved(scenario: Scenario) -> bool:
    return all(
        t.status is not TaskStatus.RELEASING
        for _, tasks in scenario.victims().values()
        for t in tasks
    )


def stale_gang_eviction(ssn: KaiSession) -> None:
    tracker = StalenessTracker(ssn.config.staleness_grace_period)
    for job in ssn.jobs.values():
        if job.podgroup.stale_since is not None:
            tracker.since[job.uid] = job.podgroup.stale_since
        view = JobView.whole(job)
        succeeded = view.count(frozenset({TaskStatus.SUCCEEDED}))
        stale = gang_is_stale(view.active_used(), view.min_available, succeeded)
        if not tracker.observe(job.uid, stale, ssn.now):
            continue
        for task in sorted(job.tasks.values(), key=lambda t: t.uid):
            if task.status in ACTIVE_ALLOCATED_STATUSES:
                ssn.evict_now(task, "stale gang")


ACTIONS: dict[str, Callable[[KaiSession], None]] = {
    "allocate": allocate,
    "preempt": preempt,
    "reclaim": reclaim,
    "consolidation": consolidation,
    "stalegangeviction": stale_gang_eviction,
}

__all__ = ["ACTIONS"]
