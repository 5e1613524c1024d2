"""The HorizontalPodAutoscaler controller's replica decision (kube-controller-manager,
pkg/controller/podautoscaler), for a Pods metric with an AverageValue target:

1. Ratio = average metric over the pods that report it / target. Within the tolerance (0.1)
   of 1: no change. Pods not ready yet (Pending, or starting and not reporting) count as using
   0 when scaling up, and are left out when scaling down; if counting them flips a scale-up
   into a scale-down, nothing changes. Desired = ceil(ratio x pods counted).
2. Stabilisation: the recommendation is held between the lowest desired value seen in the
   scale-up window and the highest seen in the scale-down window.
3. Rate policies: over each policy's period, scale-up may add at most `Pods` value or
   `Percent` of the replicas at the period's start (selectPolicy Max takes the larger), and
   scale-down may remove likewise. Defaults: up 4 pods or 100 % per 15 s, window 0; down
   100 % per 15 s, window 300 s.
4. Clamped to [minReplicas, maxReplicas].

The metric is the one the compiled HPA names, read through `metric_delay.MetricPipeline`
(scrape + adapter delay): `num_requests_running` counts only the sequences a replica is
serving, so a replica full at `max_num_seqs` reports the same value however long its queue
is; `num_requests_waiting` counts the queue; DCGM_FI_DEV_GPU_UTIL the busy share.
Sources: https://kubernetes.io/docs/tasks/run-application/horizontal-pod-autoscale/
(algorithm, tolerance 0.1, sync period 15 s, behaviour defaults); vLLM metrics
https://docs.vllm.ai/en/latest/design/metrics.html (num_requests_running / _waiting gauges).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

from gpupact.twin.metric_delay import QueueSample
from gpupact.twin.world import HpaSpec

RUNNING_SUFFIX = "num_requests_running"
WAITING_SUFFIX = "num_requests_waiting"


def metric_total(spec: HpaSpec, sample: QueueSample) -> float:
    """The compiled metric summed over the pods, from what the serving queue reports.
    A name the twin does not know is read as requests in flight (running + waiting)."""
    if spec.gpu_utilisation:
        return sample.gpu_util_total
    name = spec.metric
    if name.endswith(RUNNING_SUFFIX):
        return sample.running
    if name.endswith(WAITING_SUFFIX):
        return sample.waiting
    return sample.running + sample.waiting


DEFAULT_UP_POLICIES = (("Percent", 100, 15), ("Pods", 4, 15))
DEFAULT_DOWN_POLICIES = (("Percent", 100, 15),)
DEFAULT_UP_WINDOW = 0.0
DEFAULT_DOWN_WINDOW = 300.0
MAX_POLICY_PERIOD = 1800.0  # the API's upper bound on a policy's periodSeconds


@dataclass
class HpaController:
    spec: HpaSpec
    tolerance: float = 0.1
    default_up_window: float = DEFAULT_UP_WINDOW
    default_down_window: float = DEFAULT_DOWN_WINDOW
    recommendations: deque[tuple[float, int]] = field(default_factory=deque)
    scale_events: deque[tuple[float, int]] = field(default_factory=deque)  # (time, +/- change)

    def desired_from_metric(
        self, current: int, ready: int, not_ready: int, total_metric: float
    ) -> int:
        target = self.spec.target
        if ready == 0:
            return current
        ratio = total_metric / (ready * target)
        if abs(ratio - 1.0) <= self.tolerance:
            return current
        if ratio > 1.0 and not_ready:
            new_ratio = total_metric / ((ready + not_ready) * target)
            if new_ratio <= 1.0 or abs(new_ratio - 1.0) <= self.tolerance:
                return current
            return math.ceil(new_ratio * (ready + not_ready))
        return math.ceil(ratio * ready)

    def decide(
        self, now: float, current: int, ready: int, not_ready: int, total_metric: float
    ) -> int:
        spec = self.spec
        desired = self.desired_from_metric(current, ready, not_ready, total_metric)
        up_window = (
            spec.scale_up_window_s if spec.scale_up_window_s is not None else self.default_up_window
        )
        down_window = (
            spec.scale_down_window_s
            if spec.scale_down_window_s is not None
            else self.default_down_window
        )
        keep = max(up_window, down_window)
        while self.recommendations and self.recommendations[0][0] < now - keep:
            self.recommendations.popleft()
        up_rec = down_rec = desired
        for at, value in self.recommendations:
            if at > now - up_window:
                up_rec = min(up_rec, value)
            if at > now - down_window:
                down_rec = max(down_rec, value)
        self.recommendations.append((now, desired))
        stabilized = min(max(current, up_rec), down_rec)
        limited = self._rate_limited(now, current, stabilized)
        final = min(max(limited, spec.min_replicas), spec.max_replicas)
        while self.scale_events and self.scale_events[0][0] <= now - MAX_POLICY_PERIOD:
            self.scale_events.popleft()
        if final != current:
            self.scale_events.append((now, final - current))
        return final

    def _rate_limited(self, now: float, current: int, desired: int) -> int:
        spec = self.spec
        if desired > current:
            policies = spec.scale_up_policies or DEFAULT_UP_POLICIES
            # a limit never points the other way (upstream: at least the current count)
            limit = max(current, max(self._limit(now, current, p, up=True) for p in policies))
            return min(desired, limit)
        if desired < current:
            policies = spec.scale_down_policies or DEFAULT_DOWN_POLICIES
            limit = min(current, min(self._limit(now, current, p, up=False) for p in policies))
            return max(desired, limit)
        return desired

    def _limit(self, now: float, current: int, policy: tuple[str, int, int], *, up: bool) -> int:
        kind, value, period = policy
        # replicas at the period's start: what was added in it taken off, what was removed
        # put back (upstream getReplicasChangePerPeriod on both directions)
        added = sum(d for at, d in self.scale_events if at > now - period and d > 0)
        removed = -sum(d for at, d in self.scale_events if at > now - period and d < 0)
        start = current - added + removed
        if kind == "Pods":
            return start + value if up else start - value
        if up:
            return math.ceil(start * (1 + value / 100))
        return math.floor(start * (1 - value / 100))
