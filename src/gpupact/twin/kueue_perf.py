"""Kueue's scheduler performance test (kueue test/performance/scheduler) in simulated time.

Upstream generates ClusterQueues, LocalQueues and Workloads from a generator config, lets a
minimal Kueue admit them, "runs" every admitted workload for its class's runtime and records
ClusterQueue usage and time to admission (facts and file paths: docs/kueue-perf.md). Here the
same objects go through gpupact's admission engine, driven by a seeded discrete-event loop
paced the way upstream's run is (`ReplayOptions`; `IDEAL` turns the pacing off):

- every workloads set of every ClusterQueue is a generator goroutine: sleep the interval,
  create (through the runner's client rate limit), repeat; the creation timestamp is when the
  create gets through;
- the scheduler runs cycles back to back while some ClusterQueue has an active head. A cycle
  admits (the admission patch goes out asynchronously through Kueue's client rate limit),
  issues evictions and patches every pending head whose QuotaReserved=False condition changed,
  and waits for those two kinds of writes before it ends; after a cycle without admission the
  next waits Kueue's SlowDown backoff (1 ms doubling to 10 ms); with no active head it sleeps
  until an event brings one (Kueue blocks in `Heads`);
- an admitted workload runs from the moment its admission reaches the runner, for its
  runtime; the runner then writes Finished and Kueue releases the quota when it sees it;
- a preempted workload's eviction reaches the runner, which clears its quota reservation; Kueue
  then releases its quota and queues it again;
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
    FeatureGates,
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
ENVTEST_QPS = 1000.0  # controller-runtime pkg/envtest/server.go: the runner's rest.Config
ENVTEST_BURST = 2000
PARALLEL_PREEMPTIONS = 8  # kueue pkg/scheduler/preemption: eviction patches in flight
# kueue pkg/controller/core/workload_controller.go: the condition it writes on a workload the
# runner put back to the legacy "Pending" reason
PENDING_EVALUATION = ("PendingEvaluation", "Workload is pending evaluation in the scheduling queue")


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
    """The replay's pacing. Defaults are upstream's run (minimalkueue on envtest, facts and
    sources in docs/kueue-perf.md); `IDEAL` turns every delay off."""

    seed: int = 0
    # simulated compute time of one scheduling cycle, fixed and per head (0: instantaneous)
    cycle_ms: int = 0
    head_cost_us: int = 0
    # Kueue's inadmissible requeue batch period; 0 retries at once
    requeue_batch_ms: int = REQUEUE_BATCH_MS
    # Kueue's client rate limit (token bucket) for its Workload writes (admission, eviction,
    # pending condition); None: writes are sent at once
    kueue_qps: float | None = MINIMALKUEUE_QPS
    kueue_burst: int = MINIMALKUEUE_BURST
    # the runner's clients: the generator's creates, and the "kubelet" (Finished, clearing an
    # evicted workload's reservation); one bucket each
    generator_qps: float | None = ENVTEST_QPS
    runner_qps: float | None = ENVTEST_QPS
    runner_burst: int = ENVTEST_BURST
    # the scheduler patches a head's QuotaReserved=False condition when its reason or message
    # changed, waiting for the write inside the cycle (requeueAndUpdate)
    status_writes: bool = True
    # one API hop: a write's round trip plus the watch delivering it to the other side; the
    # admission's hop is the "bind latency" (Kueue's decision -> the runner starts the run)
    api_latency_ms: int = 0
    # Kueue's SchedulingEquivalenceHashing gate (on by default since 0.18, on in upstream's run)
    equivalence_hashing: bool = True
    # count, instead of running, the cycles that repeat a changeless one (same result, see
    # `_Replay.resume`); False runs them all (slow: to check the shortcut)
    skip_repeated_cycles: bool = True


# every write lands at once, cycles cost nothing: the admission policy alone
IDEAL = ReplayOptions(kueue_qps=None, generator_qps=None, runner_qps=None, status_writes=False)


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
    pending_writes: int  # the scheduler's QuotaReserved=False patches
    average_bind_ms: int  # admission decision -> the runner starts the run
    average_cycle_ms: int  # scheduling cycles that ran (compute + the writes they wait for)
    max_cycle_ms: int
    simulated_ms: int
    max_usage: dict[str, int]  # per ClusterQueue, mCPU (the recorder's CPUMaxUsage)
    usage_limit: dict[str, int]  # per ClusterQueue: nominal + borrowingLimit, mCPU


# --- the replay ----------------------------------------------------------------------------

# event kinds, in the order they are handled at the same instant: the runner's writes, quota
# releases, then retries, then arrivals, then the cycle that sees all of them
_RUN_END, _RUNNER_EVICT, _FINISH, _EVICT, _REQUEUE, _GENERATE, _CREATE, _CYCLE = range(8)


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
        """The delay (ms, rounded up) before a write issued at `now` is sent. The scheduler's
        own writes are reserved ahead of the event loop (at the simulated moment each one is
        issued); a write issued meanwhile by another goroutine queues behind them."""
        at = max(now, self.at)
        self.tokens = min(self.burst, self.tokens + (at - self.at) * self.per_ms)
        self.at = at
        self.tokens -= 1
        wait = 0 if self.tokens >= 0 else math.ceil(-self.tokens / self.per_ms)
        return at - now + wait


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
    kueue_bucket: _TokenBucket | None = None
    runner_bucket: _TokenBucket | None = None
    generator_bucket: _TokenBucket | None = None
    # per workloads set of every ClusterQueue: its interval and its workloads, in order
    chains: list[tuple[int, list[int]]] = field(default_factory=list)
    specs: dict[int, tuple[str, str, WorkloadTemplate, str]] = field(default_factory=dict)
    repeat_cost: int = 0  # simulated ms of the last changeless cycle (compute only)
    # per workload, its QuotaReserved=False (reason, message) as last written; None: reserved
    written: dict[str, tuple[str, str] | None] = field(default_factory=dict)
    pending_writes: int = 0
    bind_total: int = 0
    cycle_total: int = 0
    cycles_run: int = 0
    cycle_max: int = 0

    def push(self, at: int, kind: int, payload: object) -> None:
        self.seq += 1
        heapq.heappush(self.events, (at, kind, self.seq, payload))

    # --- setup: the generator ----------------------------------------------------------------

    def build(self) -> None:
        rng = random.Random(self.options.seed)
        self.phase = rng.randrange(MILLI)
        opts = self.options
        if opts.kueue_qps is not None:
            self.kueue_bucket = _TokenBucket(opts.kueue_qps, opts.kueue_burst)
        if opts.runner_qps is not None:
            self.runner_bucket = _TokenBucket(opts.runner_qps, opts.runner_burst)
        if opts.generator_qps is not None:
            self.generator_bucket = _TokenBucket(opts.generator_qps, opts.runner_burst)
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
            resource_flavors=[ResourceFlavor(FLAVOR)],
            cluster_queues=cqs,
            local_queues=lqs,
            features=FeatureGates(scheduling_equivalence_hashing=opts.equivalence_hashing),
        )
        # UIDs break creation-second ties in the queues, as random UUIDs do upstream
        chains: dict[tuple[str, int], tuple[int, list[int]]] = {}
        for at, namespace, name, template, set_index, interval in sorted(
            arrivals, key=lambda a: (a[0], a[1], a[2])
        ):
            wid = len(self.workloads)
            uid = f"{rng.getrandbits(128):032x}"
            self.workloads.append(_Workload(f"{namespace}/{name}", template, namespace, at))
            self.ids[f"{namespace}/{name}"] = wid
            self.specs[wid] = (name, namespace, template, uid)
            chains.setdefault((namespace, set_index), (interval, []))[1].append(wid)
        # every workloads set is a goroutine of the generator: sleep, create, repeat
        self.chains = list(chains.values())
        for chain, (interval, _) in enumerate(self.chains):
            self.push(interval, _GENERATE, (chain, 0))

    def stamp(self, at: int) -> int:
        """A simulated time as a metav1.Time sees it: whole seconds of the epoch."""
        return (at + self.phase) // MILLI * MILLI

    # --- the loop ----------------------------------------------------------------------------

    def run(self) -> None:
        events = self.events
        handlers = (
            self.on_run_end,
            self.on_runner_evict,
            self.on_finish,
            self.on_evict,
            self.on_requeue,
            self.on_generate,
            self.on_create,
            self.on_cycle,
        )
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
            step = self.repeat_cost + _backoff(self.slow_downs)
            if step == self.repeat_cost + SLOW_DOWN_MAX_MS:  # constant from here on
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

    def kueue_write(self, at: int) -> int:
        """When a Kueue Workload write issued at `at` has been seen by the other side."""
        wait = 0 if self.kueue_bucket is None else self.kueue_bucket.reserve(at)
        return at + wait + self.options.api_latency_ms

    def runner_write(self, at: int) -> int:
        """When a runner write issued at `at` has been seen by Kueue."""
        wait = 0 if self.runner_bucket is None else self.runner_bucket.reserve(at)
        return at + wait + self.options.api_latency_ms

    def on_generate(self, payload: tuple[int, int]) -> None:
        """The generator creates the next workload of a set; the API server stamps its
        creationTimestamp when the request gets through the client's rate limiter."""
        chain, k = payload
        interval, wids = self.chains[chain]
        wid = wids[k]
        name, namespace, template, uid = self.specs.pop(wid)
        wait = 0 if self.generator_bucket is None else self.generator_bucket.reserve(self.now)
        sent = self.now + wait
        self.workloads[wid].created = sent
        wl = Workload(
            name,
            (PodSet("main", 1, {CPU: template.request * MILLI}),),
            namespace=namespace,
            queue_name=namespace,
            priority=template.priority,
            creation_time=self.stamp(sent),
            uid=uid,
        )
        returned = sent + self.options.api_latency_ms
        self.push(returned, _CREATE, wl)
        if k + 1 < len(wids):
            self.push(returned + interval, _GENERATE, (chain, k + 1))

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

    def on_run_end(self, payload: tuple[int, int]) -> None:
        """The runner's reconcile after the runtime: its Finished write, seen by Kueue later."""
        self.push(self.runner_write(self.now), _FINISH, payload)

    def on_runner_evict(self, payload: tuple[int, int]) -> None:
        """The runner saw the Evicted condition: it clears the quota reservation."""
        self.push(self.runner_write(self.now), _EVICT, payload)

    def on_evict(self, payload: tuple[int, int]) -> None:
        wid, attempt = payload
        w = self.workloads[wid]
        if w.attempt != attempt or w.finished is not None:
            return  # finished before the eviction reached the API server
        w.attempt += 1
        # Kueue's workload controller rewrites the runner's legacy "Pending" condition: one
        # more write through Kueue's client, off the scheduler's goroutine
        self.kueue_write(self.now)
        self.written[w.key] = PENDING_EVALUATION
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
        opts = self.options
        heads = len(result.admitted) + len(result.left_pending)
        compute = opts.cycle_ms + -(-heads * opts.head_cost_us // MILLI)
        busy = self.now + compute  # the scheduler goroutine's clock
        touched = set()
        # admission patches run in goroutines: the cycle does not wait for them, and the
        # Admitted condition's lastTransitionTime is stamped when the patch is prepared
        for admitted in result.admitted:
            wid = self.ids[admitted.key]
            w = self.workloads[wid]
            w.admitted = self.now
            w.attempt += 1
            self.written[w.key] = None
            started = self.kueue_write(self.now)
            self.bind_total += started - self.now
            self.push(started + w.template.runtime_ms, _RUN_END, (wid, w.attempt))
            touched.add(w.cluster_queue)
        # evictions are patched inside the cycle, PARALLEL_PREEMPTIONS at a time
        for i, preempted in enumerate(result.preempted):
            wid = self.ids[preempted.key]
            w = self.workloads[wid]
            w.evictions += 1
            seen = self.kueue_write(self.now) + i // PARALLEL_PREEMPTIONS * opts.api_latency_ms
            busy = max(busy, seen)
            self.push(seen, _RUNNER_EVICT, (wid, w.attempt))
        # then every head left pending whose condition changed, one write after the other
        if opts.status_writes:
            for p in result.left_pending:
                status = (p.reason, p.message)
                if self.written.get(p.key) != status:
                    self.written[p.key] = status
                    self.pending_writes += 1
                    busy = self.kueue_write(busy)
        for name in sorted(touched):
            self.touch(name)
        self.admissions += len(result.admitted)
        self.preemptions += len(result.preempted)
        if result.admitted:
            self.slow_downs = 0
        else:
            self.slow_downs += 1
        self.next_cycle_at = busy + _backoff(self.slow_downs)
        self.cycles_run += 1
        self.cycle_total += busy - self.now
        self.cycle_max = max(self.cycle_max, busy - self.now)
        outcome = None
        if not result.admitted and not result.preempted:
            outcome = tuple((p.key, p.reason, p.message, p.state) for p in result.left_pending)
        repeated = outcome is not None and not changed and outcome == self.last_outcome
        if repeated and opts.skip_repeated_cycles and busy == self.now + compute:
            self.repeat_cost = compute
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
            pending_writes=self.pending_writes,
            average_bind_ms=self.bind_total // max(1, self.admissions),
            average_cycle_ms=self.cycle_total // max(1, self.cycles_run),
            max_cycle_ms=self.cycle_max,
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


def _arrivals(
    namespace: str, qset: QueuesSet
) -> list[tuple[int, str, str, WorkloadTemplate, int, int]]:
    """Every workload of one ClusterQueue with its creation time when nothing delays the
    generator (generateWlSet: k x interval), its set and the set's interval."""
    out = []
    for set_index, wl_set in enumerate(qset.workloads_sets):
        k = 0
        interval = wl_set.creation_interval_ms
        for si in range(wl_set.count):
            for i, template in enumerate(wl_set.workloads):
                k += 1
                name = f"{template.class_name}-{set_index}-{si}-{i}"
                out.append((k * interval, namespace, name, template, set_index, interval))
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
