"""Volcano `capacity`: queues get the deserved share their spec states and may grow to
their (real) capability; with `hierarchy`, every check also runs on each ancestor queue and
victims are preferred from queues closest to the reclaimer in the tree."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpupact.engine.volcano.framework import PERMIT, REJECT, EventHandler, NotModelledError
from gpupact.engine.volcano.model import QUEUE_OPEN, JobInfo, Queue, TaskInfo
from gpupact.engine.volcano.plugins.base import Plugin
from gpupact.engine.volcano.queues import (
    HierarchyError,
    QueueAttr,
    capacity_attrs,
    capacity_share,
    compare_share_with_deserved,
    hierarchical_attrs,
    queue_level,
)
from gpupact.engine.volcano.resource import ZERO, Resource, intersection

if TYPE_CHECKING:
    from gpupact.engine.volcano.framework import Session


class CapacityPlugin(Plugin):
    name = "capacity"

    def on_session_open(self, ssn: Session) -> None:
        if int(self.option.arguments.get("ancestorReclaimLevel", 0) or 0) > 0:
            raise NotModelledError("capacity ancestorReclaimLevel > 0")
        hierarchy = ssn.hierarchy_enabled(self.name)
        ready = True
        attrs: dict[str, QueueAttr]
        if hierarchy:
            try:
                attrs = hierarchical_attrs(ssn)
            except HierarchyError:
                attrs, ready = {}, False
        else:
            attrs = capacity_attrs(ssn)
        self.attrs = attrs

        def is_leaf(name: str) -> bool:
            return not attrs[name].children

        def chain(name: str) -> list[str]:
            """The queue and its ancestors, leaf first."""
            return [name, *reversed(attrs[name].ancestors)]

        def reclaimable(reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> tuple[list, int]:
            if not ready:
                return [], REJECT
            reclaimer_job = ssn.jobs.get(reclaimer.job)
            if reclaimer_job is None or reclaimer_job.queue not in attrs:
                return [], REJECT
            victims = []
            remaining: dict[str, Resource] = {}
            ordered = ssn.build_victims_queue(reclaimees, reclaimer)
            while not ordered.empty():
                reclaimee = ordered.pop()
                job = ssn.jobs.get(reclaimee.job)
                if job is None or job.queue not in attrs:
                    continue
                attr = attrs[job.queue]
                if not intersection(reclaimee.resreq, reclaimer.init_resreq, ignore_pods=True):
                    continue
                if job.queue not in remaining:
                    remaining[job.queue] = attr.allocated.clone()
                allocated = remaining[job.queue]
                if not attr.guarantee.less_equal(allocated.clone().sub(reclaimee.resreq), ZERO):
                    continue
                immediate = not intersection(reclaimee.resreq, attr.deserved)
                if not immediate and not allocated.greater_partly_with_relevant_dimensions(
                    attr.deserved, reclaimee.resreq
                ):
                    continue
                allocated.sub(reclaimee.resreq)
                victims.append(reclaimee)
            return victims, PERMIT

        ssn.add_fn("reclaimable", self.name, reclaimable)

        def preemptive(queue: Queue, candidates: list[TaskInfo]) -> bool:
            if not ready or queue.state != QUEUE_OPEN:
                return False
            attr = attrs[queue.name]
            total = Resource()
            for task in candidates:
                total.add(task.resreq)
            future = attr.allocated.clone().add(total)
            if not future.less_equal_with_dimension(attr.real_capability, total):
                return False
            # some requested dimension still below deserved: the queue may take back
            return future.less_equal_partly_with_dimension_zero_filtered(attr.deserved, total)

        ssn.add_fn("preemptive", self.name, preemptive)

        def allocatable(queue: Queue, candidate: TaskInfo) -> bool:
            if queue.state != QUEUE_OPEN or not ready:
                return False
            if hierarchy and not is_leaf(queue.name):
                return False
            for name in chain(queue.name):
                attr = attrs[name]
                future = attr.allocated.clone().add(candidate.resreq)
                if not future.less_equal_with_dimension(attr.real_capability, candidate.resreq):
                    return False
            return True

        ssn.add_fn("allocatable", self.name, allocatable)

        def enqueueable(job: JobInfo) -> int:
            if not ready or job.queue not in attrs:
                return REJECT
            if hierarchy and not is_leaf(job.queue):
                return REJECT
            if ssn.queues[job.queue].state != QUEUE_OPEN:
                return REJECT
            if job.podgroup.min_resources is None:
                return PERMIT
            minimum = job.min_resources()
            for name in chain(job.queue):
                attr = attrs[name]
                wanted = minimum.clone().add(attr.allocated).add(attr.inqueue).sub(attr.elastic)
                if not wanted.less_equal_with_dimension(attr.real_capability, minimum):
                    return REJECT
            return PERMIT

        ssn.add_fn("jobEnqueueable", self.name, enqueueable)

        def enqueued(job: JobInfo) -> None:
            if job.queue not in attrs or job.podgroup.min_resources is None:
                return
            minimum = job.min_resources()
            names = chain(job.queue) if hierarchy else [job.queue]
            for name in names:
                attrs[name].inqueue.add(minimum)

        ssn.add_fn("jobEnqueued", self.name, enqueued)

        def on_change(task: TaskInfo, sign: int) -> None:
            job = ssn.jobs.get(task.job)
            if job is None or job.queue not in attrs:
                return
            names = chain(job.queue) if hierarchy else [job.queue]
            for name in names:
                if sign > 0:
                    attrs[name].allocated.add(task.resreq)
                else:
                    attrs[name].allocated.sub(task.resreq)
            capacity_share(attrs[job.queue])

        ssn.add_event_handler(EventHandler(lambda t: on_change(t, 1), lambda t: on_change(t, -1)))

        def queue_order(left: Queue, right: Queue) -> int:
            if left.priority != right.priority:
                return right.priority - left.priority
            lattr, rattr = attrs[left.name], attrs[right.name]
            if not hierarchy:
                return compare_share_with_deserved(lattr, rattr)
            left_leaf, right_leaf = is_leaf(left.name), is_leaf(right.name)
            if left_leaf != right_leaf:
                return -1 if left_leaf else 1
            if not left_leaf:
                return compare_share_with_deserved(lattr, rattr)
            level = queue_level(lattr, rattr)
            lname = lattr.ancestors[level + 1] if level + 1 < len(lattr.ancestors) else lattr.name
            rname = rattr.ancestors[level + 1] if level + 1 < len(rattr.ancestors) else rattr.name
            return compare_share_with_deserved(attrs[lname], attrs[rname])

        if ready:
            ssn.add_fn("queueOrder", self.name, queue_order)

        if hierarchy and ready:

            def victim_queue_order(left: Queue, right: Queue, preemptor: Queue) -> int:
                """Victims first from queues sharing the deepest ancestor with the
                preemptor's queue."""
                lev_l = queue_level(attrs[left.name], attrs[preemptor.name])
                lev_r = queue_level(attrs[right.name], attrs[preemptor.name])
                if lev_l == lev_r:
                    return 0
                return -1 if lev_l > lev_r else 1

            ssn.add_fn("victimQueueOrder", self.name, victim_queue_order)
