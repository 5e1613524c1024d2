"""What a service's users feel, tick by tick: requests spread over the ready replicas, each
replica the continuous-batching engine `gpupact plan` sizes with.

Below the top of a replica's latency curve (`plan.engine_load.LatencyCurve`: the step-level
engine's TTFT/TPOT percentiles, batch and queue at each offered rate) the tick's latencies are
the curve's at rps / ready replicas. Above it the replicas serve at the top rate and the rest
piles up in a backlog that drains at that rate (a fluid queue, first in first out), so a
request waits backlog / service rate before the curve's own TTFT. A replica whose model does
not fit serves nothing.

What the HPA's pod metrics see: `running` (vllm:num_requests_running, the batch) and `waiting`
(vllm:num_requests_waiting, the engines' queues plus the backlog), summed over the replicas.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpupact.plan.engine_load import LatencyCurve


@dataclass(frozen=True)
class TickLatency:
    ttft_p50_s: float
    ttft_p99_s: float
    tpot_p50_s: float
    tpot_p99_s: float


UNSERVED = TickLatency(math.inf, math.inf, math.inf, math.inf)


@dataclass
class EngineQueue:
    """One service's requests over time (advanced tick by tick)."""

    curve: LatencyCurve | None  # None: a replica serves nothing
    backlog: float = 0.0  # requests beyond what the replicas take (fluid)
    running: float = 0.0  # sequences in the replicas' batches
    waiting: float = 0.0  # requests queued in the engines and in the backlog
    busy: float = 0.0  # share of the time a replica's engine is stepping
    served: float = 0.0

    def step(self, rps: float, replicas: int, dt: float) -> TickLatency:
        """Advance by `dt` seconds at `rps` arrivals with `replicas` ready."""
        curve = self.curve
        if replicas <= 0 or curve is None:
            self.backlog += rps * dt
            self.running, self.waiting, self.busy = 0.0, self.backlog, 0.0
            return UNSERVED
        top = curve.top
        capacity = replicas * top.rate
        if self.backlog > 0 or rps > capacity:
            self.backlog = max(0.0, self.backlog + (rps - capacity) * dt)
            if self.backlog > 0:
                self.served += capacity * dt
                self.running = replicas * top.running_mean
                self.waiting = replicas * top.waiting_mean + self.backlog
                self.busy = top.busy
                wait = self.backlog / capacity
                return TickLatency(
                    wait + top.ttft_p50_s, wait + top.ttft_p99_s, top.tpot_p50_s, top.tpot_p99_s
                )
        point = curve.at(rps / replicas)
        self.served += rps * dt
        self.running = replicas * point.running_mean
        self.waiting = replicas * point.waiting_mean
        self.busy = point.busy
        return TickLatency(point.ttft_p50_s, point.ttft_p99_s, point.tpot_p50_s, point.tpot_p99_s)

    @property
    def queue_length(self) -> float:
        return self.waiting

    def utilisation(self, replicas: int) -> float:
        """Share of the time the ready replicas' GPUs compute (DCGM_FI_DEV_GPU_UTIL)."""
        return min(1.0, self.busy) if replicas > 0 else 0.0
