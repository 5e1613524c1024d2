"""gpupact's saturated output throughput for a point of `throughput.yaml`, through plan's public
API and predict.py's public helpers (read-only).

The replica is the engine `gpupact plan` builds (`engine_load.engine_spec`, with the flags the
source states) run by the step-level scheduler (`batching.simulate`) on the benchmark's
lengths and load, and its output tokens are divided by time as the source's tool divides them:

    rate inf, statistic run      every request queued at t = 0; output tokens of all of them
                                 / the last completion. vLLM's and SGLang's bench_serving
                                 (`sum(output_lens) / dur_s`, dur_s from the first send to the
                                 last response: benchmark_serving.py / bench_serving.py,
                                 calculate_metrics) and trtllm-bench (total output tokens /
                                 total latency: tensorrt_llm/bench/dataclasses/statistics.py,
                                 BenchmarkStatistics.token_throughput_ns)
    concurrency c, steady        a closed loop with c in flight (predict.closed_loop); output
                                 tokens of the completions between the c-th and the (n - c)-th
                                 / the time between them: the loop keeps c in flight all
                                 through that window, as perf_analyzer keeps it through the
                                 windows genai-perf reads (see throughput.yaml's header)

`plan_capacity` is gpupact plan's own number for the same replica: the saturation rate of its
latency curve (`engine_load.saturation_rate`, the endless queue `latency_curve` starts from)
times the output length.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np

from gpupact.errors import FieldError
from gpupact.plan.batching import EngineRun, Requests, simulate
from gpupact.plan.engine_load import saturation_rate
from gpupact.plan.workload import TokenStats
from gpupact.source import load_documents

from .points import Lengths, Point, _workload, load_points
from .predict import CLOSED_LOOP_WAVES, SEED, Prediction, closed_loop, replica_spec

THROUGHPUT = Path(__file__).with_name("throughput.yaml")
STATISTICS = frozenset({"run", "steady"})


def load_throughput_points(path: Path = THROUGHPUT) -> list[Point]:
    """The points of `path` with their workloads. `load_points` reads a workload for the
    latency categories only, so it is read here with the same parser (and the same located
    errors) for every throughput point, which must have one: rate inf or a concurrency."""
    points = load_points(path)
    doc = load_documents(path)[0]
    out = []
    for i, (point, entry) in enumerate(zip(points, doc.data, strict=True)):
        try:
            workload = _workload(entry, [i])
            if workload.batch is not None or (
                workload.rate is not None and not math.isinf(workload.rate)
            ):
                raise FieldError([i, "workload"], "saturates with rate inf or a concurrency")
            if workload.rate is not None and workload.requests is None:
                raise FieldError([i, "workload", "requests"], "rate inf needs its request count")
            if point.statistic not in STATISTICS:
                raise FieldError([i, "measured", "statistic"], f"one of {sorted(STATISTICS)}")
        except FieldError as err:
            raise doc.error(err) from None
        out.append(replace(point, workload=workload))
    return out


def _longest(lengths: Lengths) -> int:
    return lengths if isinstance(lengths, int) else lengths[1]


def _draw(lengths: Lengths, n: int, rng: np.random.Generator) -> np.ndarray:
    """`n` lengths: fixed, or uniform integers over [low, high] (SGLang's random dataset)."""
    if isinstance(lengths, int):
        return np.full(n, lengths)
    return rng.integers(lengths[0], lengths[1] + 1, n)


def run_throughput(run: EngineRun) -> float:
    """Output tokens of every request / the last completion (all sent at t = 0)."""
    return float(run.requests.output.sum() / np.nanmax(run.finished))


def steady_throughput(run: EngineRun, concurrency: int) -> float:
    """Output tokens completed between the c-th and the (n - c)-th completion of a closed loop
    / the time between them: c requests are in flight all through it."""
    order = np.argsort(run.finished, kind="stable")
    ends = run.finished[order]
    lo, hi = concurrency - 1, len(ends) - concurrency - 1
    if hi <= lo:
        raise ValueError(f"{len(ends)} requests leave no window at concurrency {concurrency}")
    tokens = run.requests.output[order][lo + 1 : hi + 1].sum()
    return float(tokens / (ends[hi] - ends[lo]))


def replica_run(point: Point) -> tuple[EngineRun, int | None]:
    """The replica run under the point's load, with the concurrency held (None: rate inf)."""
    w = point.workload
    assert w is not None
    spec = replica_spec(point)
    rng = np.random.default_rng(SEED)
    if w.concurrency is not None:
        c = w.concurrency
        n = w.requests or CLOSED_LOOP_WAVES * c
        requests = Requests(np.zeros(n), _draw(w.input, n, rng), _draw(w.output, n, rng))
        return closed_loop(spec, c, requests), c
    n = w.requests
    assert n is not None
    requests = Requests(np.zeros(n), _draw(w.input, n, rng), _draw(w.output, n, rng))
    return simulate(spec, requests), None


def predict_throughput(point: Point) -> Prediction:
    """Output tokens per second of the replica under the point's load, divided as the
    source's tool divides it."""
    run, concurrency = replica_run(point)
    if concurrency is not None:
        return Prediction(steady_throughput(run, concurrency))
    return Prediction(run_throughput(run))


def plan_capacity(point: Point) -> float:
    """gpupact plan's saturation rate for the point's replica and (fixed) lengths, in output
    tokens per second."""
    w = point.workload
    assert w is not None
    if not (isinstance(w.input, int) and isinstance(w.output, int)):
        raise ValueError(f"{point.id}: plan's token profile is log-normal, not a uniform range")
    rate = saturation_rate(
        replica_spec(point),
        TokenStats(w.input, w.input),
        TokenStats(w.output, w.output),
        context=w.input + w.output,
    )
    return rate * w.output
