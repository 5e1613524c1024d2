"""Architecture facts of the models `gpupact plan` knows, from each model's public config.json.

Only what sizing needs: layers, widths, attention and KV heads (GQA), vocabulary, parameter
counts (total, and active per token for mixture-of-experts), and for multi-head latent
attention (DeepSeek-V3) the compressed KV width. Sources, one URL per model: docs/plan.md.

A model outside the catalogue is approximated as a dense grouped-query transformer from its
parameter count (`approximate_dense`); every plan built on one says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# The dense approximation (also what `gpupact diagnose` assumes for an unknown model):
# 8 KV heads of 128 dims, layers about 19 x cube root of the parameters in billions, and a
# width from params ~ 12 x layers x hidden^2 (attention 4h^2 + a 2.7x SwiGLU MLP 8h^2).
APPROX_KV_HEADS = 8
APPROX_HEAD_DIM = 128
APPROX_LAYERS_PER_CUBE_ROOT_B = 19
APPROX_PARAMS_PER_LAYER_H2 = 12
APPROX_FFN_RATIO = 3.5  # SwiGLU width / hidden, Llama-3 and Qwen2.5 sit at 3.5 .. 5.3
APPROX_VOCAB = 128_000  # only sizes the logits buffer


@dataclass(frozen=True)
class ModelArch:
    name: str  # catalogue key, e.g. "llama-3.1-70b"
    repo: str  # Hugging Face repository the facts come from ("" when approximated)
    layers: int  # num_hidden_layers
    hidden: int  # hidden_size
    heads: int  # num_attention_heads
    kv_heads: int  # num_key_value_heads (GQA); MLA models keep the attention head count
    head_dim: int  # per-head width of V (and of Q/K without the RoPE part)
    vocab: int  # vocab_size
    ffn_width: int  # FFN width one token passes through (MoE: active experts x expert width)
    params: int  # total parameters
    active_params: int  # parameters one token uses (== params for dense models)
    max_context: int  # max_position_embeddings
    experts: int = 0  # routed experts per MoE layer (0: dense)
    experts_per_token: int = 0
    kv_lora_rank: int = 0  # MLA: compressed KV width cached per layer (0: not MLA)
    qk_rope_head_dim: int = 0  # MLA: decoupled RoPE key width, cached beside the latent
    approximate: bool = False  # built from a parameter count, not from a config.json

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
    def expert_params(self) -> int:
        """Parameters of one routed expert over all layers (0 for a dense model): the
        difference between total and active is the (experts - experts_per_token) unused."""
        if not self.moe:
            return 0
        return (self.params - self.active_params) // (self.experts - self.experts_per_token)

    @property
    def shared_params(self) -> int:
        """Parameters every token uses: attention, embeddings, shared experts, norms."""
        return self.active_params - self.experts_per_token * self.expert_params


_LLAMA3 = {"vocab": 128256, "max_context": 131072, "kv_heads": 8, "head_dim": 128}
_QWEN25 = {"vocab": 152064, "max_context": 32768, "head_dim": 128}

# Parameter counts: dense models counted from their config.json (embeddings and lm_head
# untied, Qwen's q/k/v biases included), which reproduces the model cards' 8.03B, 70.6B,
# 405.9B, 7.61B, 32.8B, 72.7B; Mixtral and DeepSeek-V3 as their cards publish them.
CATALOGUE: dict[str, ModelArch] = {
    m.name: m
    for m in (
        ModelArch(
            "llama-3.1-8b", "meta-llama/Llama-3.1-8B", layers=32, hidden=4096, heads=32,
            ffn_width=14336, params=8_030_261_248, active_params=8_030_261_248, **_LLAMA3,
        ),
        ModelArch(
            "llama-3.1-70b", "meta-llama/Llama-3.1-70B", layers=80, hidden=8192, heads=64,
            ffn_width=28672, params=70_553_706_496, active_params=70_553_706_496, **_LLAMA3,
        ),
        ModelArch(
            "llama-3.1-405b", "meta-llama/Llama-3.1-405B", layers=126, hidden=16384,
            heads=128, ffn_width=53248, params=405_853_388_800,
            active_params=405_853_388_800, **_LLAMA3,
        ),
        ModelArch(
            "qwen2.5-7b", "Qwen/Qwen2.5-7B-Instruct", layers=28, hidden=3584, heads=28,
            kv_heads=4, ffn_width=18944, params=7_615_616_512,
            active_params=7_615_616_512, **_QWEN25,
        ),
        ModelArch(
            "qwen2.5-32b", "Qwen/Qwen2.5-32B-Instruct", layers=64, hidden=5120, heads=40,
            kv_heads=8, ffn_width=27648, params=32_763_876_352,
            active_params=32_763_876_352, **_QWEN25,
        ),
        ModelArch(
            "qwen2.5-72b", "Qwen/Qwen2.5-72B-Instruct", layers=80, hidden=8192, heads=64,
            kv_heads=8, ffn_width=29568, params=72_706_203_648,
            active_params=72_706_203_648, **_QWEN25,
        ),
        ModelArch(
            "mixtral-8x7b", "mistralai/Mixtral-8x7B-v0.1", layers=32, hidden=4096, heads=32,
            kv_heads=8, head_dim=128, vocab=32000, ffn_width=2 * 14336,
            params=46_700_000_000, active_params=12_900_000_000, max_context=32768,
            experts=8, experts_per_token=2,
        ),
        # MLA: K/V are rebuilt from a 512-wide latent plus a 64-wide RoPE key per layer and
        # token, which is all the cache holds; 128 heads of 128 (V) / 128+64 (Q, K) dims.
        ModelArch(
            "deepseek-v3", "deepseek-ai/DeepSeek-V3", layers=61, hidden=7168, heads=128,
            kv_heads=128, head_dim=128, vocab=129280, ffn_width=(8 + 1) * 2048,
            params=671_000_000_000, active_params=37_000_000_000, max_context=163840,
            experts=256, experts_per_token=8, kv_lora_rank=512, qk_rope_head_dim=64,
        ),
    )
}  # fmt: skip

# Suffixes of fine-tuned variants that share the base model's architecture.
_VARIANT_SUFFIXES = ("-instruct", "-chat", "-base", "-it", "-v0.1", "-fp8")


def _key(name: str) -> str:
    """`meta-llama/Meta-Llama-3.1-70B-Instruct` -> `llama-3.1-70b`."""
    key = name.strip().lower().rpartition("/")[2]
    key = re.sub(r"^meta-", "", key)
    changed = True
    while changed:
        changed = False
        for suffix in _VARIANT_SUFFIXES:
            if key.endswith(suffix) and key[: -len(suffix)]:
                key, changed = key[: -len(suffix)], True
    return key


def find_model(name: str) -> ModelArch | None:
    """The catalogue entry for a model name, a Hugging Face id or a fine-tuned variant."""
    return CATALOGUE.get(_key(name))


def approximate_dense(name: str, params: int) -> ModelArch:
    """A dense grouped-query transformer with `params` parameters (see the module constants)."""
    billions = params / 1e9
    layers = max(1, round(APPROX_LAYERS_PER_CUBE_ROOT_B * billions ** (1 / 3)))
    hidden = (params / (APPROX_PARAMS_PER_LAYER_H2 * layers)) ** 0.5
    # heads of 128 dims, a multiple of the KV heads so that every tensor-parallel size up to
    # 8 divides them
    heads = max(
        APPROX_KV_HEADS, round(hidden / APPROX_HEAD_DIM / APPROX_KV_HEADS) * APPROX_KV_HEADS
    )
    return ModelArch(
        name=name,
        repo="",
        layers=layers,
        hidden=heads * APPROX_HEAD_DIM,
        heads=heads,
        kv_heads=APPROX_KV_HEADS,
        head_dim=APPROX_HEAD_DIM,
        vocab=APPROX_VOCAB,
        ffn_width=round(APPROX_FFN_RATIO * heads * APPROX_HEAD_DIM),
        params=params,
        active_params=params,
        max_context=0,  # unknown: not checked
        approximate=True,
    )
