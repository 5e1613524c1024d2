"""Kueue's scheduler-perf replay on a scaled-down config: invariants of the simulation and the
recorder's definitions of usage and time to admission."""

from __future__ import annotations

import dataclasses

import pytest

from gpupact.twin.kueue_perf import (
    BASELINE,
    IDEAL,
    LARGE_SCALE,
    MILLI,
    CohortSet,
    PerfConfig,
    QueuesSet,
    ReplayOptions,
    WorkloadsSet,
    WorkloadTemplate,
    _TokenBucket,
    replay,
    standard_config,
)

SMALL = standard_config(
    "small",
    cohorts=1,
    queues=2,
    sets=(
        ("small", 150, 100, 200, 50, 1),
        ("medium", 40, 500, 500, 100, 5),
        ("large", 20, 1200, 1000, 200, 20),
    ),
)
WORKLOADS = 2 * (150 + 40 + 20)


def without_preemption(config: PerfConfig) -> PerfConfig:
    cohorts = tuple(
        dataclasses.replace(
            c,
            queues_sets=tuple(
                dataclasses.replace(q, reclaim_within_cohort="Never", within_cluster_queue="Never")
                for q in c.queues_sets
            ),
        )
        for c in config.cohorts
    )
    return dataclasses.replace(config, cohorts=cohorts)


def ideal(**changes) -> ReplayOptions:
    return dataclasses.replace(IDEAL, **changes)


@pytest.fixture(scope="module")
def result():
    """The admission policy alone: every write lands at once."""
    return replay(SMALL, ideal(seed=7))


def test_upstream_configs_have_upstream_sizes() -> None:
    def size(config: PerfConfig) -> tuple[int, int]:
        cohort = config.cohorts[0]
        qset = cohort.queues_sets[0]
        per_queue = sum(s.count * len(s.workloads) for s in qset.workloads_sets)
        return cohort.count * qset.count, cohort.count * qset.count * per_queue

    assert size(BASELINE) == (30, 15_000)
    assert size(LARGE_SCALE) == (1_000, 50_000)


def test_no_cluster_queue_exceeds_nominal_plus_borrowing(result) -> None:
    assert result.max_usage.keys() == result.usage_limit.keys()
    for name, peak in result.max_usage.items():
        assert peak <= result.usage_limit[name] == 120 * MILLI
    # the config makes the queues borrow: the bound is actually reached for
    assert max(result.max_usage.values()) > 20 * MILLI


def test_every_workload_is_admitted_and_finishes(result) -> None:
    assert len(result.workloads) == WORKLOADS
    assert all(w.admitted_ms is not None and w.finished_ms is not None for w in result.workloads)
    evictions = sum(w.evictions for w in result.workloads)
    assert result.preemptions == evictions
    # every eviction is followed by one more admission
    assert result.admissions == WORKLOADS + evictions
    for w in result.workloads:
        assert w.created_ms <= w.admitted_ms < w.finished_ms <= result.simulated_ms


def test_same_seed_same_result(result) -> None:
    assert replay(SMALL, ideal(seed=7)) == result
    assert replay(SMALL, ReplayOptions(seed=7)) == replay(SMALL, ReplayOptions(seed=7))


def test_seed_moves_the_epoch_and_the_uids() -> None:
    results = {replay(SMALL, ideal(seed=s)).workloads for s in range(4)}
    assert len(results) > 1


def test_higher_priority_classes_wait_less(result) -> None:
    classes = result.workload_classes
    assert set(classes) == {"small", "medium", "large"}
    large, medium, small = (
        classes[c].average_time_to_admission_ms for c in ("large", "medium", "small")
    )
    assert large <= medium <= small
    assert small > 0


def test_time_to_admission_is_read_from_whole_second_timestamps(result) -> None:
    for w in result.workloads:
        assert w.time_to_admit_ms % 1000 == 0
        assert abs(w.time_to_admit_ms - (w.admitted_ms - w.created_ms)) < 1000
    for name, summary in result.workload_classes.items():
        mine = [w for w in result.workloads if w.class_name == name]
        assert summary.count == len(mine)
        # the recorder's integer average
        assert summary.average_time_to_admission_ms == sum(w.time_to_admit_ms for w in mine) // len(
            mine
        )


def test_usage_is_the_integral_of_admitted_cpu_over_the_monitoring_window() -> None:
    """Without preemption every admission lasts from admission to finish, so the integral can
    be recomputed from the workload records."""
    run = replay(without_preemption(SMALL), ideal(seed=3))
    assert run.preemptions == 0
    requests = {"small": 1, "medium": 5, "large": 20}
    used = sum(
        requests[w.class_name] * MILLI * (w.finished_ms - w.admitted_ms) for w in run.workloads
    )
    summary = run.queue_classes["cq"]
    assert summary.cpu_used == used
    assert summary.nominal_quota == 2 * 20 * MILLI
    assert summary.first_event_ms == 0
    assert summary.last_event_ms == max(w.finished_ms for w in run.workloads)
    expected = used * 100 / (summary.nominal_quota * summary.last_event_ms)
    assert summary.usage_percent == pytest.approx(expected)
    assert 0 < summary.usage_percent <= 100


def test_workloads_run_for_their_runtime_from_admission(result) -> None:
    runtimes = {"small": 200, "medium": 500, "large": 1000}
    for w in result.workloads:
        if w.evictions == 0:
            assert w.finished_ms - w.admitted_ms == runtimes[w.class_name]


def test_rate_limited_writes_delay_the_start_and_stretch_the_run(result) -> None:
    slow = replay(SMALL, ideal(seed=7, kueue_qps=5, kueue_burst=10))
    runtimes = {"small": 200, "medium": 500, "large": 1000}
    late = [w for w in slow.workloads if w.finished_ms - w.admitted_ms > runtimes[w.class_name]]
    assert late
    assert all(w.finished_ms - w.admitted_ms >= runtimes[w.class_name] for w in slow.workloads)
    # 420+ writes at 5 per second cannot finish before ~80 s
    assert slow.simulated_ms >= (slow.admissions + slow.preemptions - 10) * 1000 // 5
    assert slow.simulated_ms > result.simulated_ms


def test_skipping_repeated_cycles_changes_nothing_but_the_wall_time() -> None:
    """Under the rate limit preemptors wait for their evictions while the scheduler cycles
    every 10 ms; counting those repeats instead of running them gives the same result."""
    options = ReplayOptions(seed=2, kueue_qps=5, kueue_burst=10)
    fast = replay(SMALL, options)
    slow = replay(SMALL, dataclasses.replace(options, skip_repeated_cycles=False))
    assert fast.preemptions > 0
    assert dataclasses.replace(fast, options=slow.options) == slow


def test_cycles_take_their_simulated_time() -> None:
    run = replay(SMALL, ideal(seed=1, cycle_ms=50))
    assert 0 < run.cycles <= run.simulated_ms // 50 + 1


def test_token_bucket_reserves_like_x_time_rate() -> None:
    bucket = _TokenBucket(qps=10, burst=2)
    assert [bucket.reserve(0) for _ in range(4)] == [0, 0, 100, 200]
    # 1 s later the bucket has refilled to its burst
    assert [bucket.reserve(1000) for _ in range(3)] == [0, 0, 100]


# --- pacing: Kueue's client, the scheduler's own writes, the API hops ----------------------


def one_queue(nominal: int, *sets: tuple[int, int, int, int]) -> PerfConfig:
    """One ClusterQueue without borrowing or preemption; sets of (count, interval ms, runtime
    ms, cores), priorities falling in the order given."""
    workloads_sets = tuple(
        WorkloadsSet(count, interval, (WorkloadTemplate(f"c{i}", runtime, 100 - i, cores),))
        for i, (count, interval, runtime, cores) in enumerate(sets)
    )
    queues = QueuesSet("cq", 1, nominal, 0, "Never", "Never", workloads_sets)
    return PerfConfig("one", (CohortSet("cohort", 1, (queues,)),))


def test_defaults_are_upstreams_run() -> None:
    """minimalkueue: 50 QPS / burst 100; the runner on envtest: 1000 / 2000; 1 s requeue batch;
    the scheduler writes pending conditions."""
    options = ReplayOptions()
    assert (options.kueue_qps, options.kueue_burst) == (50, 100)
    assert (options.runner_qps, options.runner_burst) == (1000, 2000)
    assert options.requeue_batch_ms == 1000
    assert options.status_writes and options.api_latency_ms == 0


def test_bind_and_finish_hops_hold_the_quota() -> None:
    """A, created at 100 ms, reaches Kueue one hop later and is admitted; it runs once its
    admission reached the runner (one hop), and its quota is released once its Finished write
    reached Kueue (another hop); B, created one interval after A's create returned, does not
    fit meanwhile and is retried 1 s after that release."""
    hop = 40
    run = replay(one_queue(1, (2, 100, 1000, 1)), ideal(api_latency_ms=hop))
    a, b = sorted(run.workloads, key=lambda w: w.created_ms)
    assert (a.created_ms, a.admitted_ms) == (100, 100 + hop)
    assert b.created_ms == 100 + hop + 100
    assert a.finished_ms == a.admitted_ms + hop + 1000 + hop
    assert b.admitted_ms == a.finished_ms + 1000
    assert b.finished_ms == b.admitted_ms + hop + 1000 + hop


def test_a_pending_condition_is_written_once_per_change() -> None:
    """B waits behind A: its QuotaReserved=False condition is patched at the first failed
    cycle only, C's likewise (equal messages are not rewritten)."""
    run = replay(one_queue(1, (3, 100, 1000, 1)), ReplayOptions(seed=1))
    assert run.pending_writes == 2
    quiet = replay(one_queue(1, (3, 100, 1000, 1)), ReplayOptions(seed=1, status_writes=False))
    assert quiet.pending_writes == 0


def test_the_cycle_waits_for_its_pending_writes() -> None:
    """At 2 QPS (burst 1) A's admission at 100 ms takes the only token, so the cycle at 150 ms
    that finds B (2 cores) not fitting blocks until B's pending write gets its token (450 ms
    later): C, which fits and arrives at 160 ms, is admitted by the next cycle, after the
    1 ms SlowDown backoff. Without the pending write C is admitted on arrival."""
    config = one_queue(2, (1, 100, 5000, 1), (1, 150, 5000, 2), (1, 160, 5000, 1))

    def c_admitted(options: ReplayOptions) -> int:
        run = replay(config, options)
        return next(w.admitted_ms for w in run.workloads if w.class_name == "c2")

    assert c_admitted(ideal(kueue_qps=2, kueue_burst=1, status_writes=True)) == 150 + 450 + 1
    assert c_admitted(ideal(kueue_qps=2, kueue_burst=1)) == 160


def test_every_kueue_write_takes_a_token() -> None:
    """The replay is throughput-bound the way upstream's is: admissions, evictions and
    pending writes all pass the 5 QPS bucket, so the run cannot be shorter than that."""
    qps, burst = 5, 10
    run = replay(SMALL, ReplayOptions(seed=4, kueue_qps=qps, kueue_burst=burst))
    writes = run.admissions + run.preemptions + run.pending_writes
    assert run.pending_writes > 0
    assert run.simulated_ms >= (writes - burst) * MILLI // qps


def test_the_generator_creates_through_its_own_rate_limit() -> None:
    """A workloads set is one goroutine: sleep the interval, create (waiting for the client's
    token), repeat; the creationTimestamp is when the create got through."""
    config = one_queue(10, (4, 10, 100, 1))
    run = replay(config, ideal(generator_qps=10, runner_burst=1))
    assert sorted(w.created_ms for w in run.workloads) == [10, 110, 210, 310]
    free = replay(config, IDEAL)
    assert sorted(w.created_ms for w in free.workloads) == [10, 20, 30, 40]


def test_a_write_issued_behind_reservations_made_ahead_queues_after_them() -> None:
    """The scheduler reserves its synchronous writes ahead of the event loop; a write another
    goroutine issues earlier in simulated time waits behind them, and never refills the
    bucket backwards."""
    bucket = _TokenBucket(qps=10, burst=1)
    assert bucket.reserve(0) == 0
    assert bucket.reserve(500) == 0  # refilled by then: the scheduler's write, issued at 500
    assert bucket.reserve(200) == 300 + 100  # issued at 200: after the one at 500, plus a token
