"""What a service's users feel, tick by tick: requests spread over the ready replicas, each
replica the continuous-batching engine `gpupact plan` sizes with.

Below a replica's saturation rate (`plan.engine_load.LatencyCurve`: the step-level engine's
TTFT/TPOT percentiles, batch and queue at each offered rate, in steady state; above its top
point the batch queue's, `plan.engine_load.batch_queue`) the tick's latencies are the curve's
at rps / ready replicas. At or above it the replicas serve at the saturation rate, the rate
an engine with a full queue takes requests in, and the rest piles up in a backlog (a fluid
queue, first in first out) that drains at that rate once the load falls.

A request that meets a backlog waits backlog / service rate, then has the engine's own TTFT,
and decodes in a batch the backlog keeps full: its TPOT is the endless queue's
(`LatencyCurve.full_tpot`, the step-level engine run with every request waiting). Between the
top point and saturation the TPOT moves from the top's towards that one with the batch
(`LatencyCurve.above_top`).
The first requests of an overload could fill the batch up to its size with an endless queue
instead of waiting, but the engine does not take them in at once (its KV cache fills as their
contexts grow), so the wait counts the whole backlog: the twin is not optimistic at the onset
of an overload. The backlog changes over a tick, so the arrivals of a tick wait different
times: a tick's P50/P99 take the wait met by the arrival at that share of the tick (arrivals
are spread evenly over it), not the wait at its end.

The engine's own TTFT is a nearly idle replica's plus a queued part that moves towards the
curve's value at the load over the relaxation time of a queue at that load (`_settle`), so a
ramp through saturation is not read as the steady state of each load it passes. With a
backlog it moves towards the knee's (`LatencyCurve.knee`, 97 % of saturation: a batch whose
KV cache runs out now and then) within one turnover of a full batch: the engine's queue at
the onset of an overload differs from the fluid backlog by about a batch, either way (a
batch with room takes in more than the saturation rate as it fills, one that thrashes
fewer), and the twin takes the pessimistic side. tests/twin/test_engine_fidelity.py states
the error of this aggregation against the per-iteration engine on steady loads, a ramp
through saturation and a step overload, for two replicas and three sets of step-time
constants. A replica whose model does not fit serves nothing.

What the HPA's pod metrics see: `running` (vllm:num_requests_running, the batch) and `waiting`
(vllm:num_requests_waiting, the engines' queues plus the backlog), summed over the replicas.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpupact.plan.engine_load import EXTRAPOLATE_UP_TO, LatencyCurve, LoadPoint


@dataclass(frozen=True)
class TickLatency:
    ttft_p50_s: float
    ttft_p99_s: float
    tpot_p50_s: float
    tpot_p99_s: float


UNSERVED = TickLatency(math.inf, math.inf, math.inf, math.inf)


def backlog_wait(start: float, rps: float, capacity: float, dt: float, share: float) -> float:
    """The wait of the arrival `share` of the way through the tick's arrivals ranked by wait:
    the backlog moves linearly from `start` at (rps - capacity) per second, clipped at 0."""
    slope = rps - capacity
    at = share if slope > 0 else 1 - share  # a growing backlog: the late arrivals wait longest
    return max(0.0, start + slope * at * dt) / capacity


@dataclass
class EngineQueue:
    """One service's requests over time (advanced tick by tick)."""

    curve: LatencyCurve | None  # None: a replica serves nothing
    backlog: float = 0.0  # requests beyond what the replicas take (fluid)
    running: float = 0.0  # sequences in the replicas' batches
    waiting: float = 0.0  # requests queued in the engines and in the backlog
    busy: float = 0.0  # share of the time a replica's engine is stepping
    served: float = 0.0
    # TTFT P50/P99 above a nearly idle replica's, built up by the queue so far (seconds)
    queued_p50: float = 0.0
    queued_p99: float = 0.0

    def step(self, rps: float, replicas: int, dt: float) -> TickLatency:
        """Advance by `dt` seconds at `rps` arrivals with `replicas` ready; the latencies of
        the tick's arrivals."""
        curve = self.curve
        if replicas <= 0 or curve is None:
            self.backlog += rps * dt
            self.running, self.waiting, self.busy = 0.0, self.backlog, 0.0
            return UNSERVED
        capacity = replicas * curve.saturation
        start = self.backlog
        rate = rps / replicas
        backlogged = start > 0 or rps >= capacity
        self._settle(rate, dt, backlogged)
        if not backlogged:
            point = curve.at(rate)
            idle = curve.points[0]
            self.served += rps * dt
            self._batch(replicas, point, 0.0)
            return TickLatency(
                idle.ttft_p50_s + self.queued_p50,
                idle.ttft_p99_s + self.queued_p99,
                point.tpot_p50_s,
                point.tpot_p99_s,
            )
        self.backlog = max(0.0, start + (rps - capacity) * dt)
        self.served += rps * dt - (self.backlog - start)
        top = curve.top
        self._batch(replicas, top, self.backlog)
        if self.backlog > 0:  # a queue keeps the batch as full as it gets
            self.running = replicas * max(top.running_mean, curve.full_batch)
        waits = (backlog_wait(start, rps, capacity, dt, q) for q in (0.5, 0.99))
        p50, p99 = (self._ttft(w, q) for w, q in zip(waits, (0.5, 0.99), strict=True))
        tpot50, tpot99 = curve.full_tpot  # the queue keeps the batch full
        return TickLatency(p50, p99, tpot50, tpot99)

    def _settle(self, rate: float, dt: float, backlogged: bool) -> None:
        """A queue takes time to form: the relaxation time of a queue at load x is about
        1 / (service rate x (1 - sqrt(x))^2) (Morse 1955, the M/M/1 queue's relaxation time):
        half a second at half load, a minute at 95 %, half an hour at 99 %. The TTFT above a
        nearly idle replica's (queueing and interference) moves towards its steady value at
        the rate (the curve's, extrapolated above its top) over that time, up or down, so a
        ramp through saturation is not read as if it had stayed at each load, and a load that
        stays reaches the curve. With a backlog it moves towards the knee's over
        the time a full batch takes to turn over (batch / saturation rate, Little's law): a
        backlog fills the batch at once, it does not wait for a queue to form."""
        assert self.curve is not None
        curve = self.curve
        idle = curve.points[0]
        steady = curve.knee if backlogged else curve.at(rate)
        goal50 = steady.ttft_p50_s - idle.ttft_p50_s
        goal99 = steady.ttft_p99_s - idle.ttft_p99_s
        if backlogged:  # the batch fills within one turnover of a full batch (Little's law)
            relax = max(curve.full_batch, curve.top.running_mean) / curve.saturation
        else:
            load = min(rate / curve.saturation, EXTRAPOLATE_UP_TO)
            relax = 1.0 / (curve.saturation * (1 - math.sqrt(load)) ** 2)
        keep = math.exp(-dt / relax)
        self.queued_p50 = goal50 + (self.queued_p50 - goal50) * keep
        self.queued_p99 = goal99 + (self.queued_p99 - goal99) * keep

    def _ttft(self, wait: float, quantile: float) -> float:
        """A wait behind the backlog plus the engine's own TTFT: a nearly idle replica's plus
        what its queue has built up (`_settle`, towards the knee's while backlogged)."""
        assert self.curve is not None
        idle = self.curve.points[0]
        if quantile == 0.5:
            return wait + idle.ttft_p50_s + self.queued_p50
        return wait + idle.ttft_p99_s + self.queued_p99

    def _batch(self, replicas: int, point: LoadPoint, backlog: float) -> None:
        self.running = replicas * point.running_mean
        self.waiting = replicas * point.waiting_mean + backlog
        self.busy = point.busy

    @property
    def queue_length(self) -> float:
        return self.waiting

    def utilisation(self, replicas: int) -> float:
        """Share of the time the ready replicas' GPUs compute (DCGM_FI_DEV_GPU_UTIL)."""
        return min(1.0, self.busy) if replicas > 0 else 0.0
