"""The engine's speed-up indexes against their plain definitions, over seeded random
operation sequences: a ClusterQueue's heap (revived entries) pops exactly what the sorted
active set says, and the admitted workloads' priority index is always the sorted set."""

from __future__ import annotations

import random

import pytest

from gpupact.engine.admission import PodSet, Workload
from gpupact.engine.admission.queues import (
    FAILED_AFTER_NOMINATION,
    NO_FIT,
    PENDING_PREEMPTION,
    ClusterQueueQueue,
)
from gpupact.engine.admission.runtime import AdmittedWorkloads
from gpupact.engine.admission.workload_info import WorkloadInfo


def info(i: int, rng: random.Random) -> WorkloadInfo:
    w = Workload(
        f"w{i}",
        (PodSet("main", 1, {"cpu": rng.choice((1000, 5000))}),),
        priority=rng.choice((50, 100, 200)),
        creation_time=rng.randrange(5) * 1000,
        uid=f"{rng.getrandbits(32):08x}",
    )
    return WorkloadInfo(w, "cq")


@pytest.mark.parametrize("seed", range(20))
def test_heap_pops_the_first_of_the_sorted_active_set(seed: int) -> None:
    rng = random.Random(seed)
    queue = ClusterQueueQueue("cq")
    infos = [info(i, rng) for i in range(30)]
    popped: dict[str, WorkloadInfo] = {}  # heads taken out and not yet requeued
    for _ in range(600):
        op = rng.random()
        if op < 0.25:
            w = rng.choice(infos)
            if w.key not in popped:
                queue.add(w)
        elif op < 0.55:
            expected = queue.active_in_order()
            head = queue.pop()
            assert (head.key if head else None) == (expected[0].key if expected else None)
            if head is not None:
                popped[head.key] = head
        elif op < 0.8 and popped:
            key = rng.choice(sorted(popped))
            reason = rng.choice((NO_FIT, FAILED_AFTER_NOMINATION, PENDING_PREEMPTION))
            queue.requeue(popped.pop(key), reason)
        elif op < 0.9:
            queue.requeue_inadmissible()
        else:
            w = rng.choice(infos)
            if w.key not in popped:
                queue.remove(w.key)
        assert queue.active_count() == len(queue.active_in_order())
    # drain: the heap and the sorted set agree to the end
    while (expected := queue.active_in_order()) or queue.active_count():
        assert queue.pop().key == expected[0].key


@pytest.mark.parametrize("seed", range(10))
def test_priority_index_is_the_sorted_admitted_set(seed: int) -> None:
    rng = random.Random(seed)
    admitted = AdmittedWorkloads()
    infos = [info(i, rng) for i in range(40)]
    for step in range(500):
        w = rng.choice(infos)
        op = rng.random()
        if op < 0.45:
            admitted[w.key] = w
        elif op < 0.8:
            admitted.pop(w.key, None)
        elif op < 0.9 and w.key in admitted:
            del admitted[w.key]
        elif op < 0.95:
            admitted.update({x.key: x for x in rng.sample(infos, 3)})
        if step % 3 == 0:  # read the index now and then, as preemption searches do
            priorities, ordered = admitted.by_priority()
            assert priorities == sorted(priorities)
            assert priorities == [x.workload.priority for x in ordered]
            assert sorted(x.key for x in ordered) == sorted(admitted)
