"""The serving queue: Erlang C below saturation, a draining backlog above it."""

from __future__ import annotations

import math

import pytest

from gpupact.twin.serving import ServiceQueue, erlang_c, wait_quantile


def test_erlang_c_single_server_is_utilisation() -> None:
    assert erlang_c(1, 0.7) == pytest.approx(0.7)


def test_erlang_c_two_servers_closed_form() -> None:
    a = 1.5  # M/M/2: C = a^2 / (a^2 + (2 - a)(1 + a)) ... = 2a^2 / (2 + a)(2) for c = 2
    rho = a / 2
    b = (a * a / 2) / (1 + a + a * a / 2)
    assert erlang_c(2, a) == pytest.approx(b / (1 - rho + rho * b))
    assert erlang_c(2, 1.5) == pytest.approx(0.6428571, rel=1e-6)


def test_wait_quantiles_grow_with_load() -> None:
    low = wait_quantile(10, 5.0, 1.0, 0.99)
    high = wait_quantile(10, 9.5, 1.0, 0.99)
    assert 0.0 <= low < high
    assert math.isinf(wait_quantile(10, 10.0, 1.0, 0.99))


def test_backlog_builds_above_capacity_and_drains_below() -> None:
    q = ServiceQueue(max_sequences=10, service_time_s=2.0)  # 5 req/s per replica
    p50, p99 = q.step(rps=15.0, replicas=2, dt=10.0)  # capacity 10/s: 50 requests pile up
    assert q.queue_length == pytest.approx(50.0)
    assert p50 == p99 == pytest.approx(5.0)
    q.step(rps=5.0, replicas=2, dt=10.0)  # 5/s spare: the backlog is gone after 10 s
    assert q.queue_length == pytest.approx(0.0)
    assert q.utilisation(2) == pytest.approx(0.5)


def test_no_replica_means_no_answer() -> None:
    q = ServiceQueue(max_sequences=10, service_time_s=2.0)
    assert q.step(rps=1.0, replicas=0, dt=10.0) == (math.inf, math.inf)
    assert q.queue_length == pytest.approx(10.0)
