"""KAI-Scheduler's objects: queues (quota / limit / over-quota weight per resource, in a
tree of departments and projects), PodGroups with priority and preemptibility, tasks, jobs
and node accounting (idle, releasing).

Quantities: cpu in millicores, memory in bytes, GPUs as a count (exact Fractions where KAI
uses float64). A queue's `-1` means unlimited, as upstream.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction
from types import MappingProxyType
from typing import Any

from gpupact.engine.gang import (
    ACTIVE_ALLOCATED_STATUSES,
    ACTIVE_USED_STATUSES,
    ALLOCATED_STATUSES,
    TaskStatus,
)
from gpupact.engine.kai.gpu_sharing import (
    SharedGpus,
    SharedRequest,
    gpu_count,
    gpu_memory,
    gpu_memory_synced,
    pod_gpu_groups,
    shared_request,
)
from gpupact.errors import FieldError
from gpupact.kube.fields import integer, mapping, object_header, optional_mapping, string
from gpupact.kube.objects import Node, Pod
from gpupact.kube.requests import CPU, MEMORY, scheduler_view

GPU = "nvidia.com/gpu"
UNLIMITED = -1
RESOURCES = ("cpu", "memory", "gpu")  # the fair-share dimensions, in upstream order
MEBIBYTES = 1000 * 1000  # upstream's name for the memory quota unit (it is 10^6 bytes)

POD_GROUP_ANNOTATION = "pod-group-name"
PREEMPTIBLE = "preemptible"
NON_PREEMPTIBLE = "non-preemptible"
# build (100) and above are non-preemptible unless a PodGroup says otherwise
DEFAULT_PREEMPTIBLE_BELOW = 100

Number = int | Fraction
_ALIVE = ACTIVE_ALLOCATED_STATUSES | {TaskStatus.PENDING, TaskStatus.GATED}


class UnsupportedError(ValueError):
    """A KAI feature this model does not implement (DRA, sub-groups...)."""


def _number(obj: Any, path: tuple, default: Number) -> Number:
    if obj is None:
        return default
    if isinstance(obj, bool) or not isinstance(obj, int | float):
        raise FieldError(path, f"expected a number, got {obj!r}")
    return Fraction(str(obj)) if isinstance(obj, float) else obj


# --- queues ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ResourceQuota:
    quota: Number = 0
    limit: Number = UNLIMITED
    over_quota_weight: Number = 1


@dataclass(frozen=True, slots=True)
class KaiQueue:
    """A KAI Queue (scheduling.run.ai/v2). cpu quota/limit in millicores, memory in units
    of 10^6 bytes, GPUs in devices."""

    name: str
    parent: str = ""
    priority: int = 100
    gpu: ResourceQuota = ResourceQuota()
    cpu: ResourceQuota = ResourceQuota(UNLIMITED, UNLIMITED, 1)
    memory: ResourceQuota = ResourceQuota(UNLIMITED, UNLIMITED, 1)


def _parse_quota(obj: Any, path: tuple, default: ResourceQuota) -> ResourceQuota:
    if obj is None:
        return default
    body = mapping(obj, path)
    return ResourceQuota(
        quota=_number(body.get("quota"), (*path, "quota"), default.quota),
        limit=_number(body.get("limit"), (*path, "limit"), default.limit),
        over_quota_weight=_number(
            body.get("overQuotaWeight"), (*path, "overQuotaWeight"), default.over_quota_weight
        ),
    )


def parse_kai_queue(obj: Any) -> KaiQueue:
    _, _, spec, _, name = object_header(obj, "Queue")
    resources = optional_mapping(spec.get("resources"), ("spec", "resources"))
    defaults = KaiQueue(name)
    return KaiQueue(
        name=name,
        parent=string(spec.get("parentQueue"), ("spec", "parentQueue")),
        priority=integer(spec.get("priority"), ("spec", "priority"), 100, bits=32),
        gpu=_parse_quota(resources.get("gpu"), ("spec", "resources", "gpu"), defaults.gpu),
        cpu=_parse_quota(resources.get("cpu"), ("spec", "resources", "cpu"), defaults.cpu),
        memory=_parse_quota(
            resources.get("memory"), ("spec", "resources", "memory"), defaults.memory
        ),
    )


# --- PodGroups -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class KaiPodGroup:
    name: str
    namespace: str = "default"
    queue: str = ""
    min_member: int = 1
    priority: int = 0
    preemptible: bool = True
    creation: float = 0.0  # injected time; older first on equal priority
    stale_since: float | None = None  # when the gang became stale, if it is

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def preemptibility(explicit: str, priority: int) -> bool:
    """Upstream CalculatePreemptibility: the PodGroup's own setting, else by priority."""
    if explicit == PREEMPTIBLE:
        return True
    if explicit == NON_PREEMPTIBLE:
        return False
    if explicit:
        raise FieldError(("spec", "preemptibility"), f"unknown preemptibility {explicit!r}")
    return priority < DEFAULT_PREEMPTIBLE_BELOW


def parse_kai_podgroup(
    obj: Any,
    priority_classes: Mapping[str, int],
    *,
    creation: float = 0.0,
    stale_since: float | None = None,
) -> KaiPodGroup:
    """A KAI PodGroup (scheduling.run.ai/v2alpha2); its priority is its PriorityClass's value
    (0 without one). Times are injected (the caller's clock)."""
    _, meta, spec, _, name = object_header(obj, "PodGroup")
    class_name = string(spec.get("priorityClassName"), ("spec", "priorityClassName"))
    if class_name and class_name not in priority_classes:
        raise FieldError(("spec", "priorityClassName"), f"unknown PriorityClass {class_name!r}")
    priority = priority_classes.get(class_name, 0)
    min_member = integer(spec.get("minMember"), ("spec", "minMember"), 1, bits=32)
    if min_member < 0:
        raise FieldError(("spec", "minMember"), f"must be >= 0, got {min_member}")
    return KaiPodGroup(
        name=name,
        namespace=string(meta.get("namespace"), ("metadata", "namespace")) or "default",
        queue=string(spec.get("queue"), ("spec", "queue")),
        min_member=min_member,
        priority=priority,
        preemptible=preemptibility(
            string(spec.get("preemptibility"), ("spec", "preemptibility")), priority
        ),
        creation=creation,
        stale_since=stale_since,
    )


# --- tasks and jobs --------------------------------------------------------------------------


def pod_status(pod: Pod) -> TaskStatus:
    if pod.phase in ("Running", "Pending") and pod.terminating:
        return TaskStatus.RELEASING
    if pod.phase == "Running":
        return TaskStatus.RUNNING
    if pod.phase == "Pending":
        return TaskStatus.BOUND if pod.node_name else TaskStatus.PENDING
    if pod.phase == "Succeeded":
        return TaskStatus.SUCCEEDED
    if pod.phase == "Failed":
        return TaskStatus.FAILED
    return TaskStatus.UNKNOWN


@dataclass(eq=False, slots=True)
class KaiTask:
    uid: str
    name: str
    namespace: str
    job: str
    status: TaskStatus
    node_name: str
    requests: Mapping[str, int]  # scheduler units, GPUs under nvidia.com/gpu
    pod: Pod
    virtual: bool = False  # status set by this session's simulation (not yet real)
    _unbound: Pod | None = None
    shared: SharedRequest | None = None  # a fractional GPU request (GPU sharing)
    gpu_groups: tuple[str, ...] = ()  # the GPU groups a shared pod sits on
    # GPUs a queue counts for the shared pod once a node took it (upstream AcceptedResource,
    # set when the pod is added to a node and kept after)
    accepted_gpus: Number | None = None

    @property
    def placement_pod(self) -> Pod:
        """The pod as the node filters see it when it is (re)placed: not tied to the node
        it runs on now (a consolidated pod moves)."""
        if self._unbound is None:
            self._unbound = replace(self.pod, node_name="") if self.pod.node_name else self.pod
        return self._unbound

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def quantities(self) -> dict[str, Number]:
        """What the pod asks a queue for (upstream ResReq)."""
        return {
            "cpu": self.requests.get(CPU, 0),
            "memory": self.requests.get(MEMORY, 0),
            "gpu": self.shared.gpus if self.shared is not None else self.requests.get(GPU, 0),
        }

    def amounts(self, view: str) -> dict[str, Number]:
        """ "request", "accepted" or "capacity" amounts (see allocation.quantities)."""
        if view == "accepted":
            return self.accepted_quantities
        amounts = self.quantities
        if view == "capacity" and self.shared is not None and self.shared.is_memory:
            amounts["gpu"] = 0  # GetGpusQuota: a memory request is charged per node
        return amounts

    @property
    def accepted_quantities(self) -> dict[str, Number]:
        """What a queue counts for the pod as placed (AcceptedResource): a memory request
        becomes its portion of the GPUs of the node it was placed on."""
        amounts = self.quantities
        if self.accepted_gpus is not None:
            amounts["gpu"] = self.accepted_gpus
        return amounts

    @property
    def requires_gpu(self) -> bool:
        return self.shared is not None or self.requests.get(GPU, 0) > 0

    @classmethod
    def from_pod(cls, pod: Pod) -> KaiTask:
        group = pod.annotations.get(POD_GROUP_ANNOTATION, "")
        return cls(
            uid=pod.uid or pod.name,
            name=pod.name,
            namespace=pod.namespace,
            job=f"{pod.namespace}/{group}" if group else "",
            status=pod_status(pod),
            node_name=pod.node_name,
            requests=MappingProxyType(scheduler_view(pod.requests())),
            pod=pod,
            shared=shared_request(pod),
            gpu_groups=pod_gpu_groups(pod),
        )

    def should_allocate(self, real: bool) -> bool:
        """Pending; in a simulation also a pod this session evicted (it may move)."""
        if self.status is TaskStatus.PENDING:
            return True
        return not real and self.status is TaskStatus.RELEASING and self.virtual


def task_less(left: KaiTask, right: KaiTask) -> bool:
    """Default task order: creation time (equal here), then UID."""
    lt, rt = left.pod.creation_timestamp, right.pod.creation_timestamp
    if lt == rt:
        return left.uid < right.uid
    return lt < rt


@dataclass(eq=False)
class KaiJob:
    """A PodGroup with its tasks (one default pod set)."""

    podgroup: KaiPodGroup
    tasks: dict[str, KaiTask] = field(default_factory=dict)

    @property
    def uid(self) -> str:
        return self.podgroup.key

    @property
    def queue(self) -> str:
        return self.podgroup.queue

    @property
    def priority(self) -> int:
        return self.podgroup.priority

    @property
    def preemptible(self) -> bool:
        return self.podgroup.preemptible

    @property
    def min_available(self) -> int:
        return max(self.podgroup.min_member, 1)

    def count(self, statuses: frozenset[TaskStatus]) -> int:
        return sum(1 for t in self.tasks.values() if t.status in statuses)


@dataclass(eq=False)
class JobView:
    """A job, or a part of it: the partial job a solver places task by task, or the part of
    a victim job not yet taken. Counts and requests read only `tasks`."""

    job: KaiJob
    tasks: list[KaiTask]
    min_available: int

    @classmethod
    def whole(cls, job: KaiJob) -> JobView:
        ordered = sorted(job.tasks.values(), key=lambda t: t.uid)
        return cls(job, ordered, job.min_available)

    @property
    def uid(self) -> str:
        return self.job.uid

    @property
    def queue(self) -> str:
        return self.job.queue

    @property
    def priority(self) -> int:
        return self.job.priority

    @property
    def preemptible(self) -> bool:
        return self.job.preemptible

    @property
    def creation(self) -> float:
        return self.job.podgroup.creation

    def count(self, statuses: frozenset[TaskStatus]) -> int:
        return sum(1 for t in self.tasks if t.status in statuses)

    def active_allocated(self) -> int:
        return self.count(ACTIVE_ALLOCATED_STATUSES)

    def active_used(self) -> int:
        return self.count(ACTIVE_USED_STATUSES)

    def alive(self) -> int:
        return self.count(_ALIVE)

    def gang_satisfied(self) -> bool:
        return self.active_used() >= self.min_available

    def ready_for_scheduling(self) -> bool:
        return self.alive() - self.count(frozenset({TaskStatus.GATED})) >= self.min_available

    def allocated_quantities(self) -> dict[str, Number]:
        total: dict[str, Number] = {r: 0 for r in RESOURCES}
        for task in self.tasks:
            if task.status in ALLOCATED_STATUSES:
                for r, v in task.accepted_quantities.items():
                    total[r] += v
        return total

    def has_pending(self) -> bool:
        return any(t.status is TaskStatus.PENDING for t in self.tasks)


# --- nodes -----------------------------------------------------------------------------------


class KaiNode:
    """Idle and releasing amounts per resource. A pipelined task takes from releasing, so
    what a simulation may still place is idle + releasing."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self.name = node.name
        self.allocatable = dict(scheduler_view(node.allocatable))
        self.max_pods = node.allocatable.get("pods", 0)
        self.idle: dict[str, int] = dict(self.allocatable)
        self.releasing: dict[str, int] = {}
        self.tasks: dict[str, TaskStatus] = {}
        self.task_groups: dict[str, tuple[str, ...]] = {}  # GPU groups each pod was added on
        self.used_whole_gpus = 0  # whole GPUs requested by the node's pods (any status)
        self.sharing = SharedGpus(
            self, gpu_count(node, self.allocatable.get(GPU, 0)), gpu_memory(node)
        )
        self.gpu_memory_synced = gpu_memory_synced(node)
        self.row = -1  # position in the session's node list
        # told of every pod added to / removed from the node (the session's filter mirror)
        self.on_add: Callable[[KaiTask, KaiNode], None] | None = None
        self.on_remove: Callable[[KaiTask, KaiNode], None] | None = None
        # told after every change to the node's idle / releasing amounts (column views)
        self.on_change: Callable[[KaiNode], None] | None = None

    def add_gpus(self, kind: str, delta: int) -> None:
        book = self.idle if kind == "idle" else self.releasing
        book[GPU] = book.get(GPU, 0) + delta
        if self.on_change is not None:
            self.on_change(self)

    def _apply(self, task: KaiTask, status: TaskStatus, sign: int, groups: tuple[str, ...]) -> None:
        self.used_whole_gpus += sign * task.requests.get(GPU, 0)
        for name, amount in task.requests.items():
            delta = sign * amount
            if status is TaskStatus.RELEASING:
                self.releasing[name] = self.releasing.get(name, 0) + delta
                self.idle[name] = self.idle.get(name, 0) - delta
            elif status is TaskStatus.PIPELINED:
                self.releasing[name] = self.releasing.get(name, 0) - delta
            else:
                self.idle[name] = self.idle.get(name, 0) - delta
        if task.shared is not None:
            for group in groups:
                if sign > 0:
                    self.sharing.add(task.shared, status, group)
                else:
                    self.sharing.remove(task.shared, status, group)
        if self.on_change is not None:
            self.on_change(self)

    def add_task(self, task: KaiTask) -> None:
        if task.key in self.tasks:
            raise ValueError(f"task {task.key} already on node {self.name}")
        self.tasks[task.key] = task.status
        self.task_groups[task.key] = task.gpu_groups
        if task.shared is not None:
            portion = task.shared.portion_on(self.sharing.memory)
            if portion is not None:
                task.accepted_gpus = portion * task.shared.devices
        self._apply(task, task.status, 1, task.gpu_groups)
        if self.on_add is not None:
            self.on_add(task, self)

    def remove_task(self, task: KaiTask) -> None:
        status = self.tasks.pop(task.key, None)
        if status is not None:
            self._apply(task, status, -1, self.task_groups.pop(task.key, ()))
            if self.on_remove is not None:
                self.on_remove(task, self)

    def update_task(self, task: KaiTask) -> None:
        self.remove_task(task)
        self.add_task(task)

    def fits_idle(self, task: KaiTask) -> bool:
        if not all(v <= self.idle.get(n, 0) for n, v in task.requests.items() if v):
            return False
        if task.shared is None:
            return True
        if not task.shared.valid_on(self.sharing.memory):
            return False
        return self.sharing.device_fit(task.shared, self.idle_gpus())

    def fits_idle_or_releasing(self, task: KaiTask) -> bool:
        if not all(
            v <= self.idle.get(n, 0) + self.releasing.get(n, 0)
            for n, v in task.requests.items()
            if v
        ):
            return False
        if task.shared is None:
            return True
        if not task.shared.valid_on(self.sharing.memory):
            return False
        return self.sharing.device_fit(task.shared, self.idle_gpus() + self.releasing_gpus())

    def free(self, resource: str) -> int:
        """Idle plus releasing (what binpack orders nodes by)."""
        return self.idle.get(resource, 0) + self.releasing.get(resource, 0)

    def idle_gpus(self) -> int:
        return self.idle.get(GPU, 0)

    def releasing_gpus(self) -> int:
        return self.releasing.get(GPU, 0)


def node_quantities(node: Node) -> dict[str, Number]:
    alloc = scheduler_view(node.allocatable)
    return {"cpu": alloc.get(CPU, 0), "memory": alloc.get(MEMORY, 0), "gpu": alloc.get(GPU, 0)}
