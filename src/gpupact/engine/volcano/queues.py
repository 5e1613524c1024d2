"""Queue share math of Volcano's `proportion` and `capacity` plugins.

proportion: a queue *deserves* a weight-proportional slice of the cluster, capped by its
capability and by what its jobs request, raised to its guarantee; slices a queue cannot use
are handed round again until nothing is left or nothing changes.

capacity: a queue *deserves* what its spec says (capped by its real capability); with
`hierarchy`, queues form a tree under `root`, a child without a capability dimension
inherits its parent's, and every check runs on the queue and each ancestor.

real capability = (cluster total - everyone's guarantees) + own guarantee, capped by the
queue's capability: what it may grow to.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING

from gpupact.engine.gang import ALLOCATED_STATUSES, PodGroupPhase, TaskStatus
from gpupact.engine.volcano.model import ROOT_QUEUE, JobInfo, Queue, inqueue_resource
from gpupact.engine.volcano.resource import (
    INFINITY,
    UNBOUNDED,
    ZERO,
    Resource,
    exceeded_part,
    max_of,
    share,
)

if TYPE_CHECKING:
    from gpupact.engine.volcano.framework import Session


@dataclass(slots=True)
class QueueAttr:
    name: str
    weight: int = 1
    share: Fraction = Fraction(0)
    deserved: Resource = field(default_factory=Resource)
    allocated: Resource = field(default_factory=Resource)
    request: Resource = field(default_factory=Resource)
    elastic: Resource = field(default_factory=Resource)  # held beyond minResources
    inqueue: Resource = field(default_factory=Resource)  # reserved by admitted jobs
    capability: Resource = field(default_factory=Resource)
    real_capability: Resource = field(default_factory=Resource)
    guarantee: Resource = field(default_factory=Resource)
    ancestors: list[str] = field(default_factory=list)  # root first
    children: dict[str, QueueAttr] = field(default_factory=dict)


def _capability(queue: Queue) -> Resource | None:
    """Spec capability; an unset (or non-positive) cpu / memory means unlimited."""
    if not queue.capability:
        return None
    cap = Resource.from_amounts(queue.capability)
    if cap.cpu <= 0:
        cap.cpu = UNBOUNDED
    if cap.memory <= 0:
        cap.memory = UNBOUNDED
    return cap


def _total_guarantee(ssn: Session) -> Resource:
    total = Resource()
    for queue in ssn.queues.values():
        if queue.guarantee:
            total.add(Resource.from_amounts(queue.guarantee))
    return total


def _account_job(attr: QueueAttr, job: JobInfo) -> None:
    """A job's share of its queue's allocated, request, inqueue and elastic amounts."""
    for task in job.tasks.values():
        if task.status in ALLOCATED_STATUSES:
            attr.allocated.add(task.resreq)
            attr.request.add(task.resreq)
        elif task.status is TaskStatus.PENDING:
            attr.request.add(task.resreq)
    phase = job.podgroup.phase
    if job.podgroup.min_resources is not None and (
        phase is PodGroupPhase.INQUEUE
        or (phase is PodGroupPhase.RUNNING and job.allocated_task_num() >= job.min_available)
    ):
        attr.inqueue.add(inqueue_resource(job))
    attr.elastic.add(job.elastic_resources())


def flat_attrs(ssn: Session, *, with_weight: bool) -> dict[str, QueueAttr]:
    """Attributes of the queues that have jobs (both plugins without hierarchy)."""
    total_guarantee = _total_guarantee(ssn)
    attrs: dict[str, QueueAttr] = {}
    for job in ssn.jobs.values():
        queue = ssn.queues.get(job.queue)
        if queue is None:
            continue
        attr = attrs.get(queue.name)
        if attr is None:
            attr = QueueAttr(queue.name, weight=queue.weight if with_weight else 1)
            if not with_weight:
                attr.deserved = Resource.from_amounts(queue.deserved)
            if queue.guarantee:
                attr.guarantee = Resource.from_amounts(queue.guarantee)
            real = exceeded_part(ssn.total_resource, total_guarantee).add(attr.guarantee)
            cap = _capability(queue)
            if cap is None:
                attr.real_capability = real
            else:
                attr.capability = cap
                attr.real_capability = real.min_dimension(cap, INFINITY)
            attrs[queue.name] = attr
        _account_job(attr, job)
    return dict(sorted(attrs.items()))


def proportion_share(attr: QueueAttr) -> None:
    attr.share = max(
        (
            share(attr.allocated.get(n), attr.deserved.get(n))
            for n in attr.deserved.resource_names()
        ),
        default=Fraction(0),
    )


def capacity_share(attr: QueueAttr) -> None:
    """A queue with no deserved is best-effort: share 1, after every queue below its
    deserved."""
    if attr.deserved.is_empty():
        attr.share = Fraction(1)
        return
    proportion_share(attr)


def divide_by_weight(attrs: dict[str, QueueAttr], total: Resource) -> None:
    """proportion's deserved: rounds of weight-proportional slices of what is left."""
    remaining = total.clone()
    meet: set[str] = set()
    while True:
        total_weight = sum(a.weight for a in attrs.values() if a.name not in meet)
        if total_weight == 0:
            break
        old_remaining = remaining.clone()
        increased, decreased = Resource(), Resource()
        for attr in attrs.values():
            if attr.name in meet:
                continue
            old = attr.deserved.clone()
            attr.deserved.add(remaining.clone().multi(Fraction(attr.weight, total_weight)))
            attr.deserved.min_dimension(attr.real_capability, INFINITY)
            attr.deserved.min_dimension(attr.request, ZERO)
            attr.deserved = max_of(attr.deserved, attr.guarantee)
            proportion_share(attr)
            if attr.request.less_equal(attr.deserved, ZERO) or attr.deserved == old:
                meet.add(attr.name)
            more, less = attr.deserved.diff(old)
            increased.add(more)
            decreased.add(less)
        remaining = exceeded_part(remaining.clone().add(decreased), increased)
        if remaining.is_empty() or remaining == old_remaining:
            break


def proportion_attrs(ssn: Session) -> dict[str, QueueAttr]:
    attrs = flat_attrs(ssn, with_weight=True)
    divide_by_weight(attrs, ssn.total_resource)
    return attrs


def capacity_attrs(ssn: Session) -> dict[str, QueueAttr]:
    attrs = flat_attrs(ssn, with_weight=False)
    for attr in attrs.values():
        attr.deserved.min_dimension(attr.real_capability, INFINITY)
        attr.deserved = max_of(attr.deserved, attr.guarantee)
        capacity_share(attr)
    return attrs


# --- hierarchy (capacity with `hierarchy`) -------------------------------------------------------


class HierarchyError(ValueError):
    """The queue tree is unusable (cycle, unknown parent, job in an inner queue): upstream
    then refuses to schedule anything in the session."""


def _new_attr(queue: Queue) -> QueueAttr:
    attr = QueueAttr(queue.name, deserved=Resource.from_amounts(queue.deserved))
    if queue.capability:
        attr.capability = Resource.from_amounts(queue.capability)
    if queue.guarantee:
        attr.guarantee = Resource.from_amounts(queue.guarantee)
    return attr


def _link(ssn: Session, attrs: dict[str, QueueAttr], queue: Queue, visiting: set[str]) -> None:
    if queue.name == ROOT_QUEUE:
        return
    if queue.name in visiting:
        raise HierarchyError(f"cycle in queue hierarchy at {queue.name}")
    visiting.add(queue.name)
    try:
        parent_name = queue.parent or ROOT_QUEUE
        parent = ssn.queues.get(parent_name)
        if parent is None:
            raise HierarchyError(f"queue {queue.name} has unknown parent {parent_name}")
        if parent_name not in attrs:
            attrs[parent_name] = _new_attr(parent)
            _link(ssn, attrs, parent, visiting)
        attrs[parent_name].children[queue.name] = attrs[queue.name]
        attrs[queue.name].ancestors = [*attrs[parent_name].ancestors, parent_name]
    finally:
        visiting.discard(queue.name)


def _settle_children(attrs: dict[str, QueueAttr], attr: QueueAttr) -> None:
    """Children inherit unset capability dimensions; each gets its real capability."""
    total_guarantee, total_deserved = Resource(), Resource()
    for child in attr.children.values():
        child.deserved = max_of(child.deserved, child.guarantee)
        total_deserved.add(child.deserved)
        total_guarantee.add(child.guarantee)
        if child.capability.cpu <= 0:
            child.capability.cpu = attr.capability.cpu
        if child.capability.memory <= 0:
            child.capability.memory = attr.capability.memory
        if attr.capability.scalars is not None:
            if child.capability.scalars is None:
                child.capability.scalars = {}
            for name, amount in attr.capability.scalars.items():
                child.capability.scalars.setdefault(name, amount)
    if attr.name == ROOT_QUEUE:
        attr.guarantee = total_guarantee
        attr.deserved = total_deserved
    for child in attr.children.values():
        real = exceeded_part(attr.real_capability, total_guarantee).add(child.guarantee)
        child.real_capability = real.min_dimension(child.capability, INFINITY)
    for child in attr.children.values():
        _settle_children(attrs, child)


def hierarchical_attrs(ssn: Session) -> dict[str, QueueAttr]:
    """Every queue's attributes, linked under `root`. Raises HierarchyError when upstream
    would not schedule (the session then allocates nothing through capacity)."""
    attrs: dict[str, QueueAttr] = {}
    for queue in ssn.queues.values():
        if queue.name in attrs:
            continue
        attrs[queue.name] = _new_attr(queue)
        _link(ssn, attrs, queue, set())
    for job in ssn.jobs.values():
        attr = attrs.get(job.queue)
        if attr is None:
            continue
        if attr.children:
            raise HierarchyError(f"job {job.uid} is in non-leaf queue {attr.name}")
        own = QueueAttr(attr.name)
        _account_job(own, job)
        for name in (*attr.ancestors, attr.name):
            target = attrs[name]
            target.allocated.add(own.allocated)
            target.request.add(own.request)
            target.inqueue.add(own.inqueue)
            target.elastic.add(own.elastic)
    root = attrs.get(ROOT_QUEUE)
    if root is None:
        raise HierarchyError("no root queue")
    if root.capability.is_empty():
        root.capability = Resource.unbounded(tuple(ssn.total_resource.scalars or ()))
    root.real_capability = root.capability
    _settle_children(attrs, root)
    for attr in attrs.values():
        capacity_share(attr)
    return dict(sorted(attrs.items()))


def queue_level(left: QueueAttr, right: QueueAttr) -> int:
    """Index of the deepest common ancestor (0 = root)."""
    level = 0
    for i in range(min(len(left.ancestors), len(right.ancestors))):
        if left.ancestors[i] != right.ancestors[i]:
            return level
        level = i
    return level


def compare_share_with_deserved(left: QueueAttr, right: QueueAttr) -> int:
    """Smaller share first; on equal shares a queue with deserved before a best-effort one."""
    if left.share == right.share:
        left_has, right_has = not left.deserved.is_empty(), not right.deserved.is_empty()
        if left_has == right_has:
            return 0
        return -1 if left_has else 1
    return -1 if left.share < right.share else 1
