"""The model and GPU catalogues against the public figures they come from, name resolution
(quantised names, close names for typos) and the sources docs/plan.md lists for each entry."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpupact.contract.schema import Quantization as Q
from gpupact.plan.gpus import CATALOGUE as GPUS
from gpupact.plan.gpus import find_gpu
from gpupact.plan.models import CATALOGUE as MODELS
from gpupact.plan.models import UnknownModel, find_model, resolve_model

DOCS = Path(__file__).resolve().parents[2] / "docs" / "plan.md"
GIB = 2**30


def test_a_dense_count_by_hand() -> None:
    # Llama-3.1-8B from its config.json: untied 128,256 x 4096 embedding and lm_head, 32 layers
    # of q (4096^2), k and v (4096 x 1024 each), o (4096^2), a 14,336-wide SwiGLU and 2 norms
    layer = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096
    assert MODELS["llama-3.1-8b"].params == 2 * 128_256 * 4096 + 32 * layer + 4096 == 8_030_261_248


# Model cards' parameter counts (billions; total, active for MoE): the derived counts must
# land on them. Sources in docs/plan.md.
CARDS = {
    "llama-2-7b": (6.74, None),
    "llama-2-13b": (13.0, None),
    "llama-2-70b": (69.0, None),
    "llama-3-8b": (8.03, None),
    "llama-3-70b": (70.6, None),
    "llama-3.1-405b": (405.9, None),
    "llama-3.3-70b": (70.6, None),
    "qwen2.5-7b": (7.61, None),
    "qwen2.5-14b": (14.7, None),
    "qwen2.5-32b": (32.5, None),
    "qwen2.5-72b": (72.7, None),
    "qwen3-8b": (8.2, None),
    "qwen3-14b": (14.8, None),
    "qwen3-32b": (32.8, None),
    "qwen3-30b-a3b": (30.5, 3.3),
    "qwen3-235b-a22b": (235.0, 22.0),
    "mixtral-8x7b": (46.7, 12.9),
    "mixtral-8x22b": (141.0, 39.0),
    "gemma-2-9b": (9.24, None),
    "gemma-2-27b": (27.2, None),
    "deepseek-v2": (236.0, 21.0),
    "deepseek-v3": (671.0, 37.0),
}


@pytest.mark.parametrize("name", sorted(CARDS))
def test_parameter_counts_follow_from_the_config(name: str) -> None:
    total, active = CARDS[name]
    m = MODELS[name]
    assert m.params / 1e9 == pytest.approx(total, rel=0.012)
    if active is None:
        assert m.active_params == m.params and not m.moe
    else:
        assert m.active_params / 1e9 == pytest.approx(active, rel=0.03)


def test_moe_split_into_shared_and_expert_parameters() -> None:
    mixtral = MODELS["mixtral-8x7b"]
    assert mixtral.expert_params == 32 * 3 * 4096 * 14336
    assert mixtral.shared_params + 8 * mixtral.expert_params == mixtral.params
    v3 = MODELS["deepseek-v3"]
    assert v3.mla and v3.moe and v3.qk_head_dim == 192 and v3.moe_layers == 58
    assert v3.shared_params + 256 * v3.expert_params == v3.params
    assert v3.native is Q.fp8_block  # the checkpoint itself is FP8 with 128x128 scales


@pytest.mark.parametrize(
    ("name", "key", "fmt"),
    [
        ("meta-llama/Meta-Llama-3.1-70B-Instruct", "llama-3.1-70b", Q.bf16),
        ("llama-3.1-70b-instruct", "llama-3.1-70b", Q.bf16),
        ("meta-llama/Llama-2-7b-chat-hf", "llama-2-7b", Q.bf16),
        ("Qwen/Qwen2.5-72B-Instruct-AWQ", "qwen2.5-72b", Q.int4),
        ("Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4", "qwen2.5-7b", Q.int4),
        ("Qwen/Qwen2.5-7B-Instruct-GPTQ-Int8", "qwen2.5-7b", Q.int8),
        ("neuralmagic/Meta-Llama-3.1-70B-Instruct-quantized.w8a8", "llama-3.1-70b", Q.int8),
        ("neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8", "llama-3.1-8b", Q.fp8),
        ("RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8-dynamic", "llama-3.1-8b", Q.fp8_channel),
        ("Qwen/Qwen3-235B-A22B-FP8", "qwen3-235b-a22b", Q.fp8_block),
        ("unsloth/Qwen2.5-7B-Instruct-bnb-4bit", "qwen2.5-7b", Q.nf4),
        ("unsloth/Llama-3.3-70B-Instruct-bnb-4bit", "llama-3.3-70b", Q.nf4),
        ("mistralai/Mixtral-8x7B-Instruct-v0.1", "mixtral-8x7b", Q.bf16),
        ("deepseek-ai/DeepSeek-V3", "deepseek-v3", Q.fp8_block),
        ("deepseek-ai/DeepSeek-R1", "deepseek-r1", Q.fp8_block),
        ("google/gemma-2-9b-it", "gemma-2-9b", Q.bf16),
        ("Qwen/Qwen3-30B-A3B-Instruct-2507", "qwen3-30b-a3b", Q.bf16),
    ],
)
def test_model_names_resolve_to_base_and_format(name: str, key: str, fmt: Q) -> None:
    resolved = resolve_model(name)
    assert resolved.arch.name == key and resolved.weights is fmt


def test_an_unknown_name_lists_the_closest() -> None:
    with pytest.raises(UnknownModel) as err:
        resolve_model("llama-3.1-7b")
    assert "llama-3.1-8b" in err.value.close
    assert "closest: " in str(err.value) and "--model-config" in str(err.value)
    assert find_model("gpt-9") is None
    # a model the catalogue lacks is never approximated from a near name
    with pytest.raises(UnknownModel):
        resolve_model("qwen2.5-3b-instruct")


def test_every_model_and_gpu_cites_its_source_in_the_docs() -> None:
    docs = DOCS.read_text()
    for m in MODELS.values():
        assert f"https://huggingface.co/{m.repo}/blob/main/config.json" in docs, m.name
    for g in GPUS.values():
        assert re.search(rf"^\| `{re.escape(g.name)}` \|", docs, re.MULTILINE), g.name
        if g.memory_source:
            assert g.memory_source in docs, g.name


@pytest.mark.parametrize(
    ("label", "key"),
    [
        ("a100-80g", "a100-80gb"),
        ("A100-80GB", "a100-80gb"),
        ("NVIDIA-A100-SXM4-80GB", "a100-80gb"),
        ("NVIDIA-A100-80GB-PCIe", "a100-80gb-pcie"),
        ("h100-80g", "h100-80gb"),
        ("NVIDIA-H100-80GB-HBM3", "h100-80gb"),
        ("h100-pcie", "h100-pcie"),
        ("h100-nvl", "h100-nvl"),
        ("h800", "h800"),
        ("h20", "h20"),
        ("gh200", "gh200"),
        ("l40s", "l40s"),
        ("a100-40g", "a100-40gb"),
        ("h200-141gb", "h200-141gb"),
        ("b200", "b200"),
        ("a40", "a40"),
        ("a6000", "rtx-a6000"),
        ("NVIDIA-GeForce-RTX-4090", "rtx-4090"),
        ("3090", "rtx-3090"),
        ("l4", "l4"),
    ],
)
def test_gpu_labels_find_their_spec(label: str, key: str) -> None:
    found = find_gpu(label)
    assert found is not None and found.name == key


def test_gpu_figures() -> None:
    assert find_gpu("t4") is None
    h100, a100 = GPUS["h100-80gb"], GPUS["a100-80gb"]
    assert h100.flops(Q.fp8) == 2 * h100.flops(Q.bf16) == h100.flops(Q.fp8_block)
    assert a100.flops(Q.fp8) == a100.flops(Q.fp16)  # no fp8 cores
    assert a100.flops(Q.int8) == 2 * a100.flops(Q.bf16)  # w8a8 on int8 tensor cores
    assert a100.flops(Q.int4) == a100.flops(Q.bf16)  # weight-only: 16-bit math
    assert h100.flops(Q.fp32) == h100.flops(Q.bf16) / 2
    # H200 is an H100 with more and faster memory; H800 an H100 with a slower NVLink
    assert GPUS["h200-141gb"].bf16_tflops == h100.bf16_tflops
    assert GPUS["h200-141gb"].bandwidth > h100.bandwidth
    assert GPUS["h800"].link_bandwidth < h100.link_bandwidth
    # memory as the runtime reports it: below the datasheet's N GB read as N GiB
    assert h100.memory == round(79.22 * GIB) < 80 * GIB
    assert GPUS["a100-40gb"].memory == round(39.38 * GIB)
    assert all(g.memory > 20 * GIB and g.bandwidth > 0 for g in GPUS.values())
