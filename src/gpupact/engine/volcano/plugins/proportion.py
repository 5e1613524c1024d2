"""Volcano `proportion`: queues share the cluster by weight (see `queues.divide_by_weight`).
A queue may allocate while it stays within its deserved share on the dimensions a task asks
for; a queue at or over its deserved share is overused; victims come from queues over their
deserved share."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpupact.engine.volcano.framework import PERMIT, REJECT, EventHandler
from gpupact.engine.volcano.model import QUEUE_OPEN, JobInfo, Queue, TaskInfo
from gpupact.engine.volcano.plugins.base import Plugin
from gpupact.engine.volcano.queues import proportion_attrs, proportion_share
from gpupact.engine.volcano.resource import ZERO, Resource

if TYPE_CHECKING:
    from gpupact.engine.volcano.framework import Session


class ProportionPlugin(Plugin):
    name = "proportion"

    def on_session_open(self, ssn: Session) -> None:
        attrs = proportion_attrs(ssn)
        self.attrs = attrs

        def queue_order(left: Queue, right: Queue) -> int:
            if left.priority != right.priority:
                return right.priority - left.priority
            ls, rs = attrs[left.name].share, attrs[right.name].share
            if ls == rs:
                return 0
            return -1 if ls < rs else 1

        ssn.add_fn("queueOrder", self.name, queue_order)

        def reclaimable(reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> tuple[list, int]:
            remaining: dict[str, Resource] = {}
            victims = []
            for reclaimee in reclaimees:
                job = ssn.jobs.get(reclaimee.job)
                if job is None or job.queue not in attrs:
                    continue
                attr = attrs[job.queue]
                if job.queue not in remaining:
                    remaining[job.queue] = attr.allocated.clone()
                allocated = remaining[job.queue]
                if not allocated.less_equal(attr.deserved, ZERO):
                    allocated.sub(reclaimee.resreq)
                    victims.append(reclaimee)
            return victims, PERMIT

        ssn.add_fn("reclaimable", self.name, reclaimable)
        ssn.add_fn(
            "overused",
            self.name,
            lambda queue: attrs[queue.name].deserved.less_equal(attrs[queue.name].allocated, ZERO),
        )

        def queue_allocatable(queue: Queue, candidates: list[TaskInfo]) -> bool:
            if queue.state != QUEUE_OPEN:
                return False
            attr = attrs[queue.name]
            total = Resource()
            for task in candidates:
                total.add(task.resreq)
            future = attr.allocated.clone().add(total)
            return future.less_equal_with_dimension(attr.deserved, total)

        ssn.add_fn("allocatable", self.name, lambda q, t: queue_allocatable(q, [t]))
        ssn.add_fn("preemptive", self.name, queue_allocatable)

        def enqueueable(job: JobInfo) -> int:
            queue = ssn.queues[job.queue]
            if queue.state != QUEUE_OPEN:
                return REJECT
            if job.podgroup.min_resources is None:
                return PERMIT
            attr = attrs[job.queue]
            minimum = job.min_resources()
            wanted = minimum.clone().add(attr.allocated).add(attr.inqueue).sub(attr.elastic)
            ok = wanted.less_equal_with_dimension(attr.real_capability, minimum)
            return PERMIT if ok else REJECT

        ssn.add_fn("jobEnqueueable", self.name, enqueueable)

        def enqueued(job: JobInfo) -> None:
            if job.podgroup.min_resources is None or job.queue not in attrs:
                return
            attrs[job.queue].inqueue.add(job.min_resources())

        ssn.add_fn("jobEnqueued", self.name, enqueued)

        def on_change(task: TaskInfo, sign: int) -> None:
            job = ssn.jobs.get(task.job)
            if job is None or job.queue not in attrs:
                return
            attr = attrs[job.queue]
            if sign > 0:
                attr.allocated.add(task.resreq)
            else:
                attr.allocated.sub(task.resreq)
            proportion_share(attr)

        ssn.add_event_handler(EventHandler(lambda t: on_change(t, 1), lambda t: on_change(t, -1)))
