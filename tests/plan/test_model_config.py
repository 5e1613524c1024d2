"""A model outside the catalogue: a config.json, architecture flags, and `--params` refused
without the KV-cache shape."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpupact.contract.schema import Quantization as Q
from gpupact.errors import InputError
from gpupact.plan.memory import kv_bytes_per_token
from gpupact.plan.model_config import read_model_config
from gpupact.plan.models import CATALOGUE as MODELS
from gpupact.plan.standalone import standalone_workload
from gpupact.plan.workload import TokenStats, Workload

LLAMA_31_8B = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "max_position_embeddings": 131072,
    "model_type": "llama",
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "tie_word_embeddings": False,
    "vocab_size": 128256,
}


def write(tmp_path: Path, data: object, name: str = "config.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data, indent=2) if not isinstance(data, str) else data)
    return str(path)


def test_a_config_json_is_the_same_model_as_the_catalogue(tmp_path: Path) -> None:
    arch, fmt = read_model_config(write(tmp_path, LLAMA_31_8B))
    assert arch.params == MODELS["llama-3.1-8b"].params and fmt is None
    assert kv_bytes_per_token(arch, Q.bf16) == kv_bytes_per_token(MODELS["llama-3.1-8b"], Q.bf16)


def test_a_config_without_kv_heads_is_multi_head_attention(tmp_path: Path) -> None:
    # transformers' own default: num_key_value_heads = num_attention_heads (Llama-2-7B)
    config = {**LLAMA_31_8B, "intermediate_size": 11008, "vocab_size": 32000}
    del config["num_key_value_heads"]
    arch, _ = read_model_config(write(tmp_path, config))
    assert arch.kv_heads == 32
    assert kv_bytes_per_token(arch, Q.bf16) == 2 * 32 * 32 * 128 * 2  # 512 KiB, not 128 KiB


def test_moe_mla_and_quantisation_from_a_config(tmp_path: Path) -> None:
    v3 = {
        "hidden_size": 7168, "intermediate_size": 18432, "moe_intermediate_size": 2048,
        "num_hidden_layers": 61, "num_attention_heads": 128, "num_key_value_heads": 128,
        "n_routed_experts": 256, "num_experts_per_tok": 8, "n_shared_experts": 1,
        "first_k_dense_replace": 3, "q_lora_rank": 1536, "kv_lora_rank": 512,
        "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128, "vocab_size": 129280,
        "quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]},
    }  # fmt: skip
    arch, fmt = read_model_config(write(tmp_path, v3))
    assert fmt is Q.fp8_block and arch.mla and arch.params == MODELS["deepseek-v3"].params
    awq = {**LLAMA_31_8B, "quantization_config": {"quant_method": "awq", "bits": 4}}
    assert read_model_config(write(tmp_path, awq, "awq.json"))[1] is Q.int4
    bnb = {**LLAMA_31_8B, "quantization_config": {"quant_method": "bitsandbytes",
                                                  "load_in_4bit": True}}  # fmt: skip
    assert read_model_config(write(tmp_path, bnb, "bnb.json"))[1] is Q.nf4


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("{not json", ":1:2: malformed JSON"),
        ("[1, 2]", ":1: expected a JSON object"),
        (json.dumps({**LLAMA_31_8B, "num_hidden_layers": "32"}, indent=2),
         ":10: num_hidden_layers: expected a non-negative integer"),
        (json.dumps({k: v for k, v in LLAMA_31_8B.items() if k != "vocab_size"}, indent=2),
         "vocab_size: missing"),
        (json.dumps({**LLAMA_31_8B, "num_key_value_heads": 5}, indent=2),
         ":11: num_key_value_heads: 5 does not divide"),
    ],
)  # fmt: skip
def test_bad_configs_name_file_line_and_field(tmp_path: Path, content: str, fragment: str) -> None:
    path = write(tmp_path, content)
    with pytest.raises(InputError) as err:
        read_model_config(path)
    assert str(err.value).startswith(path) and fragment in str(err.value)


def test_a_directory_is_not_a_config(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is a directory"):
        read_model_config(str(tmp_path))


def _workload(**kw: object) -> Workload:
    args: dict = {
        "model": "my-model",
        "gpu": "h100",
        "quantization": None,
        "context": 4096,
        "input_tokens": TokenStats(1000, 2000),
        "output_tokens": TokenStats(200, 400),
    }
    return standalone_workload(**{**args, **kw})


def test_params_alone_is_refused_with_the_reason() -> None:
    with pytest.raises(InputError) as err:
        _workload(params=7 * 10**9)
    assert "--layers and --kv-heads" in str(err.value) and "32 KV heads" in str(err.value)


def test_params_with_the_kv_shape_plans_and_says_what_it_assumed() -> None:
    w = _workload(params=7 * 10**9, arch_flags={"layers": 32, "kv_heads": 32})
    assert w.model.params == 7 * 10**9 and w.model.approximate
    # the KV cache is exact: 32 layers x 32 KV heads x 128
    assert kv_bytes_per_token(w.model, Q.bf16) == 2 * 32 * 32 * 128 * 2
    assert any("assumed" in note for note in w.assumptions)


def test_architecture_flags_describe_a_model() -> None:
    flags = {"layers": 32, "hidden": 4096, "heads": 32, "vocab": 32000, "intermediate": 11008}
    w = _workload(arch_flags=flags)
    assert w.model.kv_heads == 32 and w.model.params == MODELS["llama-2-7b"].params
    assert any("--kv-heads not given: multi-head attention" in n for n in w.assumptions)
    # flags override a catalogue entry's fields
    gqa = _workload(model="llama-2-7b", arch_flags={"kv_heads": 8})
    assert gqa.model.kv_heads == 8 and gqa.model.layers == 32


def test_an_unknown_model_name_lists_close_names() -> None:
    with pytest.raises(InputError) as err:
        _workload(model="qwen2.5-73b")
    assert "closest: " in str(err.value) and "qwen2.5-72b" in str(err.value)


def test_a_quantised_name_sets_the_format_and_a_flag_overrides_it() -> None:
    w = _workload(model="Qwen/Qwen2.5-72B-Instruct-AWQ")
    assert w.quantization is Q.int4 and w.kv_dtype is Q.bf16
    forced = _workload(model="Qwen/Qwen2.5-72B-Instruct-AWQ", quantization=Q.fp8)
    assert forced.quantization is Q.fp8
    assert any("overrides the int4" in n for n in forced.assumptions)
    assert _workload(model="deepseek-v3").quantization is Q.fp8_block
