"""config.json quantization_config lists of modules left unquantised, read as the engines read
them, and their effect on the weights; bad lists refused at the field, lists naming modules the
model does not have reported."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_model_config import LLAMA_31_8B, write

from gpupact.contract.schema import Quantization as Q
from gpupact.errors import InputError
from gpupact.plan.model_config import kept_notes, read_model_config
from gpupact.plan.models import CATALOGUE as MODELS
from gpupact.plan.models import resolve_model
from gpupact.plan.weights import gpu_weight_bytes, kept_names

GIB = 2**30

LLAMA_405B = {
    **LLAMA_31_8B,
    "hidden_size": 16384,
    "intermediate_size": 53248,
    "num_attention_heads": 128,
    "num_hidden_layers": 126,
}
# Meta's list, 511 full names (see plan.models.LLAMA_31_405B_FP8_KEPT for the sources)
META_LIST = (
    ["lm_head"]
    + [f"model.layers.{i}.self_attn.{p}" for i in range(126) for p in ("k_proj", "o_proj",
                                                                        "q_proj", "v_proj")]
    + [f"model.layers.{i}.mlp.{p}" for p in ("down_proj", "gate_proj", "up_proj") for i in (0, 125)]
)  # fmt: skip


def quantised(base: dict, **q: object) -> dict:
    return {**base, "quantization_config": q}


def test_meta_405b_config_gives_the_catalogue_s_weights(tmp_path: Path) -> None:
    config = quantised(
        LLAMA_405B,
        quant_method="fbgemm_fp8",
        activation_scale_ub=1200.0,
        modules_to_not_convert=META_LIST,
    )
    arch, fmt = read_model_config(write(tmp_path, config))
    assert fmt is Q.fp8_channel and arch.kept is not None and arch.kept.match == "exact"
    assert arch.kept.unmatched == () and kept_notes(arch) == []
    assert "quantization_config.modules_to_not_convert" in arch.kept.source
    catalogue = resolve_model("meta-llama/Llama-3.1-405B-Instruct-FP8")
    assert gpu_weight_bytes(arch, fmt, 8) == gpu_weight_bytes(catalogue.arch, catalogue.weights, 8)
    assert gpu_weight_bytes(arch, fmt, 8).total / GIB == pytest.approx(56.73, abs=0.01)


def test_compressed_tensors_ignore_with_regexes(tmp_path: Path) -> None:
    fp8 = {"weights": {"num_bits": 8, "type": "float", "strategy": "channel"}}
    config = quantised(
        LLAMA_31_8B,
        quant_method="compressed-tensors",
        config_groups={"group_0": fp8},
        ignore=["lm_head", r"re:.*self_attn\.(q|k|v)_proj$", "model.layers.31.mlp.down_proj"],
    )
    arch, fmt = read_model_config(write(tmp_path, config))
    assert fmt is Q.fp8_channel and arch.kept is not None
    assert kept_names(arch) == 32 * 3 + 1
    plain = gpu_weight_bytes(MODELS["llama-3.1-8b"], fmt, 1)
    w = gpu_weight_bytes(arch, fmt, 1)
    qkv = 4096 * (4096 + 2 * 1024)
    # q, k and v: 2 bytes a weight instead of 1 and no fp32 scale per output channel
    assert w.attention - plain.attention == 32 * (qkv - 4 * (4096 + 2 * 1024))
    assert w.mlp - plain.mlp == 14336 * 4096 - 4 * 4096
    assert w.embeddings == plain.embeddings


def test_awq_modules_to_not_convert_match_by_substring(tmp_path: Path) -> None:
    config = quantised(
        LLAMA_31_8B, quant_method="awq", bits=4, group_size=128, modules_to_not_convert=["o_proj"]
    )
    arch, fmt = read_model_config(write(tmp_path, config))
    assert fmt is Q.int4 and arch.kept is not None and arch.kept.match == "substring"
    assert kept_names(arch) == 32
    plain = gpu_weight_bytes(MODELS["llama-3.1-8b"], Q.int4, 2)
    w = gpu_weight_bytes(arch, Q.int4, 2)
    k = 4096 // 2  # o_proj is row-parallel: its 4096 inputs split over 2 GPUs
    int4 = k * 4096 // 2 + (k // 128) * 4096 * 2 + (k // 128) * 4096 // 2
    assert w.attention - plain.attention == 32 * (2 * k * 4096 - int4)


def test_bitsandbytes_and_gptq_lists(tmp_path: Path) -> None:
    bnb = quantised(
        LLAMA_31_8B,
        quant_method="bitsandbytes",
        load_in_4bit=True,
        llm_int8_skip_modules=["lm_head", "model.layers.0", "model.layers.1"],
    )
    arch, fmt = read_model_config(write(tmp_path, bnb, "bnb.json"))
    assert fmt is Q.nf4 and kept_names(arch) == 2 * 7 and arch.kept.unmatched == ()
    gptq = quantised(
        LLAMA_31_8B,
        quant_method="gptq",
        bits=4,
        dynamic={r"-:.*\.layers\.(30|31)\.mlp\.": {}, r"+:.*\.layers\.0\.": {"bits": 8}},
    )
    arch, fmt = read_model_config(write(tmp_path, gptq, "gptq.json"))
    assert fmt is Q.int4 and arch.kept.match == "regex" and kept_names(arch) == 2 * 3


def test_moe_lists_reach_experts_and_leave_the_router(tmp_path: Path) -> None:
    qwen3_moe = {
        "model_type": "qwen3_moe", "hidden_size": 2048, "intermediate_size": 6144,
        "moe_intermediate_size": 768, "num_hidden_layers": 48, "num_attention_heads": 32,
        "num_key_value_heads": 4, "head_dim": 128, "num_experts": 128,
        "num_experts_per_tok": 8, "vocab_size": 151936,
    }  # fmt: skip
    config = quantised(
        qwen3_moe,
        quant_method="compressed-tensors",
        config_groups={"g": {"weights": {"num_bits": 4}}},
        ignore=["lm_head", r"re:.*mlp\.gate$", r"re:model\.layers\.0\.mlp\.experts\.\d+\."],
    )
    arch, fmt = read_model_config(write(tmp_path, config))
    assert fmt is Q.int4 and arch.kept.unmatched == ()  # the router is a module (16-bit anyway)
    assert kept_names(arch) == 128 * 3
    plain = gpu_weight_bytes(MODELS["qwen3-30b-a3b"], Q.int4, 1)
    w = gpu_weight_bytes(arch, Q.int4, 1)
    assert w.experts > plain.experts and w.attention == plain.attention
    mixtral = {
        "model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
        "num_local_experts": 8, "num_experts_per_tok": 2, "vocab_size": 32000,
    }  # fmt: skip
    config = quantised(mixtral, quant_method="awq", bits=4, modules_to_not_convert=["w2"])
    arch, _ = read_model_config(write(tmp_path, config, "mixtral.json"))
    assert kept_names(arch) == 32 * 8  # every expert's down projection (Mixtral's w2)


def test_entries_naming_no_module_are_reported_and_change_nothing(tmp_path: Path) -> None:
    config = quantised(
        LLAMA_31_8B,
        quant_method="compressed-tensors",
        config_groups={"g": {"weights": {"num_bits": 4}}},
        ignore=["lm_head", "re:visual.*", "model.visual.merger", "re:.*self_attn.o_proj$"],
    )
    arch, _ = read_model_config(write(tmp_path, config))
    assert arch.kept.unmatched == ("re:visual.*", "model.visual.merger")
    (note,) = kept_notes(arch)
    assert "2 entries name no module" in note and "'re:visual.*'" in note
    assert "quantization_config.ignore" in note and "counted as quantised" in note
    assert kept_names(arch) == 32  # the o_proj entry still applies


@pytest.mark.parametrize(
    ("q", "fragment"),
    [
        ({"quant_method": "awq", "bits": 4, "modules_to_not_convert": "lm_head"},
         "quantization_config.modules_to_not_convert: expected a list of module names"),
        ({"quant_method": "fbgemm_fp8", "modules_to_not_convert": ["lm_head", 3]},
         "quantization_config.modules_to_not_convert: 3 is not a module name"),
        ({"quant_method": "compressed-tensors", "ignore": ["re:model.(layers"]},
         "quantization_config.ignore: 're:model.(layers' is not a regular expression"),
        ({"quant_method": "gptq", "bits": 4, "dynamic": ["-:.*"]},
         "quantization_config.dynamic: expected an object"),
        ({"quant_method": "gptq", "bits": 4, "dynamic": {"-:[": {}}},
         "quantization_config.dynamic: '[' is not a regular expression"),
        ({"quant_method": "bitsandbytes", "llm_int8_skip_modules": [""]},
         "quantization_config.llm_int8_skip_modules: '' is not a module name"),
    ],
)  # fmt: skip
def test_bad_lists_name_file_line_and_field(tmp_path: Path, q: dict, fragment: str) -> None:
    path = write(tmp_path, {**LLAMA_31_8B, "quantization_config": q})
    with pytest.raises(InputError) as err:
        read_model_config(path)
    message = str(err.value)
    assert message.startswith(f"{path}:") and fragment in message
    line = int(message.split(":")[1])
    key = fragment.split(":")[0].rpartition(".")[2]
    assert f'"{key}"' in Path(path).read_text().splitlines()[line - 1]


def test_no_list_keeps_nothing(tmp_path: Path) -> None:
    for q in (
        {"quant_method": "awq", "bits": 4},
        {"quant_method": "awq", "bits": 4, "modules_to_not_convert": None},
        {"quant_method": "gptq", "bits": 4, "dynamic": {"+:.*": {"bits": 8}}},
        {"quant_method": "fp8", "ignored_layers": []},
    ):
        arch, _ = read_model_config(write(tmp_path, quantised(LLAMA_31_8B, **q)))
        assert arch.kept is None and kept_notes(arch) == []


def test_fp8_ignored_layers_then_modules_to_not_convert(tmp_path: Path) -> None:
    for key in ("ignored_layers", "modules_to_not_convert"):
        q = {"quant_method": "fp8", key: ["model.layers.0.self_attn.o_proj"]}
        arch, fmt = read_model_config(write(tmp_path, quantised(LLAMA_31_8B, **q)))
        assert fmt is Q.fp8 and arch.kept.match == "exact" and kept_names(arch) == 1
