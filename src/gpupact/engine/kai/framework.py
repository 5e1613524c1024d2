"""The KAI-Scheduler session framework: snapshot in, actions once in order, decisions out.

The leaf the actions, the solver and the job order read (as upstream's actions import
pkg/scheduler/framework): it knows no action. `session.KaiSession` adds the action table.

Plugins are KAI's default tiers, reduced to what decides these semantics: `proportion`
(fair share, queue order, reclaim rules, quota checks), `priority` and `elastic` (job
order), node fit (the kube filters of `predicates` and KAI's idle / releasing accounting)
and binpacking node order. Job creation times are injected through the PodGroups.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import ClassVar

import numpy as np

from gpupact.cluster.bulk import bulk_allocation
from gpupact.engine.gang import (
    ACTIVE_ALLOCATED_STATUSES,
    ACTIVE_USED_STATUSES,
    ALLOCATED_STATUSES,
    Op,
    Operation,
    Statement,
    TaskStatus,
    run_actions,
)
from gpupact.engine.kai import fairshare as fs
from gpupact.engine.kai.model import (
    GPU,
    JobView,
    KaiJob,
    KaiNode,
    KaiPodGroup,
    KaiQueue,
    KaiTask,
    node_quantities,
    task_less,
)
from gpupact.engine.placement.session_filters import SessionFilters
from gpupact.kube.objects import Node, Pod


class NotModelledError(ValueError):
    """A KAI configuration or action this model does not implement."""


@dataclass(frozen=True, slots=True)
class KaiConfig:
    """Session knobs the upstream tests set."""

    allow_consolidating_reclaim: bool = True
    max_consolidation_preemptees: int = -1  # -1: no limit; 0: consolidation off
    staleness_grace_period: float = 60.0  # seconds; negative: never evict stale gangs
    k_value: int = 1
    saturation_multiplier: int = 1


@dataclass(frozen=True, slots=True)
class KaiResult:
    binds: Mapping[str, str]  # pod key -> node (status Binding)
    evicted: tuple[str, ...]  # pod keys this session left Releasing (sorted)
    pipelined: Mapping[str, str]  # pod key -> node it waits for
    relocated: Mapping[str, str]  # running pod key -> the other node it was moved to
    statuses: Mapping[str, TaskStatus]  # pod key -> status after the session
    gpu_groups: Mapping[str, tuple[str, ...]]  # pod key -> GPU groups (shared pods placed)


class KaiSession:
    """The framework alone: `session.KaiSession` supplies the actions."""

    # set by the wiring subclass (session.KaiSession); empty here so no action is imported
    action_table: ClassVar[Mapping[str, Callable[[KaiSession], None]]] = MappingProxyType({})

    def __init__(
        self,
        *,
        nodes: Sequence[Node],
        pods: Sequence[Pod],
        podgroups: Sequence[KaiPodGroup],
        queues: Sequence[KaiQueue],
        config: KaiConfig | None = None,
        now: float = 0.0,
        vectorised: bool = True,
    ) -> None:
        with bulk_allocation():  # many long-lived objects: no collector passes meanwhile
            self.config = config or KaiConfig()
            self.now = now
            self.nodes: dict[str, KaiNode] = {}
            for node in nodes:
                if node.name in self.nodes:
                    raise ValueError(f"duplicate node {node.name}")
                self.nodes[node.name] = KaiNode(node)
            self.queue_specs = {q.name: q for q in queues}
            self.queues = fs.queue_shares(queues)
            self.jobs: dict[str, KaiJob] = {}
            for pg in podgroups:
                if pg.key in self.jobs:
                    raise ValueError(f"duplicate PodGroup {pg.key}")
                if pg.queue not in self.queues:
                    raise ValueError(f"PodGroup {pg.key} is in unknown queue {pg.queue!r}")
                self.jobs[pg.key] = KaiJob(pg)
            self.tasks: dict[str, KaiTask] = {}
            for pod in pods:
                self._add_pod(pod)
            self.vectorised = vectorised  # False: one node at a time (the reference)
            self.filters = self._open_filters()
            self._track_free()
            self.initial = {k: (t.status, t.node_name) for k, t in self.tasks.items()}
            self.total = fs.zero()
            for node in self.nodes.values():
                self.total = fs.added(self.total, node_quantities(node.node))
            self._account_usage()
            fs.set_fair_shares(self.queues, self.total, self.config.k_value)
            self.simulation_queues: dict[str, fs.QueueShare] = {}
            self.binds: dict[str, str] = {}
            self.evictions: list[str] = []

    def _add_pod(self, pod: Pod) -> None:
        task = KaiTask.from_pod(pod)
        if task.key in self.tasks:
            raise ValueError(f"duplicate pod {task.key}")
        self.tasks[task.key] = task
        if task.node_name and task.status in ACTIVE_USED_STATUSES:
            node = self.nodes.get(task.node_name)
            if node is None:
                raise ValueError(f"pod {task.key} is bound to unknown node {task.node_name}")
            node.add_task(task)
        job = self.jobs.get(task.job)
        if job is not None:
            job.tasks[task.uid] = task

    def _open_filters(self) -> SessionFilters:
        """KAI's `predicates`: the kube filters over each node's pods, which follow every
        task the session adds to or removes from a node (upstream NodeInfo.AddTask updates
        the node's pod-affinity info)."""
        by_key = self.tasks
        placed = [
            (by_key[key].pod, node.name)
            for node in self.nodes.values()
            for key in sorted(node.tasks)
            if key in by_key
        ]
        filters = SessionFilters([n.node for n in self.nodes.values()], placed)
        for row, node in enumerate(self.nodes.values()):
            node.row = row
            node.on_add = lambda task, at: filters.add(task.pod, at.name)
            node.on_remove = lambda task, at: filters.remove(task.pod, at.name)
        return filters

    def _account_usage(self) -> None:
        """Queue allocated / requested amounts, summed up the tree."""
        for job in self.jobs.values():
            for task in job.tasks.values():
                placed = task.status in ALLOCATED_STATUSES
                amounts = task.accepted_quantities if placed else task.quantities
                for queue in fs.ancestry(self.queues, job.queue):
                    for r in fs.RESOURCES:
                        share = queue.shares[r]
                        if task.status in ALLOCATED_STATUSES:
                            share.allocated += amounts[r]
                            share.request += amounts[r]
                            if not job.preemptible:
                                share.allocated_not_preemptible += amounts[r]
                        elif task.status is TaskStatus.PENDING:
                            share.request += amounts[r]

    # --- ordering ------------------------------------------------------------------------------

    def job_less(self, left: JobView, right: JobView) -> bool:
        """priority (desc), then elastic state (below minimum first), then creation."""
        if left.priority != right.priority:
            return left.priority > right.priority
        l_state, r_state = _min_state(left), _min_state(right)
        if l_state != r_state:
            return l_state < r_state
        if left.creation != right.creation:
            return left.creation < right.creation
        return left.uid < right.uid

    def tasks_to_allocate(self, view: JobView, real: bool) -> list[KaiTask]:
        """The pods the job places next: up to its minimum while below it, else one."""
        candidates = [t for t in view.tasks if t.should_allocate(real)]
        candidates = _sorted(candidates, task_less)
        allocated = view.active_allocated()
        if allocated >= view.min_available:
            count = min(len(candidates), 1)
        else:
            count = view.min_available - allocated
        return candidates[:count]

    def requested(self, view: JobView | None, real: bool = False) -> fs.Quantities:
        total = fs.zero()
        if view is None:
            return total
        for task in self.tasks_to_allocate(view, real):
            total = fs.added(total, task.quantities)
        return total

    def tasks_to_evict(self, view: JobView) -> tuple[list[KaiTask], bool]:
        """A job above its minimum gives up one pod (its last in task order); a job at or
        below it gives up all of them: a gang is never left partly running."""
        active = [t for t in view.tasks if t.status in ACTIVE_ALLOCATED_STATUSES]
        active = _sorted(active, lambda a, b: task_less(b, a))
        count = 1 if len(active) > view.min_available else len(active)
        chosen = active[:count]
        return chosen, len(chosen) < len(active)

    def queue_less(
        self,
        left: str,
        right: str,
        left_job: JobView | None,
        right_job: JobView | None,
        left_victims: Sequence[JobView],
        right_victims: Sequence[JobView],
    ) -> bool:
        return (
            fs.queue_order(
                self.queues[left],
                self.queues[right],
                self.requested(left_job),
                self.requested(right_job),
                _sum_allocated(left_victims),
                _sum_allocated(right_victims),
                self.total,
            )
            < 0
        )

    def ordered_nodes(self, task: KaiTask, nodes: Sequence[KaiNode]) -> list[KaiNode]:
        """Binpack: the node with the least free of what the task asks for first (GPUs for
        a GPU pod, else cpu); for a fractional GPU pod, nodes with a GPU group it fits come
        first (gpusharingorder's score outweighs binpack's); equal nodes keep their order.
        Vectorised: a stable argsort of the free column (the same order)."""
        resource = GPU if task.requires_gpu else "cpu"
        shared = task.shared

        def group_fit(node: KaiNode) -> bool:
            assert shared is not None
            return any(node.sharing.fits_group(shared, g) for g in node.sharing.used)

        if not self.vectorised:

            def key(node: KaiNode) -> tuple[int, int]:
                first = 0 if shared is None or group_fit(node) else 1
                return first, node.free(resource)

            return sorted(nodes, key=key)
        column = self.free_gpus if resource == GPU else self.free_cpu
        rows = np.fromiter((n.row for n in nodes), dtype=np.intp, count=len(nodes))
        keys = column[rows]
        if shared is not None:
            # sort by (no fitting group, free): the group test only where groups exist
            fits = np.array([bool(n.sharing.used) and group_fit(n) for n in nodes], dtype=bool)
            keys = np.where(fits, keys, keys + (1 << 40))
        order = np.argsort(keys, kind="stable")
        return [nodes[i] for i in order.tolist()]

    def _track_free(self) -> None:
        """Free (idle + releasing) GPUs and cpu per node row, kept in step with the nodes."""
        nodes = list(self.nodes.values())
        self.free_gpus = np.zeros(len(nodes), dtype=np.int64)
        self.free_cpu = np.zeros(len(nodes), dtype=np.int64)

        def refresh(node: KaiNode) -> None:
            self.free_gpus[node.row] = node.free(GPU)
            self.free_cpu[node.row] = node.free("cpu")

        for node in nodes:
            refresh(node)
            node.on_change = refresh

    # --- node fit ------------------------------------------------------------------------------

    def fitting_node(self, task: KaiTask, node: KaiNode) -> bool:
        if task.shared is not None and task.shared.memory and not node.gpu_memory_synced:
            return False  # predicates: no GPU memory known for the node
        if not node.fits_idle_or_releasing(task):
            return False
        if self._over_capacity_on(task, node):
            return False
        if node.max_pods and len(node.tasks) >= node.max_pods and task.key not in node.tasks:
            return False
        if task.shared is not None and node.max_pods and not self._room_for_new_group(task, node):
            return False
        if self.vectorised:
            return self.filters.fits(task.placement_pod, node.row)
        return self.filters.status(task.placement_pod, node.node).ok

    def _over_capacity_on(self, task: KaiTask, node: KaiNode) -> bool:
        """A GPU-memory pod on this node: its portion of one of the node's GPUs (as upstream
        GetRequiredInitQuota) and its cpu / memory over a queue limit or, non-preemptible,
        over a quota (capacity_policy.IsTaskAllocationOnNodeOverCapacity); the job-level
        check charged it no GPU."""
        shared = task.shared
        job = self.jobs.get(task.job)
        if shared is None or not shared.is_memory or job is None:
            return False
        portion = shared.portion_on(node.sharing.memory)
        if portion is None:
            return True
        amounts = {**task.quantities, "gpu": portion}
        if fs.over_limit(self.queues, job.queue, amounts):
            return True
        return not job.preemptible and fs.non_preemptible_over_quota(
            self.queues, job.queue, amounts
        )

    def _room_for_new_group(self, task: KaiTask, node: KaiNode) -> bool:
        """A pod opening a new GPU group needs a second pod slot for the group's reservation
        pod (upstream checkMaxPodsWithGpuGroupReservation)."""
        assert task.shared is not None
        free_pods = node.max_pods - len(node.tasks)
        if free_pods >= 2:
            return True
        choice = node.sharing.choose(task.shared, False, node.fits_idle(task))
        if choice is not None and not choice.releasing:
            return not choice.opens_new_group
        choice = node.sharing.choose(task.shared, True, node.fits_idle(task))
        return choice is not None and not choice.opens_new_group

    # --- statements ----------------------------------------------------------------------------

    def statement(self) -> Statement:
        return Statement(self)

    def _set_status(self, task: KaiTask, status: TaskStatus) -> None:
        task.status = status

    def _notify(self, task: KaiTask, sign: int) -> None:
        """proportion's allocate / deallocate handlers: the queue tree's allocated amounts."""
        job = self.jobs.get(task.job)
        if job is None:
            return
        amounts = task.accepted_quantities
        for queue in fs.ancestry(self.queues, job.queue):
            for r in fs.RESOURCES:
                share = queue.shares[r]
                share.allocated += sign * amounts[r]
                if not job.preemptible:
                    share.allocated_not_preemptible += sign * amounts[r]

    def _apply_evict(self, task: KaiTask) -> None:
        self._set_status(task, TaskStatus.RELEASING)
        self.nodes[task.node_name].update_task(task)
        self._notify(task, -1)
        task.virtual = True

    def evict(self, stmt: Statement, task: KaiTask, reason: str = "") -> None:
        previous, was_virtual = task.status, task.virtual
        node = self.nodes[task.node_name]
        self._apply_evict(task)

        def undo() -> None:
            self._set_status(task, previous)
            if task.key in node.tasks:
                node.update_task(task)
            else:
                node.add_task(task)
            self._notify(task, 1)
            task.virtual = was_virtual

        stmt.record(Op.EVICT, task, node.name, undo, reason)

    def pipeline(
        self,
        stmt: Statement,
        task: KaiTask,
        node_name: str,
        update_existing: bool,
        gpu_groups: tuple[str, ...] | None = None,
    ) -> None:
        node = self.nodes[node_name]
        if task.key in node.tasks and not update_existing:
            # an evicted pod placed back on its own node: the eviction is simply undone
            if not stmt.revoke(Op.EVICT, task, lambda: self._apply_evict(task)):
                raise ValueError(f"{task.key} is already on {node_name}")
            return
        previous, previous_node, was_virtual = task.status, task.node_name, task.virtual
        previous_groups = task.gpu_groups
        self._set_status(task, TaskStatus.PIPELINED)
        task.node_name = node_name
        if gpu_groups is not None:
            task.gpu_groups = gpu_groups
        if task.key in node.tasks:
            node.update_task(task)
        else:
            node.add_task(task)
        self._notify(task, 1)
        task.virtual = True

        def undo() -> None:
            self._set_status(task, previous)
            task.node_name = previous_node
            task.virtual = was_virtual
            node.remove_task(task)
            task.gpu_groups = previous_groups
            self._notify(task, -1)

        stmt.record(Op.PIPELINE, task, node_name, undo)

    def allocate(
        self,
        stmt: Statement,
        task: KaiTask,
        node_name: str,
        gpu_groups: tuple[str, ...] | None = None,
    ) -> None:
        node = self.nodes[node_name]
        was_virtual, previous_groups = task.virtual, task.gpu_groups
        self._set_status(task, TaskStatus.ALLOCATED)
        task.node_name = node_name
        if gpu_groups is not None:
            task.gpu_groups = gpu_groups
        node.add_task(task)
        self._notify(task, 1)
        task.virtual = True

        def undo() -> None:
            self._set_status(task, TaskStatus.PENDING)
            node.remove_task(task)
            task.node_name = ""
            task.virtual = was_virtual
            task.gpu_groups = previous_groups
            self._notify(task, -1)

        stmt.record(Op.ALLOCATE, task, node_name, undo)

    def convert_allocated_to_pipelined(self, stmt: Statement, job: KaiJob) -> None:
        """A gang that has to wait for releasing resources waits as a whole: its pods
        allocated this session are pipelined to the same nodes instead."""
        allocations = [
            op
            for op in stmt.operations
            if op.kind is Op.ALLOCATE and op.task.job == job.uid and not op.revoked
        ]
        for op in allocations:
            node_name, groups = op.task.node_name, op.task.gpu_groups
            op.undo()
            stmt.operations.remove(op)
            self.pipeline(stmt, op.task, node_name, True, groups)

    def commit_operation(self, op: Operation) -> None:
        task: KaiTask = op.task
        if op.kind is Op.EVICT:
            self.evictions.append(task.key)
            task.virtual = False
        elif op.kind is Op.ALLOCATE:
            self.binds[task.key] = task.node_name
            self._set_status(task, TaskStatus.BINDING)
            task.virtual = False
        elif op.kind is Op.PIPELINE:
            task.virtual = False

    def evict_now(self, task: KaiTask, reason: str) -> None:
        """Evict outside any statement (stale gang eviction)."""
        stmt = self.statement()
        self.evict(stmt, task, reason)
        stmt.commit()

    # --- running -------------------------------------------------------------------------------

    def run(self, actions: Sequence[str]) -> KaiResult:
        """Run the named actions of `action_table` once, in order; the session's decisions."""
        run_actions(self, actions, self.action_table, NotModelledError)
        return self.result()

    def result(self) -> KaiResult:
        tasks = [self.tasks[k] for k in sorted(self.tasks)]
        evicted, relocated = [], {}
        for task in tasks:
            was, on = self.initial[task.key]
            if task.status is TaskStatus.RELEASING and was is not TaskStatus.RELEASING:
                evicted.append(task.key)
            moved = task.status is TaskStatus.PIPELINED and was in ACTIVE_ALLOCATED_STATUSES
            if moved and task.node_name != on:
                relocated[task.key] = task.node_name
        return KaiResult(
            binds=dict(self.binds),
            evicted=tuple(evicted),
            pipelined={t.key: t.node_name for t in tasks if t.status is TaskStatus.PIPELINED},
            relocated=relocated,
            statuses={t.key: t.status for t in tasks},
            gpu_groups={t.key: t.gpu_groups for t in tasks if t.shared and t.gpu_groups},
        )

    def views(self, jobs: Iterable[KaiJob]) -> list[JobView]:
        return [JobView.whole(j) for j in jobs]


def _min_state(view: JobView) -> int:
    """0 below its minimum, 1 exactly at it, 2 above (elastic plugin's order)."""
    allocated = view.active_allocated()
    if allocated < view.min_available:
        return 0
    return 1 if allocated == view.min_available else 2


def _sum_allocated(views: Sequence[JobView]) -> fs.Quantities:
    total = fs.zero()
    for view in views:
        total = fs.added(total, view.allocated_quantities())
    return total


def _sorted(items: list, less: Callable) -> list:
    from functools import cmp_to_key

    return sorted(
        items, key=cmp_to_key(lambda a, b: -1 if less(a, b) else (1 if less(b, a) else 0))
    )


__all__ = [
    "KaiConfig",
    "KaiResult",
    "KaiSession",
    "NotModelledError",
]
