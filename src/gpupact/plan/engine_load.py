"""A replica under load: latency at an arrival rate, the highest rate it sustains, and the
highest rate that meets a latency SLO — the one capacity `gpupact plan` and the twin share.

Requests arrive as a Poisson process with prompt and completion lengths drawn from the
profile's log-normal distributions (`TokenStats`: p50 and p95), seeded, and run through the
step-level engine (`batching.simulate`). Statistics skip the first WARMUP_SHARE of requests,
which met an empty engine.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from gpupact.plan.batching import Requests, simulate
from gpupact.plan.engine import EngineSpec
from gpupact.plan.memory import MAX_NUM_SEQS, replica_memory
from gpupact.plan.workload import Z95, TokenStats, Workload

REQUESTS = 1500  # per load point: the P99 of 1,200 measured requests
WARMUP_SHARE = 0.2
SEED = 20261206
SATURATED = 0.98
# vLLM V1's token budget per step for the OpenAI server (chunked prefill); larger on big GPUs
# in recent releases (arg_utils default_max_num_batched_tokens).
DEFAULT_MAX_NUM_BATCHED_TOKENS = 2048  # a rate meets an SLO only below this share of the saturation rate


@dataclass(frozen=True)
class LoadPoint:
    rate: float  # requests per second offered to the replica
    ttft_p50_s: float
    ttft_p99_s: float
    tpot_p50_s: float
    tpot_p99_s: float
    e2e_mean_s: float  # arrival to last token
    running_mean: float  # sequences in the batch, time average
    waiting_mean: float  # requests queued for a slot, time average
    busy: float  # share of the time the engine was stepping
    throughput: float  # requests finished per second
    preemptions: int


def token_lengths(stats: TokenStats, n: int, rng: np.random.Generator, cap: int) -> np.ndarray:
    """`n` lengths from the log-normal with that median and 95th percentile, in [1, cap]."""
    sigma = math.log(stats.p95 / stats.p50) / Z95 if stats.p95 > stats.p50 else 0.0
    draws = stats.p50 * np.exp(sigma * rng.standard_normal(n))
    return np.clip(np.rint(draws), 1, max(1, cap)).astype(np.int64)


def sample_requests(
    input: TokenStats, output: TokenStats, rate: float, n: int, seed: int, context: int
) -> Requests:
    """`n` requests arriving at `rate` per second (rate inf: all at t = 0)."""
    rng = np.random.default_rng(seed)
    prompts = token_lengths(input, n, rng, context - 1)
    completions = np.minimum(token_lengths(output, n, rng, context), context - prompts)
    if math.isinf(rate):
        arrivals = np.zeros(n)
    else:
        arrivals = np.cumsum(rng.exponential(1.0 / rate, n))
    return Requests(arrivals, prompts, np.maximum(1, completions))


def _quantile(values: np.ndarray, q: float) -> float:
    values = values[~np.isnan(values)]
    return float(np.quantile(values, q)) if len(values) else math.inf


def latency_at(
    spec: EngineSpec,
    input: TokenStats,
    output: TokenStats,
    rate: float,
    *,
    context: int,
    requests: int = REQUESTS,
    seed: int = SEED,
) -> LoadPoint:
    """TTFT and TPOT percentiles of one replica offered `rate` requests per second."""
    reqs = sample_requests(input, output, rate, requests, seed, context)
    run = simulate(spec, reqs)
    skip = int(len(reqs) * WARMUP_SHARE)
    ttft = run.ttft[skip:]
    many = (reqs.output > 1) & ~np.isnan(run.finished)
    many[:skip] = False
    tpot = (run.finished - run.first_token)[many] / (reqs.output[many] - 1)
    e2e = (run.finished - reqs.arrival)[skip:]
    span = max(run.end, 1e-9)
    finished = int(np.sum(~np.isnan(run.finished)))
    return LoadPoint(
        rate=rate,
        ttft_p50_s=_quantile(ttft, 0.5),
        ttft_p99_s=_quantile(ttft, 0.99),
        tpot_p50_s=_quantile(tpot, 0.5),
        tpot_p99_s=_quantile(tpot, 0.99),
        e2e_mean_s=float(np.nanmean(e2e)) if len(e2e) else math.inf,
        running_mean=run.running_area / span,
        waiting_mean=run.waiting_area / span,
        busy=run.busy_s / span,
        throughput=finished / span,
        preemptions=run.preemptions,
    )


def saturation_rate(
    spec: EngineSpec, input: TokenStats, output: TokenStats, *, context: int, seed: int = SEED
) -> float:
    """Requests per second the replica finishes with an endless queue: every request waits
    from t = 0 and the engine runs full batches; measured between the first and last
    WARMUP_SHARE of completions (before the queue runs dry)."""
    reqs = sample_requests(input, output, math.inf, REQUESTS, seed, context)
    run = simulate(spec, reqs)
    ends = np.sort(run.finished[~np.isnan(run.finished)])
    if len(ends) < 10:
        return 0.0
    lo, hi = int(len(ends) * WARMUP_SHARE), int(len(ends) * (1 - WARMUP_SHARE))
    span = ends[hi] - ends[lo]
    return (hi - lo) / span if span > 0 else math.inf


# Load points of a latency curve, as shares of the saturation rate: denser near the top,
# where the P99 turns up.
CURVE_SHARES = (0.05, 0.25, 0.45, 0.6, 0.72, 0.81, 0.88, 0.93, 0.96, SATURATED)


@dataclass(frozen=True)
class LatencyCurve:
    """A replica's latencies against its offered rate: load points from the step-level
    engine, linear between them. Both `gpupact plan` (capacity, latency at a rate) and the
    twin (latency of each tick) read replicas through this one curve."""

    saturation: float  # requests per second with an endless queue
    points: tuple[LoadPoint, ...]  # increasing rate, the last at SATURATED x saturation

    @property
    def top(self) -> LoadPoint:
        return self.points[-1]

    def at(self, rate: float) -> LoadPoint:
        """The load point at `rate` per replica, up to the top of the curve (beyond it the
        replica is saturated: callers queue the excess, see `twin.serving`)."""
        pts = self.points
        if rate <= pts[0].rate:
            return pts[0]
        if rate >= pts[-1].rate:
            return pts[-1]
        hi = next(k for k, p in enumerate(pts) if p.rate >= rate)
        a, b = pts[hi - 1], pts[hi]
        f = (rate - a.rate) / (b.rate - a.rate)
        return _blend(a, b, f, rate)

    def capacity(self, ttft_slo_s: float | None, tpot_slo_s: float | None = None) -> float:
        """The highest rate per replica on the curve whose TTFT P99 (and TPOT P99) meet the
        SLOs; 0 when not even the lightest load does."""

        def excess(p: LoadPoint) -> float:
            over = []
            if ttft_slo_s is not None:
                over.append(p.ttft_p99_s / ttft_slo_s - 1)
            if tpot_slo_s is not None:
                over.append(p.tpot_p99_s / tpot_slo_s - 1)
            return max(over, default=-1.0)

        pts = self.points
        if excess(pts[0]) > 0:
            return 0.0
        for a, b in zip(pts, pts[1:], strict=False):
            ea, eb = excess(a), excess(b)
            if eb > 0:
                # where the linear blend crosses the SLO (the excess is monotone between
                # two points: each latency is linear there)
                lo, hi = 0.0, 1.0
                for _ in range(40):
                    mid = (lo + hi) / 2
                    point = _blend(a, b, mid, a.rate + mid * (b.rate - a.rate))
                    lo, hi = (mid, hi) if excess(point) <= 0 else (lo, mid)
                del ea
                return a.rate + lo * (b.rate - a.rate)
        return pts[-1].rate


def _blend(a: LoadPoint, b: LoadPoint, f: float, rate: float) -> LoadPoint:
    def mix(x: float, y: float) -> float:
        return x + f * (y - x)

    return LoadPoint(
        rate=rate,
        ttft_p50_s=mix(a.ttft_p50_s, b.ttft_p50_s),
        ttft_p99_s=mix(a.ttft_p99_s, b.ttft_p99_s),
        tpot_p50_s=mix(a.tpot_p50_s, b.tpot_p50_s),
        tpot_p99_s=mix(a.tpot_p99_s, b.tpot_p99_s),
        e2e_mean_s=mix(a.e2e_mean_s, b.e2e_mean_s),
        running_mean=mix(a.running_mean, b.running_mean),
        waiting_mean=mix(a.waiting_mean, b.waiting_mean),
        busy=mix(a.busy, b.busy),
        throughput=mix(a.throughput, b.throughput),
        preemptions=round(mix(a.preemptions, b.preemptions)),
    )


@lru_cache(maxsize=128)
def latency_curve(
    spec: EngineSpec, input: TokenStats, output: TokenStats, context: int
) -> LatencyCurve:
    """The replica's curve (cached: the same profile is planned and simulated many times)."""
    saturation = saturation_rate(spec, input, output, context=context)
    if not saturation > 0 or math.isinf(saturation):
        raise ValueError(f"the engine serves no request of this profile ({saturation})")
    points = tuple(
        latency_at(spec, input, output, share * saturation, context=context)
        for share in CURVE_SHARES
    )
    return LatencyCurve(saturation, points)


def engine_spec(
    workload: Workload,
    tp: int,
    *,
    compute_share: float | None = None,
    bandwidth_share: float | None = None,
) -> EngineSpec:
    """The engine of one replica of `workload` at tensor parallelism `tp`: its KV cache from
    the plan's memory arithmetic, its limits from the engine flags (vLLM's defaults)."""
    memory = replica_memory(
        workload.model, workload.quantization, workload.kv_dtype, workload.gpu_memory, tp,
        workload.engine, workload.gpu.name,
    )  # fmt: skip
    share = 1.0 / workload.slowdown
    return EngineSpec(
        model=workload.model,
        weights=workload.quantization,
        gpu=workload.gpu,
        tp=tp,
        kv_per_token=memory.kv_per_token_replica,
        kv_tokens=memory.kv_tokens,
        max_num_seqs=getattr(workload, "max_num_seqs", None) or MAX_NUM_SEQS,
        max_num_batched_tokens=getattr(workload, "max_num_batched_tokens", None)
        or DEFAULT_MAX_NUM_BATCHED_TOKENS,
        compute_share=compute_share or share,
        bandwidth_share=bandwidth_share or share,
    )
