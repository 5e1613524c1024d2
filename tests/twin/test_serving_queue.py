"""The twin's serving queue: the replica's latency curve below its top, a fluid backlog above."""

from __future__ import annotations

import math

import pytest

from gpupact.plan.engine_load import LatencyCurve, LoadPoint
from gpupact.twin.serving import EngineQueue


def point(rate: float, ttft: float, running: float, busy: float) -> LoadPoint:
    return LoadPoint(rate, ttft / 2, ttft, 0.02, 0.03, 10.0, running, 0.5, busy, rate, 0)


CURVE = LatencyCurve(
    saturation=5.0 / 0.98,
    points=(point(0.5, 0.2, 2.0, 0.1), point(2.5, 0.4, 20.0, 0.5), point(5.0, 1.0, 60.0, 0.95)),
)


def test_below_the_top_the_curve_is_read_at_the_per_replica_rate() -> None:
    q = EngineQueue(CURVE)
    tick = q.step(rps=7.5, replicas=5, dt=15.0)  # 1.5 req/s each: halfway between points
    assert tick.ttft_p99_s == pytest.approx(0.3)
    assert q.running == pytest.approx(5 * 11.0) and q.waiting == pytest.approx(5 * 0.5)
    assert q.utilisation(5) == pytest.approx(0.3)
    assert q.backlog == 0.0


def test_backlog_builds_above_the_top_and_drains_below() -> None:
    q = EngineQueue(CURVE)
    tick = q.step(rps=15.0, replicas=2, dt=10.0)  # top 5/s each: 50 requests pile up
    assert q.backlog == pytest.approx(50.0)
    assert tick.ttft_p99_s == pytest.approx(50.0 / 10.0 + 1.0)  # wait, then the top's TTFT
    assert q.waiting == pytest.approx(50.0 + 2 * 0.5)
    q.step(rps=5.0, replicas=2, dt=10.0)  # 5/s spare: the backlog is gone after 10 s
    assert q.backlog == pytest.approx(0.0)
    assert q.utilisation(2) == pytest.approx(0.5)


def test_no_replica_or_no_fitting_model_means_no_answer() -> None:
    q = EngineQueue(CURVE)
    assert math.isinf(q.step(rps=1.0, replicas=0, dt=10.0).ttft_p99_s)
    assert q.queue_length == pytest.approx(10.0)
    unfit = EngineQueue(None)
    assert math.isinf(unfit.step(rps=1.0, replicas=3, dt=10.0).ttft_p50_s)
