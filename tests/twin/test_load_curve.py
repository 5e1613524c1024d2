"""The tick's mean rate: what the serving model is stepped with."""

from __future__ import annotations

import pytest

from gpupact.twin.load_curve import mean_rate, rate_at

RAMP = [(0.0, 10.0), (60.0, 10.0), (120.0, 70.0), (180.0, 70.0)]


def test_rate_at_is_linear_between_points_and_flat_outside():
    assert rate_at(RAMP, -5) == 10.0
    assert rate_at(RAMP, 90) == pytest.approx(40.0)
    assert rate_at(RAMP, 500) == 70.0
    assert rate_at([], 3) == 0.0


def test_mean_over_a_tick_inside_a_ramp_is_its_middle():
    # the rate at the tick's start would read the rise a tick late
    assert mean_rate(RAMP, 60, 70) == pytest.approx(15.0)
    assert rate_at(RAMP, 60) == 10.0


def test_mean_across_a_corner_integrates_both_pieces():
    # 10 s flat at 10, then 10 s rising from 10 to 20: (100 + 150) / 20
    assert mean_rate(RAMP, 50, 70) == pytest.approx(12.5)
    # a step (two points at the same instant) counts each side for its time
    step = [(0.0, 1.0), (5.0, 1.0), (5.0, 9.0), (20.0, 9.0)]
    assert mean_rate(step, 0, 10) == pytest.approx(5.0)


def test_an_empty_tick_reads_the_rate_at_its_instant():
    assert mean_rate(RAMP, 90, 90) == pytest.approx(40.0)
