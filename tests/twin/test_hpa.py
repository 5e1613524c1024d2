"""The HPA decision against kube-controller-manager's rules (pkg/controller/podautoscaler:
replica_calculator.go and horizontal.go)."""

from __future__ import annotations

from gpupact.twin.hpa import HpaController
from gpupact.twin.world import HpaSpec


def spec(**kw) -> HpaSpec:
    base = dict(
        min_replicas=1,
        max_replicas=100,
        target=10.0,
        scale_up_window_s=None,
        scale_down_window_s=None,
        scale_up_policies=(),
        scale_down_policies=(),
    )
    base.update(kw)
    return HpaSpec(**base)


def test_within_tolerance_keeps_replicas() -> None:
    hpa = HpaController(spec())
    # 4 pods at 10.9 average: ratio 1.09 <= 1 + 0.1
    assert hpa.decide(0.0, 4, 4, 0, 43.6) == 4


def test_scale_up_is_ceil_of_ratio_times_ready() -> None:
    hpa = HpaController(spec())
    # average 25 vs target 10 on 4 ready pods: ceil(2.5 * 4) = 10, under the default 100 % / 15 s
    assert hpa.decide(0.0, 4, 4, 0, 100.0) == 8  # rate limit: max(4 + 4 pods, 4 * 2) = 8
    assert HpaController(spec()).desired_from_metric(4, 4, 0, 100.0) == 10


def test_not_ready_pods_count_as_idle_when_scaling_up() -> None:
    hpa = HpaController(spec())
    # 2 ready at 12 each (ratio 1.2); with 2 more not ready at 0 the ratio is 0.6: no scale-up
    assert hpa.desired_from_metric(4, 2, 2, 24.0) == 4
    # 2 ready at 40 each: (80 / (4 * 10)) = 2.0 -> ceil(2.0 * 4) = 8
    assert hpa.desired_from_metric(4, 2, 2, 80.0) == 8


def test_scale_down_waits_for_the_stabilisation_window() -> None:
    hpa = HpaController(spec(), default_down_window=300.0)
    assert hpa.decide(0.0, 10, 10, 0, 100.0) == 10  # at target
    # the load halves: the highest recommendation of the last 300 s (10) holds
    assert hpa.decide(15.0, 10, 10, 0, 50.0) == 10
    assert hpa.decide(290.0, 10, 10, 0, 50.0) == 10
    # once the 10 has left the window the scale-down happens
    assert hpa.decide(316.0, 10, 10, 0, 50.0) == 5


def test_scale_down_policy_limits_the_step() -> None:
    hpa = HpaController(spec(scale_down_window_s=0.0, scale_down_policies=(("Pods", 1, 60),)))
    assert hpa.decide(0.0, 10, 10, 0, 10.0) == 9  # wants 1, may drop 1 per minute
    assert hpa.decide(30.0, 9, 9, 0, 9.0) == 9  # still inside the minute
    assert hpa.decide(61.0, 9, 9, 0, 9.0) == 8


def test_bounds_clamp() -> None:
    hpa = HpaController(spec(max_replicas=6, min_replicas=2))
    assert hpa.decide(0.0, 4, 4, 0, 400.0) == 6
    assert (
        HpaController(spec(min_replicas=2, scale_down_window_s=0.0)).decide(0.0, 4, 4, 0, 0.0) == 2
    )
