"""A model outside the catalogue: its architecture from a Hugging Face config.json or flags.

config.json is read with the field names transformers writes (num_hidden_layers, hidden_size,
num_attention_heads, num_key_value_heads, head_dim, intermediate_size, vocab_size,
tie_word_embeddings, num_local_experts / num_experts / n_routed_experts, num_experts_per_tok,
moe_intermediate_size, n_shared_experts, first_k_dense_replace, q_lora_rank, kv_lora_rank,
qk_rope_head_dim, qk_nope_head_dim, max_position_embeddings, quantization_config). A missing
num_key_value_heads means multi-head attention (transformers' own default), never a guess.

quantization_config's list of modules left unquantised becomes `ModelArch.kept`, matched as
vLLM matches it (plan.models.KEPT_MATCHES): fbgemm_fp8 `modules_to_not_convert` and fp8
`ignored_layers` (else `modules_to_not_convert`) by whole name, compressed-tensors `ignore` by
whole name or `re:` regex, AWQ `modules_to_not_convert` by substring, bitsandbytes
`llm_int8_skip_modules` by dotted component or leading path, GPTQ `dynamic` keys `-:<regex>` by
regex. A list that is not a list of strings, or a regex that does not compile, is an InputError
at the field. Which names an entry matches is computed once per model, without backtracking
(plan.name_patterns): no pattern or list length can hang plan,
and what that matcher cannot run, or a list past its step budget, is an InputError too. An
entry that names no module of the architecture changes nothing and is reported (`kept_notes`):
a vision tower's modules are not planned.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from gpupact.contract.schema import INT32_MAX, Quantization
from gpupact.errors import InputError
from gpupact.plan.models import KeptModules, ModelArch
from gpupact.plan.name_patterns import (
    MATCH_BUDGET,
    SUBSTRING_SCAN_WEIGHT,
    Budget,
    Unsupported,
    regex_names,
    trie_of,
)
from gpupact.plan.weights import layer_modules
from gpupact.source import parse_documents, read_text

MAX_CONFIG_BYTES = 4 * 2**20


def _shown(value: Any) -> str:
    """`value` as an error line quotes it: a config's 4 MiB string is not echoed whole."""
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:60]}... ({len(text):,} characters)"


def _int(data: dict[str, Any], key: str, where: str, default: int | None = None) -> int:
    value = data.get(key, default)
    if value is None:
        if default is not None:
            return default
        raise InputError(f"{where}: {key}: missing (a positive integer is needed)")
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(f"{where}: {key}: expected a non-negative integer, got {_shown(value)}")
    if value > INT32_MAX:  # as the contract's architecture fields: transformers' are int32 too
        raise InputError(f"{where}: {key}: more than {INT32_MAX}, no model's size")
    return value


# Hugging Face module names that differ from the Llama/Qwen/DeepSeek ones, by model_type
_MODULE_NAMES: dict[str, dict[str, Any]] = {
    "mixtral": {"moe_module": "block_sparse_moe", "expert_projections": ("w1", "w3", "w2")},
}

# ModelArch field -> (config.json key, plan flag)
_NAMES = {
    "head_dim": ("num_attention_heads", "--heads"),
    "kv_heads": ("num_key_value_heads", "--kv-heads"),
    "vocab": ("vocab_size", "--vocab"),
    "experts_per_token": ("num_experts_per_tok", "--experts-per-token"),
    "dense_layers": ("first_k_dense_replace", "--layers"),
    "layers": ("num_hidden_layers", "--layers"),
}


def arch_problem(arch: ModelArch) -> tuple[str, str] | None:
    """(ModelArch field, reason) of the first size no model has: it would plan a KV cache or
    weights of nothing (a head 0 wide, no KV heads) rather than refuse."""
    if arch.head_dim < 1:
        return "head_dim", (
            f"{arch.heads} heads leave a head no width (head_dim {arch.head_dim}; hidden "
            f"{arch.hidden})"
        )
    if arch.kv_heads < 1:
        return "kv_heads", "at least 1 KV head is needed"
    if arch.heads % arch.kv_heads:
        return "kv_heads", f"{arch.kv_heads} does not divide the {arch.heads} attention heads"
    if arch.vocab < 1:
        return "vocab", "at least 1 token is needed"
    if arch.dense_layers > arch.layers:  # the first k layers dense, of the model's layers
        return "dense_layers", f"{arch.dense_layers}: more than the {arch.layers} layers"
    if arch.experts and not 1 <= arch.experts_per_token <= arch.experts:
        return "experts_per_token", (
            f"{arch.experts_per_token}: between 1 and the {arch.experts} experts"
        )
    if arch.kept is not None:  # weights.kept_layers weighs each layer's modules
        problem = _module_count_problem(arch)
        if problem is not None:
            return "layers", problem
    return None


def check_flag_arch(arch: ModelArch) -> None:
    """An architecture the flags made (a config.json's own is checked where it is read)."""
    problem = arch_problem(arch)
    if problem is not None:
        field, reason = problem
        raise InputError(f"{_NAMES[field][1]}: {reason}")


def _line_of(text: str, key: str) -> int:
    for number, line in enumerate(text.splitlines(), 1):
        if f'"{key}"' in line:
            return number
    return 1


def _quantization(data: dict[str, Any]) -> Quantization | None:
    q = data.get("quantization_config")
    if not isinstance(q, dict):
        return None
    method = str(q.get("quant_method", "")).lower()
    if method in ("awq", "gptq", "awq_marlin", "gptq_marlin"):
        return Quantization.int8 if q.get("bits") == 8 else Quantization.int4
    if method == "bitsandbytes":
        return Quantization.nf4 if q.get("load_in_4bit") else Quantization.int8
    if method == "fp8":
        return Quantization.fp8_block if q.get("weight_block_size") else Quantization.fp8
    if method == "fbgemm_fp8":  # row-wise: one fp32 scale per output channel (vLLM fbgemm_fp8.py)
        return Quantization.fp8_channel
    if method == "compressed-tensors":
        groups = q.get("config_groups") or {}
        first = next(iter(groups.values()), {}) if isinstance(groups, dict) else {}
        weights = first.get("weights", {}) if isinstance(first, dict) else {}
        weights = weights if isinstance(weights, dict) else {}
        if weights.get("num_bits") == 4:
            return Quantization.int4
        if weights.get("type") == "float":
            return (
                Quantization.fp8_channel
                if weights.get("strategy") == "channel"
                else Quantization.fp8
            )
        return Quantization.int8
    return None


# quant_method -> (the fields holding its unconverted modules, first present wins; how they match)
_KEPT_FIELDS: dict[str, tuple[tuple[str, ...], str]] = {
    "fbgemm_fp8": (("modules_to_not_convert",), "exact"),
    "fp8": (("ignored_layers", "modules_to_not_convert"), "exact"),
    "compressed-tensors": (("ignore",), "exact-or-regex"),
    "awq": (("modules_to_not_convert",), "substring"),
    "awq_marlin": (("modules_to_not_convert",), "substring"),
    "bitsandbytes": (("llm_int8_skip_modules",), "component"),
}
_GPTQ = ("gptq", "gptq_marlin")
# modules plan always counts in 16 bits: an entry naming one of them is not "unmatched"
_SIXTEEN_BIT_NAMES = ("lm_head", "model.embed_tokens", "model.norm")


def _kept_entries(
    q: dict[str, Any], method: str, where: Any
) -> tuple[str, tuple[str, ...], str] | None:
    """(field, entries, match) of quantization_config's unconverted-modules list, if any."""
    if method in _GPTQ:
        dynamic = q.get("dynamic")
        if dynamic is None:
            return None
        if not isinstance(dynamic, dict):
            raise InputError(
                f"{where('dynamic')}: quantization_config.dynamic: expected an object of "
                f"module regexes, got {_shown(dynamic)}"
            )
        bad = [k for k in dynamic if not isinstance(k, str)]  # a null key is one too
        if bad:
            raise InputError(
                f"{where('dynamic')}: quantization_config.dynamic: key {_shown(bad[0])} is not "
                "a module regex"
            )
        # vLLM reads a positive key's value as a dict of overrides (.get(key, default)), and a
        # negative key's not at all (get_dynamic_override in
        # https://github.com/vllm-project/vllm/blob/main/vllm/model_executor/layers/
        # quantization/utils/gptq_utils.py): another value fails the server's load
        odd = next(
            (k for k, v in dynamic.items() if not k.startswith("-:") and not isinstance(v, dict)),
            None,
        )
        if odd is not None:
            raise InputError(
                f"{where('dynamic')}: quantization_config.dynamic[{_shown(odd)}]: expected an "
                f"object of overrides (bits, group_size, ...), got {_shown(dynamic[odd])}"
            )
        negative = tuple(k[2:] for k in dynamic if k.startswith("-:"))
        return ("dynamic", negative, "regex") if negative else None
    if method not in _KEPT_FIELDS:
        return None
    fields, match = _KEPT_FIELDS[method]
    key = next((k for k in fields if q.get(k)), None)
    if key is None:
        return None
    entries = q[key]
    if not isinstance(entries, list):
        raise InputError(
            f"{where(key)}: quantization_config.{key}: expected a list of module names, got "
            f"{_shown(entries)}"
        )
    # by index: a null entry is the bad one, not "none found"
    at = next((i for i, e in enumerate(entries) if not isinstance(e, str) or not e), None)
    if at is not None:
        raise InputError(
            f"{where(key)}: quantization_config.{key}: {_shown(entries[at])} is not a module "
            f"name (entry {at})"
        )
    return key, tuple(entries), match


def _check_regexes(key: str, entries: tuple[str, ...], match: str, where: Any) -> None:
    for entry in entries:
        pattern = entry if match == "regex" else entry[3:] if entry.startswith("re:") else None
        if pattern is None or match not in ("regex", "exact-or-regex"):
            continue
        try:
            re.compile(pattern)
        except (re.error, OverflowError, RecursionError) as err:
            reason = "nested too deep" if isinstance(err, RecursionError) else str(err)
            raise InputError(
                f"{where(key)}: quantization_config.{key}: {_shown(entry)} is not a regular "
                f"expression ({reason})"
            ) from None


def _module_names(arch: ModelArch) -> set[str]:
    """Every module name an entry may name: the linear modules, routers and 16-bit parts."""
    names = set(_SIXTEEN_BIT_NAMES)
    for layer in range(arch.layers):
        names.update(layer_modules(arch, layer).values())
        if arch.moe and layer >= arch.dense_layers:
            names.add(f"model.layers.{layer}.{arch.moe_module}.gate")  # the router
    return names


# the most linear modules plan matches a list against, and weighs one by one: a layer count
# given by flag or config.json beyond any model's would otherwise enumerate billions of names.
# Real models stay below a tenth of it: Kimi-K2's 61 layers of 384 routed experts (three
# projections each) hold ~70,000 (num_hidden_layers, n_routed_experts in
# https://huggingface.co/moonshotai/Kimi-K2-Instruct/blob/main/config.json)
MAX_MODULES = 1_000_000


def _module_count_problem(arch: ModelArch) -> str | None:
    dense = len(layer_modules(arch, 0)) if arch.dense_layers or not arch.moe else 0
    moe = len(layer_modules(arch, arch.layers - 1)) if arch.moe else 0
    moe_layers = arch.layers - arch.dense_layers if arch.moe else 0
    count = (arch.layers - moe_layers) * dense + moe_layers * moe
    if count <= MAX_MODULES:
        return None
    return (
        f"{arch.layers:,} layers hold {count:,} linear modules, more than the "
        f"{MAX_MODULES:,} plan weighs one by one against a list of unquantised modules"
    )


def _check_module_count(arch: ModelArch, at: str) -> None:
    problem = _module_count_problem(arch)
    if problem is not None:
        raise InputError(f"{at}: the model's {problem}")


def _resolved(arch: ModelArch, kept: KeptModules, at: str) -> KeptModules:
    """`kept` with the entries that name none of `arch`'s modules (`unmatched`) and, for
    substring and regex entries, the module names they match looked up rather than matched
    again per module (`KeptModules.keeps` then finds them in its set of whole names)."""
    _check_module_count(arch, at)
    names = _module_names(arch)
    if kept.match == "component":
        paths = set()  # every dotted component and leading path, bitsandbytes' rule
        for name in names:
            parts = name.split(".")
            paths.update(parts)
            paths.update(".".join(parts[: i + 1]) for i in range(len(parts)))
        return replace(kept, unmatched=tuple(p for p in kept.patterns if p not in paths))
    budget, trie, ordered = Budget(), None, sorted(names)
    joined = "\n".join(ordered)
    matched: set[str] = set()
    empty: set[str] = set()
    for entry in dict.fromkeys(kept.patterns):
        if kept.match == "exact" or (
            kept.match == "exact-or-regex" and not entry.startswith("re:")
        ):
            hits = [entry] if entry in names else []
        else:
            try:
                if kept.match == "substring":
                    budget.spend(len(joined) // SUBSTRING_SCAN_WEIGHT + 1)
                    hits = []
                    if entry in joined:
                        budget.spend(len(ordered))
                        hits = [n for n in ordered if entry in n]
                else:
                    trie = trie if trie is not None else trie_of(ordered)
                    pattern = entry[3:] if kept.match == "exact-or-regex" else entry
                    hits = regex_names(pattern, trie, budget)
            except RecursionError:
                raise InputError(f"{at}: {_shown(entry)}: nested too deep to match") from None
            except Unsupported as err:
                if budget.left < 0:
                    raise InputError(
                        f"{at}: matching its {len(kept.patterns):,} entries against the "
                        f"model's {len(names):,} module names takes more than plan's "
                        f"{MATCH_BUDGET:,} steps; list whole module names instead"
                    ) from None
                raise InputError(
                    f"{at}: {_shown(entry)}: plan cannot match {err} (it matches patterns without "
                    "backtracking, so that none can hang it)"
                ) from None
        if hits:
            matched.update(hits)
        else:
            empty.add(entry)
    out = replace(kept, unmatched=tuple(p for p in kept.patterns if p in empty))
    if kept.match != "exact":
        whole = {
            p for p in kept.patterns if kept.match == "exact-or-regex" and not p.startswith("re:")
        }
        object.__setattr__(out, "_names", frozenset(whole | matched))
        object.__setattr__(out, "_rest", ())
    return out


def kept_notes(arch: ModelArch) -> list[str]:
    """What the plan should say about `arch.kept`: entries that changed nothing."""
    if arch.kept is None or not arch.kept.unmatched:
        return []
    shown = ", ".join(repr(p) for p in arch.kept.unmatched[:5])
    more = len(arch.kept.unmatched) - 5
    n = len(arch.kept.unmatched)
    return [
        f"{arch.kept.source}: {n} {'entry names' if n == 1 else 'entries name'} no module of "
        "the model "
        f"({shown}{f', and {more} more' if more > 0 else ''}); counted as quantised"
    ]


def _with_kept(arch: ModelArch, data: dict[str, Any], path: str, where: Any) -> ModelArch:
    q = data.get("quantization_config")
    if not isinstance(q, dict):
        return arch
    method = str(q.get("quant_method", "")).lower()
    found = _kept_entries(q, method, where)
    if found is None:
        return arch
    key, entries, match = found
    _check_regexes(key, entries, match, where)
    kept = KeptModules(entries, match, f"{path}: quantization_config.{key}")
    return replace(arch, kept=_resolved(arch, kept, f"{where(key)}: quantization_config.{key}"))


def read_model_config(path: str) -> tuple[ModelArch, Quantization | None]:
    """The architecture in a config.json and the weights format its quantization_config names.
    Bad input is an InputError naming the file, line and field."""
    p = Path(path)
    # bounded, regular files only; numbers past int/float, NaN, deep nesting: located errors
    text = read_text(p)
    docs = parse_documents(text, str(path))
    data = docs[0].data if len(docs) == 1 else None
    if not isinstance(data, dict):
        raise InputError(f"{path}:1: expected a JSON object (a Hugging Face config.json)")
    odd = next((key for key in data if not isinstance(key, str)), None)
    if odd is not None:  # YAML can write one; no config.json has it
        line, column = docs[0].locate([odd]) or (1, 1)
        raise InputError(f"{path}:{line}:{column}: {_shown(odd)}: expected string keys")
    if isinstance(data.get("text_config"), dict):  # multimodal wrappers keep the LM inside
        data = {**data, **data["text_config"]}

    def where(key: str) -> str:
        return f"{path}:{_line_of(text, key)}"

    def get(key: str, default: int | None = None) -> int:
        return _int(data, key, where(key), default)

    layers, hidden, heads = get("num_hidden_layers"), get("hidden_size"), get("num_attention_heads")
    if not (layers and hidden and heads):
        raise InputError(f"{where('hidden_size')}: layers, hidden size and heads must be > 0")
    experts = get("num_local_experts", 0) or get("num_experts", 0) or get("n_routed_experts", 0)
    kv_lora = get("kv_lora_rank", 0)
    head_dim = get("head_dim", 0) or hidden // heads
    if kv_lora:
        head_dim = get("v_head_dim", 0) or get("qk_nope_head_dim", 128)
    arch = ModelArch(
        name=str(data.get("_name_or_path") or p.stem),
        repo="",
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=get("num_key_value_heads", heads) if not kv_lora else heads,
        head_dim=head_dim,
        vocab=get("vocab_size"),
        intermediate=get("intermediate_size", 0) or 4 * hidden,
        max_context=get("max_position_embeddings", 0),
        tie_embeddings=bool(data.get("tie_word_embeddings", False)),
        qkv_bias=bool(data.get("attention_bias", False) or data.get("model_type") == "qwen2"),
        qk_norm=data.get("model_type") in ("qwen3", "qwen3_moe"),
        experts=experts,
        experts_per_token=get("num_experts_per_tok", 0) if experts else 0,
        moe_intermediate=(get("moe_intermediate_size", 0) or get("intermediate_size", 0))
        if experts
        else 0,
        shared_experts=get("n_shared_experts", 0),
        dense_layers=get("first_k_dense_replace", 0),
        q_lora_rank=get("q_lora_rank", 0),
        kv_lora_rank=kv_lora,
        qk_rope_head_dim=get("qk_rope_head_dim", 0) if kv_lora else 0,
        **_MODULE_NAMES.get(str(data.get("model_type", "")), {}),
    )
    if experts and not arch.experts_per_token:
        raise InputError(f"{where('num_experts_per_tok')}: num_experts_per_tok: missing for MoE")
    problem = arch_problem(arch)
    if problem is not None:
        key = _NAMES[problem[0]][0]
        raise InputError(f"{where(key)}: {key}: {problem[1]}")
    return _with_kept(arch, data, str(path), where), _quantization(data)


ARCH_FLAGS = (
    "layers", "hidden", "heads", "kv_heads", "head_dim", "intermediate", "vocab", "experts",
    "experts_per_token", "moe_intermediate", "shared_experts", "dense_layers", "q_lora_rank",
    "kv_lora_rank", "qk_rope_head_dim",
)  # fmt: skip


def with_flags(arch: ModelArch, **flags: int | None) -> ModelArch:
    """`arch` with the architecture fields the user gave by flag."""
    given = {k: v for k, v in flags.items() if v is not None}
    if not given:
        return arch
    out = replace(arch, **given)
    if (
        out.kept is not None
        and out.kept.match not in ("exact", "component")
        and _module_count_problem(out) is None  # else arch_problem refuses it, located
    ):
        # the names a pattern matched were looked up for the config's own architecture
        out = replace(out, kept=_resolved(out, out.kept, out.kept.source))
    return out


def arch_from_flags(name: str, **flags: int | None) -> ModelArch:
    """A model described by flags alone: layers, hidden, heads and vocab are needed; KV heads
    default to the attention heads (multi-head attention), head_dim to hidden / heads."""
    missing = [k for k in ("layers", "hidden", "heads", "vocab") if not flags.get(k)]
    if missing:
        raise InputError(
            f"--model {name!r} is not in the catalogue: give its architecture "
            f"(missing: {', '.join('--' + m.replace('_', '-') for m in missing)}) or "
            f"--model-config CONFIG.json"
        )
    heads = int(flags["heads"] or 0)
    hidden = int(flags["hidden"] or 0)
    arch = ModelArch(
        name=name,
        repo="",
        layers=int(flags["layers"] or 0),
        hidden=hidden,
        heads=heads,
        kv_heads=heads,
        head_dim=hidden // heads,
        vocab=int(flags["vocab"] or 0),
        intermediate=4 * hidden,
        max_context=0,
    )
    return with_flags(arch, **{k: v for k, v in flags.items() if k not in ("layers",)})
