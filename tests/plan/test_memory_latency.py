"""Memory and latency formulas against hand calculations from public figures."""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction

import pytest

from gpupact.contract.schema import Quantization
from gpupact.plan import overhead
from gpupact.plan.engine_flags import Engine, default_flags
from gpupact.plan.gpus import CATALOGUE as GPUS
from gpupact.plan.latency import prefill_flops, weights_read_per_step
from gpupact.plan.memory import EngineSettings, kv_bytes_per_token, kv_copies
from gpupact.plan.memory import replica_memory as memory_of
from gpupact.plan.models import CATALOGUE as MODELS
from gpupact.plan.weights import gpu_weight_bytes
from gpupact.plan.workload import TokenStats

BF16, FP16, FP8, INT4 = Quantization.bf16, Quantization.fp16, Quantization.fp8, Quantization.int4
GIB = 2**30


def test_flat_weight_bytes() -> None:
    # Quantization.weight_bytes is params x bits (what a decode step streams, roughly); the
    # memory plan uses plan.weights' matrix-by-matrix count with scales
    assert FP16.weight_bytes(MODELS["llama-3.1-70b"].params) == pytest.approx(141.1e9, rel=1e-3)
    assert FP8.weight_bytes(MODELS["llama-3.1-70b"].params) == pytest.approx(70.55e9, rel=1e-3)
    assert INT4.weight_bytes(MODELS["llama-3.1-8b"].params) == 8_030_261_248 // 2


def test_kv_bytes_per_token() -> None:
    assert kv_bytes_per_token(MODELS["llama-3.1-8b"], BF16) == 2 * 32 * 8 * 128 * 2 == 131_072
    assert kv_bytes_per_token(MODELS["llama-3.1-70b"], BF16) == 2 * 80 * 8 * 128 * 2
    assert kv_bytes_per_token(MODELS["qwen2.5-7b"], BF16) == 2 * 28 * 4 * 128 * 2
    assert kv_bytes_per_token(MODELS["llama-3.1-8b"], FP8) == 65_536
    # MLA caches the 512-wide latent and the 64-wide RoPE key per layer, not 128 heads' K/V
    assert kv_bytes_per_token(MODELS["deepseek-v3"], BF16) == 61 * (512 + 64) * 2 == 70_272


def test_kv_copies_under_tensor_parallelism() -> None:
    assert kv_copies(MODELS["llama-3.1-70b"], 8) == 1  # 8 KV heads over 8 GPUs
    assert kv_copies(MODELS["qwen2.5-7b"], 4) == 1
    assert kv_copies(replace(MODELS["qwen2.5-7b"], heads=32), 8) == 2  # 4 KV heads, 8 GPUs
    assert kv_copies(MODELS["deepseek-v3"], 8) == 8  # the latent lives on every GPU


def test_vllm_budget_by_hand() -> None:
    # vLLM: KV = memory x utilization - weights - activation peak - non-torch, whole blocks
    device = round(79.22 * GIB)
    m = memory_of(MODELS["llama-3.1-70b"], FP16, FP16, device, 4, gpu_name="h100")
    assert m.usable_per_gpu == device * 9 // 10 and m.usable == 4 * m.usable_per_gpu
    assert m.weights_per_gpu == gpu_weight_bytes(MODELS["llama-3.1-70b"], FP16, 4).total
    assert m.kv_room_per_gpu == m.usable_per_gpu - m.weights_per_gpu - m.activation - m.non_torch
    per_gpu = 327_680 // 4  # 8 KV heads over 4 GPUs
    assert m.kv_per_token_gpu == per_gpu
    assert m.kv_tokens == m.kv_room_per_gpu // (16 * per_gpu) * 16
    assert memory_of(MODELS["llama-3.1-70b"], FP16, FP16, device, 1).kv_room < 0


def test_sglang_and_trtllm_budgets_by_hand() -> None:
    device, model = round(79.22 * GIB), MODELS["llama-3.1-8b"]
    sglang = memory_of(model, BF16, BF16, device, 1, EngineSettings(Engine.sglang, 0.85))
    assert sglang.kv_room_per_gpu == (
        device * 85 // 100 - sglang.weights_per_gpu - overhead.non_torch(1)
    )
    assert sglang.kv_tokens == sglang.kv_room_per_gpu // 131_072  # pages of one token
    trt = memory_of(model, BF16, BF16, device, 1, EngineSettings(Engine.trtllm))
    free = device - overhead.CUDA_CONTEXT_BYTES - trt.weights_per_gpu - trt.overhead_per_gpu
    assert trt.kv_room_per_gpu == math.floor(free * Fraction(9, 10))


def test_engine_defaults() -> None:
    h100, a100 = round(79.22 * GIB), round(79.25 * GIB)
    vllm = default_flags(Engine.vllm, h100, "h100-80gb", 1)
    assert (vllm.max_num_seqs, vllm.max_num_batched_tokens, vllm.block_tokens) == (1024, 8192, 16)
    small = default_flags(Engine.vllm, a100, "a100-80gb", 1)  # vLLM keeps A100s at 2048 / 256
    assert (small.max_num_seqs, small.max_num_batched_tokens) == (256, 2048)
    assert default_flags(Engine.sglang, round(23.6 * GIB), "l4", 1).max_num_batched_tokens == 2048
    assert default_flags(Engine.sglang, h100, "h100", 8).max_num_batched_tokens == 8192
    assert default_flags(Engine.sglang, round(178 * GIB), "b200", 8).max_num_batched_tokens == 16384
    # mem_fraction_static = (memory - reserved) / memory, reserved 9.5 + tp/2 GiB below 90 GiB
    assert float(default_flags(Engine.sglang, h100, "h100", 4).memory_fraction) == round(
        (79.22 - 11.5) / 79.22, 3
    )
    trt = default_flags(Engine.trtllm, h100, "h100", 1)
    assert (trt.max_num_seqs, trt.max_num_batched_tokens) == (2048, 8192)


def test_activation_peak_follows_the_step_budget() -> None:
    m = MODELS["llama-3.1-8b"]
    # per token: residual, its normed copy and the output (3 x 4096) beside gate/up (2 x 14336)
    # and the activation (14336), 2 bytes each
    assert overhead.forward_peak(m, 1, 20_000) == 20_000 * 2 * (3 * 4096 + 3 * 14336)
    # vLLM issue #10517 (RTX 3090): peak torch 17.06 GiB - 14.99 GiB of weights at 20,000
    assert overhead.forward_peak(m, 1, 20_000) / GIB == pytest.approx(17.06 - 14.99, rel=0.02)
    assert overhead.forward_peak(m, 2, 8192) < overhead.forward_peak(m, 1, 8192)
    sampler = overhead.sampler_peak(m, 1024)
    assert sampler == 1024 * 128_256 * overhead.SAMPLER_BYTES_PER_LOGIT
    assert overhead.activation_peak(m, 1, 8192, 1024) == max(
        overhead.forward_peak(m, 1, 8192), sampler
    )
    # the sampler never sees more requests than the step has tokens
    assert overhead.activation_peak(m, 1, 64, 1024) == max(
        overhead.forward_peak(m, 1, 64), overhead.sampler_peak(m, 64)
    )
    assert overhead.non_torch(4) > overhead.non_torch(1)


def test_more_tokens_per_sequence_fewer_sequences() -> None:
    m = memory_of(MODELS["llama-3.1-8b"], BF16, BF16, round(79.22 * GIB), 1)
    counts = [m.sequences(t) for t in (2_000, 4_000, 8_000, 32_000)]
    assert counts == sorted(counts, reverse=True) and counts[0] > counts[-1] >= 1


def test_prefill_flops() -> None:
    m = MODELS["llama-3.1-8b"]
    assert prefill_flops(m, 1) == 2 * m.params + 32 * 32 * 256
    # attention grows with the square of the prompt: 30% on top of the matmuls at 32k for 70B
    big = MODELS["llama-3.1-70b"]
    share = prefill_flops(big, 32768) / (2 * big.params * 32768) - 1
    assert 0.25 < share < 0.35


def test_moe_decode_reads_only_the_experts_its_batch_routes_to() -> None:
    m = MODELS["mixtral-8x7b"]
    one = weights_read_per_step(m, BF16, 1)
    assert one == BF16.weight_bytes(m.active_params)  # 2 of 8 experts
    many = weights_read_per_step(m, BF16, 64)
    assert many == pytest.approx(BF16.weight_bytes(m.params), rel=1e-6)  # all of them
    assert one < weights_read_per_step(m, BF16, 4) < many
    dense = MODELS["llama-3.1-8b"]
    assert weights_read_per_step(dense, BF16, 1) == weights_read_per_step(dense, BF16, 256)


def test_token_means_are_log_normal() -> None:
    assert TokenStats(800, 800).mean == 800
    t = TokenStats(800, 6000)
    assert t.mean > t.p50
    # sigma = ln(7.5) / 1.645 = 1.2249; mean = 800 exp(sigma^2 / 2) = 1694
    assert t.mean == pytest.approx(1694.1, abs=0.5)


def test_gpu_memory_is_what_the_runtime_reports() -> None:
    # vLLM logs "total_gpu_memory (79.22GiB)" on an "80 GB" H100 (vLLM PR #10511)
    assert GPUS["h100-80gb"].memory == round(79.22 * GIB)
    assert GPUS["h100-80gb"].memory_source.endswith("/pull/10511")
    assert all(g.memory < 200 * GIB for g in GPUS.values())
