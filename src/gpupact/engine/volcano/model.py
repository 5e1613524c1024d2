"""Volcano's session objects: tasks (pods), jobs (PodGroups), nodes and queues.

Built once from parsed Kubernetes objects (`gpupact.kube.objects.Pod` / `Node`, a gang
`PodGroup`, a `Queue`) when a session opens; the actions then change task statuses and node
accounting through a `Statement` only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from gpupact.engine.gang import (
    ALLOCATED_STATUSES,
    COMPLETED_STATUSES,
    GROUP_NAME_ANNOTATION,
    PREEMPTABLE_KEY,
    TASK_SPEC_KEY,
    Gang,
    PodGroup,
    PodGroupPhase,
    TaskStatus,
    parse_go_bool,
)
from gpupact.engine.volcano.resource import Resource
from gpupact.errors import FieldError
from gpupact.kube.durations import parse_go_duration
from gpupact.kube.fields import integer, object_header, optional_mapping, string
from gpupact.kube.objects import Node, Pod
from gpupact.kube.requests import parse_resource_list, scheduler_view
from gpupact.kube.status import Status

QUEUE_OPEN = "Open"
ROOT_QUEUE = "root"

_EMPTY: Mapping[str, int] = MappingProxyType({})


# --- queues ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Queue:
    """A Volcano Queue. An empty `capability` / `deserved` / `guarantee` means unset."""

    name: str
    weight: int = 1
    capability: Mapping[str, int] = field(default_factory=lambda: _EMPTY)
    deserved: Mapping[str, int] = field(default_factory=lambda: _EMPTY)
    guarantee: Mapping[str, int] = field(default_factory=lambda: _EMPTY)
    parent: str = ""
    priority: int = 0
    state: str = QUEUE_OPEN
    reclaimable: bool = True


def parse_queue(obj: Any) -> Queue:
    """A Volcano Queue from its JSON/YAML form (scheduling.volcano.sh/v1beta1)."""
    _, _, spec, status, name = object_header(obj, "Queue")
    weight = integer(spec.get("weight"), ("spec", "weight"), 1, bits=32)
    if weight < 0:
        raise FieldError(("spec", "weight"), f"must be >= 0, got {weight}")
    guarantee = optional_mapping(spec.get("guarantee"), ("spec", "guarantee"))
    reclaimable = spec.get("reclaimable", True)
    if reclaimable is None:
        reclaimable = True
    if not isinstance(reclaimable, bool):
        raise FieldError(("spec", "reclaimable"), f"expected a boolean, got {reclaimable!r}")
    return Queue(
        name=name,
        weight=weight,
        capability=parse_resource_list(spec.get("capability"), ("spec", "capability")),
        deserved=parse_resource_list(spec.get("deserved"), ("spec", "deserved")),
        guarantee=parse_resource_list(guarantee.get("resource"), ("spec", "guarantee", "resource")),
        parent=string(spec.get("parent"), ("spec", "parent")),
        priority=integer(spec.get("priority"), ("spec", "priority"), bits=32),
        state=string(status.get("state"), ("status", "state")) or QUEUE_OPEN,
        reclaimable=reclaimable,
    )


# --- tasks -----------------------------------------------------------------------------------


def pod_task_status(pod: Pod) -> TaskStatus:
    """Upstream getTaskStatus: a pod being deleted is Releasing; a pending pod with a node
    is Bound."""
    if pod.phase == "Running":
        return TaskStatus.RELEASING if pod.terminating else TaskStatus.RUNNING
    if pod.phase == "Pending":
        if pod.terminating:
            return TaskStatus.RELEASING
        return TaskStatus.BOUND if pod.node_name else TaskStatus.PENDING
    if pod.phase == "Succeeded":
        return TaskStatus.SUCCEEDED
    if pod.phase == "Failed":
        return TaskStatus.FAILED
    return TaskStatus.UNKNOWN


def pod_preemptable(pod: Pod) -> bool:
    """volcano.sh/preemptable (annotation first, then label); default true, unparsable
    false."""
    for source in (pod.annotations, pod.labels):
        if PREEMPTABLE_KEY in source:
            return bool(parse_go_bool(source[PREEMPTABLE_KEY]))
    return True


@dataclass(eq=False, slots=True)
class TaskInfo:
    uid: str
    name: str
    namespace: str
    job: str  # the owning job's uid ("namespace/podgroup"), "" for a pod outside any gang
    role: str
    priority: int
    preemptable: bool
    resreq: Resource
    init_resreq: Resource
    status: TaskStatus
    node_name: str
    pod: Pod

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def best_effort(self) -> bool:
        return self.init_resreq.is_empty()

    def clone(self) -> TaskInfo:
        return TaskInfo(
            self.uid,
            self.name,
            self.namespace,
            self.job,
            self.role,
            self.priority,
            self.preemptable,
            self.resreq,
            self.init_resreq,
            self.status,
            self.node_name,
            self.pod,
        )

    @classmethod
    def from_pod(cls, pod: Pod) -> TaskInfo:
        group = pod.annotations.get(GROUP_NAME_ANNOTATION, "")
        role = pod.annotations.get(TASK_SPEC_KEY) or pod.labels.get(TASK_SPEC_KEY, "")
        requests = Resource.from_amounts(scheduler_view(pod.requests()))
        return cls(
            uid=pod.uid or f"{pod.namespace}-{pod.name}",
            name=pod.name,
            namespace=pod.namespace,
            job=f"{pod.namespace}/{group}" if group else "",
            role=role,
            # upstream: a task's priority is 1 unless the pod spec sets one
            priority=pod.priority if "priority" in (pod.raw.get("spec") or {}) else 1,
            preemptable=pod_preemptable(pod),
            resreq=requests,
            init_resreq=requests.clone(),
            status=pod_task_status(pod),
            node_name=pod.node_name,
            pod=pod,
        )


def pod_index(name: str) -> int | None:
    """The replica index a Volcano job controller puts last in a pod name ("job-task-3")."""
    parts = name.split("-")
    if len(parts) < 3:
        return None
    try:
        return int(parts[-1])
    except ValueError:
        return None


def default_task_less(left: TaskInfo, right: TaskInfo) -> bool:
    """Upstream CompareTask: by replica index when both have one (and they differ), else by
    creation time (equal for every session pod here), then UID."""
    li, ri = pod_index(left.name), pod_index(right.name)
    if li is None or ri is None or li == ri:
        lt, rt = left.pod.creation_timestamp, right.pod.creation_timestamp
        if lt == rt:
            return left.uid < right.uid
        return lt < rt
    return li < ri


# --- jobs ------------------------------------------------------------------------------------

GO_ZERO_TIME_NANOS = -62_135_596_800 * 1_000_000_000  # 0001-01-01T00:00:00Z
# the PodGroup annotations naming a job's SLA waiting time, in the order upstream reads them
WAITING_TIME_ANNOTATIONS = ("volcano.sh/sla-waiting-time", "sla-waiting-time")


def job_waiting_time(podgroup: PodGroup) -> int | None:
    """Upstream JobInfo.WaitingTime (nanoseconds): the first annotation present that parses
    to a positive Go duration; an unparsable or non-positive one counts as unset."""
    for key in WAITING_TIME_ANNOTATIONS:
        if key not in podgroup.annotations:
            continue
        try:
            value = parse_go_duration(podgroup.annotations[key])
        except ValueError:
            continue
        if value > 0:
            return value
    return None


class JobInfo:
    """A PodGroup and its tasks: gang counts, allocated resources, fit errors."""

    def __init__(self, podgroup: PodGroup, priority: int) -> None:
        self.podgroup = podgroup
        self.uid = podgroup.key
        self.name = podgroup.name
        self.namespace = podgroup.namespace
        self.queue = podgroup.queue
        self.priority = priority
        self.min_available = podgroup.min_member
        # unix nanoseconds; Go's zero time when the PodGroup has no creationTimestamp
        self.creation_timestamp = (
            podgroup.creation_nanos if podgroup.creation_nanos is not None else GO_ZERO_TIME_NANOS
        )
        self.waiting_time = job_waiting_time(podgroup)
        self.gang = Gang(podgroup.min_member, podgroup.min_task_member)
        self.tasks: dict[str, TaskInfo] = {}
        self.allocated = Resource()
        self.total_request = Resource()
        # task uid -> node name -> the predicate status that refused it (this session)
        self.nodes_fit_errors: dict[str, dict[str, Status]] = {}
        self.unschedulable = False  # set by the gang plugin when the session closes

    def add_task(self, task: TaskInfo) -> None:
        self.tasks[task.uid] = task
        self.gang.add(task, task.status)
        self.total_request.add(task.resreq)
        if task.status in ALLOCATED_STATUSES:
            self.allocated.add(task.resreq)

    def delete_task(self, task: TaskInfo) -> None:
        if task.uid not in self.tasks:
            return
        self.total_request.sub(task.resreq)
        if task.status in ALLOCATED_STATUSES:
            self.allocated.sub(task.resreq)
        del self.tasks[task.uid]
        self.gang.remove(task)

    def update_task_status(self, task: TaskInfo, status: TaskStatus) -> None:
        self.delete_task(task)
        task.status = status
        self.add_task(task)

    def tasks_in(self, status: TaskStatus) -> list[TaskInfo]:
        return list(self.gang.members(status))  # type: ignore[arg-type]

    def is_pending(self) -> bool:
        return self.podgroup.phase is PodGroupPhase.PENDING

    def min_resources(self) -> Resource:
        if self.podgroup.min_resources is None:
            return Resource()
        return Resource.from_amounts(self.podgroup.min_resources)

    def elastic_resources(self) -> Resource:
        """What the job holds beyond its minResources."""
        return self.allocated.diff(self.min_resources())[0]

    def fit_failed_roles(self) -> set[str]:
        return {self.tasks[uid].role for uid in self.nodes_fit_errors if uid in self.tasks}

    def task_has_fit_errors(self, task: TaskInfo) -> bool:
        return bool(task.role) and task.role in self.fit_failed_roles()

    def allocated_task_num(self) -> int:
        return self.gang.count(*ALLOCATED_STATUSES)

    def completed_task_num(self) -> int:
        return self.gang.count(*COMPLETED_STATUSES)

    def releasing_scheduled_num(self) -> int:
        return sum(1 for t in self.gang.members(TaskStatus.RELEASING) if t.node_name)  # type: ignore[attr-defined]


def inqueue_resource(job: JobInfo) -> Resource:
    """What an admitted job still reserves: minResources minus what it already holds, per
    resource named in minResources (upstream GetInqueueResource)."""
    spec = job.podgroup.min_resources or {}
    minimum = Resource.from_amounts(spec)
    inqueue = Resource()
    for name in spec:
        if name == "cpu":
            inqueue.cpu = max(minimum.cpu - job.allocated.cpu, 0)
        elif name == "memory":
            inqueue.memory = max(minimum.memory - job.allocated.memory, 0)
        elif name in (minimum.scalars or {}) and name != "ephemeral-storage":
            reserved = minimum.get(name)
            held = (job.allocated.scalars or {}).get(name)
            if held is None:
                inqueue.set_scalar(name, reserved)
            elif reserved - held > 0:
                inqueue.set_scalar(name, reserved - held)
    return inqueue


# --- nodes -----------------------------------------------------------------------------------


_ALLOCATABLE: dict[tuple, Resource] = {}


def _allocatable(amounts: Mapping[str, int]) -> Resource:
    """A node's allocatable as a Resource; nodes of one shape share the conversion."""
    key = tuple(sorted(amounts.items()))
    cached = _ALLOCATABLE.get(key)
    if cached is None:
        if len(_ALLOCATABLE) > 1024:
            _ALLOCATABLE.clear()
        cached = _ALLOCATABLE[key] = Resource.from_amounts(amounts)
    return cached.clone()


class NodeInfo:
    """A node's accounting: idle, used, releasing (held by pods being deleted) and pipelined
    (promised to pods waiting for releasing resources). It keeps a copy of each task as it
    was added, so removing a task undoes exactly what adding it did."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self.name = node.name
        self.allocatable = _allocatable(node.allocatable)
        self.idle = self.allocatable.clone()
        self.used = Resource()
        self.releasing = Resource()
        self.pipelined = Resource()
        self.tasks: dict[str, TaskInfo] = {}
        self.row = -1  # position in the session's node list
        # called after every change to the accounting (the session's column view follows it)
        self.on_change: Callable[[NodeInfo], None] | None = None

    def future_idle(self) -> Resource:
        return self.idle.clone().add(self.releasing).sub(self.pipelined)

    def add_task(self, task: TaskInfo) -> None:
        if task.node_name and task.node_name != self.name:
            raise ValueError(f"task {task.key} already on node {task.node_name}")
        if task.key in self.tasks:
            raise ValueError(f"task {task.key} already on node {self.name}")
        held = task.clone()
        if held.status is TaskStatus.RELEASING:
            self.idle.sub(held.resreq)
            self.releasing.add(held.resreq)
            self.used.add(held.resreq)
        elif held.status is TaskStatus.PIPELINED:
            self.pipelined.add(held.resreq)
        else:
            self.idle.sub(held.resreq)
            self.used.add(held.resreq)
        task.node_name = self.name
        held.node_name = self.name
        self.tasks[task.key] = held
        if self.on_change is not None:
            self.on_change(self)

    def remove_task(self, task: TaskInfo) -> None:
        held = self.tasks.pop(task.key, None)
        if held is None:
            return
        if held.status is TaskStatus.RELEASING:
            self.releasing.sub(held.resreq)
            self.idle.add(held.resreq)
            self.used.sub(held.resreq)
        elif held.status is TaskStatus.PIPELINED:
            self.pipelined.sub(held.resreq)
        else:
            self.idle.add(held.resreq)
            self.used.sub(held.resreq)
        if self.on_change is not None:
            self.on_change(self)

    def update_task(self, task: TaskInfo) -> None:
        self.remove_task(task)
        self.add_task(task)

    def ordered_tasks(self) -> list[TaskInfo]:
        """The node's tasks in key order (upstream iterates a map; fixed here)."""
        return [self.tasks[k] for k in sorted(self.tasks)]
