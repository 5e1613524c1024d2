"""The replica engine (plan/engine.py, plan/batching.py) checked against hand arithmetic and
against its own step-by-step loop: what plan and the twin promise is only as good as these."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest
from engine_reference import reference_run

from gpupact.contract.schema import Quantization
from gpupact.plan import batching
from gpupact.plan.batching import Requests, simulate
from gpupact.plan.engine import ALLREDUCE_LATENCY_S, STEP_OVERHEAD_S, EngineSpec
from gpupact.plan.engine_flags import Admission, Engine, sglang_max_running
from gpupact.plan.engine_load import (
    engine_spec,
    latency_at,
    latency_curve,
    requests_at,
    sample_requests,
    saturation_rate,
)
from gpupact.plan.gpus import CATALOGUE as GPUS
from gpupact.plan.memory import EngineSettings
from gpupact.plan.models import CATALOGUE as MODELS
from gpupact.plan.standalone import standalone_workload
from gpupact.plan.workload import TokenStats

INPUT, OUTPUT, CONTEXT = TokenStats(600, 2000), TokenStats(200, 500), 16384


def spec(**changes: object) -> EngineSpec:
    model = MODELS["llama-3.1-8b"]
    base = EngineSpec(
        model=model,
        weights=Quantization.bf16,
        gpu=GPUS["h100-80gb"],
        tp=1,
        kv_per_token=2 * model.layers * model.kv_heads * model.head_dim * 2,
        kv_tokens=200_000,
    )
    return dataclasses.replace(base, **changes)


def one(prompt: int, output: int, at: float = 0.0) -> Requests:
    return Requests(np.array([at]), np.array([prompt]), np.array([output]))


def test_a_lone_request_takes_its_chunked_prefill_then_one_step_per_token() -> None:
    s = spec()
    run = simulate(s, one(5000, 4))
    # 5000 tokens in chunks of 2048, 2048, 904: the first token ends the third step
    assert run.ttft[0] == pytest.approx(s.prefill_s(5000), rel=1e-12)
    chunks = [(2048, 0), (2048, 2048), (904, 4096)]
    by_hand = sum(s.step_s(n, n * done + n * (n + 1) / 2, done) for n, done in chunks)
    assert run.ttft[0] == pytest.approx(by_hand, rel=1e-12)
    # then three decode steps at contexts 5000, 5001, 5002 (each reads its whole context)
    decodes = [s.step_s(1, c + 1, c) for c in (5000, 5001, 5002)]
    assert run.finished[0] - run.first_token[0] == pytest.approx(sum(decodes), rel=1e-12)
    assert run.steps == 6 and run.preemptions == 0


def test_decode_is_memory_bound_and_prefill_compute_bound() -> None:
    s = spec()
    weights = s.weight_bytes(1)
    decode = s.step_s(1, 1, 0)
    assert decode == pytest.approx(weights / s.bytes_per_s + STEP_OVERHEAD_S, rel=1e-9)
    prefill = s.step_s(2048, 2048 * 2049 / 2, 0)
    flops = 2 * s.model.active_params * 2048 + s.attention_flops_per_pair * 2048 * 2049 / 2
    assert prefill == pytest.approx(flops / s.flops_per_s + STEP_OVERHEAD_S, rel=1e-9)


def test_tensor_parallel_adds_two_all_reduces_per_layer() -> None:
    s = spec(tp=4)
    n = 2048
    size = n * s.model.hidden * 2
    ring = 2 * 3 / 4 * size / s.gpu.link_bandwidth  # ring over NVLink
    one_reduce = ring + ALLREDUCE_LATENCY_S["nvlink"]
    assert s.comm_s(n) == pytest.approx(2 * s.model.layers * one_reduce, rel=1e-12)
    assert spec(tp=1).comm_s(n) == 0


def test_max_num_seqs_caps_the_batch() -> None:
    s = spec(max_num_seqs=4)
    reqs = Requests(np.zeros(12), np.full(12, 100), np.full(12, 50))
    run = simulate(s, reqs)
    assert run.running_area / run.end <= 4 + 1e-9
    # the fifth request's first token comes only after one of the first four has finished
    assert np.nanmin(run.finished[:4]) < run.first_token[4]
    assert np.all(~np.isnan(run.finished))


def test_a_full_kv_cache_preempts_the_newest_and_recomputes_it() -> None:
    s = spec(kv_tokens=16 * 64)  # 64 blocks = 1024 tokens
    reqs = Requests(np.zeros(6), np.full(6, 100), np.full(6, 200))  # 300 tokens each
    run = simulate(s, reqs)
    assert run.preemptions > 0
    assert np.all(~np.isnan(run.finished))  # every request finishes in the end
    # FCFS survives preemption: the oldest request is never the victim, it finishes first
    assert run.finished[0] == np.nanmin(run.finished)


def test_no_evict_reserves_prompt_and_output_and_never_preempts() -> None:
    """Six requests of 300 tokens (19 blocks of 16 reserved each) in a 64-block cache: three
    run at once, the fourth waits for the first to finish, nothing is recomputed."""
    s = spec(kv_tokens=16 * 64, admission=Admission.no_evict)
    reqs = Requests(np.zeros(6), np.full(6, 100), np.full(6, 200))
    run = simulate(s, reqs)
    assert run.preemptions == 0
    assert np.all(~np.isnan(run.finished))
    assert run.first_token[3] > np.nanmin(run.finished[:3])
    assert np.all(run.first_token[:3] < np.nanmin(run.finished[:3]))
    # the same cache under vLLM's policy admits all six and preempts
    assert simulate(dataclasses.replace(s, admission=Admission.recompute), reqs).preemptions


def test_a_request_larger_than_the_cache_is_rejected() -> None:
    run = simulate(spec(kv_tokens=1024), one(2000, 10))
    assert run.rejected[0] and np.isnan(run.finished[0])


def random_requests(n: int, rate: float, seed: int) -> Requests:
    rng = np.random.default_rng(seed)
    return Requests(
        np.cumsum(rng.exponential(1 / rate, n)),
        rng.integers(50, 3000, n),
        rng.integers(1, 600, n),
    )


SGLANG = dict(
    separate_prefill=True, graph_prefill=False, graph_max_tokens=16, overlap_schedule=True
)
CASES = {
    # small enough that blocks run short in decode runs: preemptions
    "short cache": (dict(kv_tokens=40_000), 8.0),
    "tiny cache": (dict(kv_tokens=12_000, block_tokens=1), 6.0),
    "few seqs": (dict(max_num_seqs=8), 6.0),
    "small budget": (dict(max_num_batched_tokens=512, max_num_seqs=64), 4.0),
    "light load": ({}, 1.0),
    "overload": ({}, 40.0),
    # TensorRT-LLM's GUARANTEED_NO_EVICT: the cache bounds admission, never a running request
    "no-evict short cache": (dict(kv_tokens=40_000, admission=Admission.no_evict), 8.0),
    "no-evict tiny cache": (
        dict(kv_tokens=12_000, block_tokens=32, admission=Admission.no_evict),
        6.0,
    ),
    "no-evict small budget": (
        dict(max_num_batched_tokens=512, max_num_seqs=64, admission=Admission.no_evict),
        4.0,
    ),
    "no-evict overload": (dict(admission=Admission.no_evict), 40.0),
    # SGLang: prompts and decodes in separate steps, prefill first; eager past its graphs
    "separate light load": (dict(separate_prefill=True, graph_prefill=False), 1.0),
    "separate without overlap": ({**SGLANG, "overlap_schedule": False}, 8.0),
    "overlap, mixed steps": (dict(overlap_schedule=True, kv_tokens=40_000), 8.0),
    "overlap light load": (dict(overlap_schedule=True), 0.5),
    "separate overload": (SGLANG, 40.0),
    "separate short cache": ({**SGLANG, "kv_tokens": 40_000}, 8.0),
    "separate tiny cache": ({**SGLANG, "kv_tokens": 12_000, "block_tokens": 1}, 6.0),
    "separate few seqs": ({**SGLANG, "max_num_seqs": 8}, 6.0),
    "separate small budget": (
        {**SGLANG, "max_num_batched_tokens": 512, "max_num_seqs": 64},
        4.0,
    ),
    "separate no-evict": ({**SGLANG, "kv_tokens": 40_000, "admission": Admission.no_evict}, 8.0),
    # SGLang serving ignore_eos requests: admitted only if the pool holds all to their end
    "fits-to-end short cache": (
        {**SGLANG, "kv_tokens": 60_000, "block_tokens": 1, "admission": Admission.fits_to_end},
        8.0,
    ),
    "fits-to-end overload": (
        {**SGLANG, "kv_tokens": 100_000, "block_tokens": 1, "admission": Admission.fits_to_end},
        40.0,
    ),
    # vLLM: eager past its largest captured step, or every step (enforce_eager)
    "graphs up to 512 tokens": (dict(graph_max_tokens=512), 8.0),
    "enforce eager short cache": (dict(graph_max_tokens=0, kv_tokens=40_000), 8.0),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_engine_takes_every_decision_of_a_plain_step_loop(case: str) -> None:
    changes, rate = CASES[case]
    s = spec(**changes)
    reqs = random_requests(300, rate, seed=len(case))
    run = simulate(s, reqs)
    ref = reference_run(s, reqs)
    assert (run.steps, run.preemptions) == (ref["steps"], ref["preemptions"])
    # the same step durations summed in the same order: the same clock
    np.testing.assert_array_equal(run.first_token, ref["first"])
    np.testing.assert_array_equal(run.finished, ref["done"])
    for got, want in (
        (run.busy_s, ref["busy"]),
        (run.running_area, ref["running_area"]),
        (run.waiting_area, ref["waiting_area"]),
    ):
        assert got == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize("separate", [False, True])
@pytest.mark.parametrize("overlap", [False, True])
@pytest.mark.parametrize("admission", list(Admission))
def test_the_decode_fast_path_is_the_step_by_step_loop(
    admission: Admission, separate: bool, overlap: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    more = {**(SGLANG if separate else {}), "overlap_schedule": overlap}
    s = spec(kv_tokens=40_000, admission=admission, **more)  # blocks run short in decode runs
    reqs = random_requests(300, 8.0, seed=3)
    fast = simulate(s, reqs)
    monkeypatch.setattr(batching._Engine, "decode_only", lambda self: False)
    slow = simulate(s, reqs)
    assert slow.steps == fast.steps and slow.preemptions == fast.preemptions
    if admission is not Admission.fits_to_end:  # (its pool check counts tokens, not blocks)
        assert (fast.preemptions > 0) == (admission is Admission.recompute)
    np.testing.assert_array_equal(fast.first_token, slow.first_token)
    np.testing.assert_array_equal(fast.finished, slow.finished)
    assert fast.waiting_area == pytest.approx(slow.waiting_area, rel=1e-9)


def test_the_same_seed_gives_the_same_latencies() -> None:
    s = spec()
    a = latency_at(s, INPUT, OUTPUT, 10.0, context=CONTEXT, requests=400)
    b = latency_at(s, INPUT, OUTPUT, 10.0, context=CONTEXT, requests=400)
    assert a == b
    c = latency_at(s, INPUT, OUTPUT, 10.0, context=CONTEXT, requests=400, seed=1)
    assert c != a


def test_latency_rises_with_load_and_waits_near_saturation() -> None:
    s = spec()
    top = saturation_rate(s, INPUT, OUTPUT, context=CONTEXT)
    light = latency_at(s, INPUT, OUTPUT, 0.1 * top, context=CONTEXT)
    heavy = latency_at(s, INPUT, OUTPUT, 0.97 * top, context=CONTEXT)
    assert heavy.ttft_p99_s > 2 * light.ttft_p99_s
    assert heavy.tpot_p50_s > light.tpot_p50_s  # prefill-decode interference
    assert heavy.waiting_mean > light.waiting_mean


@pytest.mark.parametrize("share", [0.35, 0.66, 0.85, 0.9])
def test_the_curve_between_its_points_is_within_a_stated_error(share: float) -> None:
    """plan and the twin read latency from a curve of nine load points, linearly interpolated;
    between them it stays within 25 % (P50) and 35 % (P99) of a direct run at that load on
    as many requests as a point there is measured on."""
    s = spec()
    curve = latency_curve(s, INPUT, OUTPUT, CONTEXT)
    rate = share * curve.saturation
    direct = latency_at(s, INPUT, OUTPUT, rate, context=CONTEXT, requests=requests_at(share))
    read = curve.at(rate)
    assert read.ttft_p50_s == pytest.approx(direct.ttft_p50_s, rel=0.25)
    assert read.ttft_p99_s == pytest.approx(direct.ttft_p99_s, rel=0.35)
    assert read.tpot_p50_s == pytest.approx(direct.tpot_p50_s, rel=0.25)


def test_the_saturation_rate_is_what_an_overloaded_engine_takes_in() -> None:
    """Offered twice the saturation rate, the engine admits requests at that rate (within
    5 %): the rate the twin's backlog drains at. Counting completions of a batch that
    started together would overstate it (short requests finish first)."""
    s = spec()
    top = saturation_rate(s, INPUT, OUTPUT, context=CONTEXT)
    reqs = sample_requests(INPUT, OUTPUT, 2 * top, 12_000, seed=5, context=CONTEXT)
    firsts = np.sort(simulate(s, reqs).first_token)
    lo, hi = 3_000, 10_000  # settled, and the queue still long (it grows at `top` per second)
    assert (hi - lo) / (firsts[hi] - firsts[lo]) == pytest.approx(top, rel=0.05)


def test_latency_never_falls_as_the_load_rises() -> None:
    curve = latency_curve(spec(), INPUT, OUTPUT, CONTEXT)
    for a, b in itertools.pairwise(curve.points):
        assert b.ttft_p99_s >= a.ttft_p99_s and b.tpot_p99_s >= a.tpot_p99_s
    assert curve.full_batch > curve.top.running_mean  # a queue fills the batch further


# --- the engine's policy from `--engine` ------------------------------------------------------


@pytest.mark.parametrize(
    ("kv_tokens", "context", "expected"),
    [
        (1_222_102, 131_072, 4096),  # 4,773 requests' worth of pool, clamped to 4,096
        (1_000_000, 131_072, 3906),  # int(1e6 / 131072 * 512)
        (100_000, 131_072, 2048),  # 390, raised to the pool's 2,048
        (3_000, 131_072, 1500),  # never more requests than half the pool's tokens
    ],
)
def test_sglang_sizes_its_running_cap_from_the_kv_pool(
    kv_tokens: int, context: int, expected: int
) -> None:
    assert sglang_max_running(kv_tokens, context) == expected
    assert sglang_max_running(kv_tokens, context, requested=64) == min(64, kv_tokens // 2)


@pytest.mark.parametrize("engine", list(Engine))
def test_the_engine_flag_selects_its_scheduler(engine: Engine) -> None:
    w = standalone_workload(
        model="llama-3.1-70b",
        gpu="h100-80gb",
        quantization=Quantization.fp8,
        context=8192,
        input_tokens=INPUT,
        output_tokens=OUTPUT,
        concurrency=100,
        engine=EngineSettings(engine),
    )
    s = engine_spec(w, 2)
    flags = w.engine.flags(w.gpu_memory, w.gpu.name, 2)
    assert s.block_tokens == flags.block_tokens
    assert s.admission is (Admission.no_evict if engine is Engine.trtllm else Admission.recompute)
    if engine is Engine.sglang:
        assert s.max_num_seqs == sglang_max_running(s.kv_tokens, w.model.max_context)
    else:
        assert s.max_num_seqs == flags.max_num_seqs
