"""Weights of quantised checkpoints that leave modules in 16 bits (`ModelArch.kept`): Meta's FP8
Llama 3.1 405B by hand, the match rules of each quantisation's list, and the kept path agreeing
with the plain one at its limits (nothing kept, everything kept)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpupact.contract.schema import Quantization as Q
from gpupact.plan.models import CATALOGUE as MODELS
from gpupact.plan.models import KeptModules, kept_pattern_matches, resolve_model
from gpupact.plan.weights import gpu_weight_bytes, kept_names, layer_modules

GIB = 2**30


def test_meta_405b_fp8_weights_per_gpu_by_hand() -> None:
    """TP 8: bf16 attention in all 126 layers, bf16 MLPs in layers 0 and 125, FP8 MLPs with one
    fp32 scale per output row in the other 124, bf16 embedding and lm_head."""
    resolved = resolve_model("meta-llama/Meta-Llama-3.1-405B-Instruct-FP8")
    assert resolved.weights is Q.fp8_channel and resolved.arch.kept is not None
    h, heads, kv, d, width = 16384, 128 // 8, 1, 128, 53248 // 8
    attention = 2 * h * (heads + 2 * kv) * d + 2 * heads * d * h
    mlp_bf16 = 2 * (h * 2 * width) + 2 * (width * h)
    mlp_fp8 = (h * 2 * width + 4 * 2 * width) + (width * h + 4 * h)
    embeddings = 2 * (128256 // 8) * h * 2
    norms = 2 * h * (2 * 126 + 1)
    expected = 126 * attention + 2 * mlp_bf16 + 124 * mlp_fp8 + embeddings + norms
    w = gpu_weight_bytes(resolved.arch, resolved.weights, 8)
    assert w.total == expected
    # vLLM issue 6746: "Loading model weights took 57.7520 GB" on each of 8 H100s
    assert w.total / GIB == pytest.approx(56.73, abs=0.01)
    assert abs(w.total / GIB / 57.752 - 1) < 0.02
    # every linear layer FP8 (the rule ignored) was 47.7 GiB, -17 %
    assert gpu_weight_bytes(MODELS["llama-3.1-405b"], Q.fp8_channel, 8).total / GIB < 48
    assert kept_names(resolved.arch) == 126 * 4 + 2 * 3  # the list's 511 less lm_head


@pytest.mark.parametrize(
    ("name", "kept"),
    [
        ("meta-llama/Llama-3.1-405B-Instruct-FP8", True),
        ("meta-llama/Meta-Llama-3.1-405B-FP8", True),
        ("Llama-3.1-405B-Instruct-FP8", True),  # no organisation: the family's own FP8
        ("neuralmagic/Meta-Llama-3.1-405B-Instruct-FP8", False),  # every linear layer FP8
        ("RedHatAI/Meta-Llama-3.1-405B-Instruct-FP8-dynamic", False),
        ("meta-llama/Llama-3.1-405B-Instruct", False),
        ("meta-llama/Llama-3.1-70B-Instruct-FP8", False),
    ],
)
def test_only_meta_405b_fp8_carries_the_rule(name: str, kept: bool) -> None:
    assert (resolve_model(name).arch.kept is not None) is kept


@pytest.mark.parametrize(
    ("match", "pattern", "name", "expected"),
    [
        # fbgemm_fp8: whole names only (vLLM is_layer_skipped)
        ("exact", "model.layers.0.mlp.down_proj", "model.layers.0.mlp.down_proj", True),
        ("exact", "model.layers.0", "model.layers.0.mlp.down_proj", False),
        # compressed-tensors: whole names or "re:" regexes matched from the start
        ("exact-or-regex", "re:.*self_attn.*", "model.layers.3.self_attn.o_proj", True),
        ("exact-or-regex", "re:self_attn", "model.layers.3.self_attn.o_proj", False),
        ("exact-or-regex", "lm_head", "lm_head", True),
        ("exact-or-regex", "self_attn", "model.layers.3.self_attn.o_proj", False),
        # AWQ: substrings
        ("substring", "self_attn", "model.layers.3.self_attn.o_proj", True),
        ("substring", "mlp.gate", "model.layers.3.mlp.gate_proj", True),
        ("substring", "mlp.gate.", "model.layers.3.mlp.gate_proj", False),
        # bitsandbytes: a dotted component or a leading path
        ("component", "self_attn", "model.layers.3.self_attn.o_proj", True),
        ("component", "model.layers.3", "model.layers.3.mlp.up_proj", True),
        ("component", "model.layers.3", "model.layers.31.mlp.up_proj", False),
        ("component", "attn", "model.layers.3.self_attn.o_proj", False),
        # GPTQ dynamic "-:" keys: regexes from the start
        ("regex", r".*\.layers\.(0|1)\.", "model.layers.1.mlp.up_proj", True),
        ("regex", r".*\.layers\.(0|1)\.", "model.layers.10.mlp.up_proj", False),
    ],
)
def test_match_rules(match: str, pattern: str, name: str, expected: bool) -> None:
    assert kept_pattern_matches(match, pattern, name) is expected


def test_an_unknown_match_rule_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown match"):
        KeptModules(("x",), "glob", "test")


NOTHING = KeptModules((), "exact", "test")
EVERYTHING = KeptModules((r"re:model\.layers\.",), "exact-or-regex", "test")


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("fmt", [Q.int4, Q.fp8, Q.fp8_block, Q.nf4, Q.int8])
def test_kept_path_meets_the_plain_one_at_its_limits(name: str, fmt: Q) -> None:
    m = MODELS[name]
    for tp in (1, 8):
        assert gpu_weight_bytes(replace(m, kept=NOTHING), fmt, tp) == gpu_weight_bytes(m, fmt, tp)
        everything = gpu_weight_bytes(replace(m, kept=EVERYTHING), fmt, tp).total
        assert everything == gpu_weight_bytes(m, Q.bf16, tp).total


def test_moe_and_mla_module_names() -> None:
    mixtral = layer_modules(MODELS["mixtral-8x7b"], 5)
    assert mixtral["expert.7", "gate"] == "model.layers.5.block_sparse_moe.experts.7.w1"
    assert mixtral["expert.7", "up"] == "model.layers.5.block_sparse_moe.experts.7.w3"
    assert mixtral["expert.7", "down"] == "model.layers.5.block_sparse_moe.experts.7.w2"
    v3 = MODELS["deepseek-v3"]
    dense, moe = layer_modules(v3, 0), layer_modules(v3, 3)
    assert dense["mlp", "down"] == "model.layers.0.mlp.down_proj"
    assert ("mlp", "down") not in moe and len([k for k in moe if k[0].startswith("expert.")]) == 768
    assert moe["shared", "up"] == "model.layers.3.mlp.shared_experts.up_proj"
    assert moe["attention", "kv_a"] == "model.layers.3.self_attn.kv_a_proj_with_mqa"
    assert ("attention", "q") not in moe and moe["attention", "q_b"].endswith("q_b_proj")
    lite = layer_modules(MODELS["deepseek-v2-lite"], 1)  # no q_lora_rank: a plain q_proj
    assert ("attention", "q_a") not in lite and lite["attention", "q"].endswith(".q_proj")


def test_kept_experts_and_shared_experts_count_in_16_bits() -> None:
    v3 = MODELS["deepseek-v3"]
    plain = gpu_weight_bytes(v3, Q.int4, 8)
    # every expert's down_proj in layer 3 kept: 256 x (2048 / 8) x 7168 more bf16 bytes, less
    # their int4 bytes and scales
    kept = KeptModules(
        (r"re:model\.layers\.3\.mlp\.experts\.\d+\.down_proj$",), "exact-or-regex", "t"
    )
    w = gpu_weight_bytes(replace(v3, kept=kept), Q.int4, 8)
    part = 2048 // 8
    int4_down = part * 7168 // 2 + (part // 128) * 7168 * 2 + (part // 128) * 7168 // 2
    assert w.experts - plain.experts == 256 * (2 * part * 7168 - int4_down)
    assert w.attention == plain.attention and w.mlp == plain.mlp
    shared = KeptModules(("mlp.shared_experts",), "substring", "t")
    s = gpu_weight_bytes(replace(v3, kept=shared), Q.int4, 8)
    assert s.mlp > plain.mlp and s.experts == plain.experts


def test_experts_keeping_different_parts_are_counted_each_as_it_is() -> None:
    mixtral = MODELS["mixtral-8x7b"]
    kept = KeptModules(
        (
            "model.layers.0.block_sparse_moe.experts.0.w1",  # expert 0's gate
            "model.layers.0.block_sparse_moe.experts.1.w3",  # expert 1's up
            "model.layers.0.block_sparse_moe.experts.1.w2",  # and its down
        ),
        "exact",
        "t",
    )
    k, n = 4096, 14336
    int4 = k * n // 2 + (k // 128) * n * 2 + (k // 128) * n // 2  # gate or up
    int4_down = n * k // 2 + (n // 128) * k * 2 + (n // 128) * k // 2
    plain = gpu_weight_bytes(mixtral, Q.int4, 1)
    w = gpu_weight_bytes(replace(mixtral, kept=kept), Q.int4, 1)
    assert w.experts - plain.experts == 2 * (2 * k * n - int4) + (2 * n * k - int4_down)
    assert kept_names(replace(mixtral, kept=kept)) == 3


def test_a_decode_step_reads_the_kept_modules_in_16_bits() -> None:
    """A step reads the weights as stored: Meta's FP8 405B reads its bf16 attention and its two
    bf16 MLPs too, as much more than an all-FP8 405B as its weights hold more."""
    from gpupact.plan.latency import weights_read_per_step

    meta = resolve_model("meta-llama/Meta-Llama-3.1-405B-Instruct-FP8")
    plain = replace(meta.arch, kept=None)
    ratio = weights_read_per_step(meta.arch, meta.weights, 1) / weights_read_per_step(
        plain, meta.weights, 1
    )
    stored = gpu_weight_bytes(meta.arch, meta.weights, 1).total
    assert ratio == pytest.approx(stored / gpu_weight_bytes(plain, meta.weights, 1).total)
    assert 1.15 < ratio < 1.25  # 72 B attention parameters of 405 B in bf16
    llama = MODELS["llama-3.1-8b"]
    assert weights_read_per_step(llama, Q.fp8, 1) == Q.fp8.weight_bytes(llama.params)
