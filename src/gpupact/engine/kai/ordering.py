"""KAI's JobsOrderByQueues: pending jobs (or victims) handed out through the queue tree.

At each level the best queue is chosen by the proportion queue order, comparing each
subtree's next job (for victims: the jobs already taken plus the next one); within a leaf
queue jobs go by job order. Victim order is the exact reverse at every level: the queue
that would be served last gives up its least important job first.

Upstream keeps heaps and re-sorts only the subtree it just popped from; here the best node
is recomputed at each pop, which is the same order while only the popped path changes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from gpupact.engine.kai.model import JobView

if TYPE_CHECKING:
    from gpupact.engine.kai.framework import KaiSession


class JobsOrder:
    def __init__(self, ssn: KaiSession, jobs: Iterable[JobView], *, victims: bool = False) -> None:
        self.ssn = ssn
        self.victims = victims
        self.leaves: dict[str, list[JobView]] = {}
        self.popped: dict[str, list[JobView]] = {}
        for job in jobs:
            self.push(job)

    def push(self, job: JobView) -> None:
        queue = self.ssn.queues.get(job.queue)
        if queue is None or queue.children:
            return  # jobs only live in leaf queues
        if queue.parent and queue.parent not in self.ssn.queues:
            return
        self.leaves.setdefault(job.queue, []).append(job)

    def empty(self) -> bool:
        return not any(self.leaves.values())

    def __len__(self) -> int:
        return sum(len(v) for v in self.leaves.values())

    def pop(self) -> JobView:
        level = [q for q in self.ssn.queues.values() if not q.parent]
        while True:
            candidates = [q.name for q in level if self._has_jobs(q.name)]
            if not candidates:
                raise IndexError("pop from an empty JobsOrder")
            best = candidates[0]
            for name in candidates[1:]:
                if self._node_less(name, best):
                    best = name
            queue = self.ssn.queues[best]
            if not queue.children:
                break
            level = [self.ssn.queues[c] for c in queue.children]
        jobs = self.leaves[best]
        job = self._best_job(jobs)
        jobs.remove(job)
        if self.victims:
            self.popped.setdefault(best, []).append(job)
        return job

    # -- internals ----------------------------------------------------------------------------

    def _has_jobs(self, name: str) -> bool:
        if self.leaves.get(name):
            return True
        return any(self._has_jobs(c) for c in self.ssn.queues[name].children)

    def _job_less(self, left: JobView, right: JobView) -> bool:
        if self.victims:
            return not self.ssn.job_less(left, right)
        return self.ssn.job_less(left, right)

    def _best_job(self, jobs: list[JobView]) -> JobView:
        best = jobs[0]
        for job in jobs[1:]:
            if self._job_less(job, best):
                best = job
        return best

    def _best_leaf(self, name: str) -> str:
        queue = self.ssn.queues[name]
        if not queue.children:
            return name
        candidates = [c for c in queue.children if self._has_jobs(c)]
        best = candidates[0]
        for child in candidates[1:]:
            if self._node_less(child, best):
                best = child
        return self._best_leaf(best)

    def _compared(self, name: str) -> tuple[JobView | None, list[JobView]]:
        leaf = self._best_leaf(name)
        next_job = self._best_job(self.leaves[leaf])
        if self.victims:
            return None, [*self.popped.get(leaf, []), next_job]
        return next_job, []

    def _node_less(self, left: str, right: str) -> bool:
        l_job, l_victims = self._compared(left)
        r_job, r_victims = self._compared(right)
        result = self.ssn.queue_less(left, right, l_job, r_job, l_victims, r_victims)
        return not result if self.victims else result
