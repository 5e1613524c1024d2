"""A replica under load: latency at an arrival rate, the highest rate it sustains, and the
highest rate that meets a latency SLO — the one capacity `gpupact plan` and the twin share.

Requests arrive as a Poisson process with prompt and completion lengths drawn from the
profile's log-normal distributions (`TokenStats`: p50 and p95), seeded, and run through the
step-level engine (`batching.simulate`). Statistics skip the first WARMUP_SHARE of requests,
which met an empty engine. Above the highest measured load the queue for a place in the batch
comes from a model fitted on the measured points (`batch_queue`): near saturation a finite
run's P99 depends on the few KV-cache excursions it met, the model's on none. The TPOT there
moves towards that of the endless queue's full batch (`LatencyCurve.full_tpot`).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace
from functools import lru_cache
from statistics import NormalDist

import numpy as np

from gpupact.plan.batching import Requests, simulate
from gpupact.plan.engine import EngineSpec
from gpupact.plan.engine_flags import Engine, execution, sglang_max_running
from gpupact.plan.memory import MAX_NUM_SEQS, EngineSettings, replica_memory
from gpupact.plan.workload import Z95, TokenStats, Workload

REQUESTS = 1500  # per load point at most 80 % of saturation: the P99 of 1,200 measured
WARMUP_SHARE = 0.2
SEED = 20261206
# The endless queue the saturation rate is measured on, and the share of its requests whose
# admissions are counted: past the first batch (whose short requests finish first and let the
# next ones in early) and before the queue runs dry.
SATURATION_REQUESTS = 12_000
SATURATION_WINDOW = (0.25, 0.9)
# vLLM V1's token budget per step for the OpenAI server (chunked prefill); larger on big GPUs
# in recent releases (arg_utils default_max_num_batched_tokens).
DEFAULT_MAX_NUM_BATCHED_TOKENS = 2048


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
    arrivals = np.zeros(n) if math.isinf(rate) else np.cumsum(rng.exponential(1.0 / rate, n))
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
    runs: int = 1,
) -> LoadPoint:
    """TTFT and TPOT percentiles of one replica offered `rate` requests per second, over the
    requests of `runs` independent runs (seeds seed, seed + 1, ...) pooled; time averages
    over their summed time."""
    ttft, tpot, e2e = [], [], []
    span = running = waiting = busy = 0.0
    finished = preemptions = 0
    for k in range(runs):
        reqs = sample_requests(input, output, rate, requests, seed + k, context)
        run = simulate(spec, reqs)
        skip = int(len(reqs) * WARMUP_SHARE)
        ttft.append(run.ttft[skip:])
        many = (reqs.output > 1) & ~np.isnan(run.finished)
        many[:skip] = False
        tpot.append((run.finished - run.first_token)[many] / (reqs.output[many] - 1))
        e2e.append((run.finished - reqs.arrival)[skip:])
        span += max(run.end, 1e-9)
        running += run.running_area
        waiting += run.waiting_area
        busy += run.busy_s
        finished += int(np.sum(~np.isnan(run.finished)))
        preemptions += run.preemptions
    all_ttft, all_tpot, all_e2e = (np.concatenate(x) for x in (ttft, tpot, e2e))
    return LoadPoint(
        rate=rate,
        ttft_p50_s=_quantile(all_ttft, 0.5),
        ttft_p99_s=_quantile(all_ttft, 0.99),
        tpot_p50_s=_quantile(all_tpot, 0.5),
        tpot_p99_s=_quantile(all_tpot, 0.99),
        e2e_mean_s=float(np.nanmean(all_e2e)) if len(all_e2e) else math.inf,
        running_mean=running / span,
        waiting_mean=waiting / span,
        busy=busy / span,
        throughput=finished / span,
        preemptions=round(preemptions / runs),
    )


def saturation_rate(
    spec: EngineSpec, input: TokenStats, output: TokenStats, *, context: int, seed: int = SEED
) -> float:
    """Requests per second the replica takes in with an endless queue (`endless_queue`)."""
    return endless_queue(spec, input, output, context=context, seed=seed).rate


@dataclass(frozen=True)
class FullBatch:
    """The replica with an endless queue (`endless_queue`)."""

    rate: float  # requests admitted per second: the saturation rate
    batch: float  # running sequences, time average
    tpot_p50_s: float  # TPOT of the requests admitted inside SATURATION_WINDOW
    tpot_p99_s: float


def endless_queue(
    spec: EngineSpec, input: TokenStats, output: TokenStats, *, context: int, seed: int = SEED
) -> FullBatch:
    """The replica with an endless queue: every request waits from t = 0 and the engine runs
    the fullest batches it can. The rate is counted on admissions (first tokens), which come
    in queue order whatever a request's length, between SATURATION_WINDOW of them: completions
    would overstate it (the short requests of a batch finish first). The batch is the
    time-averaged number of running sequences; the TPOT percentiles are those of the requests
    admitted inside the window, which decode in a batch kept full by the queue behind them
    (what a replica with a backlog gives its requests)."""
    reqs = sample_requests(input, output, math.inf, SATURATION_REQUESTS, seed, context)
    run = simulate(spec, reqs)
    firsts = np.sort(run.first_token[~np.isnan(run.first_token)])
    if len(firsts) < 10:
        return FullBatch(0.0, 0.0, math.inf, math.inf)
    lo, hi = (int(len(firsts) * share) for share in SATURATION_WINDOW)
    span = firsts[hi] - firsts[lo]
    batch = run.running_area / run.end if run.end > 0 else 0.0
    inside = (run.first_token >= firsts[lo]) & (run.first_token <= firsts[hi])
    many = inside & (reqs.output > 1) & ~np.isnan(run.finished)
    tpot = (run.finished - run.first_token)[many] / (reqs.output[many] - 1)
    return FullBatch(
        (hi - lo) / span if span > 0 else math.inf,
        batch,
        _quantile(tpot, 0.5),
        _quantile(tpot, 0.99),
    )


# Load points of a latency curve, as shares of the saturation rate: denser near the top,
# where the P99 turns up. Above the top the TTFT comes from the batch queue (`batch_queue`).
CURVE_SHARES = (0.05, 0.25, 0.45, 0.6, 0.72, 0.81, 0.87, 0.92)
TOP_SHARE = CURVE_SHARES[-1]
# The share of saturation whose latencies a replica with a backlog has besides its wait: its
# batch as full as the KV cache lets it be, thrashing now and then (`twin.serving`).
KNEE_SHARE = 0.97
# Closer to saturation a queue takes longer to settle (its relaxation time grows as
# 1 / (1 - sqrt(load))^2) and one run can meet a long excursion of the batch: a point at load
# x is measured on REQUESTS x SETTLE / (1 - x) requests, and above 70 % on RUNS_NEAR_TOP
# independent runs pooled, so that a point's P99 is that of a long run, not of one excursion
# (tests/twin/test_engine_fidelity.py states the result against the engine).
SETTLE = 0.3
RUNS_NEAR_TOP = 3
# The highest share of saturation plan sizes a replica for when its latencies allow it (then
# less its headroom): a replica run closer to its saturation rate has no margin for noise.
PLANNED_SHARE = 0.98
# Above the top the latencies are the batch queue's (`batch_queue`), read at most at this
# load, past which the twin's backlog takes over.
EXTRAPOLATE_UP_TO = 0.99


def requests_at(share: float) -> int:
    """Requests a load point at `share` of saturation is measured on."""
    return max(REQUESTS, round(REQUESTS * SETTLE / (1 - share)))


@dataclass(frozen=True)
class LatencyCurve:
    """A replica's latencies against its offered rate: load points from the step-level
    engine, linear between them, extrapolated above the top. Both `gpupact plan` (capacity,
    latency at a rate) and the twin (latency of each tick) read replicas through this one
    curve."""

    saturation: float  # requests per second with an endless queue
    points: tuple[LoadPoint, ...]  # increasing rate, the last at TOP_SHARE x saturation
    full_batch: float = 0.0  # running sequences with an endless queue (0: not measured)
    # TPOT P50/P99 with an endless queue, the batch as full as the KV cache lets it be
    # (`endless_queue`; 0: not measured, the TPOT then stays at the top point's)
    full_tpot_p50_s: float = 0.0
    full_tpot_p99_s: float = 0.0

    @property
    def top(self) -> LoadPoint:
        return self.points[-1]

    @property
    def full_tpot(self) -> tuple[float, float]:
        """(P50, P99) TPOT of a replica whose batch a queue keeps full: the endless queue's,
        never below the top point's (the pessimistic reading of two finite runs)."""
        top = self.top
        return max(top.tpot_p50_s, self.full_tpot_p50_s), max(top.tpot_p99_s, self.full_tpot_p99_s)

    def at(self, rate: float) -> LoadPoint:
        """The load point at `rate` per replica: the measured points, linear between them;
        above the top point the batch queue's (`above_top`). At or above saturation callers
        queue the excess (see `twin.serving`)."""
        pts = self.points
        if rate <= pts[0].rate:
            return pts[0]
        if rate >= pts[-1].rate:
            return self.above_top(rate)
        hi = next(k for k, p in enumerate(pts) if p.rate >= rate)
        a, b = pts[hi - 1], pts[hi]
        f = (rate - a.rate) / (b.rate - a.rate)
        return _blend(a, b, f, rate)

    def above_top(self, rate: float) -> LoadPoint:
        """Above the top point, up to EXTRAPOLATE_UP_TO of saturation: the top's latencies
        (its prefill and interference) plus the wait of the batch queue (`batch_queue`), its
        batch and queue the queue's, and a TPOT between the top's and a full batch's
        (`full_tpot`): its P50 (P99) as far as the batch queue's median (99th-percentile)
        batch has grown from its value at the top point towards the full batch. A step's time
        grows with the sequences in it, and near saturation the batch wanders over minutes
        while a request decodes in seconds, so a request's TPOT is the step time of the batch
        it met: the P99 request met the P99 batch (tests/twin/test_tpot_at_overload.py states
        the result against the engine). A curve without a measured full batch scales the
        TTFT's excess over a nearly idle replica's by (1 - top load) / (1 - load) instead, and
        moves the TPOT linearly in the load from the top's towards the full batch's."""
        top, idle = self.points[-1], self.points[0]
        if self.full_batch > top.running_mean:
            load = round(min(rate / self.saturation, EXTRAPOLATE_UP_TO), 4)
            return replace(_queued_top(self, load), rate=rate)
        load = min(rate / self.saturation, EXTRAPOLATE_UP_TO)
        top_load = top.rate / self.saturation
        grow = max(1.0, (1 - top_load) / (1 - load))
        fuller = min(1.0, max(0.0, (load - top_load) / (1 - top_load))) if top_load < 1 else 0.0
        return replace(
            _towards_full_tpot(self, fuller, fuller),
            rate=rate,
            ttft_p50_s=idle.ttft_p50_s + (top.ttft_p50_s - idle.ttft_p50_s) * grow,
            ttft_p99_s=idle.ttft_p99_s + (top.ttft_p99_s - idle.ttft_p99_s) * grow,
        )

    @property
    def knee(self) -> LoadPoint:
        """The latencies at KNEE_SHARE of saturation (a full batch that thrashes now and
        then)."""
        return self.at(KNEE_SHARE * self.saturation)

    def capacity(self, ttft_slo_s: float | None, tpot_slo_s: float | None = None) -> float:
        """The highest rate per replica on the curve whose TTFT P99 (and TPOT P99) meet the
        SLOs, at most PLANNED_SHARE of saturation (above the top point, on the extrapolated
        latencies); 0 when not even the lightest load does."""

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
        for a, b in itertools.pairwise(pts):
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
        lo, hi = pts[-1].rate, max(pts[-1].rate, PLANNED_SHARE * self.saturation)
        if excess(self.at(hi)) <= 0:
            return hi
        for _ in range(40):  # the extrapolated latencies grow with the rate
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if excess(self.at(mid)) <= 0 else (lo, mid)
        return lo


@dataclass(frozen=True)
class BatchQueue:
    wait_share: float  # of arrivals that find the batch full and wait for a place
    wait_scale_s: float  # their wait is exponential with this mean
    batch: float  # running sequences, mean
    queue: float  # requests waiting for the batch, mean

    def ttft_quantile(self, service_p50_s: float, service_p99_s: float, q: float) -> float:
        """The q-quantile of wait + the replica's own TTFT (log-normal through its P50 and
        P99, independent of the wait)."""
        median = max(service_p50_s, 1e-9)
        sigma = math.log(max(service_p99_s, median) / median) / Z99
        own = median * np.exp(sigma * _NORMAL_GRID)

        def over(t: float) -> float:  # P(wait + own > t)
            gap = np.maximum(t - own, 0.0)
            return float(
                np.mean(np.where(own > t, 1.0, self.wait_share * np.exp(-gap / self.wait_scale_s)))
            )

        lo, hi = 0.0, service_p99_s + self.wait_scale_s * 50
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if over(mid) > 1 - q else (lo, mid)
        return hi


Z99 = NormalDist().inv_cdf(0.99)
_NORMAL_GRID = np.array([NormalDist().inv_cdf((k + 0.5) / 400) for k in range(400)])


def batch_queue(curve: LatencyCurve, rate: float) -> BatchQueue:
    """The replica as a processor-sharing queue whose completion rate mu(n) depends on the
    n requests in its batch, up to the full batch B (the KV cache's or max_num_seqs' limit),
    beyond which requests wait for a place. Continuous batching is processor sharing (every
    running sequence advances a token a step), and a processor-sharing queue with a
    state-dependent rate has the same distribution of requests in it whatever the service
    times (Kelly 1979, symmetric queues): P(n) ~ prod_{k <= n} rate / mu(k), geometric with
    ratio x = rate / saturation beyond B. An arrival that finds n >= B waits for n - B + 1
    admissions at the saturation rate: P(wait > w) = P(n >= B) x^(w saturation). mu(k) is
    read off the load points by Little's law (a point at rate r whose batch averages b
    completes r per second with b running) and the endless queue's (B, saturation).

    Why a model and not more load points: near saturation mu(k) hardly grows with k, so the
    batch wanders up to B now and then and the queue behind it sets the P99 (the engine's
    KV-cache excursions); a finite run meets few or many of them (at 95 % a 20-minute run's
    P99 reads 0.33 to 4 s depending on its seed) while the model's average of them is what
    long runs pool to: 1.36 s at 95 % for the 8B replica of tests/twin/test_engine_fidelity.py
    (eight runs pool to 1.16 s), 1.69 s for its 70B replica (40 runs pool to 1.8 s).
    Heavy traffic's 1 / (1 - load) read from the top point instead, whose excess over an idle
    replica is interference rather than queueing, said 0.49 s for the 8B replica under every
    set of step-time constants tried, where eight runs pooled 1.2 to 1.6 s."""
    x = min(rate / curve.saturation, EXTRAPOLATE_UP_TO)
    n, w, tail = _batch_weights(curve, x)
    total = w.sum() + tail
    return BatchQueue(
        wait_share=float(w[-1] + tail) / total,  # arrivals see the time average (PASTA)
        wait_scale_s=1.0 / (curve.saturation * -math.log(x)),
        batch=float((w * n).sum() + tail * n[-1]) / total,
        queue=float(w[-1] * x / (1 - x) ** 2) / total,
    )


def _batch_weights(curve: LatencyCurve, x: float) -> tuple[np.ndarray, np.ndarray, float]:
    """(n, unnormalised P(n) for n = 0 .. B, P(n > B)) of `batch_queue` at load x."""
    log_mu = _log_capacity(curve)
    n = np.arange(len(log_mu))
    log_w = n * math.log(x * curve.saturation) - log_mu
    w = np.exp(log_w - log_w.max())
    tail = w[-1] * x / (1 - x)  # n = B + 1, B + 2, ...: w_B x^j
    return n, w, float(tail)


def batch_quantiles(curve: LatencyCurve, rate: float) -> tuple[float, float]:
    """The median and 99th percentile of the running batch in time (`batch_queue`'s P(n),
    requests beyond B waiting with the batch at B)."""
    n, w, tail = _batch_weights(curve, min(rate / curve.saturation, EXTRAPOLATE_UP_TO))
    cdf = np.cumsum(w)
    cdf[-1] += tail
    cdf /= cdf[-1]
    return float(n[np.searchsorted(cdf, 0.5)]), float(n[np.searchsorted(cdf, 0.99)])


@lru_cache(maxsize=8192)
def _queued_top(curve: LatencyCurve, load: float) -> LoadPoint:
    """`above_top` at `load` x saturation (cached on a grid of 1e-4: the twin asks every
    tick)."""
    top = curve.top
    q = batch_queue(curve, load * curve.saturation)
    top_load = top.rate / curve.saturation
    linear = (load - top_load) / (1 - top_load) if top_load < 1 else 1.0
    fuller = []
    for now, then in zip(
        batch_quantiles(curve, load * curve.saturation), _top_batch(curve), strict=True
    ):
        room = curve.full_batch - then
        fuller.append((now - then) / room if room >= 1 else linear)
    top = _towards_full_tpot(curve, *fuller)
    if q.wait_share < 1e-4:  # too rare to move a P99
        return top
    p50, p99 = (q.ttft_quantile(top.ttft_p50_s, top.ttft_p99_s, k) for k in (0.5, 0.99))
    return replace(
        top,
        ttft_p50_s=max(top.ttft_p50_s, p50),
        ttft_p99_s=max(top.ttft_p99_s, p99),
        running_mean=max(top.running_mean, q.batch),
        waiting_mean=max(top.waiting_mean, q.queue),
    )


@lru_cache(maxsize=256)
def _top_batch(curve: LatencyCurve) -> tuple[float, float]:
    """The batch queue's median and 99th-percentile batch at the top point's rate, where the
    TPOT starts to move towards a full batch's (so that it is continuous there)."""
    return batch_quantiles(curve, curve.top.rate)


def _towards_full_tpot(curve: LatencyCurve, fuller50: float, fuller99: float) -> LoadPoint:
    """The top point with its TPOT P50 / P99 `fuller50` / `fuller99` (0 to 1) of the way to
    a full batch's."""
    top = curve.top
    measured = (curve.full_tpot_p50_s, curve.full_tpot_p99_s)
    if not all(0 < t < math.inf for t in measured):
        return top
    f50, f99 = (min(1.0, max(0.0, f)) for f in (fuller50, fuller99))
    p50, p99 = curve.full_tpot
    return replace(
        top,
        tpot_p50_s=top.tpot_p50_s + f50 * (p50 - top.tpot_p50_s),
        tpot_p99_s=top.tpot_p99_s + f99 * (p99 - top.tpot_p99_s),
    )


@lru_cache(maxsize=256)
def _log_capacity(curve: LatencyCurve) -> np.ndarray:
    """sum_{k <= n} log mu(k) for n = 0 .. B (see `batch_queue`)."""
    batch = [0.0, *(p.running_mean for p in curve.points), curve.full_batch]
    rate = [0.0, *(p.rate for p in curve.points), curve.saturation]
    batch, rate = np.maximum.accumulate(batch), np.maximum.accumulate(rate)
    k = np.arange(1, max(1, round(curve.full_batch)) + 1)
    mu = np.maximum(np.interp(k, batch, rate), 1e-12)
    return np.concatenate(([0.0], np.cumsum(np.log(mu))))


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
    full = endless_queue(spec, input, output, context=context)
    saturation = full.rate
    if not saturation > 0 or math.isinf(saturation):
        raise ValueError(f"the engine serves no request of this profile ({saturation})")
    measured = [
        latency_at(
            spec, input, output, share * saturation, context=context,
            requests=requests_at(share), runs=RUNS_NEAR_TOP if share > 0.7 else 1,
        )
        for share in CURVE_SHARES
    ]  # fmt: skip
    return LatencyCurve(
        saturation, monotone(measured), full.batch, full.tpot_p50_s, full.tpot_p99_s
    )


def monotone(points: list[LoadPoint]) -> tuple[LoadPoint, ...]:
    """Latency percentiles never fall as the load rises: a point's P99 from a finite run can
    come out below its lighter neighbour's (sampling noise), and the curve then takes the
    neighbour's, the pessimistic reading of the two."""
    out: list[LoadPoint] = []
    for p in points:
        if out:
            q = out[-1]
            p = replace(
                p,
                ttft_p50_s=max(p.ttft_p50_s, q.ttft_p50_s),
                ttft_p99_s=max(p.ttft_p99_s, q.ttft_p99_s),
                tpot_p50_s=max(p.tpot_p50_s, q.tpot_p50_s),
                tpot_p99_s=max(p.tpot_p99_s, q.tpot_p99_s),
            )
        out.append(p)
    return tuple(out)


@dataclass(frozen=True)
class GraphSettings(EngineSettings):
    """Engine settings with how the user runs its CUDA graphs (`engine_flags.execution`):
    --enforce-eager (vLLM; SGLang's --disable-cuda-graph) and --cuda-graph-max-bs."""

    enforce_eager: bool = False
    cuda_graph_max_bs: int | None = None


def engine_spec(
    workload: Workload,
    tp: int,
    *,
    compute_share: float | None = None,
    bandwidth_share: float | None = None,
) -> EngineSpec:
    """The engine of one replica of `workload` at tensor parallelism `tp`: its KV cache from
    the plan's memory arithmetic, its limits, block size and admission policy from the engine
    flags (vLLM's defaults); SGLang's running cap from its KV pool; which steps replay CUDA
    graphs from the engine and the user's graph settings (`GraphSettings`)."""
    memory = replica_memory(
        workload.model, workload.quantization, workload.kv_dtype, workload.gpu_memory, tp,
        workload.engine, workload.gpu.name,
    )  # fmt: skip
    share = 1.0 / workload.slowdown
    settings = workload.engine
    flags = settings.flags(workload.gpu_memory, workload.gpu.name, tp)
    max_num_seqs = getattr(workload, "max_num_seqs", None) or MAX_NUM_SEQS
    if flags.engine is Engine.sglang:
        max_num_seqs = sglang_max_running(
            memory.kv_tokens, workload.model.max_context, settings.max_num_seqs
        )
    max_num_batched_tokens = (
        getattr(workload, "max_num_batched_tokens", None) or DEFAULT_MAX_NUM_BATCHED_TOKENS
    )
    run = execution(
        flags.engine, workload.gpu_memory, tp,
        enforce_eager=getattr(settings, "enforce_eager", False),
        cuda_graph_max_bs=getattr(settings, "cuda_graph_max_bs", None),
    )  # fmt: skip
    return EngineSpec(
        model=workload.model,
        weights=workload.quantization,
        gpu=workload.gpu,
        tp=tp,
        kv_per_token=memory.kv_per_token_replica,
        kv_tokens=memory.kv_tokens,
        max_num_seqs=max_num_seqs,
        max_num_batched_tokens=max_num_batched_tokens,
        compute_share=compute_share or share,
        bandwidth_share=bandwidth_share or share,
        block_tokens=flags.block_tokens,
        admission=flags.admission,
        graph_max_tokens=run.graph_max_tokens,
        graph_prefill=run.graph_prefill,
        separate_prefill=run.separate_prefill,
        overlap_schedule=run.overlap_schedule,
    )
