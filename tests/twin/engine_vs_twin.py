"""The twin's serving aggregation against the per-iteration engine, on one arrival process.

The per-iteration side: a non-homogeneous Poisson process (rate r(t), piecewise linear as the
twin's load profiles, thinned from its maximum, seeded), prompt and completion lengths drawn
from the profile, run through one replica's step-level engine (`plan.batching.simulate`). The
twin side: `twin.serving.EngineQueue` stepped every TICK_S seconds at r(t) with one replica,
as `twin.simulation` steps it. Both are read per window of requests by arrival time.

The bounds are checked on two replicas (`PROFILES`: an 8B model on one H100 with a fixed KV
cache, and a 70B model over four H100s as `gpupact plan` sizes it, with vLLM's flags for the
GPU) and under three sets of the step-time constants of `plan.engine` (`CONSTANTS`: the fitted
ones, the hand-set ones they replaced, and a 3 ms step overhead), set by `constants`."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

import gpupact.plan.engine as engine_module
import gpupact.plan.latency as latency_module
from gpupact.contract.schema import Quantization
from gpupact.plan.batching import Requests, simulate
from gpupact.plan.engine import EngineSpec
from gpupact.plan.engine_flags import Engine, default_flags
from gpupact.plan.engine_load import latency_curve, token_lengths
from gpupact.plan.gpus import CATALOGUE as GPUS
from gpupact.plan.memory import replica_memory
from gpupact.plan.models import CATALOGUE as MODELS
from gpupact.plan.workload import TokenStats
from gpupact.twin.load_curve import mean_rate
from gpupact.twin.serving import EngineQueue

TICK_S = 10.0  # the twin's default tick (scenario `step`)


@dataclass(frozen=True)
class Profile:
    spec: EngineSpec
    input: TokenStats
    output: TokenStats
    context: int


def llama_8b_h100() -> Profile:
    """One H100 with a 200k-token KV cache and vLLM's small-GPU flags (256 sequences, 2,048
    tokens a step): the KV cache, not max_num_seqs, bounds the batch near saturation."""
    model = MODELS["llama-3.1-8b"]
    spec = EngineSpec(
        model=model,
        weights=Quantization.bf16,
        gpu=GPUS["h100-80gb"],
        tp=1,
        kv_per_token=2 * model.layers * model.kv_heads * model.head_dim * 2,
        kv_tokens=200_000,
    )
    return Profile(spec, TokenStats(600, 2000), TokenStats(200, 500), 16384)


def llama_70b_h100_tp4() -> Profile:
    """Llama-3.1-70B over four H100s with the KV cache and flags `gpupact plan` gives it
    (vLLM's defaults for an 80 GB GPU: 1,024 sequences, 8,192 tokens a step)."""
    model, gpu, tp = MODELS["llama-3.1-70b"], GPUS["h100-80gb"], 4
    memory = replica_memory(
        model, Quantization.bf16, Quantization.bf16, gpu.memory, tp, None, gpu.name
    )
    flags = default_flags(Engine.vllm, gpu.memory, gpu.name, tp)
    spec = EngineSpec(
        model=model,
        weights=Quantization.bf16,
        gpu=gpu,
        tp=tp,
        kv_per_token=memory.kv_per_token_replica,
        kv_tokens=memory.kv_tokens,
        max_num_seqs=flags.max_num_seqs,
        max_num_batched_tokens=flags.max_num_batched_tokens,
        block_tokens=flags.block_tokens,
    )
    return Profile(spec, TokenStats(1000, 3000), TokenStats(250, 700), 16384)


PROFILES = {"8b-h100": llama_8b_h100, "70b-h100-tp4": llama_70b_h100_tp4}

# Step-time constants of plan.engine: (STEP_OVERHEAD_S, NVLink all-reduce latency,
# PREFILL_MFU, DECODE_BANDWIDTH_EFFICIENCY).
CONSTANTS = {
    "fitted": (  # as plan.engine has them (fitted on tests/plan/measured)
        engine_module.STEP_OVERHEAD_S,
        engine_module.ALLREDUCE_LATENCY_S["nvlink"],
        latency_module.PREFILL_MFU,
        engine_module.DECODE_BANDWIDTH_EFFICIENCY,
    ),
    "hand-set": (0.6e-3, 8e-6, 0.5, 0.7),  # the values the fit replaced
    "overhead-3ms": (3e-3, 20e-6, 0.55, 0.75),  # a slow CPU side: step time flat in the batch
}


@contextmanager
def constants(name: str) -> Iterator[None]:
    """plan.engine's step-time constants set to CONSTANTS[name] (the latency curves, cached
    per EngineSpec, are dropped on the way in and out; the 16-bit prefill MFU lives in
    plan.latency, which the engine reads when a spec prices its first step)."""
    m = engine_module
    saved = (m.STEP_OVERHEAD_S, m.ALLREDUCE_LATENCY_S, m.DECODE_BANDWIDTH_EFFICIENCY)
    saved_mfu = latency_module.PREFILL_MFU
    overhead, allreduce, mfu, bandwidth = CONSTANTS[name]
    latency_curve.cache_clear()
    m.STEP_OVERHEAD_S, m.DECODE_BANDWIDTH_EFFICIENCY = overhead, bandwidth
    latency_module.PREFILL_MFU = mfu
    m.ALLREDUCE_LATENCY_S = {**saved[1], "nvlink": allreduce}
    try:
        yield
    finally:
        m.STEP_OVERHEAD_S, m.ALLREDUCE_LATENCY_S, m.DECODE_BANDWIDTH_EFFICIENCY = saved
        latency_module.PREFILL_MFU = saved_mfu
        latency_curve.cache_clear()


def arrivals(points: list[tuple[float, float]], horizon: float, seed: int) -> np.ndarray:
    """Poisson arrivals of rate r(t) on [0, horizon): thinning a process of the top rate."""
    rng = np.random.default_rng(seed)
    top = max(v for _, v in points)
    n = rng.poisson(top * horizon)
    t = np.sort(rng.uniform(0.0, horizon, n))
    rates = np.interp(t, [p[0] for p in points], [p[1] for p in points])
    return t[rng.uniform(0.0, top, n) < rates]


def engine_ttft(profile: Profile, at: np.ndarray, seed: int) -> np.ndarray:
    """TTFT of each arrival through the per-iteration engine."""
    rng = np.random.default_rng(seed + 1)
    n = len(at)
    prompts = token_lengths(profile.input, n, rng, profile.context - 1)
    completions = token_lengths(profile.output, n, rng, profile.context)
    completions = np.maximum(1, np.minimum(completions, profile.context - prompts))
    run = simulate(profile.spec, Requests(at, prompts, completions))
    return run.ttft


@dataclass(frozen=True)
class Windows:
    start: np.ndarray  # window start, seconds
    p50: np.ndarray
    p99: np.ndarray


def engine_windows(at: np.ndarray, ttft: np.ndarray, horizon: float, width: float) -> Windows:
    starts = np.arange(0.0, horizon, width)
    p50, p99 = [], []
    for s in starts:
        sel = ttft[(at >= s) & (at < s + width)]
        sel = sel[~np.isnan(sel)]
        p50.append(np.quantile(sel, 0.5) if len(sel) else math.nan)
        p99.append(np.quantile(sel, 0.99) if len(sel) else math.nan)
    return Windows(starts, np.array(p50), np.array(p99))


def twin_ticks(
    profile: Profile, points: list[tuple[float, float]], horizon: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(tick start, TTFT P50, TTFT P99) of the twin's queue stepped as the simulation does."""
    curve = latency_curve(profile.spec, profile.input, profile.output, profile.context)
    queue = EngineQueue(curve)
    starts = np.arange(0.0, horizon, TICK_S)
    p50, p99 = [], []
    for t in starts:
        tick = queue.step(mean_rate(points, t, t + TICK_S), 1, TICK_S)  # as the simulation
        p50.append(tick.ttft_p50_s)
        p99.append(tick.ttft_p99_s)
    return starts, np.array(p50), np.array(p99)


def twin_windows(
    profile: Profile, points: list[tuple[float, float]], horizon: float, width: float
) -> Windows:
    """Per window: the twin's P99 is its worst tick's, its P50 the median tick's."""
    _, p50, p99 = twin_ticks(profile, points, horizon)
    ws = np.arange(0.0, horizon, width)
    per = round(width / TICK_S)
    return Windows(
        ws,
        np.array([np.median(p50[i * per : (i + 1) * per]) for i in range(len(ws))]),
        np.array([np.max(p99[i * per : (i + 1) * per]) for i in range(len(ws))]),
    )


def over_slo_s(p99: np.ndarray, slo: float, width: float) -> float:
    """Seconds of windows whose TTFT P99 is over the SLO (a window without requests is not)."""
    return float(np.sum(np.nan_to_num(p99, nan=0.0) > slo) * width)


@dataclass(frozen=True)
class Comparison:
    engine: Windows  # per minute
    twin: Windows
    engine_ticks: Windows  # per tick, for time over SLO
    twin_ticks: Windows
    engine_ttft: np.ndarray  # every request's, by arrival
    arrival: np.ndarray


def compare(
    profile: Profile,
    points: list[tuple[float, float]],
    horizon: float,
    seed: int,
    width: float = 60.0,
) -> Comparison:
    at = arrivals(points, horizon, seed)
    ttft = engine_ttft(profile, at, seed)
    starts, p50, p99 = twin_ticks(profile, points, horizon)
    return Comparison(
        engine=engine_windows(at, ttft, horizon, width),
        twin=twin_windows(profile, points, horizon, width),
        engine_ticks=engine_windows(at, ttft, horizon, TICK_S),
        twin_ticks=Windows(starts, p50, p99),
        engine_ttft=ttft,
        arrival=at,
    )
