"""What the twin reads of a contract's replica: the same engine and curve plan sizes with."""

from __future__ import annotations

import pytest
from plan_helpers import acme, contract

from gpupact.contract.schema import ModelSpec, Quantization
from gpupact.plan.gpus import CATALOGUE as GPUS
from gpupact.plan.memory import EngineSettings, replica_memory
from gpupact.plan.models import CATALOGUE as MODELS
from gpupact.plan.planner import plan_service
from gpupact.plan.serving import replica_serving, timeslice_memory_problem


def test_the_twin_and_plan_read_one_curve() -> None:
    c = contract()
    serving = replica_serving(c, c.services[0])
    planned = plan_service(c, "chat")
    assert serving.curve is planned.serving.curve  # one cached curve, not two models
    assert serving.spec == planned.serving.spec


def test_time_slicing_shares_compute_bandwidth_and_memory() -> None:
    c = contract()
    one = replica_serving(c, c.services[0])
    two = replica_serving(c, c.services[0], timeslice=2)
    assert (two.spec.compute_share, two.spec.bandwidth_share) == (0.5, 0.5)
    # the two engines of a GPU hold their weights and KV caches at once: each starts with
    # --gpu-memory-utilization 0.45, its KV cache what is left of 0.45 x 79.2 GiB after the
    # 8B model's weights and the engine's overhead (plan's memory model)
    gpu = GPUS["h100-80gb"]
    half = replica_memory(
        MODELS["llama-3.1-8b"], Quantization.bf16, Quantization.bf16, gpu.memory, 1,
        EngineSettings(memory_fraction=0.45), gpu.name,
    )  # fmt: skip
    assert two.spec.kv_tokens == half.kv_tokens
    whole_kv = one.spec.kv_tokens
    weights_and_overhead = half.weights_per_gpu + half.overhead_per_gpu
    kv_bytes = (0.45 * gpu.memory - weights_and_overhead) / half.kv_per_token_gpu
    assert two.spec.kv_tokens == pytest.approx(kv_bytes, abs=16)  # whole blocks of 16
    assert two.spec.kv_tokens < whole_kv / 2
    # decode is bandwidth-bound: an idle replica's TPOT doubles, less the fixed overheads
    ratio = two.curve.points[0].tpot_p50_s / one.curve.points[0].tpot_p50_s
    assert 1.7 < ratio <= 2.0
    assert two.curve.saturation < 0.6 * one.curve.saturation


def test_plan_and_twin_give_a_time_sliced_replica_one_capacity() -> None:
    c = contract(pool={"sharing": "timeslice:2"})
    serving = replica_serving(c, c.services[0])  # the pool's time-slicing, as the twin
    planned = plan_service(c, "chat")
    assert serving.spec == planned.serving.spec
    assert serving.curve is planned.serving.curve
    assert serving.curve.capacity(2.0) == planned.serving.curve.capacity(2.0)
    assert planned.replica.memory.kv_tokens == serving.spec.kv_tokens
    assert planned.replica.memory.utilization == pytest.approx(0.45)
    notes = " ".join(planned.workload.assumptions)
    assert "--gpu-memory-utilization 0.45" in notes
    assert planned.ok


def test_a_model_that_fits_a_gpu_but_not_its_time_slice_serves_nothing() -> None:
    # Qwen2.5-14B bf16 (29.5 GB of weights) on an 80 GB GPU shared four ways: 0.225 x 79.2
    # GiB is 17.8 GiB an engine, below its weights
    service = {"model": {"name": "qwen2.5-14b-instruct", "params": "14B"}}
    alone = contract(service)
    shared = contract(service, pool={"sharing": "timeslice:4"})
    assert replica_serving(alone, alone.services[0]).curve is not None
    assert replica_serving(shared, shared.services[0]).curve is None
    assert timeslice_memory_problem(alone, alone.services[0]) is None
    problem = timeslice_memory_problem(shared, shared.services[0])
    assert problem is not None
    assert "each gets 1/4 of the budget (0.225 x 79.2 GiB = 17.8 GiB a GPU)" in problem
    assert "its weights" in problem and "on a GPU of its own it would fit" in problem
    planned = plan_service(shared, "chat")
    assert [f.code for f in planned.findings if f.code == "timeslice-memory"] == [
        "timeslice-memory"
    ]
    assert not planned.ok and planned.replicas is None


def test_a_mig_slice_has_its_compute_and_memory_slices() -> None:
    c = contract(gpu={"model": "a100-80g", "memory": "80Gi"}, pool={"sharing": "mig:3g.40gb"})
    serving = replica_serving(c, c.services[0])
    assert serving.spec.compute_share == pytest.approx(3 / 7)
    assert serving.spec.bandwidth_share == pytest.approx(4 / 8)


@pytest.mark.parametrize(
    ("gpu", "profile", "compute", "memory"),
    [
        ({"model": "h100-80g", "memory": "80Gi"}, "mig:1g.10gb", 1, 1),
        ({"model": "h100-80g", "memory": "80Gi"}, "mig:1g.20gb", 1, 2),
        ({"model": "h100-80g", "memory": "80Gi"}, "mig:4g.40gb", 4, 4),
        ({"model": "a100-40g", "memory": "40Gi"}, "mig:3g.20gb", 3, 4),
    ],
)
def test_a_mig_slices_bandwidth_follows_its_memory_slices(
    gpu: dict, profile: str, compute: int, memory: int
) -> None:
    c = contract(gpu=gpu, pool={"sharing": profile})
    serving = replica_serving(c, c.services[0])
    assert serving.spec.compute_share == pytest.approx(compute / 7)
    assert serving.spec.bandwidth_share == pytest.approx(memory / 8)


def test_a_service_without_a_model_gets_the_default_engine() -> None:
    c = contract({"model": None})
    assert replica_serving(c, c.services[0]).curve is not None
    workload = plan_service(c, "chat").workload
    assert any(note.startswith("no model declared") for note in workload.assumptions)
    # weights fill half of 90% of the H100's 80 GiB: 19.3B bf16 parameters
    assert workload.model.params == 80 * 2**30 * 9 // 10 // 2 // 2


def test_a_model_that_does_not_fit_serves_nothing() -> None:
    # 70B fp16 (141 GB) on one 80 GB GPU: the plan reports it; the twin's replica serves nothing
    c = contract({"model": {"name": "llama-3.1-70b", "params": "70B"}})
    assert replica_serving(c, c.services[0]).curve is None


def test_acme_services_are_engines_in_proportion_to_their_models() -> None:
    c = acme()
    by_name = {s.name: replica_serving(c, s) for s in c.services}
    small, large = by_name["cs-agent"], by_name["llm-70b-tp4"]
    assert small.curve is not None and large.curve is not None
    assert large.spec.tp == 4
    # an idle 70B over four GPUs decodes slower than a 14B on one
    assert large.curve.points[0].tpot_p50_s > small.curve.points[0].tpot_p50_s


def test_model_spec_weight_bytes_is_the_quantization_rule() -> None:
    spec = ModelSpec.model_validate({"name": "m", "params": "70B", "quantization": "int4"})
    assert spec.weight_bytes == 35 * 10**9


def test_a_kv_cache_below_one_full_context_serves_nothing() -> None:
    """vLLM does not start when its KV cache cannot hold one request of max_model_len (the
    contextLength compile passes as MAX_MODEL_LEN): the twin's replica serves nothing even
    when the median request would fit. Llama-3.1-70B fp8 on one H100 leaves ~1,450 tokens of
    KV cache: enough for a 1,024-token context, not for an 8,192-token one whose median
    request (~1,300 tokens) it would hold."""
    fp8 = {"name": "llama-3.1-70b", "params": "70B", "quantization": "fp8"}
    short = contract({"model": fp8, "tensorParallel": 1, "contextLength": 1024})
    long = contract({"model": fp8, "tensorParallel": 1, "contextLength": 8192})
    served = replica_serving(long, long.services[0])
    median = served.input.p50 + served.output.p50
    assert median <= served.spec.kv_tokens < 8192
    assert replica_serving(short, short.services[0]).curve is not None
    assert served.curve is None
