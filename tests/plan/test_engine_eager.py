"""Steps outside CUDA graphs (plan/engine.py `eager`, plan/engine_flags.py `execution`) and
SGLang's separate prefill and decode steps (plan/batching.py `separate_prefill`)."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
from test_engine_batching import random_requests, spec
from typer.testing import CliRunner

from gpupact.cli.main import _register, app
from gpupact.errors import InputError
from gpupact.plan.batching import Requests, simulate
from gpupact.plan.engine import DISPATCH_PER_LAYER_S
from gpupact.plan.engine_flags import (
    Admission,
    Engine,
    execution,
    sglang_fits_to_end,
    sglang_insert,
)

GIB = 2**30
SGLANG = dict(separate_prefill=True, graph_prefill=False, graph_max_tokens=160)


def decode_step(s, batch: int) -> float:
    context = 1000
    return s.step_s(batch, float(batch * (context + 1)), float(batch * context), True)


def test_a_decode_batch_past_the_graphs_pays_the_dispatch() -> None:
    graphed = spec(graph_max_tokens=64)
    eager = spec(graph_max_tokens=63)
    dispatch = graphed.model.layers * DISPATCH_PER_LAYER_S
    assert graphed.dispatch_s == dispatch
    assert decode_step(eager, 64) == pytest.approx(decode_step(graphed, 64) + dispatch, rel=1e-12)
    assert decode_step(eager, 63) == decode_step(graphed, 63)  # within the graphs: no change


def test_an_eager_step_adds_the_dispatch_to_its_kernels_whatever_their_length() -> None:
    """The GPU waits on the CPU between a layer's small kernels however long its matrix
    products take: a large eager prefill pays the dispatch too (a sum, not the longer)."""
    eager, graphed = spec(graph_max_tokens=0), spec()
    tokens = 8192
    pairs = tokens * (tokens + 1) / 2
    big = graphed.step_s(tokens, pairs, 0.0)
    assert big > eager.dispatch_s
    assert eager.step_s(tokens, pairs, 0.0) == pytest.approx(big + eager.dispatch_s, rel=1e-12)


def test_the_vectorised_decode_steps_price_eagerness_as_one_step() -> None:
    for s in (spec(graph_max_tokens=0), spec(), spec(graph_max_tokens=8)):
        reads = np.arange(5, dtype=np.float64) * 1000
        many = s.decode_steps_s(16, reads + 16, reads)
        one = [s.step_s(16, r + 16, r, True) for r in reads]
        assert many.tolist() == one


def test_enforce_eager_makes_every_step_eager() -> None:
    for engine in (Engine.vllm, Engine.sglang):
        run = execution(engine, 80 * GIB, 1, enforce_eager=True)
        s = spec(**dataclasses.asdict(run))
        assert s.eager(1, True) and s.eager(2048, False)


def test_trtllm_never_runs_eagerly_and_refuses_eager_flags() -> None:
    run = execution(Engine.trtllm, 80 * GIB, 4)
    assert run.graph_max_tokens == math.inf
    s = spec(**dataclasses.asdict(run))
    assert not s.eager(10**6, False) and not s.eager(2048, True)
    for flags in (dict(enforce_eager=True), dict(cuda_graph_max_bs=64)):
        with pytest.raises(InputError, match="TensorRT-LLM"):
            execution(Engine.trtllm, 80 * GIB, 4, **flags)


@pytest.mark.parametrize(
    ("memory_gib", "tp", "expected"),
    [(141, 4, 160), (80, 1, 160), (24, 1, 8), (24, 4, 80)],  # 24 GiB < 25,000 MB
)
def test_sglang_graphs_decode_batches_up_to_cuda_graph_max_bs(
    memory_gib: int, tp: int, expected: int
) -> None:
    run = execution(Engine.sglang, memory_gib * GIB, tp)
    assert run.graph_max_tokens == expected and run.separate_prefill
    s = spec(**dataclasses.asdict(run))
    assert not s.eager(expected, True) and s.eager(expected + 1, True)
    assert s.eager(1, False)  # every prefill (extend) batch runs eagerly
    assert execution(Engine.sglang, memory_gib * GIB, tp, cuda_graph_max_bs=32) == (
        dataclasses.replace(run, graph_max_tokens=32)
    )


def test_vllm_is_eager_only_under_enforce_eager() -> None:
    """Steps past vLLM's capture size run its compiled model: no per-layer dispatch."""
    run = execution(Engine.vllm, 80 * GIB, 1)
    s = spec(**dataclasses.asdict(run))
    assert not s.eager(8192, False) and not s.eager(1024, True) and not run.separate_prefill
    assert execution(Engine.vllm, 80 * GIB, 1, enforce_eager=True).graph_max_tokens == 0
    with pytest.raises(InputError, match="--engine sglang"):
        execution(Engine.vllm, 80 * GIB, 1, cuda_graph_max_bs=64)


def test_separate_prefill_stalls_the_decoders_for_a_prompt() -> None:
    """A prompt arriving while a sequence decodes gets a step of its own: the decoder's next
    token waits for it (mixed steps would carry both)."""
    reqs = Requests(np.array([0.0, 0.05]), np.array([100, 3000]), np.array([200, 2]))
    mixed = simulate(spec(), reqs, trace=True)
    separate = simulate(spec(**SGLANG), reqs, trace=True)
    gaps, counts = separate.token_gaps()
    assert gaps.max() > 2 * np.median(np.repeat(gaps, counts))  # the stall
    # the prompt's 3,000 tokens: chunks of 2,048 and 952 in steps of their own
    assert separate.steps == mixed.steps + 2
    # the decoder's longest gap holds both chunks, then its own decode step
    assert gaps.max() > spec(**SGLANG).prefill_s(3000)
    assert mixed.token_gaps()[0].max() < spec().prefill_s(3000)


@pytest.mark.parametrize("changes", [{}, SGLANG, dict(graph_max_tokens=0)])
def test_token_gaps_pool_every_gap_of_every_request(changes: dict) -> None:
    s = spec(**changes)
    run = simulate(s, random_requests(200, 6.0, seed=7), trace=True)
    assert run.preemptions == 0
    gaps, counts = run.token_gaps()
    many = run.requests.output > 1
    assert counts.sum() == (run.requests.output[many] - 1).sum()
    total = np.sum((run.finished - run.first_token)[many])
    assert float(np.sum(gaps * counts)) == pytest.approx(total, rel=1e-9)
    assert (counts >= 0).all()


def test_token_gaps_need_a_trace() -> None:
    run = simulate(spec(), random_requests(10, 1.0, seed=1))
    with pytest.raises(ValueError, match="trace"):
        run.token_gaps()


_register()
FLAGS = ["--model", "llama-3.1-8b", "--gpu", "a100-40gb", "--context", "8192"]


def plan(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["plan", *FLAGS, "--concurrency", "4", *args, "-o", "json"])
    return result.exit_code, result.stdout, result.stderr


def test_plan_enforce_eager_slows_decode() -> None:
    code, out, err = plan()
    assert code in (0, 1), err
    graphs = json.loads(out)["engine"]["idleTpotP50Seconds"]
    code, out, err = plan("--enforce-eager")
    assert code in (0, 1), err
    eager = json.loads(out)["engine"]["idleTpotP50Seconds"]
    assert eager > 1.4 * graphs  # 8B on an A100: ~14 ms of weights, 10 ms of dispatch


def test_plan_refuses_eager_flags_for_trtllm() -> None:
    for flag in (["--enforce-eager"], ["--cuda-graph-max-bs", "64"]):
        code, out, err = plan("--engine", "trtllm", *flag)
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1 and "TensorRT-LLM" in lines[0], (code, out, err)


def test_the_overlap_scheduler_sees_a_request_one_step_late() -> None:
    """SGLang plans each step while the one before runs: a prompt arriving during a decode
    step waits for one more decode step before its prefill."""
    reqs = Requests(np.array([0.0, 0.5]), np.array([100, 500]), np.array([2000, 2]))
    plain = simulate(spec(**{**SGLANG, "overlap_schedule": False}), reqs)
    overlap = simulate(spec(**{**SGLANG, "overlap_schedule": True}), reqs)
    one_decode = spec(**SGLANG).step_s(1, 200.0, 200.0, True)  # A alone, ~200 tokens in
    assert overlap.ttft[1] - plain.ttft[1] == pytest.approx(one_decode, rel=1e-3)
    assert overlap.ttft[0] == plain.ttft[0]  # an idle engine sees a request as it comes


def test_sglang_admits_an_ignore_eos_request_only_if_all_fit_to_their_end() -> None:
    # two running requests with 10 and 30 tokens left, occupying 100 and 50; a candidate
    # with 20 left, occupying 400: in order of tokens left (10, 20, 30) the three must take
    # the next one's 20 tokens each (20 x 3), then with 100 freed the two left 30 x 2, then
    # with 500 freed the last its own 30
    states = [(10, 100), (20, 400), (30, 50)]
    assert not sglang_fits_to_end(states, 60)  # 60 - 20 x 3 = 0
    assert sglang_fits_to_end(states, 61)  # 61 - 60 > 0, 61 + 100 - 60 > 0, 561 - 30 > 0
    assert not sglang_fits_to_end([(10, 0), (30, 0)], 60)  # 60 - 30 x 2: the next one's
    inserted = [(10, 1), (30, 3)]
    sglang_insert(inserted, (20, 2))
    assert inserted == [(10, 1), (20, 2), (30, 3)]
    sglang_insert(inserted, (99, 9))  # none has as many left: before the last, as SGLang does
    assert inserted == [(10, 1), (20, 2), (99, 9), (30, 3)]


def test_fits_to_end_admission_never_preempts() -> None:
    sg = {**SGLANG, "kv_tokens": 60_000, "block_tokens": 1}
    reqs = random_requests(300, 8.0, seed=5)
    assert simulate(spec(**sg), reqs).preemptions > 0
    held = simulate(spec(**sg, admission=Admission.fits_to_end), reqs)
    assert held.preemptions == 0 and np.isnan(held.finished).sum() == 0


def test_plan_cuda_graph_max_bs_is_sglang_s() -> None:
    code, out, err = plan("--engine", "vllm", "--cuda-graph-max-bs", "64")
    assert code == 2 and "--engine sglang" in err, (code, out, err)
    code, out, err = plan("--engine", "sglang", "--cuda-graph-max-bs", "0")
    assert code == 2 and "--enforce-eager" in err, (code, out, err)  # 0 is unset to SGLang
    code, out, err = plan("--engine", "sglang", "--enforce-eager")
    assert code in (0, 1), err
    no_graphs = json.loads(out)["engine"]["idleTpotP50Seconds"]
    code, out, err = plan("--engine", "sglang")
    assert code in (0, 1), err
    assert no_graphs > json.loads(out)["engine"]["idleTpotP50Seconds"]
