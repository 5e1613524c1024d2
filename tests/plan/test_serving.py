"""ReplicaProfile: what the twin's serving model reads, checked against hand calculations."""

from __future__ import annotations

import math

import pytest
from plan_helpers import acme, contract

from gpupact.contract.schema import ModelSpec
from gpupact.plan.latency import DECODE_BANDWIDTH_EFFICIENCY, PREFILL_MFU
from gpupact.plan.memory import GIB
from gpupact.plan.planner import plan_service
from gpupact.plan.serving import ReplicaProfile, replica_profile


def test_service_time_and_ttft_by_hand() -> None:
    p = ReplicaProfile(10, prefill_tokens_per_s=4000.0, decode_tokens_per_s=25.0,
                       mean_input_tokens=2000.0, mean_output_tokens=250.0)  # fmt: skip
    assert p.service_time_s() == pytest.approx(2000 / 4000 + 250 / 25)
    assert p.ttft_s(1.5) == pytest.approx(1.5 + 0.5)
    assert p.ttft_s(0.0, input_tokens=8000) == pytest.approx(2.0)


def test_llama_8b_on_h100_by_hand() -> None:
    tokens = {"input": {"p50": 4000, "p95": 4000}, "output": {"p50": 1000, "p95": 1000}}
    c = contract({"tokens": tokens})
    p = replica_profile(c, c.services[0])
    # constant token counts (p50 == p95): the means are the counts
    assert p.mean_input_tokens == pytest.approx(4000)
    assert p.mean_output_tokens == pytest.approx(1000)
    params, layers, heads, head_dim = 8_030_261_248, 32, 32, 128
    flops_per_token = 2 * params + layers * heads * 2 * head_dim * 4000
    assert p.prefill_tokens_per_s == pytest.approx(989.5e12 * PREFILL_MFU / flops_per_token)
    # KV: 80 GiB x 0.9 - 16.06 GB weights - runtime/activations, 131,072 bytes per token
    kv_room = int(80 * GIB * 0.9) - 2 * params
    assert p.max_sequences < 256  # below vLLM's max_num_seqs: KV-bound
    assert p.max_sequences <= kv_room // (131_072 * 5000)
    assert p.max_sequences >= (kv_room - 4 * GIB) // (131_072 * 5000)
    # decode at the full batch: weights plus the batch's KV (prompt + half the completion)
    step = 2 * params + p.max_sequences * 4500 * 131_072
    assert p.decode_tokens_per_s == pytest.approx(3350e9 * DECODE_BANDWIDTH_EFFICIENCY / step)


def test_slowdown_divides_compute_and_bandwidth() -> None:
    c = contract()
    fast = replica_profile(c, c.services[0])
    slow = replica_profile(c, c.services[0], slowdown=2.0)
    assert slow.prefill_tokens_per_s == pytest.approx(fast.prefill_tokens_per_s / 2)
    assert slow.decode_tokens_per_s == pytest.approx(fast.decode_tokens_per_s / 2)
    assert slow.max_sequences == fast.max_sequences  # memory is not time-sliced away
    assert slow.service_time_s() == pytest.approx(2 * fast.service_time_s())


def test_a_service_without_a_model_gets_the_default_profile() -> None:
    c = contract({"model": None})
    p = replica_profile(c, c.services[0])
    assert p.max_sequences >= 1
    workload = plan_service(c, "chat").workload
    assert any(note.startswith("no model declared") for note in workload.assumptions)
    # weights fill half of 90% of the H100's 80 GiB: 19.3B bf16 parameters
    assert workload.model.params == 80 * 2**30 * 9 // 10 // 2 // 2
    assert math.isfinite(p.service_time_s()) and p.service_time_s() > 0


def test_a_model_that_does_not_fit_still_yields_one_sequence() -> None:
    # 70B fp16 (141 GB) on one 80 GB GPU: the plan reports it; the twin still gets a profile
    c = contract({"model": {"name": "llama-3.1-70b", "params": "70B"}})
    assert replica_profile(c, c.services[0]).max_sequences == 1


def test_acme_services_have_profiles_in_proportion_to_their_models() -> None:
    c = acme()
    by_name = {s.name: replica_profile(c, s) for s in c.services}
    small, large = by_name["cs-agent"], by_name["llm-70b-tp4"]
    # a 14B model on one A100 vs 70B over four: per-GPU prefill is ~5x faster for the 14B
    per_gpu_small, per_gpu_large = small.prefill_tokens_per_s, large.prefill_tokens_per_s / 4
    assert 3.5 < per_gpu_small / per_gpu_large < 6
    assert all(p.max_sequences >= 1 for p in by_name.values())


def test_model_spec_weight_bytes_is_the_quantization_rule() -> None:
    spec = ModelSpec.model_validate({"name": "m", "params": "70B", "quantization": "int4"})
    assert spec.weight_bytes == 35 * 10**9
