"""The Volcano session framework: snapshot in, actions run once in order, decisions out.

This module is the leaf the plugins and actions read (as upstream's plugins and actions
import pkg/scheduler/framework): it knows neither. `session.Session` wires this package's
plugin table and action table into it.

`Session` opens like upstream `framework.OpenSession`: it builds jobs, nodes and queues from
the parsed objects, opens every configured plugin (each registers functions for extension
points), and then dispatches the actions' questions to the plugins with upstream's tier
rules (e.g. job starving: the first tier with an enabled function decides; preemptable:
intersection of the enabled plugins' victims within a tier).

Configuration: `tiers` is a list of tiers, each a list of `PluginOption`s naming the plugin
and the extension points enabled for it (`jobOrder`, `queueOrder`, `taskOrder`, `jobReady`,
`jobPipelined`, `jobStarving`, `preemptable`, `reclaimable`, `allocatable`, `overused`,
`preemptive`, `jobEnqueued`, `predicate`, `nodeOrder`, `hierarchy`). An extension point not
listed is off, as upstream's nil option is.

Determinism: where upstream iterates Go maps, jobs go by UID, queues by name, a node's tasks
by key and nodes by input order; ties upstream breaks at random go to the first node.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from gpupact.cluster.bulk import bulk_allocation
from gpupact.engine.gang import (
    COMPLETED_STATUSES,
    Op,
    Operation,
    PodGroup,
    PodGroupPhase,
    Statement,
    TaskStatus,
    run_actions,
)
from gpupact.engine.volcano.heap import PriorityQueue
from gpupact.engine.volcano.model import (
    JobInfo,
    NodeInfo,
    Queue,
    TaskInfo,
    default_task_less,
)
from gpupact.engine.volcano.node_table import NodeTable
from gpupact.engine.volcano.resource import Resource
from gpupact.kube.objects import Node, Pod
from gpupact.kube.status import Code, Status

if TYPE_CHECKING:
    from gpupact.cluster.state import ClusterState

PERMIT, ABSTAIN, REJECT = 1, 0, -1

EXTENSION_POINTS = frozenset(
    {
        "jobOrder",
        "queueOrder",
        "taskOrder",
        "jobReady",
        "jobPipelined",
        "jobStarving",
        "preemptable",
        "reclaimable",
        "allocatable",
        "overused",
        "preemptive",
        "jobEnqueued",
        "predicate",
        "nodeOrder",
        "hierarchy",
    }
)


class NotModelledError(ValueError):
    """A configuration this model does not implement (an unknown plugin, a plugin mode)."""


@dataclass(frozen=True, slots=True)
class PluginOption:
    name: str
    points: frozenset[str] = frozenset()
    arguments: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        unknown = set(self.points) - EXTENSION_POINTS
        if unknown:
            raise ValueError(f"plugin {self.name}: unknown extension point(s) {sorted(unknown)}")


@dataclass(frozen=True, slots=True)
class ValidateResult:
    passed: bool
    reason: str = ""
    message: str = ""


@dataclass(slots=True)
class EventHandler:
    allocate: Callable[[TaskInfo], None] | None = None
    deallocate: Callable[[TaskInfo], None] | None = None


@dataclass(frozen=True, slots=True)
class SessionResult:
    binds: Mapping[str, str]  # pod key -> node, in bind order
    evicted: tuple[str, ...]  # pod keys, in eviction order
    pipelined: Mapping[str, str]  # pod key -> node the pod waits for
    phases: Mapping[str, PodGroupPhase]  # PodGroup key -> phase after the session
    statuses: Mapping[str, TaskStatus]  # pod key -> task status after the session


class NodeAnswer:
    """A task's predicate answer on every node: `ok` per node row and each node's Status on
    demand (the first failing plugin's)."""

    __slots__ = ("_parts", "ok")

    def __init__(self, ok: np.ndarray, parts: Sequence[tuple[np.ndarray, Callable[[int], Status]]]):
        self.ok = ok
        self._parts = parts

    @classmethod
    def all_of(
        cls, parts: Sequence[tuple[np.ndarray, Callable[[int], Status]]], n: int
    ) -> NodeAnswer:
        ok = np.ones(n, dtype=np.bool_)
        for mask, _ in parts:
            ok &= mask
        return cls(ok, parts)

    def status(self, row: int) -> Status:
        for mask, status_of in self._parts:
            if not mask[row]:
                return status_of(row)
        return Status()


class Session:
    """The framework alone: `session.Session` supplies the plugin builder and the actions."""

    # set by the wiring subclass (session.Session); empty here so the framework imports neither
    build_plugin: ClassVar[Callable[[PluginOption], Any]]
    action_table: ClassVar[Mapping[str, Callable[[Any], None]]] = MappingProxyType({})

    def __init__(
        self,
        *,
        nodes: Sequence[Node],
        pods: Sequence[Pod],
        podgroups: Sequence[PodGroup],
        queues: Sequence[Queue],
        tiers: Sequence[Sequence[PluginOption]],
        priority_classes: Mapping[str, int] | None = None,
        enabled_actions: Iterable[str] = (),
        action_arguments: Mapping[str, Mapping[str, Any]] | None = None,
        vectorised: bool = True,
        now_nanos: int = 0,
    ) -> None:
        with bulk_allocation():  # many long-lived objects: no collector passes meanwhile
            self.tiers: list[list[PluginOption]] = [list(t) for t in tiers]
            self.enabled_actions = frozenset(enabled_actions)
            self.action_arguments = dict(action_arguments or {})
            self.priority_classes = dict(priority_classes or {})
            self.node_list: list[NodeInfo] = [NodeInfo(n) for n in nodes]
            self.nodes: dict[str, NodeInfo] = {}
            for node in self.node_list:
                if node.name in self.nodes:
                    raise ValueError(f"duplicate node {node.name}")
                self.nodes[node.name] = node
            self.queues: dict[str, Queue] = {}
            for queue in sorted(queues, key=lambda q: q.name):
                if queue.name in self.queues:
                    raise ValueError(f"duplicate queue {queue.name}")
                self.queues[queue.name] = queue
            self.jobs: dict[str, JobInfo] = {}
            for pg in sorted(podgroups, key=lambda g: g.key):
                if pg.key in self.jobs:
                    raise ValueError(f"duplicate PodGroup {pg.key}")
                self.jobs[pg.key] = JobInfo(
                    pg, self.priority_classes.get(pg.priority_class_name, 0)
                )
            self.tasks: dict[str, TaskInfo] = {}
            for pod in pods:
                self._add_pod(pod)
            self.total_resource = Resource()
            for node in self.node_list:
                self.total_resource.add(node.allocatable)
            # vectorised node checks and scores (`vectorised=False`: one node at a time, the
            # explaining reference); cached per task until the next allocate / deallocate
            self.vectorised = vectorised
            self.now_nanos = now_nanos  # injected time, unix ns (the sla plugin's waiting times)
            self.generation = 0
            self._batch: dict[tuple, Any] = {}
            scalar_names = {n for node in self.node_list for n in node.allocatable.scalars or {}}
            scalar_names |= {n for t in self.tasks.values() for n in t.init_resreq.scalars or {}}
            self.table = NodeTable(self.node_list, scalar_names)

            # the kube view of the nodes and their pods that the predicates plugin keeps in
            # step with the session (upstream ssn.NodeMap, which only predicates updates)
            self.node_map: ClusterState | None = None
            self.fns: dict[str, dict[str, Any]] = {}
            self.event_handlers: list[EventHandler] = []
            self.binds: dict[str, str] = {}
            self.evictions: list[str] = []
            self.plugins = []
            for tier in self.tiers:
                for option in tier:
                    plugin = self.build_plugin(option)
                    self.plugins.append(plugin)
            for plugin in self.plugins:
                plugin.on_session_open(self)
            self.closed = False

    def _add_pod(self, pod: Pod) -> None:
        task = TaskInfo.from_pod(pod)
        if task.key in self.tasks:
            raise ValueError(f"duplicate pod {task.key}")
        self.tasks[task.key] = task
        if task.node_name and task.status not in COMPLETED_STATUSES:
            node = self.nodes.get(task.node_name)
            if node is None:
                raise ValueError(f"pod {task.key} is bound to unknown node {task.node_name}")
            node.add_task(task)
        job = self.jobs.get(task.job)
        if job is not None:
            job.add_task(task)

    # --- registration ----------------------------------------------------------------------

    def add_fn(self, point: str, plugin: str, fn: Any) -> None:
        self.fns.setdefault(point, {})[plugin] = fn

    def add_event_handler(self, handler: EventHandler) -> None:
        self.event_handlers.append(handler)

    def _enabled(self, point: str, gate: str | None = None) -> Iterable[tuple[int, Any]]:
        """(tier index, fn) of plugins that registered a function for `point` and enable
        the extension point `gate` (by default the point itself)."""
        registry = self.fns.get(point, {})
        gate = gate or point
        for index, tier in enumerate(self.tiers):
            for option in tier:
                if gate in option.points and option.name in registry:
                    yield index, registry[option.name]

    def _registered(self, point: str) -> Iterable[Any]:
        """Functions of every configured plugin, enabled or not (upstream does not gate
        job validation and victim queue order)."""
        registry = self.fns.get(point, {})
        for tier in self.tiers:
            for option in tier:
                if option.name in registry:
                    yield registry[option.name]

    def hierarchy_enabled(self, plugin: str) -> bool:
        for tier in self.tiers:
            for option in tier:
                if option.name == plugin:
                    return "hierarchy" in option.points
        return False

    # --- victims -----------------------------------------------------------------------------

    def _evictable(self, point: str, evictor: TaskInfo, evictees: list[TaskInfo]) -> list[TaskInfo]:
        registry = self.fns.get(point, {})
        for tier in self.tiers:
            victims: list[TaskInfo] | None = None  # Go's nil: no plugin decided yet
            for option in tier:
                if point not in option.points or option.name not in registry:
                    continue
                candidates, vote = registry[option.name](evictor, evictees)
                if vote == ABSTAIN:
                    continue
                if not candidates:
                    victims = None
                    break
                if victims is None:
                    victims = list(candidates)
                else:
                    uids = {c.uid for c in candidates}
                    # an empty intersection is nil upstream: the next plugin starts over
                    victims = [v for v in victims if v.uid in uids] or None
            if victims is not None:
                return victims
        return []

    def preemptable(self, preemptor: TaskInfo, preemptees: list[TaskInfo]) -> list[TaskInfo]:
        return self._evictable("preemptable", preemptor, preemptees)

    def reclaimable(self, reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> list[TaskInfo]:
        return self._evictable("reclaimable", reclaimer, reclaimees)

    # --- queue checks --------------------------------------------------------------------------

    def overused(self, queue: Queue) -> bool:
        return any(fn(queue) for _, fn in self._enabled("overused"))

    def preemptive(self, queue: Queue, candidates: list[TaskInfo]) -> bool:
        return all(fn(queue, candidates) for _, fn in self._enabled("preemptive"))

    def allocatable(self, queue: Queue, candidate: TaskInfo) -> bool:
        return all(fn(queue, candidate) for _, fn in self._enabled("allocatable"))

    # --- job checks ----------------------------------------------------------------------------

    def job_ready(self, job: JobInfo) -> bool:
        return all(fn(job) for _, fn in self._enabled("jobReady"))

    def _vote(self, point: str, subject: Any, gate: str | None = None) -> bool:
        """Permit/abstain/reject votes: any reject fails; the first tier with a permit
        decides; no votes at all pass."""
        found_in: int | None = None
        for tier, fn in self._enabled(point, gate):
            if found_in is not None and tier != found_in:
                return True
            result = fn(subject)
            if result < 0:
                return False
            if result > 0:
                found_in = tier
        return True

    def job_pipelined(self, job: JobInfo) -> bool:
        return self._vote("jobPipelined", job)

    def job_enqueueable(self, job: JobInfo) -> bool:
        return self._vote("jobEnqueueable", job, gate="jobEnqueued")

    def job_enqueued(self, job: JobInfo) -> None:
        for _, fn in self._enabled("jobEnqueued"):
            fn(job)

    def job_starving(self, job: JobInfo) -> bool:
        found_in: int | None = None
        for tier, fn in self._enabled("jobStarving"):
            if found_in is not None and tier != found_in:
                return True
            found_in = tier
            if not fn(job):
                return False
        return found_in is not None

    def job_valid(self, job: JobInfo) -> ValidateResult | None:
        """The first failing JobValid verdict; None when every plugin passes the job."""
        for fn in self._registered("jobValid"):
            result = fn(job)
            if result is not None and not result.passed:
                return result
        return None

    def valid_jobs_past_enqueue(self) -> Iterator[JobInfo]:
        """Jobs no longer Pending whose gang passes JobValid: where backfill, preempt and
        reclaim start (allocate admits Pending jobs itself when there is no enqueue)."""
        for job in self.jobs.values():
            if not job.is_pending() and self.job_valid(job) is None:
                yield job

    # --- ordering ------------------------------------------------------------------------------

    def job_order_compare(self, left: JobInfo, right: JobInfo) -> int:
        for _, fn in self._enabled("jobOrder"):
            result = fn(left, right)
            if result != 0:
                return result
        return 0

    def job_order_fn(self, left: JobInfo, right: JobInfo) -> bool:
        result = self.job_order_compare(left, right)
        if result != 0:
            return result < 0
        if left.creation_timestamp == right.creation_timestamp:
            return left.uid < right.uid
        return left.creation_timestamp < right.creation_timestamp

    def queue_order_fn(self, left: Queue, right: Queue) -> bool:
        for _, fn in self._enabled("queueOrder"):
            result = fn(left, right)
            if result != 0:
                return result < 0
        return left.name < right.name  # equal (zero) creation times: by UID = name

    def victim_queue_order_fn(self, left: Queue, right: Queue, preemptor: Queue) -> bool:
        for fn in self._registered("victimQueueOrder"):
            result = fn(left, right, preemptor)
            if result != 0:
                return result < 0
        return not self.queue_order_fn(left, right)

    def task_compare(self, left: TaskInfo, right: TaskInfo) -> int:
        for _, fn in self._enabled("taskOrder"):
            result = fn(left, right)
            if result != 0:
                return result
        return 0

    def task_order_fn(self, left: TaskInfo, right: TaskInfo) -> bool:
        result = self.task_compare(left, right)
        if result != 0:
            return result < 0
        return default_task_less(left, right)

    def build_victims_queue(
        self, victims: Iterable[TaskInfo], preemptor: TaskInfo
    ) -> PriorityQueue[TaskInfo]:
        """Victims to evict first pop first: across queues by the victim queue order, across
        jobs by reverse job order, within a job by reverse task order."""

        def less(left: TaskInfo, right: TaskInfo) -> bool:
            if left.job == right.job:
                return not self.task_order_fn(left, right)
            ljob, rjob = self.jobs.get(left.job), self.jobs.get(right.job)
            if ljob is None or rjob is None:
                if ljob is None and rjob is None:
                    return not self.task_order_fn(left, right)
                return ljob is None
            pjob = self.jobs.get(preemptor.job)
            if pjob is not None and ljob.queue != rjob.queue:
                return self.victim_queue_order_fn(
                    self.queues[ljob.queue], self.queues[rjob.queue], self.queues[pjob.queue]
                )
            cmp = self.job_order_compare(ljob, rjob)
            if cmp != 0:
                return cmp > 0
            return not self.task_order_fn(left, right)

        return PriorityQueue(less, victims)

    # --- nodes ---------------------------------------------------------------------------------

    def predicate(self, task: TaskInfo, node: NodeInfo) -> Status:
        answer = self.predicate_all(task) if self.vectorised else None
        if answer is not None:
            return answer.status(node.row)
        for _, fn in self._enabled("predicate"):
            status = fn(task, node)
            if not status.ok:
                return status
        return Status()

    def predicate_all(self, task: TaskInfo) -> NodeAnswer | None:
        """Every node at once (the plugins' `batchPredicate`), cached until the session
        changes; None when an enabled predicate plugin has no batch form."""
        key = ("predicate", task.uid, self.generation)
        if key in self._batch:
            return self._batch[key]
        enabled = [fn for _, fn in self._enabled("predicate")]
        batch = [fn for _, fn in self._enabled("batchPredicate", gate="predicate")]
        answer = None
        if len(batch) == len(enabled):
            answer = NodeAnswer.all_of([fn(task) for fn in batch], len(self.node_list))
        self._remember(key, answer)
        return answer

    def pre_predicate(self, task: TaskInfo) -> Status:
        for _, fn in self._enabled("prePredicate", gate="predicate"):
            status = fn(task)
            if not status.ok:
                return status
        return Status()

    def predicate_for_preempt(self, task: TaskInfo, node: NodeInfo) -> Status:
        """Only refusals preemption cannot fix stop a node from being a candidate."""
        status = self.predicate(task, node)
        if status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE or status.code is Code.ERROR:
            return status
        return Status()

    def node_score(self, task: TaskInfo, node: NodeInfo) -> int:
        """The per-node part of the node order (upstream's NodeOrderFn scores)."""
        scores = self.node_scores_all(task) if self.vectorised else None
        if scores is not None:
            return int(scores[node.row])
        return sum(fn(task, node) for _, fn in self._enabled("nodeOrder"))

    def node_order_scores(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> np.ndarray:
        """int64 per node of `nodes`, the candidates: the per-node scores plus the scores a
        plugin normalises over the candidates (`candidateNodeOrder`, upstream's
        BatchNodeOrderFn); upstream PrioritizeNodes adds the two."""
        rows = np.fromiter((n.row for n in nodes), dtype=np.intp, count=len(nodes))
        per_node = self.node_scores_all(task) if self.vectorised else None
        if per_node is not None:
            return self._with_candidate_scores(task, per_node[rows], rows)
        total = np.array([self.node_score(task, n) for n in nodes], dtype=np.int64)
        return self._with_candidate_scores(task, total, rows)

    def node_order_scores_rows(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
        """`node_order_scores` for the candidates given as node rows."""
        per_node = self.node_scores_all(task) if self.vectorised else None
        if per_node is None:
            return self.node_order_scores(task, [self.node_list[r] for r in rows.tolist()])
        return self._with_candidate_scores(task, per_node[rows], rows)

    def _with_candidate_scores(
        self, task: TaskInfo, total: np.ndarray, rows: np.ndarray
    ) -> np.ndarray:
        for _, fn in self._enabled("candidateNodeOrder", gate="nodeOrder"):
            total = total + fn(task, rows)
        return total

    def node_scores_all(self, task: TaskInfo) -> np.ndarray | None:
        """int64[N]: the summed node-order scores of every node (the plugins'
        `batchNodeOrder`), cached until the session changes; None when an enabled plugin
        has no batch form."""
        key = ("nodeOrder", task.uid, self.generation)
        if key in self._batch:
            return self._batch[key]
        enabled = [fn for _, fn in self._enabled("nodeOrder")]
        batch = [fn for _, fn in self._enabled("batchNodeOrder", gate="nodeOrder")]
        scores = None
        if len(batch) == len(enabled):
            scores = np.zeros(len(self.node_list), dtype=np.int64)
            for fn in batch:
                scores = scores + fn(task)
        self._remember(key, scores)
        return scores

    def _remember(self, key: tuple, value: Any) -> None:
        """Keep one cached answer per kind (the latest task and session generation)."""
        self._batch = {k: v for k, v in self._batch.items() if k[0] != key[0]}
        self._batch[key] = value

    def nodes_without_unresolvable(self, task: TaskInfo) -> list[NodeInfo]:
        """Nodes minus those where this session already found the task unresolvable."""
        job = self.jobs.get(task.job)
        errors = job.nodes_fit_errors.get(task.uid) if job else None
        if not errors:
            return list(self.node_list)
        skip = {n for n, s in errors.items() if s.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE}
        return [n for n in self.node_list if n.name not in skip]

    # --- statements ----------------------------------------------------------------------------

    def statement(self) -> Statement:
        return Statement(self)

    def _notify(self, kind: str, task: TaskInfo) -> None:
        self.generation += 1
        for handler in self.event_handlers:
            fn = handler.allocate if kind == "allocate" else handler.deallocate
            if fn is not None:
                fn(task)

    def _set_status(self, task: TaskInfo, status: TaskStatus) -> None:
        job = self.jobs.get(task.job)
        if job is not None:
            job.update_task_status(task, status)
        else:
            task.status = status

    def evict(self, stmt: Statement, task: TaskInfo, reason: str) -> None:
        self._set_status(task, TaskStatus.RELEASING)
        node = self.nodes.get(task.node_name)
        if node is not None:
            node.update_task(task)
        self._notify("deallocate", task)

        def undo() -> None:
            self._set_status(task, TaskStatus.RUNNING)
            if node is not None:
                node.update_task(task)
            self._notify("allocate", task)

        stmt.record(Op.EVICT, task, task.node_name, undo, reason)

    def pipeline(self, stmt: Statement, task: TaskInfo, node_name: str) -> None:
        self._set_status(task, TaskStatus.PIPELINED)
        task.node_name = node_name
        node = self.nodes[node_name]
        node.add_task(task)
        self._notify("allocate", task)
        stmt.record(Op.PIPELINE, task, node_name, lambda: self.unpipeline(task))

    def unpipeline(self, task: TaskInfo) -> None:
        """Give a pipelined task's promised place back; it is pending again."""
        self._set_status(task, TaskStatus.PENDING)
        node = self.nodes.get(task.node_name)
        if node is not None:
            node.remove_task(task)
        self._notify("deallocate", task)
        task.node_name = ""

    def allocate(self, stmt: Statement, task: TaskInfo, node: NodeInfo) -> None:
        self._set_status(task, TaskStatus.ALLOCATED)
        task.node_name = node.name
        node.add_task(task)
        self._notify("allocate", task)

        def undo() -> None:
            self._set_status(task, TaskStatus.PENDING)
            node.remove_task(task)
            self._notify("deallocate", task)
            task.node_name = ""

        stmt.record(Op.ALLOCATE, task, node.name, undo)

    def commit_operation(self, op: Operation) -> None:
        task: TaskInfo = op.task
        if op.kind is Op.EVICT:
            self.evictions.append(task.key)
        elif op.kind is Op.ALLOCATE:
            self.bind(task)

    def bind(self, task: TaskInfo) -> None:
        self.binds[task.key] = task.node_name
        self._set_status(task, TaskStatus.BINDING)

    def allocate_and_dispatch(self, task: TaskInfo, node: NodeInfo) -> None:
        """Upstream `Session.Allocate` (backfill): allocate outside any statement and bind
        the job's allocated tasks once the job is ready."""
        stmt = self.statement()
        self.allocate(stmt, task, node)
        stmt.operations.clear()  # applied for good: nothing to undo
        job = self.jobs.get(task.job)
        if job is None or self.job_ready(job):
            tasks = job.tasks_in(TaskStatus.ALLOCATED) if job else [task]
            for allocated in sorted(tasks, key=lambda t: t.uid):
                self.bind(allocated)

    # --- running -------------------------------------------------------------------------------

    def run(self, actions: Sequence[str]) -> SessionResult:
        """Run the named actions of `action_table` once, in order, and close the session."""
        run_actions(self, actions, self.action_table, NotModelledError)
        return self.close()

    def close(self) -> SessionResult:
        if not self.closed:
            for plugin in self.plugins:
                plugin.on_session_close(self)
            for job in self.jobs.values():
                job.podgroup.phase = podgroup_phase(job)
            self.closed = True
        pipelined = {
            t.key: t.node_name for t in self._all_tasks() if t.status is TaskStatus.PIPELINED
        }
        return SessionResult(
            binds=dict(self.binds),
            evicted=tuple(self.evictions),
            pipelined=pipelined,
            phases={key: job.podgroup.phase for key, job in self.jobs.items()},
            statuses={t.key: t.status for t in self._all_tasks()},
        )

    def _all_tasks(self) -> list[TaskInfo]:
        """Each pod's current task object (a job may hold a replacement after eviction)."""
        current = dict(self.tasks)
        for job in self.jobs.values():
            for task in job.tasks.values():
                current[task.key] = task
        return [current[k] for k in sorted(current)]


def podgroup_phase(job: JobInfo) -> PodGroupPhase:
    """The phase upstream writes back when the session closes."""
    if job.gang.count(TaskStatus.RUNNING) and job.unschedulable:
        return PodGroupPhase.UNKNOWN
    scheduled = job.gang.scheduled_task_num() + job.releasing_scheduled_num()
    if scheduled >= job.podgroup.min_member:
        if scheduled == job.completed_task_num():
            return PodGroupPhase.COMPLETED
        return PodGroupPhase.RUNNING
    if job.podgroup.phase is not PodGroupPhase.INQUEUE:
        return PodGroupPhase.PENDING
    return job.podgroup.phase
