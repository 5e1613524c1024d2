"""Weight bytes matrix by matrix: each format's scales, what stays 16-bit, tensor parallelism."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpupact.contract.schema import Quantization as Q
from gpupact.plan.models import CATALOGUE as MODELS
from gpupact.plan.weights import gpu_weight_bytes, linear_bytes, weight_bytes

K, N = 4096, 14336  # one Llama-3-8B gate projection


@pytest.mark.parametrize(
    ("fmt", "expected"),
    [
        (Q.bf16, 2 * K * N),
        (Q.fp32, 4 * K * N),
        # AWQ/GPTQ: 4-bit weights, per group of 128 inputs an fp16 scale and a 4-bit zero
        (Q.int4, K * N // 2 + (K // 128) * N * 2 + (K // 128) * N // 2),
        # bitsandbytes nf4: 4-bit, an 8-bit absmax per 64 weights, an fp32 one per 256 blocks
        (Q.nf4, K * N // 2 + K * N // 64 + 4 * (K * N // 64 // 256)),
        (Q.int8, K * N + 4 * N),  # w8a8: per-channel fp32 scales
        (Q.fp8, K * N + 4),  # one scale per tensor
        (Q.fp8_channel, K * N + 4 * N),
        (Q.fp8_block, K * N + 4 * (K // 128) * (N // 128)),  # DeepSeek-V3 weight_scale_inv
    ],
)
def test_linear_layer_bytes(fmt: Q, expected: int) -> None:
    assert linear_bytes(fmt, K, N) == expected


def test_scales_cost_what_the_formats_say() -> None:
    # AWQ/GPTQ group-128: 4 + (16 + 4) / 128 = 4.156 bits; QLoRA's double quantisation 4.127
    assert linear_bytes(Q.int4, K, N) * 8 / (K * N) == pytest.approx(4.156, abs=1e-3)
    assert linear_bytes(Q.nf4, K, N) * 8 / (K * N) == pytest.approx(4.127, abs=1e-3)


def test_embeddings_norms_and_router_stay_16_bit() -> None:
    m = MODELS["llama-3.1-8b"]
    bf16, awq = gpu_weight_bytes(m, Q.bf16, 1), gpu_weight_bytes(m, Q.int4, 1)
    assert awq.embeddings == bf16.embeddings == 2 * 128_256 * 4096 * 2
    assert awq.replicated == bf16.replicated == 2 * 4096 * (2 * 32 + 1)
    layer = (
        linear_bytes(Q.int4, 4096, 6144)  # q, k, v
        + linear_bytes(Q.int4, 4096, 4096)  # o
        + linear_bytes(Q.int4, 4096, 2 * 14336)  # gate, up
        + linear_bytes(Q.int4, 14336, 4096)  # down
    )
    assert awq.attention + awq.mlp == 32 * layer
    # the 16-bit embeddings (1.96 GiB) are why a 4-bit 8B model is 5.33 GiB, not
    # 8.03B x 4.156 / 8 = 3.89 GiB
    assert awq.total == pytest.approx(5.33 * 2**30, rel=0.005)
    assert awq.total > 1.3 * Q.int4.weight_bytes(m.params)
    mixtral = gpu_weight_bytes(MODELS["mixtral-8x7b"], Q.int4, 1)
    assert mixtral.replicated == 2 * 4096 * (2 * 32 + 1) + 32 * 4096 * 8 * 2  # router in bf16


def test_bf16_bytes_are_the_parameter_count_twice() -> None:
    for name in ("llama-2-7b", "qwen2.5-72b", "mixtral-8x7b", "deepseek-v3", "gemma-2-9b"):
        m = MODELS[name]
        assert weight_bytes(m, Q.bf16) == 2 * m.params, name


def test_tensor_parallel_shares() -> None:
    m = MODELS["llama-3.1-70b"]
    one, four = gpu_weight_bytes(m, Q.bf16, 1), gpu_weight_bytes(m, Q.bf16, 4)
    assert four.attention * 4 == one.attention and four.mlp * 4 == one.mlp
    assert four.embeddings * 4 == one.embeddings  # the vocabulary is split
    assert four.replicated == one.replicated  # norms on every GPU
    # 4 KV heads over 8 GPUs: k and v are replicated, q and o split
    q3 = MODELS["qwen3-235b-a22b"]
    one_gpu, eight = gpu_weight_bytes(q3, Q.bf16, 1), gpu_weight_bytes(q3, Q.bf16, 8)
    kv = 2 * q3.hidden * q3.head_dim * 2 * q3.layers  # one KV head's k and v, all layers
    assert eight.attention * 8 == one_gpu.attention + 4 * kv
    # MLA's q_a / kv_a projections are replicated: a TP-8 share is more than an eighth
    v3 = MODELS["deepseek-v3"]
    assert 8 * gpu_weight_bytes(v3, Q.bf16, 8).attention > gpu_weight_bytes(v3, Q.bf16, 1).attention


def test_vocabulary_is_padded_before_it_is_split() -> None:
    m = replace(MODELS["llama-3.1-8b"], vocab=128_257)
    assert gpu_weight_bytes(m, Q.bf16, 1).embeddings == 2 * 128_320 * 4096 * 2


def test_a_declared_parameter_count_keeps_embeddings_16_bit() -> None:
    m = replace(MODELS["llama-3.1-8b"], declared_params=MODELS["llama-3.1-8b"].params)
    assert m.params == 8_030_261_248
    exact, declared = (
        gpu_weight_bytes(MODELS["llama-3.1-8b"], Q.int4, 1),
        gpu_weight_bytes(m, Q.int4, 1),
    )
    assert declared.embeddings == exact.embeddings
    assert declared.total == pytest.approx(exact.total, rel=0.01)


@pytest.mark.parametrize(
    ("alias", "fmt"),
    [("awq", Q.int4), ("GPTQ", Q.int4), ("w8a8", Q.int8), ("bnb-4bit", Q.nf4),
     ("fp8_block", Q.fp8_block), ("fp8-dynamic", Q.fp8_channel), ("bfloat16", Q.bf16)],
)  # fmt: skip
def test_the_names_users_know_formats_by(alias: str, fmt: Q) -> None:
    assert Q(alias) is fmt
