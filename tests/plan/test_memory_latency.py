"""Memory and latency formulas against hand calculations from public figures."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpupact.contract.schema import Quantization
from gpupact.plan.gpus import CATALOGUE as GPUS
from gpupact.plan.latency import prefill_flops, weights_read_per_step
from gpupact.plan.memory import GPU_MEMORY_UTILIZATION, kv_bytes_per_token, kv_copies
from gpupact.plan.memory import replica_memory as memory_of
from gpupact.plan.models import CATALOGUE as MODELS
from gpupact.plan.workload import TokenStats

BF16, FP16, FP8, INT4 = Quantization.bf16, Quantization.fp16, Quantization.fp8, Quantization.int4


def test_weights_bytes() -> None:
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


def test_replica_memory_budget() -> None:
    m = memory_of(MODELS["llama-3.1-70b"], FP16, FP16, 80 * 10**9, 4)
    assert m.usable == 4 * 80 * 10**9 * 9 // 10 == int(4 * 80e9 * GPU_MEMORY_UTILIZATION)
    assert m.kv_room == m.usable - m.weights - 4 * m.overhead_per_gpu
    assert m.kv_tokens == m.kv_room // 327_680
    assert memory_of(MODELS["llama-3.1-70b"], FP16, FP16, 80 * 10**9, 1).kv_room < 0


def test_more_tokens_per_sequence_fewer_sequences() -> None:
    m = memory_of(MODELS["llama-3.1-8b"], BF16, BF16, 80 * 10**9, 1)
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


def test_gpu_catalogue_memory_is_decimal() -> None:
    assert GPUS["h100-80gb"].memory == 80 * 10**9
