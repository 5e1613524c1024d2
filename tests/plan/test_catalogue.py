"""The model and GPU catalogues against the public figures they come from."""

from __future__ import annotations

import pytest

from gpupact.contract.schema import Quantization
from gpupact.plan.gpus import CATALOGUE as GPUS
from gpupact.plan.gpus import find_gpu
from gpupact.plan.models import CATALOGUE as MODELS
from gpupact.plan.models import approximate_dense, find_model


def _dense_params_from_config(name: str, ffn: int, qkv_bias: bool) -> int:
    """Llama/Qwen2 parameter count from config.json fields (untied embeddings)."""
    m = MODELS[name]
    q, kv = m.heads * m.head_dim, m.kv_heads * m.head_dim
    attention = m.hidden * q + 2 * m.hidden * kv + q * m.hidden + (q + 2 * kv if qkv_bias else 0)
    layer = attention + 3 * m.hidden * ffn + 2 * m.hidden
    return 2 * m.vocab * m.hidden + m.layers * layer + m.hidden


@pytest.mark.parametrize(
    ("name", "bias", "card_billions"),
    [
        ("llama-3.1-8b", False, 8.03),
        ("llama-3.1-70b", False, 70.6),
        ("llama-3.1-405b", False, 405.9),
        ("qwen2.5-7b", True, 7.61),
        ("qwen2.5-32b", True, 32.8),
        ("qwen2.5-72b", True, 72.7),
    ],
)
def test_dense_parameter_counts_follow_from_the_config(
    name: str, bias: bool, card_billions: float
) -> None:
    m = MODELS[name]
    assert m.params == _dense_params_from_config(name, m.ffn_width, bias)
    assert m.params / 1e9 == pytest.approx(card_billions, rel=0.005)
    assert m.active_params == m.params and not m.moe and not m.mla


def test_moe_split_into_shared_and_expert_parameters() -> None:
    mixtral = MODELS["mixtral-8x7b"]
    # 8 experts, 2 per token: (46.7 - 12.9) / 6 per expert, the rest shared
    assert mixtral.expert_params == pytest.approx(5.633e9, rel=1e-3)
    assert mixtral.shared_params + 8 * mixtral.expert_params == pytest.approx(46.7e9, rel=1e-6)
    v3 = MODELS["deepseek-v3"]
    assert v3.mla and v3.moe and v3.qk_head_dim == 192
    assert v3.shared_params + 256 * v3.expert_params == pytest.approx(671e9, rel=1e-6)


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("meta-llama/Meta-Llama-3.1-70B-Instruct", "llama-3.1-70b"),
        ("llama-3.1-70b-instruct", "llama-3.1-70b"),
        ("Qwen/Qwen2.5-7B-Instruct", "qwen2.5-7b"),
        ("mistralai/Mixtral-8x7B-Instruct-v0.1", "mixtral-8x7b"),
        ("deepseek-ai/DeepSeek-V3", "deepseek-v3"),
    ],
)
def test_model_names_find_their_entry(name: str, key: str) -> None:
    found = find_model(name)
    assert found is not None and found.name == key


def test_unknown_model_is_none_and_approximates_as_dense() -> None:
    assert find_model("qwen2.5-14b-instruct") is None
    m = approximate_dense("x", 70 * 10**9)
    assert m.approximate and m.kv_heads == 8 and m.head_dim == 128
    assert 70 <= m.layers <= 90 and m.heads % 8 == 0  # Llama-3.1-70B has 80
    assert 6000 <= m.hidden <= 10000


@pytest.mark.parametrize(
    ("label", "key"),
    [
        ("a100-80g", "a100-80gb"),
        ("A100-80GB", "a100-80gb"),
        ("NVIDIA-A100-SXM4-80GB", "a100-80gb"),
        ("h100-80g", "h100-80gb"),
        ("NVIDIA-H100-80GB-HBM3", "h100-80gb"),
        ("l40s", "l40s"),
        ("a100-40g", "a100-40gb"),
        ("h200-141gb", "h200-141gb"),
        ("b200", "b200"),
        ("a10g", "a10g"),
        ("l4", "l4"),
    ],
)
def test_gpu_labels_find_their_spec(label: str, key: str) -> None:
    found = find_gpu(label)
    assert found is not None and found.name == key


def test_gpu_figures() -> None:
    assert find_gpu("t4") is None
    h100, a100 = GPUS["h100-80gb"], GPUS["a100-80gb"]
    assert h100.flops(Quantization.fp8) == 2 * h100.flops(Quantization.bf16)
    assert a100.flops(Quantization.fp8) == a100.flops(Quantization.fp16)  # no fp8 cores
    assert h100.flops(Quantization.fp32) == h100.flops(Quantization.bf16) / 2
    # H200 is an H100 with more and faster memory
    assert GPUS["h200-141gb"].bf16_tflops == h100.bf16_tflops
    assert GPUS["h200-141gb"].bandwidth > h100.bandwidth
    assert all(g.memory >= 24 * 10**9 and g.bandwidth > 0 for g in GPUS.values())
