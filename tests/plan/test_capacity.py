"""Tensor parallelism, replicas, nodes, TTFT under load, pre-warm lead, and findings."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest
from plan_helpers import acme, contract

from gpupact.contract.schema import ColdStart, Quantization
from gpupact.errors import InputError
from gpupact.plan.capacity import (
    ENGINE_START_S,
    MODEL_LOAD_BYTES_PER_S,
    plan_workload,
    smallest,
)
from gpupact.plan.engine_flags import Engine
from gpupact.plan.memory import EngineSettings
from gpupact.plan.planner import plan_contract, plan_service
from gpupact.plan.prewarm import PrewarmSchedule
from gpupact.plan.replica import choose_tp, tp_candidates
from gpupact.plan.standalone import standalone_workload
from gpupact.plan.workload import TokenStats, Workload

FP16, FP8 = Quantization.fp16, Quantization.fp8


def workload(model: str = "llama-3.1-70b", gpu: str = "h100-80gb", **kw: object) -> Workload:
    args: dict = {
        "model": model,
        "gpu": gpu,
        "quantization": FP16,
        "context": 8192,
        "input_tokens": TokenStats(1000, 3000),
        "output_tokens": TokenStats(200, 600),
        "concurrency": 100,
    }
    args.update(kw)
    return standalone_workload(**args)


@pytest.mark.parametrize(
    ("model", "gpu", "quant", "expected"),
    [
        ("llama-3.1-8b", "h100-80gb", FP16, 1),
        # 131 GiB of fp16: two 79.2 GiB H100s keep ~2.4 GiB each for an 8k context
        ("llama-3.1-70b", "h100-80gb", FP16, 2),
        ("llama-3.1-70b", "h100-80gb", FP8, 2),
        ("llama-3.1-70b", "h200-141gb", FP8, 1),
        ("llama-3.1-405b", "h100-80gb", FP8, 8),
        ("mixtral-8x7b", "a100-80gb", FP16, 2),  # 93 GB of weights
        ("deepseek-v3", "h200-141gb", FP8, 8),
        ("qwen2.5-7b", "l4", FP16, 1),
    ],
)
def test_smallest_tensor_parallelism(
    model: str, gpu: str, quant: Quantization, expected: int
) -> None:
    tp, minimum = choose_tp(workload(model, gpu, quantization=quant))
    assert tp == minimum == expected


def test_tp_candidates_divide_the_heads() -> None:
    assert tp_candidates(workload("qwen2.5-7b")) == [1, 2, 4]  # 28 heads
    assert tp_candidates(workload("llama-3.1-8b", gpus_per_node=4)) == [1, 2, 4]


def test_a_model_that_does_not_fit_on_a_node_is_a_finding() -> None:
    plan = plan_workload(workload("llama-3.1-405b"))  # 811 GB of fp16 > 8 x 72 GB
    assert plan.min_tp is None and not plan.ok
    assert [f.code for f in plan.findings] == ["does-not-fit-node"]
    assert plan.replicas is None and plan.gpus is None
    v3 = plan_workload(workload("deepseek-v3", quantization=FP8))  # 671 GB on H100s
    assert [f.code for f in v3.findings] == ["does-not-fit-node"]


def test_declared_tensor_parallelism_too_small_is_a_finding() -> None:
    # a 32k context needs more KV cache than two GPUs keep beside 131 GiB of fp16 weights
    plan = plan_workload(workload(tensor_parallel=2, context=32768))
    assert plan.tp == 2 and plan.min_tp == 4
    assert [f.code for f in plan.findings] == ["tp-too-small"]
    assert "needs at least 4" in plan.findings[0].message


def test_a_declared_tensor_parallelism_that_cannot_split_the_heads_is_a_finding() -> None:
    c = contract({"model": {"name": "qwen2.5-7b", "params": "7B"}, "tensorParallel": 8})
    plan = plan_service(c, "chat")  # 28 heads
    assert plan.tp == 8 and "tp-invalid" in [f.code for f in plan.findings]
    assert "valid: 1, 2, 4" in plan.findings[0].message


def test_a_tight_ttft_slo_raises_tensor_parallelism() -> None:
    long = {"input_tokens": TokenStats(8000, 30000), "context": 32768, "quantization": FP8}
    loose = plan_workload(workload(**long))
    tight = plan_workload(workload(ttft_slo_s=loose.replica.prefill_p95_s * 0.6, **long))
    assert tight.tp > loose.tp == loose.min_tp
    assert tight.replica.prefill_p95_s <= tight.workload.ttft_slo_s
    impossible = plan_workload(workload(ttft_slo_s=0.01, **long))
    assert "ttft-slo" in [f.code for f in impossible.findings]


def test_replicas_by_hand() -> None:
    plan = plan_workload(workload("llama-3.1-8b", concurrency=1000, headroom=20))
    curve = plan.serving.curve
    per_replica = curve.capacity(None) * 0.8  # no SLO: 80% of the top of the curve
    in_flight = per_replica * curve.at(per_replica).e2e_mean_s  # Little
    assert plan.replicas_by == {"throughput": math.ceil(1000 / in_flight)}
    assert plan.replicas == max(plan.replicas_by.values())
    assert plan.gpus == plan.replicas * plan.tp
    assert plan.nodes == math.ceil(plan.gpus / 8)
    # the planned load per replica stays within 80% of what one replica carries
    assert plan.load.rate <= per_replica * (1 + 1e-6)


def test_a_rate_target_divides_by_the_slo_rate() -> None:
    plan = plan_workload(workload("llama-3.1-8b", concurrency=None, rate=40.0, ttft_slo_s=0.3))
    per_replica = plan.serving.curve.capacity(0.3) * 0.8
    assert plan.replicas == math.ceil(40.0 / per_replica)
    assert plan.load.ttft_p99_s <= 0.3


def test_nodes_never_split_a_replica() -> None:
    plan = plan_workload(workload(quantization=FP8, gpus_per_node=6, concurrency=2000))
    assert plan.tp == 2 and plan.replicas_per_node == 3
    assert plan.nodes == math.ceil(plan.replicas / 3)


def test_more_context_fewer_sequences_and_fp8_fewer_gpus() -> None:
    short, long = TokenStats(1000, 1000), TokenStats(6000, 6000)
    a = plan_workload(workload("llama-3.1-8b", input_tokens=short))
    b = plan_workload(workload("llama-3.1-8b", input_tokens=long))
    assert b.replica.sequences < a.replica.sequences
    assert b.serving.curve.saturation < a.serving.curve.saturation
    fp16 = plan_workload(workload(concurrency=400))
    fp8 = plan_workload(workload(concurrency=400, quantization=FP8))
    assert fp8.gpus < fp16.gpus


def test_headroom_adds_replicas() -> None:
    none = plan_workload(workload("llama-3.1-8b", concurrency=None, rate=100.0, headroom=0))
    half = plan_workload(workload("llama-3.1-8b", concurrency=None, rate=100.0, headroom=50))
    assert half.replicas == pytest.approx(2 * none.replicas, abs=1)


def test_ttft_under_load_meets_the_slo_it_was_sized_for() -> None:
    plan = plan_workload(workload("llama-3.1-8b", concurrency=3000, ttft_slo_s=0.5))
    assert plan.ok and plan.load.ttft_p99_s <= 0.5
    fewer = replace(plan.workload, ttft_slo_s=None)
    unsized = plan_workload(fewer)
    assert unsized.replicas <= plan.replicas and unsized.load.ttft_p99_s >= plan.load.ttft_p99_s


def test_smallest_is_a_search() -> None:
    assert smallest(3, lambda n: n >= 3) == 3
    assert smallest(3, lambda n: n >= 37) == 37
    assert smallest(1, lambda n: n * n >= 1000) == 32


def test_prewarm_lead_is_the_cold_start_phases() -> None:
    cold = ColdStart.model_validate(
        {"provision": "4m", "driver": "2m", "devicePlugin": "30s", "imagePull": "3m"}
    )
    plan = plan_workload(workload(cold_start=cold))
    assert plan.prewarm.model_load_estimated
    load = plan.replica.memory.weights / MODEL_LOAD_BYTES_PER_S + ENGINE_START_S
    assert plan.prewarm.lead_s == pytest.approx(570 + load)
    declared = ColdStart.model_validate({"provision": "4m", "modelLoad": "5m"})
    plan = plan_workload(workload(cold_start=declared))
    assert not plan.prewarm.model_load_estimated and plan.prewarm.lead_s == 540


def test_acme_contract_plan() -> None:
    plan = plan_contract(acme())
    assert [p.workload.name for p in plan.services] == ["cs-agent", "llm-70b-tp4"]
    cs, big = plan.services
    assert cs.workload.model.name == "qwen2.5-14b" and not cs.workload.model.approximate
    assert big.tp == 4 and big.min_tp == 2  # declared 4; 131 GiB fits on two A100-80GB
    # the pools name their GPUs `a100-80g` (80 GiB); plan uses what the runtime reports
    assert cs.workload.gpu_memory == big.workload.gpu_memory == round(79.25 * 2**30)
    # the pool's phases: 4m + 2m + 30s + 3m + 4m
    assert cs.prewarm.lead_s == big.prewarm.lead_s == 810
    assert cs.workload.headroom == 20
    assert not plan.findings
    assert plan.pools[0].gpus == cs.gpus + big.gpus


def test_contract_findings_replicas_and_pool() -> None:
    c = contract({"concurrency": 20000, "replicas": {"min": 1, "max": 4}})
    plan = plan_contract(c)
    codes = [f.code for _, f in plan.findings]
    assert "replicas-max" in codes and "pool-nodes-max" in codes and "pool-capacity" in codes


def test_service_headroom_overrides_the_class() -> None:
    c = contract({"headroom": "50%"})
    assert plan_service(c, "chat").workload.headroom == 50


def test_unknown_service_is_bad_input() -> None:
    with pytest.raises(InputError, match="no service named 'nope'"):
        plan_service(contract(), "nope")


def test_time_sliced_and_unknown_gpus_are_assumptions() -> None:
    c = contract(gpu={"model": "rtx-6000", "memory": "48Gi"}, pool={"sharing": "timeslice:2"})
    plan = plan_service(c, "chat")
    notes = " ".join(plan.workload.assumptions)
    assert "not in the catalogue" in notes and "time-sliced" in notes
    assert plan.workload.slowdown == 2.0 and plan.workload.gpu_memory == 48 * 2**30


def test_prewarm_windows_start_scaling_one_lead_early() -> None:
    plan = plan_contract(acme())
    by_name = {w.window: w for w in plan.prewarm}
    assert set(by_name) == {"double-eleven", "month-end"}
    fixed, monthly = by_name["double-eleven"], by_name["month-end"]
    # gpu-burst has no planned service: its declared phases, 4m + 2m + 30s + 3m + 4m
    assert fixed.lead_s == monthly.lead_s == 810
    assert fixed.scale_at == datetime(2026, 11, 9, 23, 46, 30, tzinfo=timezone(timedelta(hours=8)))
    assert monthly.scale_at is None and monthly.scale_schedule == "46 17 28 * *"


@pytest.mark.parametrize(
    ("schedule", "lead_s", "shifted"),
    [
        ("0 18 28 * *", 60, "59 17 28 * *"),
        ("30 9 * * 1-5", 1801, "59 8 * * 1-5"),  # rounded up to whole minutes
        ("5 0 * * *", 600, None),  # would move to the previous day
        ("*/15 8 * * *", 60, None),  # not a single minute
    ],
)
def test_recurring_prewarm_cron_shift(schedule: str, lead_s: float, shifted: str | None) -> None:
    window = PrewarmSchedule("p", "w", lead_s, 1, None, schedule)
    assert window.scale_schedule == shifted


def test_engine_flags_reach_the_engine_spec() -> None:
    # what the user sets of the engine is what the twin's and plan's engine runs with
    flags = EngineSettings(Engine.vllm, 0.5, 64, 1024)
    plan = plan_workload(workload("llama-3.1-8b", engine=flags))
    spec, memory = plan.serving.spec, plan.replica.memory
    assert (spec.max_num_seqs, spec.max_num_batched_tokens) == (64, 1024)
    assert spec.kv_tokens == memory.kv_tokens and memory.utilization == 0.5
    assert spec.kv_per_token == memory.kv_per_token_replica
    default = plan_workload(workload("llama-3.1-8b"))
    # vLLM's own defaults on a 79 GiB H100: 1024 sequences, 8192 tokens a step, 0.9
    assert (default.serving.spec.max_num_seqs, default.serving.spec.max_num_batched_tokens) == (
        1024,
        8192,
    )
    assert default.serving.spec.kv_tokens > 2 * spec.kv_tokens


def test_sglang_keeps_its_activations_outside_the_static_fraction() -> None:
    vllm = plan_workload(workload("llama-3.1-8b")).replica.memory
    sglang = plan_workload(
        workload("llama-3.1-8b", engine=EngineSettings(Engine.sglang))
    ).replica.memory
    assert sglang.overhead_per_gpu == sglang.non_torch < vllm.overhead_per_gpu
    # SGLang's default on a 79 GiB GPU reserves 9.5 + tp/2 GiB
    assert sglang.utilization == pytest.approx(round((79.22 - 10) / 79.22, 3))
