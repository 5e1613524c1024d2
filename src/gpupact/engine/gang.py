"""Gang scheduling: PodGroups, gang readiness, all-or-nothing statements, stale gangs.

A gang (Volcano/KAI PodGroup) runs only when at least `minMember` of its pods hold
resources at once; a half-placed gang wastes the GPUs it holds. This module is the part the
Volcano and KAI session models share:

- `PodGroup` and `parse_podgroup`: the `scheduling.volcano.sh/v1beta1` PodGroup fields the
  scheduler reads (minMember, minTaskMember, minResources, queue, priorityClassName, phase).
- `Gang`: Volcano JobInfo's arithmetic over a job's task statuses: ready / pipelined /
  starving counts, the per-role (`minTaskMember`) checks and `NeedContinueAllocating`.
- `Statement`: an operation log that is either committed or discarded as a whole, so a gang
  that cannot place `minMember` pods leaves the cluster exactly as it found it.
- Stale gangs: a gang running below `minMember` for longer than a grace period is released
  (all its active pods evicted) so the capacity it strands goes back to whole gangs. Time is
  always a parameter; nothing here reads a clock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any, Protocol, TypeVar

from gpupact.engine.preemption.importance import parse_time_nanos
from gpupact.errors import FieldError, PathPart
from gpupact.kube.fields import (
    integer,
    object_header,
    optional_mapping,
    string,
    string_map,
)
from gpupact.kube.requests import parse_resource_list

# annotation that ties a pod to its PodGroup (Volcano and the scheduler-plugins coscheduling)
GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"
# a pod's role in its job (Volcano job controller writes it as annotation and label)
TASK_SPEC_KEY = "volcano.sh/task-spec"
# whether a pod / PodGroup may be preempted or reclaimed (Volcano)
PREEMPTABLE_KEY = "volcano.sh/preemptable"


class TaskStatus(StrEnum):
    """A pod's state as the scheduler sees it (Volcano `TaskStatus`, KAI `PodStatus`)."""

    PENDING = "Pending"
    GATED = "Gated"
    ALLOCATED = "Allocated"  # given a node in this session, not yet sent to bind
    PIPELINED = "Pipelined"  # given a node whose resources are still being released
    BINDING = "Binding"
    BOUND = "Bound"
    RUNNING = "Running"
    RELEASING = "Releasing"  # being deleted (evicted); still holds its node's resources
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"


# Volcano AllocatedStatus: holds resources on its node and counts as placed
ALLOCATED_STATUSES = frozenset(
    {TaskStatus.BOUND, TaskStatus.BINDING, TaskStatus.RUNNING, TaskStatus.ALLOCATED}
)
# Volcano ReadyTaskNum counts these (a finished pod still counts for its gang)
READY_STATUSES = ALLOCATED_STATUSES | {TaskStatus.SUCCEEDED}
COMPLETED_STATUSES = frozenset({TaskStatus.SUCCEEDED, TaskStatus.FAILED})
# KAI: statuses whose pod is placed and not being evicted / placed or being evicted
ACTIVE_ALLOCATED_STATUSES = ALLOCATED_STATUSES | {TaskStatus.PIPELINED}
ACTIVE_USED_STATUSES = ACTIVE_ALLOCATED_STATUSES | {TaskStatus.RELEASING}


class PodGroupPhase(StrEnum):
    PENDING = "Pending"
    INQUEUE = "Inqueue"
    RUNNING = "Running"
    UNKNOWN = "Unknown"
    COMPLETED = "Completed"


_EMPTY_COUNTS: Mapping[str, int] = MappingProxyType({})
_EMPTY_LABELS: Mapping[str, str] = MappingProxyType({})


@dataclass(slots=True)
class PodGroup:
    """One gang. `phase` is mutable: the enqueue action moves Pending -> Inqueue, and the
    session close recomputes it from the gang's tasks."""

    name: str
    namespace: str = "default"
    queue: str = "default"
    min_member: int = 0
    min_task_member: Mapping[str, int] = field(default_factory=lambda: _EMPTY_COUNTS)
    # scheduler units (cpu milli, memory bytes, others base units); None when unset
    min_resources: Mapping[str, int] | None = None
    priority_class_name: str = ""
    phase: PodGroupPhase = PodGroupPhase.PENDING
    preemptable: bool = False  # the PodGroup's own volcano.sh/preemptable (default false)
    creation_nanos: int | None = None  # metadata.creationTimestamp (unix ns); None: unset
    annotations: Mapping[str, str] = field(default_factory=lambda: _EMPTY_LABELS)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def parse_go_bool(text: str) -> bool | None:
    """Go strconv.ParseBool (how Volcano reads its boolean annotations); None when Go refuses."""
    if text in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if text in ("0", "f", "F", "false", "FALSE", "False"):
        return False
    return None


def _parse_bool(text: str, path: Sequence[PathPart]) -> bool:
    value = parse_go_bool(text)
    if value is None:
        raise FieldError(path, f"invalid boolean {text!r}")
    return value


def parse_podgroup(obj: Any) -> PodGroup:
    """A Volcano PodGroup from its JSON/YAML form (scheduling.volcano.sh/v1beta1)."""
    _, meta, spec, status, name = object_header(obj, "PodGroup")
    min_member = integer(spec.get("minMember"), ("spec", "minMember"), bits=32)
    if min_member < 0:
        raise FieldError(("spec", "minMember"), f"must be >= 0, got {min_member}")
    task_members: dict[str, int] = {}
    raw_members = optional_mapping(spec.get("minTaskMember"), ("spec", "minTaskMember"))
    for role, count in raw_members.items():
        where = ("spec", "minTaskMember", str(role))
        value = integer(count, where, bits=32)
        if value < 0:
            raise FieldError(where, f"must be >= 0, got {value}")
        task_members[str(role)] = value
    min_resources = None
    if spec.get("minResources") is not None:
        min_resources = parse_resource_list(spec["minResources"], ("spec", "minResources"))
    phase_text = string(status.get("phase"), ("status", "phase"), PodGroupPhase.PENDING.value)
    try:
        phase = PodGroupPhase(phase_text or PodGroupPhase.PENDING.value)
    except ValueError:
        raise FieldError(("status", "phase"), f"unknown PodGroup phase {phase_text!r}") from None
    annotations = string_map(meta.get("annotations"), ("metadata", "annotations"))
    labels = string_map(meta.get("labels"), ("metadata", "labels"))
    preemptable = False
    if PREEMPTABLE_KEY in annotations:
        preemptable = _parse_bool(
            annotations[PREEMPTABLE_KEY], ("metadata", "annotations", PREEMPTABLE_KEY)
        )
    elif PREEMPTABLE_KEY in labels:
        preemptable = _parse_bool(labels[PREEMPTABLE_KEY], ("metadata", "labels", PREEMPTABLE_KEY))
    created = string(meta.get("creationTimestamp"), ("metadata", "creationTimestamp"))
    return PodGroup(
        name=name,
        namespace=string(meta.get("namespace"), ("metadata", "namespace")) or "default",
        queue=string(spec.get("queue"), ("spec", "queue")) or "default",
        min_member=min_member,
        min_task_member=MappingProxyType(task_members),
        min_resources=min_resources,
        priority_class_name=string(spec.get("priorityClassName"), ("spec", "priorityClassName")),
        phase=phase,
        preemptable=preemptable,
        creation_nanos=(
            parse_time_nanos(created, ("metadata", "creationTimestamp")) if created else None
        ),
        annotations=MappingProxyType(dict(annotations)),
    )


# --- gang readiness ----------------------------------------------------------------------------


class GangMember(Protocol):
    uid: str
    role: str
    best_effort: bool


class Gang:
    """A job's tasks indexed by status, with Volcano's gang predicates over them.

    `min_available` is the PodGroup's minMember; `task_min_available` its minTaskMember
    (role -> minimum). When minMember is below the sum of the role minimums, the role checks
    are skipped (upstream: the job-level minimum is then the binding one)."""

    __slots__ = ("by_status", "min_available", "status_of", "task_min_available", "task_min_total")

    def __init__(self, min_available: int, task_min_available: Mapping[str, int]) -> None:
        self.min_available = min_available
        self.task_min_available = dict(task_min_available)
        self.task_min_total = sum(self.task_min_available.values())
        self.by_status: dict[TaskStatus, dict[str, GangMember]] = {}
        self.status_of: dict[str, TaskStatus] = {}

    # -- index ------------------------------------------------------------------------------

    def add(self, member: GangMember, status: TaskStatus) -> None:
        self.by_status.setdefault(status, {})[member.uid] = member
        self.status_of[member.uid] = status

    def remove(self, member: GangMember) -> None:
        status = self.status_of.pop(member.uid)
        bucket = self.by_status[status]
        del bucket[member.uid]
        if not bucket:
            del self.by_status[status]

    def set_status(self, member: GangMember, status: TaskStatus) -> None:
        self.remove(member)
        self.add(member, status)

    def members(self, status: TaskStatus) -> Iterable[GangMember]:
        return self.by_status.get(status, {}).values()

    def count(self, *statuses: TaskStatus) -> int:
        return sum(len(self.by_status.get(s, ())) for s in statuses)

    def __len__(self) -> int:
        return len(self.status_of)

    # -- counts -----------------------------------------------------------------------------

    def ready_task_num(self) -> int:
        return self.count(*READY_STATUSES)

    def waiting_task_num(self) -> int:
        return self.count(TaskStatus.PIPELINED)

    def pending_best_effort_num(self) -> int:
        return sum(1 for m in self.members(TaskStatus.PENDING) if m.best_effort)

    def valid_task_num(self) -> int:
        return self.count(
            *ALLOCATED_STATUSES, TaskStatus.SUCCEEDED, TaskStatus.PIPELINED, TaskStatus.PENDING
        )

    def scheduled_task_num(self) -> int:
        return self.count(TaskStatus.RUNNING, TaskStatus.BOUND, *COMPLETED_STATUSES)

    # -- job-level gang predicates ----------------------------------------------------------

    def is_ready(self) -> bool:
        return self.ready_task_num() + self.pending_best_effort_num() >= self.min_available

    def is_pipelined(self) -> bool:
        placed = self.waiting_task_num() + self.ready_task_num()
        return placed + self.pending_best_effort_num() >= self.min_available

    def is_starving(self) -> bool:
        return self.waiting_task_num() + self.ready_task_num() < self.min_available

    # -- per-role (minTaskMember) predicates --------------------------------------------------

    def _roles_skipped(self) -> bool:
        return self.min_available < self.task_min_total

    def _role_counts(self, statuses: Iterable[TaskStatus], pending_best_effort: bool) -> dict:
        counts: dict[str, int] = {}
        for status in statuses:
            for member in self.members(status):
                counts[member.role] = counts.get(member.role, 0) + 1
        if pending_best_effort:
            for member in self.members(TaskStatus.PENDING):
                if member.best_effort:
                    counts[member.role] = counts.get(member.role, 0) + 1
        return counts

    def allocated_roles(self) -> dict[str, int]:
        """Per role: placed or finished tasks, plus pending best-effort ones."""
        return self._role_counts((*ALLOCATED_STATUSES, TaskStatus.SUCCEEDED), True)

    def _roles_meet(self, counts: Mapping[str, int]) -> bool:
        return all(counts.get(role, 0) >= n for role, n in self.task_min_available.items())

    def check_task_valid(self) -> bool:
        if self._roles_skipped():
            return True
        counts = self._role_counts(
            (*ALLOCATED_STATUSES, TaskStatus.SUCCEEDED, TaskStatus.PIPELINED, TaskStatus.PENDING),
            False,
        )
        return all(
            n == 0 or counts.get(role, 0) >= n for role, n in self.task_min_available.items()
        )

    def check_task_ready(self) -> bool:
        return self._roles_skipped() or self._roles_meet(self.allocated_roles())

    def check_task_pipelined(self) -> bool:
        if self._roles_skipped():
            return True
        statuses = (*ALLOCATED_STATUSES, TaskStatus.SUCCEEDED, TaskStatus.PIPELINED)
        return self._roles_meet(self._role_counts(statuses, True))

    def need_continue_allocating(self, failed_roles: Iterable[str]) -> bool:
        """After a task found no node: may the allocation go on with the job's other tasks
        (Volcano `NeedContinueAllocating`)? `failed_roles` are the roles that already failed
        this session. Never when every task is needed; otherwise either the job total can
        still be met by roles that have not failed, or each failed role already met its own
        minimum."""
        if self.min_available >= len(self):
            return False
        failed = set(failed_roles)
        if self._roles_skipped():
            left = sum(1 for m in self.members(TaskStatus.PENDING) if m.role not in failed)
            return self.ready_task_num() + left >= self.min_available
        allocated = self.allocated_roles()
        for role in failed:
            minimum = self.task_min_available.get(role, 0)
            if minimum and allocated.get(role, 0) < minimum:
                return False
        return True


# --- all-or-nothing statements -----------------------------------------------------------------


class Op(StrEnum):
    EVICT = "evict"
    PIPELINE = "pipeline"
    ALLOCATE = "allocate"
    REVOKE = "revoke"  # an earlier operation taken back within the statement


@dataclass(slots=True)
class Operation:
    """One tentative change. The host applied it already; `undo` reverts it exactly."""

    kind: Op
    task: Any
    node: str
    undo: Callable[[], None]
    reason: str = ""
    revoked: bool = False


class StatementHost(Protocol):
    def commit_operation(self, op: Operation) -> None: ...


class Statement:
    """Tentative session changes kept as a log: `commit` makes them real (binds, evictions)
    in order; `discard` undoes them newest first, leaving the session as before. A gang is
    placed inside one statement and committed only once it is ready (or pipelined)."""

    __slots__ = ("host", "operations")

    def __init__(self, host: StatementHost) -> None:
        self.host = host
        self.operations: list[Operation] = []

    def record(
        self, kind: Op, task: Any, node: str, undo: Callable[[], None], reason: str = ""
    ) -> None:
        self.operations.append(Operation(kind, task, node, undo, reason))

    @property
    def has_evictions(self) -> bool:
        return any(op.kind is Op.EVICT for op in self.operations)

    def revoke(self, kind: Op, task: Any, redo: Callable[[], None]) -> bool:
        """Take back the earliest live operation of `kind` on `task` (e.g. an eviction
        whose pod is placed back on its node). `redo` re-applies it should the statement
        be rolled back past this point. False when there is no such operation."""
        for op in self.operations:
            if op.kind is kind and op.task is task and not op.revoked:
                op.undo()
                op.revoked = True

                def undo_revoke(op: Operation = op) -> None:
                    redo()
                    op.revoked = False

                self.record(Op.REVOKE, task, op.node, undo_revoke)
                return True
        return False

    def checkpoint(self) -> int:
        return len(self.operations)

    def rollback(self, checkpoint: int) -> None:
        while len(self.operations) > checkpoint:
            self.operations.pop().undo()

    def discard(self) -> None:
        self.rollback(0)

    def commit(self) -> None:
        operations, self.operations = self.operations, []
        for op in operations:
            if not op.revoked and op.kind is not Op.REVOKE:
                self.host.commit_operation(op)

    def merge(self, *others: Statement) -> None:
        """Take over the operations of statements on the same host (already applied)."""
        for other in others:
            self.operations.extend(other.operations)
            other.operations = []


# --- stale gangs -------------------------------------------------------------------------------


def gang_is_stale(active: int, min_member: int, succeeded: int = 0) -> bool:
    """A gang is stale when some of its pods hold resources but fewer than its minimum: it
    cannot make progress and strands what it holds. A gang with a finished pod is winding
    down, not stuck."""
    return succeeded == 0 and 0 < active < min_member


@dataclass(slots=True)
class StalenessTracker:
    """When each gang became stale, to release gangs stale for longer than a grace period.

    Call `observe` once per scheduling cycle with the injected time; it returns True when the
    gang should be released now. A negative grace period disables releasing."""

    grace_period: float
    since: dict[str, float] = field(default_factory=dict)

    def observe(self, gang: str, stale: bool, now: float) -> bool:
        if not stale:
            self.since.pop(gang, None)
            return False
        started = self.since.setdefault(gang, now)
        if self.grace_period < 0:
            return False
        return now - started >= self.grace_period


_Session = TypeVar("_Session")


def run_actions(
    session: _Session,
    actions: Sequence[str],
    registry: Mapping[str, Callable[[_Session], object]],
    not_modelled: Callable[[str], Exception],
) -> None:
    """Run the named actions in order on `session`. Every name is checked first, so an unknown
    action fails before any action has changed the session."""
    for name in actions:
        if name not in registry:
            raise not_modelled(f"action {name!r}")
    for name in actions:
        registry[name](session)
