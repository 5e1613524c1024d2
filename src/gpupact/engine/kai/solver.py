"""KAI's job solver for preempt and reclaim: the fewest victims that let a gang run.

The pending job is solved task by task (1, then 2, ... of the pods it must place); each step
starts from the victims the previous step needed and adds whole victim jobs in victim
order (a gang at its minimum is taken whole, an elastic job one pod at a time). A scenario
is simulated in a statement: evict the victims (node by node for the newest one), pipeline
the job's pods onto what is released, then try to place each victim job again (victims
that fit elsewhere are only moved, not evicted), and let the action's validator accept it.
Only the step that places all the job's pods keeps its statement.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gpupact.engine.gang import ACTIVE_ALLOCATED_STATUSES, Statement, TaskStatus
from gpupact.engine.kai.allocation import allocate_job
from gpupact.engine.kai.model import JobView, KaiNode, KaiTask
from gpupact.engine.kai.ordering import JobsOrder

if TYPE_CHECKING:
    from gpupact.engine.kai.framework import KaiSession

VictimsFactory = Callable[[], JobsOrder]


@dataclass(eq=False)
class Scenario:
    """The pending (partial) job, the victims carried over from the previous step, and
    the potential victims added in this step."""

    preemptor: JobView
    recorded_jobs: list[JobView]
    potential_tasks: list[KaiTask] = field(default_factory=list)
    victim_groups: dict[str, list[JobView]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for job in self.recorded_jobs:
            self.victim_groups.setdefault(job.uid, []).append(job)

    @property
    def recorded_tasks(self) -> list[KaiTask]:
        return [t for job in self.recorded_jobs for t in job.tasks]

    def add_potential(self, job: JobView, tasks: list[KaiTask]) -> None:
        self.potential_tasks.extend(tasks)
        self.victim_groups.setdefault(job.uid, []).append(
            JobView(job.job, tasks, job.min_available)
        )

    def victims(self) -> dict[str, tuple[JobView, list[KaiTask]]]:
        """job uid -> (the whole job, every victim task of it in this scenario)."""
        out: dict[str, tuple[JobView, list[KaiTask]]] = {}
        for uid, groups in self.victim_groups.items():
            tasks = [t for g in groups for t in g.tasks]
            out[uid] = (JobView.whole(groups[0].job), tasks)
        return out

    def group_of(self, task: KaiTask) -> JobView | None:
        for group in self.victim_groups.get(task.job, []):
            if any(t is task for t in group.tasks):
                return group
        return None


@dataclass(slots=True)
class Solution:
    statement: Statement
    victim_tasks: list[KaiTask]
    victim_jobs: list[JobView]


class JobSolver:
    def __init__(
        self,
        ssn: KaiSession,
        feasible: list[KaiNode],
        validator: Callable[[Scenario], bool],
        victims: VictimsFactory,
    ) -> None:
        self.ssn = ssn
        self.feasible = feasible
        self.validator = validator
        self.victims = victims

    def solve(self, job: JobView) -> tuple[bool, Statement | None, list[KaiTask]]:
        ssn = self.ssn
        before = job.active_used()
        statement: Statement | None = None
        recorded_tasks: list[KaiTask] = []
        recorded_jobs: list[JobView] = []
        to_place = ssn.tasks_to_allocate(job, real=False)
        for count in range(1, len(to_place) + 1):
            partial = JobView(job.job, to_place[:count], count)
            solution = self._solve_partial(partial, recorded_tasks, recorded_jobs)
            if solution is None:
                break
            if count < len(to_place):
                solution.statement.discard()
            statement = solution.statement
            recorded_tasks, recorded_jobs = solution.victim_tasks, solution.victim_jobs
        solved = job.gang_satisfied() and job.active_used() > before
        return solved, statement, recorded_tasks

    def _solve_partial(
        self, partial: JobView, recorded_tasks: list[KaiTask], recorded_jobs: list[JobView]
    ) -> Solution | None:
        nodes = {n.name: n for n in self.feasible}
        for task in recorded_tasks:
            nodes[task.node_name] = self.ssn.nodes[task.node_name]
        builder = ScenarioBuilder(self.ssn, partial, recorded_jobs, self.victims())
        scenario = builder.first()
        while scenario is not None:
            solution = PodSolver(self.ssn, nodes, self.validator).solve(scenario)
            if solution is not None:
                return solution
            scenario = builder.next()
        return None


class ScenarioBuilder:
    def __init__(
        self, ssn: KaiSession, partial: JobView, recorded_jobs: list[JobView], queue: JobsOrder
    ) -> None:
        self.ssn = ssn
        self.queue = queue
        self.recorded = {t.uid for job in recorded_jobs for t in job.tasks}
        self.scenario: Scenario | None = None
        if ssn.tasks_to_allocate(partial, real=False):
            self.scenario = Scenario(partial, list(recorded_jobs))

    def first(self) -> Scenario | None:
        return self.scenario

    def next(self) -> Scenario | None:
        while not self.queue.empty():
            if self._add_next_victim():
                return self.scenario
        return None

    def _add_next_victim(self) -> bool:
        job = self.queue.pop()
        tasks, more = self.ssn.tasks_to_evict(job)
        if any(t.uid in self.recorded for t in tasks):
            # already a victim of an earlier step: offer the rest of the job instead
            rest = [t for t in job.tasks if t.uid not in self.recorded]
            if rest:
                self.queue.push(JobView(job.job, rest, job.min_available))
            return False
        if more:
            chosen = {id(t) for t in tasks}
            rest = [t for t in job.tasks if id(t) not in chosen]
            self.queue.push(JobView(job.job, rest, job.min_available))
        if self.scenario is not None:
            self.scenario.add_potential(job, tasks)
        return True


class PodSolver:
    def __init__(
        self, ssn: KaiSession, nodes: dict[str, KaiNode], validator: Callable[[Scenario], bool]
    ) -> None:
        self.ssn = ssn
        self.nodes = nodes
        self.validator = validator

    def solve(self, scenario: Scenario) -> Solution | None:
        ssn = self.ssn
        stmt = ssn.statement()
        _evict_all(ssn, stmt, scenario.recorded_tasks)
        if not scenario.potential_tasks:
            if scenario.recorded_tasks:
                found = self._simulate(scenario, stmt, scenario.recorded_tasks)
                if found is not None:
                    return found
        else:
            latest = ssn.jobs[scenario.potential_tasks[-1].job]
            for node_name in self._nodes_of(latest.tasks.values()):
                checkpoint = stmt.checkpoint()
                potential = self._potential_on(scenario, node_name)
                _evict_all(ssn, stmt, potential)
                added = [t.node_name for t in potential if t.node_name not in self.nodes]
                for name in added:
                    self.nodes[name] = ssn.nodes[name]
                found = self._simulate(scenario, stmt, [*scenario.recorded_tasks, *potential])
                if found is not None:
                    return found
                for name in added:
                    self.nodes.pop(name, None)
                stmt.rollback(checkpoint)
        stmt.discard()
        return None

    def _nodes_of(self, tasks) -> list[str]:
        names = {t.node_name for t in tasks if t.node_name}
        return [n for n in self.ssn.nodes if n in names]

    def _potential_on(self, scenario: Scenario, node_name: str) -> list[KaiTask]:
        jobs = []
        for task in scenario.potential_tasks:
            if task.node_name == node_name and task.job not in jobs:
                jobs.append(task.job)
        tasks: list[KaiTask] = []
        for uid in jobs:
            for group in scenario.victim_groups.get(uid, []):
                tasks.extend(t for t in group.tasks if t not in tasks)
        return tasks

    def _simulate(
        self, scenario: Scenario, stmt: Statement, victims: list[KaiTask]
    ) -> Solution | None:
        ssn = self.ssn
        if not _place_preemptor_and_victims(
            ssn, stmt, list(self.nodes.values()), scenario, victims
        ):
            return None
        evicted = [t for t in victims if t.status is TaskStatus.RELEASING]
        moved = [t for t in victims if t.status is TaskStatus.PIPELINED]
        if not ssn.config.allow_consolidating_reclaim:
            evicted = evicted + moved
        if not self.validator(scenario):
            stmt.discard()
            return None
        if ssn.config.allow_consolidating_reclaim:
            evicted = evicted + moved
        groups: list[JobView] = []
        for task in evicted:
            group = scenario.group_of(task)
            if group is not None and group not in groups:
                groups.append(group)
        return Solution(stmt, evicted, groups)


def _evict_all(ssn: KaiSession, stmt: Statement, tasks: list[KaiTask]) -> None:
    for task in tasks:
        if task.status in ACTIVE_ALLOCATED_STATUSES:
            ssn.evict(stmt, task)


def _place_preemptor_and_victims(
    ssn: KaiSession,
    stmt: Statement,
    nodes: list[KaiNode],
    scenario: Scenario,
    victims: list[KaiTask],
) -> bool:
    """Pipeline the preemptor and try to place each victim job again, in job order over
    the queues (pending jobs of the session compete too but are not placed)."""
    victim_jobs = {t.job for t in victims}
    candidates: dict[str, JobView] = {
        j.uid: JobView.whole(j)
        for j in ssn.jobs.values()
        if any(t.status is TaskStatus.PENDING for t in j.tasks.values())
    }
    for uid in victim_jobs:
        candidates[uid] = JobView.whole(ssn.jobs[uid])
    candidates[scenario.preemptor.uid] = scenario.preemptor
    order = JobsOrder(ssn, candidates.values())
    placed = False
    while not order.empty():
        job = order.pop()
        if job.uid == scenario.preemptor.uid:
            if not allocate_job(ssn, stmt, nodes, job, pipeline_only=True):
                return False
            placed = True
        elif job.uid in victim_jobs:
            allocate_job(ssn, stmt, nodes, job, pipeline_only=True)
    return placed
