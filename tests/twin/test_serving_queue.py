"""The twin's serving queue: the replica's latency curve below saturation (the batch queue above
its top, settling over a queue's relaxation time), a fluid backlog at and above it."""

from __future__ import annotations

import math

import pytest

from gpupact.plan.engine_load import LatencyCurve, LoadPoint, batch_queue
from gpupact.twin.serving import EngineQueue, backlog_wait


def point(rate: float, ttft: float, running: float, busy: float) -> LoadPoint:
    return LoadPoint(rate, ttft / 2, ttft, 0.02, 0.03, 10.0, running, 0.5, busy, rate, 0)


CURVE = LatencyCurve(
    saturation=5.0,
    points=(point(0.5, 0.2, 2.0, 0.1), point(2.5, 0.4, 20.0, 0.5), point(4.75, 1.0, 60.0, 0.95)),
    full_batch=100.0,
)


def test_below_the_top_the_curve_is_read_at_the_per_replica_rate() -> None:
    q = EngineQueue(CURVE)
    tick = q.step(rps=7.5, replicas=5, dt=15.0)  # 1.5 req/s each: halfway between points
    # at 30 % load a queue settles in well under a tick: the curve's value at once
    assert tick.ttft_p99_s == pytest.approx(0.3)
    assert q.running == pytest.approx(5 * 11.0) and q.waiting == pytest.approx(5 * 0.5)
    assert q.utilisation(5) == pytest.approx(0.3)
    assert q.backlog == 0.0


def test_between_the_top_and_saturation_the_queue_takes_time_to_form() -> None:
    steady = CURVE.at(4.9)  # 98 % of saturation: above the top (95 %), the batch queue's
    top, wait = CURVE.top, batch_queue(CURVE, 4.9)
    assert steady.ttft_p99_s == pytest.approx(wait.ttft_quantile(top.ttft_p50_s, 1.0, 0.99))
    assert steady.ttft_p99_s > 2 * top.ttft_p99_s
    q = EngineQueue(CURVE)
    for _ in range(360):  # an hour at the top: settled there
        q.step(rps=4.75, replicas=1, dt=10.0)
    first = q.step(rps=4.9, replicas=1, dt=10.0)
    assert 1.0 < first.ttft_p99_s < 0.5 * (1.0 + steady.ttft_p99_s)  # one tick: barely moved
    for _ in range(2000):  # hours at 98 %: the steady value
        last = q.step(rps=4.9, replicas=1, dt=10.0)
    assert last.ttft_p99_s == pytest.approx(steady.ttft_p99_s, rel=1e-3)
    assert q.backlog == 0.0


def test_backlog_builds_at_saturation_and_drains_below() -> None:
    q = EngineQueue(CURVE)
    tick = q.step(rps=15.0, replicas=2, dt=10.0)  # saturation 5/s each: 50 requests pile up
    assert q.backlog == pytest.approx(50.0)
    # the arrival 99 % of the way through the tick waits 0.99 x 50 / 10 s, then its own TTFT
    wait = 0.99 * 50.0 / 10.0
    assert wait + 0.2 <= tick.ttft_p99_s <= wait + CURVE.knee.ttft_p99_s  # own TTFT: the knee's
    assert backlog_wait(0.0, 15.0, 10.0, 10.0, 0.99) == pytest.approx(wait)
    assert q.waiting == pytest.approx(50.0 + 2 * 0.5)  # the backlog and the engines queues
    assert q.running == pytest.approx(2 * 100.0)  # a queue keeps the batch full
    drain = q.step(rps=5.0, replicas=2, dt=10.0)  # 5/s spare: the backlog is gone after 10 s
    assert q.backlog == pytest.approx(0.0)
    # the median arrival of the draining tick met half of it: 25 requests, 2.5 s
    assert 2.5 + 0.1 <= drain.ttft_p50_s <= 2.5 + 0.5
    assert q.utilisation(2) == pytest.approx(0.95)


def test_no_replica_or_no_fitting_model_means_no_answer() -> None:
    q = EngineQueue(CURVE)
    assert math.isinf(q.step(rps=1.0, replicas=0, dt=10.0).ttft_p99_s)
    assert q.queue_length == pytest.approx(10.0)
    unfit = EngineQueue(None)
    assert math.isinf(unfit.step(rps=1.0, replicas=3, dt=10.0).ttft_p50_s)
