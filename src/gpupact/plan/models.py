"""Architecture facts of the models `gpupact plan` knows, from each model's public config.json.

A model is its config.json fields that sizing needs: layers, widths, attention and KV heads
(GQA), head width, vocabulary, the MLP width, mixture-of-experts shape (routed and shared
experts, expert width, leading dense layers) and multi-head latent attention ranks. Parameter
counts are *derived* from those fields, matrix by matrix (`ModelArch.params`), the way the
checkpoint's tensors add up; sources, one URL per model: docs/plan.md.

Names resolve through `resolve_model`: a Hugging Face id, a fine-tuned variant (`-Instruct`)
or a quantised checkpoint (`-AWQ`, `-GPTQ-Int4`, `-FP8`, `-quantized.w8a8`, `-bnb-4bit`) is
the base architecture plus a weights format. An unknown name is an error listing the closest
catalogue names (`UnknownModel`), never a silent approximation; a model outside the catalogue
is described by its architecture (flags or its config.json: `plan.model_config`).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache

from gpupact.contract.schema import Quantization

# How a quantisation's list of unconverted modules matches a module's Hugging Face name
# (`model.layers.3.self_attn.q_proj`), as the serving engine reads it (vLLM, each shard of a fused
# layer on its own):
#   exact           the name itself (fbgemm_fp8 `modules_to_not_convert`: vLLM
#                   quant_utils.is_layer_skipped, whole-name match)
#   exact-or-regex  the name, or a `re:` regex matched from its start (compressed-tensors
#                   `ignore`: vLLM compressed_tensors/utils.py check_equal_or_regex_match)
#   substring       contained in the name (AWQ `modules_to_not_convert`: vLLM awq.py,
#                   is_layer_skipped(..., skip_with_substr=True))
#   component       a dotted component or a leading path of the name (bitsandbytes
#                   `llm_int8_skip_modules`: vLLM bitsandbytes.py is_layer_skipped_bnb)
#   regex           a regex matched from its start (GPTQ `dynamic` keys "-:<regex>": vLLM
#                   gptq_utils.get_dynamic_override)
KEPT_MATCHES = ("exact", "exact-or-regex", "substring", "component", "regex")


@lru_cache(maxsize=4096)
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def kept_pattern_matches(match: str, pattern: str, name: str) -> bool:
    """Whether one entry of an unconverted-modules list names module `name` (see KEPT_MATCHES)."""
    if match == "exact":
        return name == pattern
    if match == "exact-or-regex":
        if pattern.startswith("re:"):
            return _regex(pattern[3:]).match(name) is not None
        return name == pattern
    if match == "substring":
        return pattern in name
    if match == "component":
        parts = name.split(".")
        return pattern in parts or any(
            pattern == ".".join(parts[: i + 1]) for i in range(len(parts))
        )
    if match == "regex":
        return _regex(pattern).match(name) is not None
    raise ValueError(f"unknown match {match!r} (one of {', '.join(KEPT_MATCHES)})")


@dataclass(frozen=True)
class KeptModules:
    """The linear modules a quantised checkpoint leaves in the model's own 16-bit dtype: the
    entries of its quantization_config list and how they match a module name."""

    patterns: tuple[str, ...]
    match: str  # one of KEPT_MATCHES
    source: str  # where the list comes from (URL, or the config file and field)
    # entries that name no module of the architecture (a vision tower's, another model's):
    # they change nothing and are reported
    unmatched: tuple[str, ...] = field(default=(), compare=False)
    _hash: int = field(init=False, repr=False, compare=False)
    _names: frozenset[str] = field(init=False, repr=False, compare=False)
    _rest: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.match not in KEPT_MATCHES:
            raise ValueError(f"unknown match {self.match!r} (one of {', '.join(KEPT_MATCHES)})")
        # the model, and with it this list (Meta's has 511 entries), keys the engine's caches
        object.__setattr__(self, "_hash", hash((self.patterns, self.match, self.source)))
        # whole names are looked up, not scanned (lists of ~1000 names over ~50,000 modules)
        if self.match in ("exact", "component"):
            names = set(self.patterns)
        elif self.match == "exact-or-regex":
            names = {p for p in self.patterns if not p.startswith("re:")}
        else:
            names = set()
        object.__setattr__(self, "_names", frozenset(names))
        object.__setattr__(self, "_rest", tuple(p for p in self.patterns if p not in names))

    def __hash__(self) -> int:
        return self._hash

    def keeps(self, name: str) -> bool:
        if self.match == "component":
            parts = name.split(".")
            leading = (".".join(parts[: i + 1]) for i in range(len(parts)))
            return any(p in self._names for p in parts) or any(p in self._names for p in leading)
        if name in self._names:
            return True
        return any(kept_pattern_matches(self.match, p, name) for p in self._rest)


@dataclass(frozen=True)
class ModelArch:
    name: str  # catalogue key, e.g. "llama-3.1-70b"
    repo: str  # Hugging Face repository the facts come from ("" when given by the user)
    layers: int  # num_hidden_layers
    hidden: int  # hidden_size
    heads: int  # num_attention_heads
    kv_heads: int  # num_key_value_heads (GQA); MLA models keep the attention head count
    head_dim: int  # per-head width of V (and of Q/K without the RoPE part)
    vocab: int  # vocab_size
    intermediate: int  # intermediate_size: the dense MLP's width (SwiGLU: gate, up, down)
    max_context: int  # max_position_embeddings (0: unknown, not checked)
    tie_embeddings: bool = False  # tie_word_embeddings: lm_head shares the embedding matrix
    qkv_bias: bool = False  # attention_bias / Qwen2's q, k and v biases
    qk_norm: bool = False  # Qwen3: an RMSNorm over each head's q and k
    norms_per_layer: int = 2  # RMSNorms of hidden width per layer (Gemma-2 has four)
    experts: int = 0  # routed experts per MoE layer (0: dense)
    experts_per_token: int = 0
    moe_intermediate: int = 0  # one expert's width (Mixtral: intermediate_size)
    shared_experts: int = 0  # DeepSeek n_shared_experts, each moe_intermediate wide
    dense_layers: int = 0  # DeepSeek first_k_dense_replace: leading layers with a dense MLP
    q_lora_rank: int = 0  # MLA: compressed query width (0: queries are not compressed)
    kv_lora_rank: int = 0  # MLA: compressed KV width cached per layer (0: not MLA)
    qk_rope_head_dim: int = 0  # MLA: decoupled RoPE key width, cached beside the latent
    native: Quantization = Quantization.bf16  # the checkpoint's own weights format
    # Hugging Face module names of the MoE block and of each expert's gate, up and down
    # projections (Mixtral: block_sparse_moe, w1 / w3 / w2)
    moe_module: str = "mlp"
    expert_projections: tuple[str, str, str] = ("gate_proj", "up_proj", "down_proj")
    kept: KeptModules | None = None  # a quantised checkpoint's modules left in 16 bits
    declared_params: int = 0  # a parameter count given instead of derived (matrices unknown)
    approximate: bool = False  # part of the architecture was assumed (see its plan's notes)

    @property
    def mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def moe(self) -> bool:
        return self.experts > 0

    @property
    def qk_head_dim(self) -> int:
        return self.head_dim + self.qk_rope_head_dim

    @property
    def moe_layers(self) -> int:
        return self.layers - self.dense_layers if self.moe else 0

    @property
    def ffn_width(self) -> int:
        """MLP width one token passes through (MoE: its routed and shared experts)."""
        if not self.moe:
            return self.intermediate
        return (self.experts_per_token + self.shared_experts) * self.moe_intermediate

    # --- parameters, matrix by matrix -------------------------------------------------------

    @property
    def attention_params(self) -> int:
        """One layer's attention projections and biases (MLA: the low-rank factors)."""
        h, q_width = self.hidden, self.heads * self.qk_head_dim
        if self.mla:
            q = h * q_width if not self.q_lora_rank else self.q_lora_rank * (h + q_width)
            kv_a = h * (self.kv_lora_rank + self.qk_rope_head_dim)
            kv_b = self.kv_lora_rank * self.heads * (self.head_dim + self.head_dim)
            norms = self.q_lora_rank + self.kv_lora_rank
            return q + kv_a + kv_b + self.heads * self.head_dim * h + norms
        kv_width = self.kv_heads * self.head_dim
        bias = q_width + 2 * kv_width if self.qkv_bias else 0
        qk_norm = 2 * self.head_dim if self.qk_norm else 0
        return 2 * h * q_width + 2 * h * kv_width + bias + qk_norm

    @property
    def expert_params_one_layer(self) -> int:
        return 3 * self.hidden * self.moe_intermediate

    @property
    def dense_mlp_params(self) -> int:
        return 3 * self.hidden * self.intermediate

    @property
    def embedding_params(self) -> int:
        """Embedding and lm_head (one matrix when tied)."""
        return (1 if self.tie_embeddings else 2) * self.vocab * self.hidden

    def _params(self, routed: int) -> int:
        """Parameters with `routed` experts per MoE layer counted."""
        dense = self.layers - self.moe_layers
        per_moe = (routed + self.shared_experts) * self.expert_params_one_layer
        router = self.hidden * self.experts
        return (
            self.embedding_params
            + self.layers * (self.attention_params + self.norms_per_layer * self.hidden)
            + dense * self.dense_mlp_params
            + self.moe_layers * (per_moe + router)
            + self.hidden  # the final norm
        )

    @property
    def params(self) -> int:
        return self.declared_params or self._params(self.experts)

    @property
    def active_params(self) -> int:
        """Parameters one token uses (== params for dense models)."""
        return self._params(self.experts_per_token) if self.moe else self.params

    @property
    def expert_params(self) -> int:
        """Parameters of one routed expert over all layers (0 for a dense model)."""
        return self.moe_layers * self.expert_params_one_layer

    @property
    def shared_params(self) -> int:
        """Parameters every token uses: attention, embeddings, shared experts, norms."""
        return self.active_params - self.experts_per_token * self.expert_params


_LLAMA2 = {"vocab": 32000, "max_context": 4096, "head_dim": 128}
_LLAMA3 = {"vocab": 128256, "kv_heads": 8, "head_dim": 128}
_QWEN25 = {"vocab": 152064, "max_context": 32768, "head_dim": 128, "qkv_bias": True}
_QWEN3 = {"vocab": 151936, "max_context": 40960, "head_dim": 128, "qk_norm": True}
_GEMMA2 = {"vocab": 256000, "max_context": 8192, "tie_embeddings": True, "norms_per_layer": 4}
_MIXTRAL = {"moe_module": "block_sparse_moe", "expert_projections": ("w1", "w3", "w2")}
# DeepSeek MLA: a 512-wide KV latent and a 64-wide RoPE key per layer and token is all the cache
# holds; 128-wide no-RoPE query/key and value heads.
_MLA = {"kv_lora_rank": 512, "qk_rope_head_dim": 64, "head_dim": 128}

# config.json fields; sources (one URL each) in docs/plan.md, "Model catalogue".
CATALOGUE: dict[str, ModelArch] = {
    m.name: m
    for m in (
        ModelArch("llama-2-7b", "meta-llama/Llama-2-7b-hf", layers=32, hidden=4096, heads=32,
                  kv_heads=32, intermediate=11008, **_LLAMA2),
        ModelArch("llama-2-13b", "meta-llama/Llama-2-13b-hf", layers=40, hidden=5120,
                  heads=40, kv_heads=40, intermediate=13824, **_LLAMA2),
        ModelArch("llama-2-70b", "meta-llama/Llama-2-70b-hf", layers=80, hidden=8192,
                  heads=64, kv_heads=8, intermediate=28672, **_LLAMA2),
        ModelArch("llama-3-8b", "meta-llama/Meta-Llama-3-8B", layers=32, hidden=4096, heads=32,
                  intermediate=14336, max_context=8192, **_LLAMA3),
        ModelArch("llama-3-70b", "meta-llama/Meta-Llama-3-70B", layers=80, hidden=8192,
                  heads=64, intermediate=28672, max_context=8192, **_LLAMA3),
        ModelArch("llama-3.1-8b", "meta-llama/Llama-3.1-8B", layers=32, hidden=4096, heads=32,
                  intermediate=14336, max_context=131072, **_LLAMA3),
        ModelArch("llama-3.1-70b", "meta-llama/Llama-3.1-70B", layers=80, hidden=8192,
                  heads=64, intermediate=28672, max_context=131072, **_LLAMA3),
        ModelArch("llama-3.1-405b", "meta-llama/Llama-3.1-405B", layers=126, hidden=16384,
                  heads=128, intermediate=53248, max_context=131072, **_LLAMA3),
        ModelArch("llama-3.3-70b", "meta-llama/Llama-3.3-70B-Instruct", layers=80,
                  hidden=8192, heads=64, intermediate=28672, max_context=131072, **_LLAMA3),
        ModelArch("qwen2.5-7b", "Qwen/Qwen2.5-7B-Instruct", layers=28, hidden=3584, heads=28,
                  kv_heads=4, intermediate=18944, **_QWEN25),
        ModelArch("qwen2.5-14b", "Qwen/Qwen2.5-14B-Instruct", layers=48, hidden=5120,
                  heads=40, kv_heads=8, intermediate=13824, **_QWEN25),
        ModelArch("qwen2.5-32b", "Qwen/Qwen2.5-32B-Instruct", layers=64, hidden=5120,
                  heads=40, kv_heads=8, intermediate=27648, **_QWEN25),
        ModelArch("qwen2.5-72b", "Qwen/Qwen2.5-72B-Instruct", layers=80, hidden=8192,
                  heads=64, kv_heads=8, intermediate=29568, **_QWEN25),
        # the small Qwen3 models tie lm_head to the embedding (tie_word_embeddings: true)
        ModelArch("qwen3-0.6b", "Qwen/Qwen3-0.6B", layers=28, hidden=1024, heads=16,
                  kv_heads=8, intermediate=3072, tie_embeddings=True, **_QWEN3),
        ModelArch("qwen3-1.7b", "Qwen/Qwen3-1.7B", layers=28, hidden=2048, heads=16,
                  kv_heads=8, intermediate=6144, tie_embeddings=True, **_QWEN3),
        ModelArch("qwen3-4b", "Qwen/Qwen3-4B", layers=36, hidden=2560, heads=32, kv_heads=8,
                  intermediate=9728, tie_embeddings=True, **_QWEN3),
        ModelArch("qwen3-8b", "Qwen/Qwen3-8B", layers=36, hidden=4096, heads=32, kv_heads=8,
                  intermediate=12288, **_QWEN3),
        ModelArch("qwen3-14b", "Qwen/Qwen3-14B", layers=40, hidden=5120, heads=40, kv_heads=8,
                  intermediate=17408, **_QWEN3),
        ModelArch("qwen3-32b", "Qwen/Qwen3-32B", layers=64, hidden=5120, heads=64, kv_heads=8,
                  intermediate=25600, **_QWEN3),
        ModelArch("qwen3-30b-a3b", "Qwen/Qwen3-30B-A3B", layers=48, hidden=2048, heads=32,
                  kv_heads=4, intermediate=6144, experts=128, experts_per_token=8,
                  moe_intermediate=768, **_QWEN3),
        ModelArch("qwen3-235b-a22b", "Qwen/Qwen3-235B-A22B", layers=94, hidden=4096, heads=64,
                  kv_heads=4, intermediate=12288, experts=128, experts_per_token=8,
                  moe_intermediate=1536, **_QWEN3),
        ModelArch("mixtral-8x7b", "mistralai/Mixtral-8x7B-v0.1", layers=32, hidden=4096,
                  heads=32, kv_heads=8, head_dim=128, vocab=32000, intermediate=14336,
                  max_context=32768, experts=8, experts_per_token=2, moe_intermediate=14336,
                  **_MIXTRAL),
        ModelArch("mixtral-8x22b", "mistralai/Mixtral-8x22B-v0.1", layers=56, hidden=6144,
                  heads=48, kv_heads=8, head_dim=128, vocab=32000, intermediate=16384,
                  max_context=65536, experts=8, experts_per_token=2, moe_intermediate=16384,
                  **_MIXTRAL),
        ModelArch("gemma-2-9b", "google/gemma-2-9b", layers=42, hidden=3584, heads=16,
                  kv_heads=8, head_dim=256, intermediate=14336, **_GEMMA2),
        ModelArch("gemma-2-27b", "google/gemma-2-27b", layers=46, hidden=4608, heads=32,
                  kv_heads=16, head_dim=128, intermediate=36864, **_GEMMA2),
        ModelArch("deepseek-v2-lite", "deepseek-ai/DeepSeek-V2-Lite", layers=27, hidden=2048,
                  heads=16, kv_heads=16, vocab=102400, intermediate=10944, max_context=163840,
                  experts=64, experts_per_token=6, moe_intermediate=1408, shared_experts=2,
                  dense_layers=1, **_MLA),
        ModelArch("deepseek-v2", "deepseek-ai/DeepSeek-V2", layers=60, hidden=5120, heads=128,
                  kv_heads=128, vocab=102400, intermediate=12288, max_context=163840,
                  experts=160, experts_per_token=6, moe_intermediate=1536, shared_experts=2,
                  dense_layers=1, q_lora_rank=1536, **_MLA),
        ModelArch("deepseek-v3", "deepseek-ai/DeepSeek-V3", layers=61, hidden=7168, heads=128,
                  kv_heads=128, vocab=129280, intermediate=18432, max_context=163840,
                  experts=256, experts_per_token=8, moe_intermediate=2048, shared_experts=1,
                  dense_layers=3, q_lora_rank=1536, native=Quantization.fp8_block, **_MLA),
        ModelArch("deepseek-r1", "deepseek-ai/DeepSeek-R1", layers=61, hidden=7168, heads=128,
                  kv_heads=128, vocab=129280, intermediate=18432, max_context=163840,
                  experts=256, experts_per_token=8, moe_intermediate=2048, shared_experts=1,
                  dense_layers=3, q_lora_rank=1536, native=Quantization.fp8_block, **_MLA),
    )
}  # fmt: skip

# Suffixes of fine-tuned variants that share the base model's architecture.
_VARIANT_SUFFIXES = ("-instruct", "-chat", "-base", "-it", "-hf", "-v0.1", "-2507")
# Quantised checkpoints users type, and the format each stands for. "-FP8" is the family's
# own FP8 release: Qwen3 and DeepSeek publish 128x128 block scales, Neural Magic/Red Hat
# per-tensor (`-FP8`) or per-channel (`-FP8-dynamic`); Meta's own 405B FP8 is row-wise with
# attention left in bf16 (QUANTISED_CHECKPOINTS).
_QUANT_SUFFIXES: tuple[tuple[str, Quantization | None], ...] = (
    ("-awq", Quantization.int4),
    ("-gptq-int4", Quantization.int4),
    ("-gptq-int8", Quantization.int8),
    ("-gptq", Quantization.int4),
    ("-w4a16", Quantization.int4),
    ("-quantized.w4a16", Quantization.int4),
    ("-quantized.w8a8", Quantization.int8),
    ("-w8a8", Quantization.int8),
    ("-int8", Quantization.int8),
    ("-fp8-dynamic", Quantization.fp8_channel),
    ("-fp8", None),  # the family's FP8 (see above)
    ("-unsloth-bnb-4bit", Quantization.nf4),
    ("-bnb-4bit", Quantization.nf4),
)


class UnknownModel(LookupError):
    """A model name outside the catalogue; the message lists the closest names."""

    def __init__(self, name: str) -> None:
        key = _base_key(name)[0]
        close = difflib.get_close_matches(key, list(CATALOGUE), n=4, cutoff=0.5)
        hint = f"closest: {', '.join(close)}" if close else f"known: {', '.join(CATALOGUE)}"
        super().__init__(
            f"unknown model {name!r} ({hint}); describe another model with --model-config "
            f"CONFIG.json or its architecture flags (--layers, --hidden, --heads, --kv-heads, ...)"
        )
        self.name, self.close = name, close


def _base_key(name: str) -> tuple[str, Quantization | None, str]:
    """`Qwen/Qwen2.5-72B-Instruct-AWQ` -> (`qwen2.5-72b`, int4, `-awq`): the catalogue key, the
    weights format the name carries and its quantisation suffix ("" when it carries none)."""
    key = name.strip().lower().rpartition("/")[2]
    key = re.sub(r"^meta-", "", key)
    fmt: Quantization | None = None
    quantised = ""
    changed = True
    while changed:
        changed = False
        for suffix, q in _QUANT_SUFFIXES:
            if key.endswith(suffix) and key[: -len(suffix)] and not quantised:
                key, fmt, quantised, changed = key[: -len(suffix)], q, suffix, True
        for suffix in _VARIANT_SUFFIXES:
            if key.endswith(suffix) and key[: -len(suffix)]:
                key, changed = key[: -len(suffix)], True
    return key, fmt, quantised


@dataclass(frozen=True)
class QuantisedCheckpoint:
    """A published quantised checkpoint whose format or unconverted modules differ from what its
    name's suffix alone implies."""

    base: str  # catalogue key
    suffix: str  # its quantisation suffix, as in _QUANT_SUFFIXES
    orgs: tuple[str, ...]  # Hugging Face organisations publishing it; a name without one too
    weights: Quantization
    kept: KeptModules


# Meta's FP8 Llama 3.1 405B (meta-llama/Llama-3.1-405B[-Instruct]-FP8, formerly
# Meta-Llama-3.1-405B[-Instruct]-FP8): FBGEMM row-wise FP8, one fp32 scale per output channel
# (vLLM fbgemm_fp8.py: weight_scale of (output size, 1), float32), and only the feed-forward
# layers of layers 1..124 quantised:
# - The Llama 3 Herd of Models, arXiv 2407.21783, section 6.2 (FP8 quantization): the
#   self-attention parameters and the first and last Transformer layers are not quantised;
# - Meta's own loader, https://github.com/meta-llama/llama-models/blob/7798f83ab724dcafe86567cb995e353de2a564d0/models/llama3/quantization/loader.py
#   convert_to_fp8_quantized_model: feed_forward w1/w3/w2 of every block but layer 0 and the last;
# - the checkpoint's config.json, https://huggingface.co/meta-llama/Llama-3.1-405B-Instruct-FP8/blob/main/config.json
#   quantization_config {quant_method: fbgemm_fp8, activation_scale_ub: 1200.0,
#   modules_to_not_convert: 511 full names, lm_head, the 126 layers' self_attn.{q,k,v,o}_proj
#   and layers 0 and 125's mlp.{gate,up,down}_proj}. The file itself is not in the stored
#   corpora; the list is as third-party code reproduces it for transformers' FbgemmFp8Config
#   (a Vertex AI training utility, `_get_llama_3_1_405b_modules_to_not_convert`), and agrees
#   with the loader above. Written here as three patterns matching the same 511 names.
LLAMA_31_405B_FP8_KEPT = KeptModules(
    patterns=(
        "lm_head",
        r"re:model\.layers\.\d+\.self_attn\.[qkvo]_proj$",
        r"re:model\.layers\.(0|125)\.mlp\.(gate|up|down)_proj$",
    ),
    match="exact-or-regex",
    source="https://huggingface.co/meta-llama/Llama-3.1-405B-Instruct-FP8/blob/main/config.json "
    "quantization_config.modules_to_not_convert; arXiv 2407.21783 section 6.2",
)

QUANTISED_CHECKPOINTS = (
    QuantisedCheckpoint(
        "llama-3.1-405b", "-fp8", ("meta-llama",), Quantization.fp8_channel, LLAMA_31_405B_FP8_KEPT
    ),
)


def _checkpoint(name: str, key: str, suffix: str) -> QuantisedCheckpoint | None:
    org = name.strip().lower().rpartition("/")[0]
    for c in QUANTISED_CHECKPOINTS:
        if c.base == key and c.suffix == suffix and (not org or org in c.orgs):
            return c
    return None


def _family_fp8(arch: ModelArch) -> Quantization:
    return (
        Quantization.fp8_block if arch.name.startswith(("qwen3", "deepseek")) else Quantization.fp8
    )


@dataclass(frozen=True)
class ResolvedModel:
    arch: ModelArch
    weights: Quantization  # the format the name implies (the base model's native one if none)
    from_name: bool  # the name carried a quantisation suffix


def resolve_model(name: str) -> ResolvedModel:
    """The catalogue entry and weights format a model name stands for; UnknownModel else."""
    key, fmt, suffix = _base_key(name)
    arch = CATALOGUE.get(key)
    if arch is None:
        raise UnknownModel(name)
    checkpoint = _checkpoint(name, key, suffix)
    if checkpoint is not None:
        return ResolvedModel(replace(arch, kept=checkpoint.kept), checkpoint.weights, True)
    if suffix and fmt is None:
        fmt = _family_fp8(arch)
    return ResolvedModel(arch, fmt or arch.native, bool(suffix))


def find_model(name: str) -> ModelArch | None:
    """The catalogue entry for a model name, a Hugging Face id or a variant; None if unknown."""
    try:
        return resolve_model(name).arch
    except UnknownModel:
        return None


# The dense shape assumed where a contract declares no model at all (`from_contract`): Llama-3
# proportions, 8 KV heads of 128, layers about 19 x cube root of the parameters in billions.
DEFAULT_KV_HEADS = 8
DEFAULT_HEAD_DIM = 128
DEFAULT_LAYERS_PER_CUBE_ROOT_B = 19
DEFAULT_FFN_RATIO = 3.5  # SwiGLU width / hidden (Llama-3-8B: 14336 / 4096)
DEFAULT_VOCAB = 128256  # Llama-3's


def dense_shape(
    name: str,
    params: int,
    *,
    layers: int | None = None,
    kv_heads: int | None = None,
    head_dim: int | None = None,
    vocab: int | None = None,
) -> ModelArch:
    """A dense grouped-query transformer of `params` parameters: what is not given is assumed
    (Llama-3 proportions) and the result is marked `approximate`. The parameter count is kept
    as declared; the width follows from params ~ 12 x layers x hidden^2 + 2 x vocab x hidden."""
    billions = params / 1e9
    layers = layers or max(1, round(DEFAULT_LAYERS_PER_CUBE_ROOT_B * billions ** (1 / 3)))
    head_dim = head_dim or DEFAULT_HEAD_DIM
    kv = kv_heads or DEFAULT_KV_HEADS
    vocab = vocab or DEFAULT_VOCAB
    # solve 12 L h^2 + 2 V h = params for h
    a, b = 12 * layers, 2 * vocab
    hidden = (-b + (b * b + 4 * a * params) ** 0.5) / (2 * a)
    heads = max(kv, round(hidden / head_dim / kv) * kv)
    return ModelArch(
        name=name,
        repo="",
        layers=layers,
        hidden=heads * head_dim,
        heads=heads,
        kv_heads=kv,
        head_dim=head_dim,
        vocab=vocab,
        intermediate=round(DEFAULT_FFN_RATIO * heads * head_dim),
        max_context=0,
        declared_params=params,
        approximate=True,
    )


def approximate_dense(name: str, params: int) -> ModelArch:
    """The documented default shape for `params` (see `dense_shape`)."""
    return dense_shape(name, params)
