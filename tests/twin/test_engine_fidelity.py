"""The error of the twin's serving aggregation (`twin.serving.EngineQueue`: the latency curve,
the batch queue above its top, the settling of a queue and the fluid backlog) against the
per-iteration engine (`plan.batching`) driven by the same arrival process (engine_vs_twin.py).

Every bound is checked on each case of `CASES`: an 8B model on one H100 under the fitted
step-time constants of `plan.engine`, the hand-set ones they replaced and a 3 ms step
overhead, and a 70B model over four H100s as `gpupact plan` sizes it (engine_vs_twin.py).
Loads are shares of the replica's own saturation rate. Stated bounds:

- steady load at 50/80 %: the TTFT P50 and P99 over four 20-minute runs within 25 % / 35 %;
  per minute the P99 at most 50 % optimistic in at least 80 % of minutes, never under 0.3 x
  the engine's, and at most 2 x pessimistic in the median minute;
- steady load at 95 %, the knee (the batch's KV cache runs out now and then: preemption,
  recompute and a queue behind them): against eight 20-minute runs pooled, the P50 within
  35 %, the P99 at most 30 % optimistic and at most 3 x pessimistic; per minute at most 50 %
  optimistic in 80 % of minutes and under 0.3 x in at most 5 %. Why wider: the long-run P99
  there is set by rare excursions, so the engine's own P99 depends on how many its seeds
  met (20-minute runs of the 8B replica read 0.33 to 4 s; eight of them pooled 0.5 to 1.4 s
  by seed set, hand-set constants), and a minute with an excursion reads up to 10 x the
  long-run P99, a typical minute a quarter of it, hence no bound on the median minute.
  Doubtful: the 70B replica's P99 at the knee is 1.8 s over 40 runs pooled (the twin says
  1.7 s), but one set of eight seeds tried (101 ... 137) met three long excursions and pools
  to 5.5 s, which this bound would call 3 x optimistic; the committed seeds and another set
  (41 ... 71) pass every bound;
- near or above saturation (a minute whose load is at least 90 % of saturation), through a
  ramp 60 % -> 130 % -> 60 % and a step 70 % -> 150 % -> 70 %: the P99 at most 30 %
  optimistic and at most 2 x + one batch turnover (full batch / saturation: 8.5 s for the 8B
  replica, 38 s for the 70B one) pessimistic. Why wider than the 1.5 x it was: the engine's
  queue at the onset of an overload differs from the fluid backlog by about a batch, either
  way (a batch with room takes in more than the saturation rate as it fills: ~100 requests
  for the 8B replica; a 70B batch filling 8,192 tokens a step thrashes and takes ~60 fewer),
  and the twin takes the pessimistic side (the whole backlog waits, plus the knee's TTFT);
- the twin is never more than 30 % optimistic in a minute that is near saturation or
  carries a backlog (the engine's or the twin's P50 over a second). Elsewhere a minute's P99
  of a few hundred to a thousand requests scatters around the long-run P99 (at steady
  60-80 % load 5 % of the 8B replica's minutes read over 1 / 0.7 x it and none over 2.4 x, in
  236 minutes): there the twin is at least 0.4 x the engine's (the steady runs state the
  share). Where a backlog drains below saturation the twin is pessimistic: the engine's
  throughput after a short overload is a little above its endless-queue saturation rate, so
  its backlog is gone up to a minute before the twin's (the minute between can read 50 x;
  time over SLO bounds it);
- time with the tick's TTFT P99 over an SLO of 3, 10 and 30 x the top point's P99: from one
  tick less than the engine's to 2 x + two ticks + a batch turnover more (the twin's peak is
  higher by the onset's batch and the knee's TTFT, and an SLO near the peak magnifies that).
The twin steps at its tick (10 s) with the tick's mean rate, as the simulation does.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import pytest
from engine_vs_twin import (
    PROFILES,
    TICK_S,
    Comparison,
    Profile,
    compare,
    constants,
    over_slo_s,
)

from gpupact.plan.engine_load import latency_curve
from gpupact.twin.load_curve import rate_at

MINUTE = 60.0
SEED = 7
SEEDS = (7, 11, 13, 17)
KNEE_SEEDS = (7, 11, 13, 17, 19, 23, 29, 31)  # the knee's P99 needs more runs pooled
CASES = ["8b-h100/fitted", "8b-h100/hand-set", "8b-h100/overhead-3ms", "70b-h100-tp4/fitted"]
KNEE = 0.95


@pytest.fixture(scope="module", params=CASES)
def profile(request: pytest.FixtureRequest) -> Iterator[Profile]:
    name, constant_set = request.param.split("/")
    with constants(constant_set):
        yield PROFILES[name]()


def saturation(profile: Profile) -> float:
    return latency_curve(profile.spec, profile.input, profile.output, profile.context).saturation


def ratio(c: Comparison) -> np.ndarray:
    """Twin / engine TTFT P99 per minute."""
    return c.twin.p99 / c.engine.p99


@pytest.mark.parametrize("share", [0.5, 0.8, KNEE])
def test_steady_load(profile: Profile, share: float) -> None:
    """Near saturation the engine meets rare long excursions (the KV cache runs out, requests
    are preempted and recomputed, the queue grows): one 20-minute run may or may not have
    one, so the engine's side is four runs pooled, eight at the knee."""
    rate = share * saturation(profile)
    horizon = 20 * MINUTE
    seeds = SEEDS if share < KNEE else KNEE_SEEDS
    runs = [compare(profile, [(0.0, rate), (horizon, rate)], horizon, seed) for seed in seeds]
    # past the engine's empty start
    settled = np.concatenate([c.engine_ttft[c.arrival >= MINUTE] for c in runs])
    engine_p50, engine_p99 = np.quantile(settled, 0.5), np.quantile(settled, 0.99)
    twin_p50, twin_p99 = runs[0].twin_ticks.p50[-1], runs[0].twin_ticks.p99[-1]
    per_minute = np.concatenate([ratio(c) for c in runs])
    assert np.mean(per_minute >= 1 / 1.5) >= 0.8  # at most 50 % optimistic
    if share < KNEE:
        assert twin_p50 == pytest.approx(engine_p50, rel=0.25)
        assert twin_p99 == pytest.approx(engine_p99, rel=0.35)
        assert per_minute.min() >= 0.3
        assert np.median(per_minute) <= 2.0  # the typical minute
    else:
        assert twin_p50 == pytest.approx(engine_p50, rel=0.35)
        assert 0.7 * engine_p99 <= twin_p99 <= 3.0 * engine_p99
        assert np.mean(per_minute < 0.3) <= 0.05  # the minutes of an excursion


def ramp(sat: float) -> tuple[list[tuple[float, float]], float]:
    """The promo-peak shape: 60 % for 5 minutes, up to 130 % over 5, held 2, down over 5."""
    m = MINUTE
    points = [(0, 0.6), (5 * m, 0.6), (10 * m, 1.3), (12 * m, 1.3), (17 * m, 0.6), (22 * m, 0.6)]
    return [(t, share * sat) for t, share in points], 22 * m


def step(sat: float) -> tuple[list[tuple[float, float]], float]:
    """70 %, a step to 150 % for 2 minutes, back to 70 %."""
    m = MINUTE
    points = [(0, 0.7), (5 * m, 0.7), (5 * m + 1, 1.5), (7 * m, 1.5), (7 * m + 1, 0.7)]
    return [(t, share * sat) for t, share in [*points, (15 * m, 0.7)]], 15 * m


@pytest.fixture(scope="module", params=["ramp", "step"])
def overload(request: pytest.FixtureRequest, profile: Profile) -> tuple:
    curve = latency_curve(profile.spec, profile.input, profile.output, profile.context)
    sat = curve.saturation
    points, horizon = (ramp if request.param == "ramp" else step)(sat)
    return compare(profile, points, horizon, SEED), points, sat, curve


def near_saturation(c: Comparison, points: list, sat: float) -> np.ndarray:
    load = np.array([rate_at(points, s + MINUTE / 2) / sat for s in c.engine.start])
    return load >= 0.9


def test_near_and_above_saturation_the_p99_is_never_much_optimistic(overload: tuple) -> None:
    c, points, sat, curve = overload
    near = near_saturation(c, points, sat)
    assert near.sum() >= 2
    assert np.all(c.engine.p99[near] > 0)
    r = ratio(c)[near]
    assert np.all(r >= 0.7), r
    turnover = curve.full_batch / curve.saturation  # a batch's worth of requests, in seconds
    assert np.all(c.twin.p99[near] <= 2 * c.engine.p99[near] + turnover), r


def test_the_twin_is_never_much_optimistic_where_a_queue_is(overload: tuple) -> None:
    c, points, sat, _ = overload
    queued = near_saturation(c, points, sat) | (c.engine.p50 > 1.0) | (c.twin.p50 > 1.0)
    r = ratio(c)
    assert queued.sum() >= 3
    assert r[queued].min() >= 0.7, r
    assert r[~queued].min() >= 0.4, r


@pytest.mark.parametrize("slo_over_top", [3.0, 10.0, 30.0])
def test_time_over_slo(overload: tuple, slo_over_top: float) -> None:
    """SLOs as multiples of the replica's TTFT P99 at the curve's top (1, 3.5 and 10.5 s for the
    8B replica, 4, 13 and 40 s for the 70B one)."""
    c, _, _, curve = overload
    slo = slo_over_top * curve.top.ttft_p99_s
    engine = over_slo_s(c.engine_ticks.p99, slo, TICK_S)
    twin = over_slo_s(c.twin_ticks.p99, slo, TICK_S)
    turnover = curve.full_batch / curve.saturation
    assert engine >= MINUTE  # the overload is felt: the comparison means something
    assert engine - TICK_S <= twin <= 2 * engine + 2 * TICK_S + turnover


def test_the_backlog_drains_at_the_engines_endless_queue_rate(profile: Profile) -> None:
    """An overload of known size: the twin's wait at its end is the excess / saturation. The
    engine's last arrivals of the overload wait as long or less: its batch, at half load,
    still had room, which it fills at the onset (up to the endless queue's batch; 270
    requests, 34 s of work, on the 70B replica), so the twin is pessimistic by up to that."""
    curve = latency_curve(profile.spec, profile.input, profile.output, profile.context)
    sat = curve.saturation
    m = MINUTE
    points = [(0, 0.5 * sat), (m, 0.5 * sat), (m + 1, 2.0 * sat), (2 * m, 2.0 * sat)]
    points += [(2 * m + 1, 0.2 * sat), (8 * m, 0.2 * sat)]
    c = compare(profile, points, 8 * m, SEED)
    # one minute at 2 x saturation leaves a minute of work: ~60 s of wait at its end
    arrived_last = (c.arrival >= 2 * m - 5) & (c.arrival < 2 * m)
    engine_wait = float(np.median(c.engine_ttft[arrived_last]))
    twin_peak = float(np.max(c.twin_ticks.p50))
    room = (curve.full_batch - curve.at(0.5 * sat).running_mean) / sat
    assert 50.0 <= twin_peak <= 63.0  # the twin sees the step a tick late
    assert 0.9 * (60.0 - room) <= engine_wait <= 1.2 * 60.0
    assert engine_wait <= 1.25 * twin_peak  # never much optimistic
    assert twin_peak <= 1.5 * engine_wait
    assert math.isfinite(twin_peak)
