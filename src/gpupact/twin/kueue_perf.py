"""Kueue's scheduler performance test (kueue test/performance/scheduler) in simulated time.

Upstream generates ClusterQueues, LocalQueues and Workloads from a generator config, lets a
minimal Kueue admit them, "runs" every admitted workload for its class's runtime and records
ClusterQueue usage and time to admission (facts and file paths: docs/kueue-perf.md). Here the
same objects go through gpupact's admission engine, driven by a seeded discrete-event loop:

- workload k (0-based) of a workloads set is created at (k + 1) * creationIntervalMs, every set
  of every ClusterQueue in parallel (the generator sleeps before each create);
- the scheduler runs cycles back to back while some ClusterQueue has an active head; a cycle
  takes `cycle_ms` of simulated time, and after a cycle without admission the next waits
  Kueue's SlowDown backoff (1 ms doubling to 10 ms); with no active head it sleeps until an
  event brings one (Kueue blocks in `Heads`);
- an admitted workload runs from the moment its admission reaches the API server (at once,
  or after the client rate limiter when `api_qps` is set) for its runtime, then finishes and
  releases its quota;
- a preempted workload stops when its eviction reaches the API server, releases its quota and
  is queued again (the runner clears its quota reservation; Kueue requeues it);
- a released quota retries the inadmissible workloads of the cohort tree only after Kueue's
  requeuer batch period (`requeue_batch_ms`, upstream 1 s), deduplicated per root cohort.

Recorded exactly as upstream's recorder: time to admission = (last Admitted transition -
creation) with both timestamps at second resolution (metav1.Time), averaged per class with
integer division; usage = sum over the ClusterQueues of a class of the integral of the
admitted cpu (mCPU x ms) / (sum of nominal quotas x (last CQ event - first CQ event)).
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Iterable
from dataclasses import dataclass, field

from gpupact.engine.admission import (
    AdmissionState,
    ClusterQueue,
    FlavorQuotas,
    LocalQueue,
    PodSet,
    PreemptionConfig,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
    Workload,
)

CPU = "cpu"
MILLI = 1000  # mCPU per core, ms per second
FLAVOR = "rf"  # the generator's default ResourceFlavor
FLAVOR_CPU = (FLAVOR, CPU)
SLOW_DOWN_INITIAL_MS = 1  # kueue pkg/util/wait: initialBackoff
SLOW_DOWN_MAX_MS = 10  # maxBackoff
REQUEUE_BATCH_MS = 1000  # kueue pkg/cache/queue: requeueBatchPeriod
MINIMALKUEUE_QPS = 50.0  # test/performance/scheduler/minimalkueue/main.go
MINIMALKUEUE_BURST = 100


# --- the generator config (test/performance/scheduler/runner/generator) -------------------


@dataclass(frozen=True, slots=True)
class WorkloadTemplate:
    class_name: str
    runtime_ms: int
    priority: int
    request: int  # cpu cores of the single pod


@dataclass(frozen=True, slots=True)
class WorkloadsSet:
    count: int
    creation_interval_ms: int
    workloads: tuple[WorkloadTemplate, ...]


@dataclass(frozen=True, slots=True)
class QueuesSet:
    class_name: str
    count: int
    nominal_quota: int  # cores
    borrowing_limit: int  # cores
    reclaim_within_cohort: str
    within_cluster_queue: str
    workloads_sets: tuple[WorkloadsSet, ...]


@dataclass(frozen=True, slots=True)
class CohortSet:
    class_name: str
    count: int
    queues_sets: tuple[QueuesSet, ...]


@dataclass(frozen=True, slots=True)
class PerfConfig:
    name: str
    cohorts: tuple[CohortSet, ...]


def standard_config(
    name: str,
    *,
    cohorts: int,
    queues: int,
    sets: Iterable[tuple[str, int, int, int, int, int]],
) -> PerfConfig:
    """The shape of both upstream scheduler configs: `cohorts` cohorts of `queues` ClusterQueues
    (nominal 20, borrowingLimit 100, reclaimWithinCohort Any, withinClusterQueue LowerPriority),
    each with one workloads set per (class, count, interval ms, runtime ms, priority, cores)."""
    workloads_sets = tuple(
        WorkloadsSet(count, interval, (WorkloadTemplate(cls, runtime, priority, cores),))
        for cls, count, interval, runtime, priority, cores in sets
    )
    queue_set = QueuesSet("cq", queues, 20, 100, "Any", "LowerPriority", workloads_sets)
    return PerfConfig(name, (CohortSet("cohort", cohorts, (queue_set,)),))


# test/performance/scheduler/configs/baseline/generator.yaml
BASELINE = standard_config(
    "baseline",
    cohorts=5,
    queues=6,
    sets=(
        ("small", 350, 100, 200, 50, 1),
        ("medium", 100, 500, 500, 100, 5),
        ("large", 50, 1200, 1000, 200, 20),
    ),
)
# test/performance/scheduler/configs/large-scale/generator.yaml
LARGE_SCALE = standard_config(
    "large-scale",
    cohorts=10,
    queues=100,
    sets=(
        ("small", 35, 60, 150, 50, 1),
        ("medium", 11, 300, 350, 100, 5),
        ("large", 4, 700, 700, 200, 20),
    ),
)
CONFIGS = {c.name: c for c in (BASELINE, LARGE_SCALE)}


@dataclass(frozen=True, slots=True)
class ReplayOptions:
    seed: int = 0
    # simulated duration of one scheduling cycle (0: cycles are instantaneous)
    cycle_ms: int = 0
    # Kueue's inadmissible requeue batch period; 0 retries at once
    requeue_batch_ms: int = REQUEUE_BATCH_MS
    # Kueue's API client rate limit (token bucket) for admission and eviction writes;
    # None: writes land at once
    api_qps: float | None = None
    api_burst: int = MINIMALKUEUE_BURST
    # count, instead of running, the cycles that repeat a changeless one (same result, see
    # `_Replay.resume`); False runs them all (slow: to check the shortcut)
    skip_repeated_cycles: bool = True


# --- results (runner/recorder/recorder.go) --------------------------------------------------


@dataclass(frozen=True, slots=True)
class WorkloadRecord:
    class_name: str
    cluster_queue: str
    created_ms: int
    admitted_ms: int | None  # the last admission
    finished_ms: int | None
    evictions: int
    time_to_admit_ms: int  # as the recorder computes it (second-resolution timestamps)


@dataclass(frozen=True, slots=True)
class WorkloadClassSummary:
    count: int
    average_time_to_admission_ms: int
    average_time_to_finish_ms: int
    total_evictions: int


@dataclass(frozen=True, slots=True)
class QueueClassSummary:
    cpu_used: int  # mCPU x ms
    nominal_quota: int  # mCPU, summed over the class's ClusterQueues
    first_event_ms: int
    last_event_ms: int

    @property
    def usage_percent(self) -> float:
        """The checker's formula (checker_test.go)."""
        elapsed = self.last_event_ms - self.first_event_ms
        if self.nominal_quota == 0 or elapsed == 0:
            return 0.0
        return self.cpu_used * 100 / (self.nominal_quota * elapsed)


@dataclass(frozen=True, slots=True)
class ReplayResult:
    config: str
    options: ReplayOptions
    workload_classes: dict[str, WorkloadClassSummary]
    queue_classes: dict[str, QueueClassSummary]
    workloads: tuple[WorkloadRecord, ...]
    cycles: int
    admissions: int
    preemptions: int
    simulated_ms: int
    max_usage: dict[str, int]  # per ClusterQueue, mCPU (the recorder's CPUMaxUsage)
    usage_limit: dict[str, int]  # per ClusterQueue: nominal + borrowingLimit, mCPU


# --- the replay ----------------------------------------------------------------------------

# event kinds, in the order they are handled at the same instant: quota releases first, then
# retries, then arrivals, then the cycle that sees all of them
_FINISH, _EVICT, _REQUEUE, _CREATE, _CYCLE = range(5)


@dataclass(slots=True)
class _Queue:
    """Per ClusterQueue: the recorder's integral of admitted cpu and its last event."""

    class_name: str
    nominal: int
    limit: int
    usage: int = 0
    since: int = 0
    used: int = 0
    max_usage: int = 0
    last_event: int = 0


@dataclass(slots=True)
class _Workload:
    key: str
    template: WorkloadTemplate
    cluster_queue: str
    created: int
    admitted: int | None = None
    finished: int | None = None
    evictions: int = 0
    attempt: int = 0  # bumped at each admission and eviction: stale finish events are ignored


class _TokenBucket:
    """client-go's token bucket (x/time/rate reservations): a write waits for its token."""

    def __init__(self, qps: float, burst: int) -> None:
        self.per_ms = qps / MILLI
        self.burst = burst
        self.tokens = float(burst)
        self.at = 0

    def reserve(self, now: int) -> int:
        """The delay (ms, rounded up) before a write issued at `now` is sent."""
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.per_ms)
        self.at = now
        self.tokens -= 1
        if self.tokens >= 0:
            return 0
        return math.ceil(-self.tokens / self.per_ms)


@dataclass(slots=True)
class _Replay:
    config: PerfConfig
    options: ReplayOptions
    state: AdmissionState = field(init=False)
    events: list = field(default_factory=list)
    seq: int = 0
    queues: dict[str, _Queue] = field(default_factory=dict)
    workloads: list[_Workload] = field(default_factory=list)
    ids: dict[str, int] = field(default_factory=dict)
    requeue_due: set[str] = field(default_factory=set)  # root cohorts with a retry scheduled
    cycle_scheduled: bool = False
    next_cycle_at: int = 0
    slow_downs: int = 0
    changed: bool = False  # a workload event since the last cycle
    last_outcome: tuple | None = None  # pending heads of the last changeless cycle
    spinning: bool = False  # cycles would repeat the last one until the next event
    cycles: int = 0
    admissions: int = 0
    preemptions: int = 0
    now: int = 0
    phase: int = 0  # sub-second offset of the simulated epoch (timestamps are truncated)
    bucket: _TokenBucket | None = None

    def push(self, at: int, kind: int, payload: object) -> None:
        self.seq += 1
        heapq.heappush(self.events, (at, kind, self.seq, payload))

    # --- setup: the generator ----------------------------------------------------------------

    def build(self) -> None:
        rng = random.Random(self.options.seed)
        self.phase = rng.randrange(MILLI)
        if self.options.api_qps is not None:
            self.bucket = _TokenBucket(self.options.api_qps, self.options.api_burst)
        cqs, lqs = [], []
        arrivals = []
        for cohort_set in self.config.cohorts:
            for ci in range(cohort_set.count):
                cohort = f"{cohort_set.class_name}-{ci}"
                for qsi, qset in enumerate(cohort_set.queues_sets):
                    for qi in range(qset.count):
                        name = f"{qset.class_name}-{qsi}-{qi}-{cohort}"
                        cqs.append(_cluster_queue(name, cohort, qset))
                        lqs.append(LocalQueue(name, name, name))
                        self.queues[name] = _Queue(
                            qset.class_name,
                            qset.nominal_quota * MILLI,
                            (qset.nominal_quota + qset.borrowing_limit) * MILLI,
                        )
                        arrivals.extend(_arrivals(name, qset))
        self.state = AdmissionState(
            resource_flavors=[ResourceFlavor(FLAVOR)], cluster_queues=cqs, local_queues=lqs
        )
        # UIDs break creation-second ties in the queues, as random UUIDs do upstream
        for at, namespace, name, template in sorted(arrivals, key=lambda a: (a[0], a[1], a[2])):
            wid = len(self.workloads)
            created = self.stamp(at)
            wl = Workload(
                name,
                (PodSet("main", 1, {CPU: template.request * MILLI}),),
                namespace=namespace,
                queue_name=namespace,
                priority=template.priority,
                creation_time=created,
                uid=f"{rng.getrandbits(128):032x}",
            )
            self.workloads.append(_Workload(wl.key, template, namespace, at))
            self.ids[wl.key] = wid
            self.push(at, _CREATE, wl)

    def stamp(self, at: int) -> int:
        """A simulated time as a metav1.Time sees it: whole seconds of the epoch."""
        return (at + self.phase) // MILLI * MILLI

    # --- the loop ----------------------------------------------------------------------------

    def run(self) -> None:
        events = self.events
        handlers = (self.on_finish, self.on_evict, self.on_requeue, self.on_create, self.on_cycle)
        while events:
            at, kind, _, payload = heapq.heappop(events)
            self.now = at
            handlers[kind](payload)

    def wake(self) -> None:
        if self.spinning:
            self.resume()
        if not self.cycle_scheduled:
            self.cycle_scheduled = True
            self.push(max(self.now, self.next_cycle_at), _CYCLE, None)

    def change(self) -> None:
        """A workload event: a spinning scheduler sees it at its next cycle."""
        self.changed = True
        if self.spinning:
            self.wake()

    def resume(self) -> None:
        """Kueue keeps cycling every backoff step while a head stays active; a cycle that
        changes nothing and sees nothing new repeats the previous one exactly. Those repeats
        are counted (cycles, the engine's cycle number, the backoff), not run, and the first
        cycle after the event runs on the same time grid."""
        self.spinning = False
        at, skipped = self.next_cycle_at, 0
        while at < self.now:
            skipped += 1
            self.slow_downs += 1
            step = self.options.cycle_ms + _backoff(self.slow_downs)
            if step == self.options.cycle_ms + SLOW_DOWN_MAX_MS:  # constant from here on
                n = -(-(self.now - at) // step)
                skipped += n - 1
                self.slow_downs += n - 1
                at += n * step
                break
            at += step
        self.cycles += skipped
        self.state.cycle_number += skipped
        self.next_cycle_at = at

    def touch(self, cluster_queue: str) -> None:
        """A ClusterQueue event: integrate the admitted cpu up to now, then read it again."""
        q = self.queues[cluster_queue]
        q.used += q.usage * (self.now - q.since)
        q.since = self.now
        q.usage = self.state.usage(cluster_queue).get(FLAVOR_CPU, 0)
        q.max_usage = max(q.max_usage, q.usage)
        q.last_event = self.now

    def notify_requeue(self, cluster_queue: str) -> None:
        """Kueue's requeuer: one delayed retry per root cohort, later notifications merge."""
        if self.options.requeue_batch_ms == 0:
            self.state.requeue_inadmissible_around(cluster_queue)
            self.wake()
            return
        root = self.state.cluster_queue_runtimes[cluster_queue].node.root().name
        if root not in self.requeue_due:
            self.requeue_due.add(root)
            self.push(self.now + self.options.requeue_batch_ms, _REQUEUE, (root, cluster_queue))

    def write_delay(self) -> int:
        return 0 if self.bucket is None else self.bucket.reserve(self.now)

    def on_create(self, wl: Workload) -> None:
        self.touch(self.workloads[self.ids[wl.key]].cluster_queue)
        if self.state.submit(wl) == "active":
            self.wake()
        self.change()

    def on_requeue(self, payload: tuple[str, str]) -> None:
        root, cluster_queue = payload
        self.requeue_due.discard(root)
        self.state.requeue_inadmissible_around(cluster_queue)
        self.wake()
        self.change()

    def on_finish(self, payload: tuple[int, int]) -> None:
        wid, attempt = payload
        w = self.workloads[wid]
        if w.attempt != attempt or w.finished is not None:
            return
        w.finished = self.now
        self.state.finish(w.key, requeue_inadmissible=False)
        self.touch(w.cluster_queue)
        self.notify_requeue(w.cluster_queue)
        self.change()

    def on_evict(self, payload: tuple[int, int]) -> None:
        wid, attempt = payload
        w = self.workloads[wid]
        if w.attempt != attempt or w.finished is not None:
            return  # finished before the eviction reached the API server
        w.attempt += 1
        where = self.state.complete_eviction(w.key, requeue_inadmissible=False)
        self.touch(w.cluster_queue)
        self.notify_requeue(w.cluster_queue)
        if where == "active":
            self.wake()
        self.change()

    def on_cycle(self, _: object) -> None:
        self.cycle_scheduled = False
        if not any(q.active_count() for q in self.state.queues.values()):
            self.last_outcome = None
            return  # Kueue blocks in Heads until a workload becomes active
        self.cycles += 1
        changed, self.changed = self.changed, False
        result = self.state.schedule_cycle(self.now + self.phase)
        touched = set()
        for admitted in result.admitted:
            w = self.workloads[self.ids[admitted.key]]
            w.admitted = self.now
            w.attempt += 1
            started = self.now + self.write_delay()
            self.push(started + w.template.runtime_ms, _FINISH, (self.ids[w.key], w.attempt))
            touched.add(w.cluster_queue)
        for preempted in result.preempted:
            wid = self.ids[preempted.key]
            w = self.workloads[wid]
            w.evictions += 1
            self.push(self.now + self.write_delay(), _EVICT, (wid, w.attempt))
        for name in sorted(touched):
            self.touch(name)
        self.admissions += len(result.admitted)
        self.preemptions += len(result.preempted)
        if result.admitted:
            self.slow_downs = 0
        else:
            self.slow_downs += 1
        self.next_cycle_at = self.now + self.options.cycle_ms + _backoff(self.slow_downs)
        outcome = None
        if not result.admitted and not result.preempted:
            outcome = tuple((p.key, p.reason, p.state) for p in result.left_pending)
        repeated = outcome is not None and not changed and outcome == self.last_outcome
        if repeated and self.options.skip_repeated_cycles:
            self.spinning = True
            return
        self.last_outcome = outcome
        self.wake()

    # --- the recorder's summary ----------------------------------------------------------------

    def result(self) -> ReplayResult:
        records = tuple(self.record(w) for w in self.workloads)
        return ReplayResult(
            config=self.config.name,
            options=self.options,
            workload_classes=_workload_classes(records),
            queue_classes=_queue_classes(self.queues.values()),
            workloads=records,
            cycles=self.cycles,
            admissions=self.admissions,
            preemptions=self.preemptions,
            simulated_ms=self.now,
            max_usage={name: q.max_usage for name, q in self.queues.items()},
            usage_limit={name: q.limit for name, q in self.queues.items()},
        )

    def record(self, w: _Workload) -> WorkloadRecord:
        admit = 0 if w.admitted is None else self.stamp(w.admitted) - self.stamp(w.created)
        return WorkloadRecord(
            w.template.class_name,
            w.cluster_queue,
            w.created,
            w.admitted,
            w.finished,
            w.evictions,
            admit,
        )


def _backoff(slow_downs: int) -> int:
    """Kueue's SlowDown wait (ms) after `slow_downs` cycles in a row without admission."""
    if slow_downs == 0:
        return 0
    if slow_downs > 4:
        return SLOW_DOWN_MAX_MS
    return min(SLOW_DOWN_INITIAL_MS << (slow_downs - 1), SLOW_DOWN_MAX_MS)


def _cluster_queue(name: str, cohort: str, qset: QueuesSet) -> ClusterQueue:
    quota = ResourceQuota(qset.nominal_quota * MILLI, qset.borrowing_limit * MILLI)
    return ClusterQueue(
        name,
        (ResourceGroup((CPU,), (FlavorQuotas(FLAVOR, {CPU: quota}),)),),
        cohort=cohort,
        preemption=PreemptionConfig(
            within_cluster_queue=qset.within_cluster_queue,
            reclaim_within_cohort=qset.reclaim_within_cohort,
        ),
    )


def _arrivals(namespace: str, qset: QueuesSet) -> list[tuple[int, str, str, WorkloadTemplate]]:
    """Every workload of one ClusterQueue with its creation time (generateWlSet)."""
    out = []
    for set_index, wl_set in enumerate(qset.workloads_sets):
        k = 0
        for si in range(wl_set.count):
            for i, template in enumerate(wl_set.workloads):
                k += 1
                name = f"{template.class_name}-{set_index}-{si}-{i}"
                out.append((k * wl_set.creation_interval_ms, namespace, name, template))
    return out


def _workload_classes(records: Iterable[WorkloadRecord]) -> dict[str, WorkloadClassSummary]:
    totals: dict[str, list[int]] = {}
    for r in records:
        t = totals.setdefault(r.class_name, [0, 0, 0, 0])
        t[0] += 1
        t[1] += r.time_to_admit_ms
        t[2] += 0 if r.finished_ms is None else r.finished_ms - r.created_ms
        t[3] += r.evictions
    return {
        name: WorkloadClassSummary(count, admit // count, finish // count, evictions)
        for name, (count, admit, finish, evictions) in sorted(totals.items())
    }


def _queue_classes(queues: Iterable[_Queue]) -> dict[str, QueueClassSummary]:
    groups: dict[str, list[int]] = {}
    for q in queues:
        g = groups.setdefault(q.class_name, [0, 0, q.last_event])
        g[0] += q.used
        g[1] += q.nominal
        g[2] = max(g[2], q.last_event)
    # every ClusterQueue is created (its first event) at the start of the run
    return {
        name: QueueClassSummary(used, nominal, 0, last)
        for name, (used, nominal, last) in sorted(groups.items())
    }


def replay(config: PerfConfig, options: ReplayOptions | None = None) -> ReplayResult:
    """Replay one generator config through the admission engine; deterministic per seed."""
    sim = _Replay(config, options or ReplayOptions())
    sim.build()
    sim.run()
    return sim.result()
