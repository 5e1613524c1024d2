"""gpupact's prediction for a measured point, through plan's public API only.

    weights    replica_memory(...).weights / tp, GiB per GPU
    kv_tokens  replica_memory(...).kv_tokens, on the device memory the source reports (else the
               catalogue's)
    latency    the replica's engine (`engine_load.engine_spec`, the spec `gpupact plan` and the
               twin build) run by the step-level scheduler (`batching.simulate`) on the
               benchmark's lengths and load:
                 concurrency c  closed loop: c requests in flight, each completion sends the
                                next (vLLM `--max-concurrency`, genai-perf `--concurrency`)
                 batch b        b requests at t = 0, latency until the last finishes (vLLM's
                                benchmark_latency times one `generate` of the batch)
                 rate r         Poisson arrivals at r per second (inf: all at t = 0),
                                statistics over all requests
               Lengths drawn from a range (SGLang's random dataset) are drawn uniformly,
               seeded.

At concurrency 1 and for one small batch the KV cache only has to hold the requests in flight;
when the memory model leaves less than that (its own misses are the memory points' business),
the engine gets room for them and the prediction says so in its notes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from gpupact.contract.schema import Quantization
from gpupact.plan.batching import EngineRun, Requests, simulate
from gpupact.plan.engine import EngineSpec
from gpupact.plan.engine_flags import Admission, Engine
from gpupact.plan.engine_load import GraphSettings, engine_spec
from gpupact.plan.gpus import GpuModel, find_gpu
from gpupact.plan.memory import EngineSettings, replica_memory
from gpupact.plan.models import CATALOGUE as MODELS
from gpupact.plan.models import ModelArch, find_model
from gpupact.plan.workload import TokenStats, Workload, default_kv_dtype

from .points import Lengths, Point
from .points import Workload as Offered

GIB = 2**30
# A closed-loop run at concurrency c sends this many waves of c requests when the source does
# not state its request count; the first wave met an empty engine and is left out.
CLOSED_LOOP_WAVES = 4
FAR_FUTURE_S = 1e9  # arrival of a request not yet sent (finite: the engine divides by gaps)
SEED = 20261206


class Unpredictable(Exception):
    """plan cannot state this point (a model or GPU outside its catalogue)."""


@dataclass(frozen=True)
class Prediction:
    value: float  # in the point's unit
    notes: tuple[str, ...] = field(default=())

    def error(self, measured: float) -> float:
        """Relative error, + when gpupact predicts more than was measured."""
        return self.value / measured - 1.0


def model_of(point: Point) -> ModelArch:
    arch = find_model(point.model)
    if arch is None and point.same_architecture_as:
        arch = MODELS.get(point.same_architecture_as)
    if arch is None:
        raise Unpredictable(f"model {point.model!r} is not in plan's catalogue")
    return arch


def gpu_of(point: Point) -> GpuModel:
    gpu = find_gpu(point.gpu)
    if gpu is None:
        raise Unpredictable(f"GPU {point.gpu!r} is not in plan's catalogue")
    return gpu


def quantization_of(point: Point) -> tuple[Quantization, Quantization]:
    weights = Quantization(point.quantization)
    kv = point.flags.get("kv_cache_dtype")
    return weights, Quantization(kv) if kv else default_kv_dtype(weights)


def device_memory(point: Point) -> int:
    if point.gpu_memory_gib is not None:
        return round(point.gpu_memory_gib * GIB)
    return gpu_of(point).memory


def predict(point: Point) -> Prediction:
    if point.category in ("weights", "kv_tokens"):
        return _memory(point)
    return _latency(point)


# vLLM V0 without chunked prefill profiles one prompt of max_model_len tokens (at least 2048)
# and runs at most 256 sequences (vllm/config.py SchedulerConfig, V0)
V0_MIN_BATCHED_TOKENS, V0_MAX_NUM_SEQS = 2048, 256


# NVIDIA NIM for LLMs serves its optimized profiles (fp8 TP2 on H100 among them) with a
# TensorRT-LLM engine: its memory budget and scheduler are TensorRT-LLM's
ENGINE_OF = {"nim": Engine.trtllm}


def engine_settings(point: Point) -> EngineSettings:
    """The engine flags the source states, as plan's engine settings (its defaults else)."""
    flags = point.flags
    known = {e.value for e in Engine}
    engine = Engine(point.engine) if point.engine in known else ENGINE_OF.get(point.engine)
    engine = engine or Engine.vllm
    fraction = flags.get("gpu_memory_utilization", flags.get("mem_fraction_static"))
    tokens, seqs = flags.get("max_num_batched_tokens"), flags.get("max_num_seqs")
    if engine is Engine.vllm and (point.engine_version or "").startswith("V0"):
        if tokens is None and flags.get("max_model_len"):
            tokens = max(V0_MIN_BATCHED_TOKENS, int(flags["max_model_len"]))
        seqs = seqs or V0_MAX_NUM_SEQS
    eager = bool(flags.get("enforce_eager") or flags.get("disable_cuda_graph"))
    graphs = flags.get("cuda_graph_max_bs")
    return GraphSettings(engine, fraction, seqs, tokens, eager, graphs)


def _memory(point: Point) -> Prediction:
    weights, kv = quantization_of(point)
    memory = replica_memory(
        model_of(point), weights, kv, device_memory(point), point.tp, engine_settings(point),
        gpu_of(point).name,
    )  # fmt: skip
    if point.category == "weights":
        return Prediction(memory.weights / point.tp / GIB)
    return Prediction(float(memory.kv_tokens))


def replica_spec(point: Point) -> EngineSpec:
    arch, gpu = model_of(point), gpu_of(point)
    weights, kv = quantization_of(point)
    w = point.workload
    assert w is not None
    workload = Workload(
        name=point.id,
        model=arch,
        quantization=weights,
        kv_dtype=kv,
        gpu=gpu,
        gpu_memory=device_memory(point),
        gpus_per_node=8,
        context=_longest(w.input) + _longest(w.output),
        input=TokenStats(_longest(w.input), _longest(w.input)),
        output=TokenStats(_longest(w.output), _longest(w.output)),
        engine=engine_settings(point),
    )
    spec = engine_spec(workload, point.tp)
    if spec_admits_to_end(point):
        spec = replace(spec, admission=Admission.fits_to_end)
    flags = {
        k: point.flags[k]
        for k in ("max_num_seqs", "max_num_batched_tokens")
        if point.flags.get(k) is not None
    }
    return replace(spec, **flags) if flags else spec


def spec_admits_to_end(point: Point) -> bool:
    """SGLang with its radix cache off serving ignore_eos requests admits a request only if
    its pool holds every running one to its end (`Admission.fits_to_end`)."""
    w = point.workload
    return bool(
        point.engine == Engine.sglang
        and point.flags.get("disable_radix_cache")
        and w is not None
        and w.ignore_eos
    )


def _latency(point: Point) -> Prediction:
    spec = replica_spec(point)
    w = point.workload
    assert w is not None
    notes: list[str] = []
    in_flight = w.concurrency if w.concurrency == 1 else w.batch
    if in_flight is not None:
        need = in_flight * (_longest(w.input) + _longest(w.output))
        if spec.kv_tokens < need:
            notes.append(
                f"memory model holds {spec.kv_tokens} KV tokens, fewer than the {need} in "
                "flight: given room for them"
            )
            spec = replace(spec, kv_tokens=need + spec.block_tokens * in_flight)
    rng = np.random.default_rng(SEED)
    if w.batch is not None:
        if point.category != "e2e_batch":
            raise ValueError(f"{point.id}: a batch run measures e2e_batch")
        run = simulate(spec, _requests(w, np.zeros(w.batch), rng))
        return Prediction(float(np.nanmax(run.finished)) * 1e3, tuple(notes))
    if w.rate is not None:
        n = w.requests or 1
        gaps = np.zeros(n) if math.isinf(w.rate) else rng.exponential(1.0 / w.rate, n)
        run = simulate(spec, _requests(w, np.cumsum(gaps), rng), trace=True)
        skip = 0
    else:
        c = w.concurrency
        assert c is not None
        n = w.requests or (c if c == 1 else CLOSED_LOOP_WAVES * c)
        run = closed_loop(spec, c, _requests(w, np.zeros(n), rng))
        skip = 0 if (w.requests or c == 1) else c
    return Prediction(_statistic(point, run, skip) * 1e3, tuple(notes))


def _longest(lengths: Lengths) -> int:
    return lengths if isinstance(lengths, int) else lengths[1]


def _draw(lengths: Lengths, n: int, rng: np.random.Generator) -> np.ndarray:
    if isinstance(lengths, int):
        return np.full(n, lengths)
    return rng.integers(lengths[0], lengths[1] + 1, n)


def _requests(w: Offered, arrival: np.ndarray, rng: np.random.Generator) -> Requests:
    n = len(arrival)
    return Requests(arrival, _draw(w.input, n, rng), _draw(w.output, n, rng))


def closed_loop(spec: EngineSpec, concurrency: int, requests: Requests) -> EngineRun:
    """`requests` (their arrivals ignored) with `concurrency` in flight: request c + j is sent
    when the j-th request finishes. The engine is causal, so iterating arrivals <- completions
    fixes one more wave each pass: at most n / c + 2 runs."""
    n = len(requests)
    arrival = np.zeros(n)
    arrival[concurrency:] = FAR_FUTURE_S
    for _ in range(n // concurrency + 2):
        run = simulate(spec, Requests(arrival, requests.input, requests.output), trace=True)
        ends = np.sort(run.finished)
        sent = np.concatenate([np.zeros(min(concurrency, n)), ends[: max(0, n - concurrency)]])
        if np.array_equal(sent, arrival):
            return run
        arrival = sent
    raise RuntimeError("closed loop did not settle")


def _statistic(point: Point, run: EngineRun, skip: int) -> float:
    """The point's statistic of TTFT or ITL (seconds) over the requests after `skip`."""
    ttft = run.ttft[skip:]
    if point.over == "gaps":
        gaps, counts = run.token_gaps()
        q = {"median": 0.5, "p99": 0.99}.get(point.statistic or "mean")
        if q is None:
            return float(np.sum(gaps * counts) / np.sum(counts))
        order = np.argsort(gaps, kind="stable")
        cumulative = np.cumsum(counts[order])
        k = int(np.searchsorted(cumulative, q * cumulative[-1], side="left"))
        return float(gaps[order][k])
    if point.category.startswith("ttft"):
        values = ttft
    else:
        out = run.requests.output[skip:]
        values = (run.finished[skip:] - run.first_token[skip:]) / np.maximum(out - 1, 1)
    if point.statistic == "median":
        return float(np.nanmedian(values))
    if point.statistic == "p99":
        return float(np.nanquantile(values, 0.99))
    return float(np.nanmean(values))
