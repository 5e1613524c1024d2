"""Weight bytes from the architecture, matrix by matrix, on each GPU of a replica.

A quantised checkpoint quantises the linear layers of the transformer blocks and keeps the
rest in the model's 16-bit dtype: the embedding and the lm_head, the norms, biases and the MoE
router (the AWQ/GPTQ/compressed-tensors/bitsandbytes exporters all skip them). Each quantised
linear layer of `k` inputs and `n` outputs also carries its scales (and zeros):

    int4 (AWQ/GPTQ)  k n / 2  + (k / 128) n x (2 B fp16 scale + 0.5 B packed 4-bit zero)
                     (GPTQ adds a 4 B group index per input row: k x 4, negligible)
    nf4 (bnb-4bit)   k n / 2  + one absmax per 64 weights, double-quantised to 1 B, with one
                     fp32 second-level absmax per 256 blocks (QLoRA: 0.127 bits per weight)
    int8 (w8a8)      k n      + n fp32 per-channel scales
    fp8              k n      + one fp32 scale per tensor
    fp8-channel      k n      + n fp32 scales
    fp8-block        k n      + (k / 128)(n / 128) fp32 scales (DeepSeek-V3's weight_scale_inv)

A checkpoint may leave more in 16 bits (`ModelArch.kept`, from its quantization_config or the
catalogue): each linear module is then counted by its Hugging Face name
(`model.layers.N.self_attn.q_proj`, `.mlp.gate_proj`, `.mlp.experts.E.down_proj`,
`.mlp.shared_experts.up_proj`, MLA's `q_a_proj` / `q_b_proj` / `kv_a_proj_with_mqa` / `kv_b_proj`)
in 16 bits if the list names it and in the quantised format with its scales otherwise; a fused
q/k/v or gate/up whose parts agree is counted as one matrix, as without a list.

Tensor parallelism (vLLM's layers): column-parallel q/k/v, gate/up and MLA q_b/kv_b split
their outputs, row-parallel o/down their inputs; KV heads fewer than GPUs are replicated; the
vocabulary (padded to a multiple of 64) is split; norms, the router and MLA's q_a/kv_a
projections are replicated on every GPU; each expert's width is split (no expert parallelism).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from gpupact.contract.schema import Quantization
from gpupact.plan.models import ModelArch

GROUP = 128  # AWQ/GPTQ group size and FP8 block edge
NF4_BLOCK = 64  # bitsandbytes 4-bit block
NF4_NESTED_BLOCK = 256  # blocks per second-level absmax (double quantisation)
VOCAB_PADDING = 64  # vLLM pads the vocabulary to a multiple of this before splitting it
SIXTEEN_BIT = (Quantization.bf16, Quantization.fp16)


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def linear_bytes(fmt: Quantization, k: int, n: int) -> int:
    """Bytes of one linear layer of `k` inputs and `n` outputs in `fmt`, scales included."""
    weights = k * n
    if fmt is Quantization.fp32:
        return 4 * weights
    if fmt in SIXTEEN_BIT:
        return 2 * weights
    if fmt is Quantization.int4:
        groups = _ceil(k, GROUP)
        return weights // 2 + groups * n * 2 + _ceil(groups * n, 2)
    if fmt is Quantization.nf4:
        blocks = _ceil(weights, NF4_BLOCK)
        return _ceil(weights, 2) + blocks + 4 * _ceil(blocks, NF4_NESTED_BLOCK)
    if fmt is Quantization.fp8:
        return weights + 4
    if fmt is Quantization.fp8_block:
        return weights + 4 * _ceil(k, GROUP) * _ceil(n, GROUP)
    return weights + 4 * n  # int8 (w8a8) and fp8-channel: one fp32 scale per output channel


@dataclass(frozen=True)
class WeightBytes:
    """One GPU's share of the weights, by part (bytes)."""

    embeddings: int  # embedding and lm_head, 16-bit, vocabulary split over the GPUs
    attention: int
    mlp: int  # dense MLPs and shared experts
    experts: int  # routed experts
    replicated: int  # norms, biases, routers: on every GPU, 16-bit

    @property
    def total(self) -> int:
        return self.embeddings + self.attention + self.mlp + self.experts + self.replicated


KEPT_DTYPE = Quantization.bf16  # a kept module stays in the model's 16-bit dtype


Formats = Callable[[str], Quantization]  # a part's name -> its format


def _formats(fmt: Quantization, kept: frozenset[str]) -> Formats:
    return lambda slot: KEPT_DTYPE if slot in kept else fmt


def _fused(f: Formats, k: int, widths: dict[str, int]) -> int:
    """Bytes of column-parallel parts sharing one input (q/k/v, gate/up): one matrix when they
    share a format, each its own otherwise."""
    formats = {f(slot) for slot in widths}
    if len(formats) == 1:
        return linear_bytes(formats.pop(), k, sum(widths.values()))
    return sum(linear_bytes(f(slot), k, n) for slot, n in widths.items())


def _attention(
    m: ModelArch, fmt: Quantization, tp: int, kept: frozenset[str] = frozenset()
) -> tuple[int, int]:
    """(projections, 16-bit replicated norms and biases) of one layer on one GPU; the `kept`
    projections (`q`, `k`, `v`, `o`, `q_a`, `q_b`, `kv_a`, `kv_b`) in 16 bits."""
    f = _formats(fmt, kept)
    h, qk = m.hidden, m.qk_head_dim
    heads = _ceil(m.heads, tp)
    if m.mla:
        q = (
            linear_bytes(f("q_a"), h, m.q_lora_rank)
            + linear_bytes(f("q_b"), m.q_lora_rank, heads * qk)
            if m.q_lora_rank
            else linear_bytes(f("q"), h, heads * qk)
        )
        kv_a = linear_bytes(f("kv_a"), h, m.kv_lora_rank + m.qk_rope_head_dim)
        kv_b = linear_bytes(f("kv_b"), m.kv_lora_rank, heads * 2 * m.head_dim)
        o = linear_bytes(f("o"), heads * m.head_dim, h)
        return q + kv_a + kv_b + o, 2 * (m.q_lora_rank + m.kv_lora_rank)
    kv = m.kv_heads // tp if m.kv_heads >= tp else 1
    widths = {"q": heads * m.head_dim, "k": kv * m.head_dim, "v": kv * m.head_dim}
    qkv = _fused(f, h, widths)
    o = linear_bytes(f("o"), heads * m.head_dim, h)
    bias = 2 * (heads + 2 * kv) * m.head_dim if m.qkv_bias else 0
    norm = 2 * 2 * m.head_dim if m.qk_norm else 0
    return qkv + o, bias + norm


def _mlp(
    fmt: Quantization, hidden: int, width: int, tp: int, kept: frozenset[str] = frozenset()
) -> int:
    """One SwiGLU MLP on one GPU; the `kept` parts (`gate`, `up`, `down`) in 16 bits."""
    f = _formats(fmt, kept)
    part = _ceil(width, tp)
    return _fused(f, hidden, {"gate": part, "up": part}) + linear_bytes(f("down"), part, hidden)


_ATTENTION_NAMES = {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj"}
_MLA_NAMES = {
    "q": "q_proj", "q_a": "q_a_proj", "q_b": "q_b_proj", "kv_a": "kv_a_proj_with_mqa",
    "kv_b": "kv_b_proj", "o": "o_proj",
}  # fmt: skip
_MLP_NAMES = {"gate": "gate_proj", "up": "up_proj", "down": "down_proj"}
PARTS = ("gate", "up", "down")


@dataclass(frozen=True)
class LayerKept:
    """What one layer keeps in 16 bits: attention and dense-MLP parts, shared-expert parts, and
    the routed experts keeping any part, as (kept parts, how many experts keep exactly those)."""

    attention: frozenset[str] = frozenset()
    mlp: frozenset[str] = frozenset()
    shared: frozenset[str] = frozenset()
    experts: tuple[tuple[frozenset[str], int], ...] = ()


def layer_modules(m: ModelArch, layer: int) -> dict[tuple[str, str], str]:
    """The Hugging Face names of one layer's linear modules, keyed by (block, part): block
    `attention`, `mlp` (a dense layer), `shared` (shared experts) or `expert.E`."""
    prefix = f"model.layers.{layer}"
    names: dict[tuple[str, str], str] = {}
    attention = _MLA_NAMES if m.mla else _ATTENTION_NAMES
    if m.mla:
        attention = {
            k: v
            for k, v in attention.items()
            if k not in (("q",) if m.q_lora_rank else ("q_a", "q_b"))
        }
    for part, name in attention.items():
        names["attention", part] = f"{prefix}.self_attn.{name}"
    if not m.moe or layer < m.dense_layers:
        for part, name in _MLP_NAMES.items():
            names["mlp", part] = f"{prefix}.mlp.{name}"
        return names
    for e in range(m.experts):
        for part, name in zip(PARTS, m.expert_projections, strict=True):
            names[f"expert.{e}", part] = f"{prefix}.{m.moe_module}.experts.{e}.{name}"
    if m.shared_experts:
        for part, name in _MLP_NAMES.items():
            names["shared", part] = f"{prefix}.{m.moe_module}.shared_experts.{name}"
    return names


def layer_kept(m: ModelArch, layer: int) -> LayerKept:
    """Which of one layer's linear modules `m.kept` leaves in 16 bits."""
    if m.kept is None:
        return LayerKept()
    sets: dict[str, set[str]] = {"attention": set(), "mlp": set(), "shared": set()}
    experts: dict[str, set[str]] = {}
    for (block, part), name in layer_modules(m, layer).items():
        if not m.kept.keeps(name):
            continue
        if block.startswith("expert."):
            experts.setdefault(block, set()).add(part)
        else:
            sets[block].add(part)
    by_parts = Counter(frozenset(parts) for parts in experts.values())
    return LayerKept(
        frozenset(sets["attention"]),
        frozenset(sets["mlp"]),
        frozenset(sets["shared"]),
        tuple(sorted(by_parts.items(), key=lambda item: sorted(item[0]))),
    )


@lru_cache(maxsize=256)
def kept_layers(m: ModelArch) -> tuple[tuple[bool, LayerKept, int], ...]:
    """(MoE layer?, what it keeps, how many layers) for `m`'s layers, grouped."""
    groups = Counter((m.moe and i >= m.dense_layers, layer_kept(m, i)) for i in range(m.layers))
    return tuple((moe, kept, n) for (moe, kept), n in groups.items())


def kept_names(m: ModelArch) -> int:
    """How many of `m`'s linear modules its `kept` list names (0 without one)."""
    return sum(
        n
        * (
            len(k.attention)
            + len(k.mlp)
            + len(k.shared)
            + sum(len(parts) * count for parts, count in k.experts)
        )
        for _moe, k, n in kept_layers(m)
    )


def _experts(
    m: ModelArch, fmt: Quantization, tp: int, kept: tuple[tuple[frozenset[str], int], ...]
) -> int:
    """One MoE layer's routed experts on one GPU, those in `kept` with those parts in 16 bits."""
    plain = m.experts - sum(count for _parts, count in kept)
    total = plain * _mlp(fmt, m.hidden, m.moe_intermediate, tp)
    for parts, count in kept:
        total += count * _mlp(fmt, m.hidden, m.moe_intermediate, tp, parts)
    return total


def gpu_weight_bytes(m: ModelArch, fmt: Quantization, tp: int) -> WeightBytes:
    """What one GPU of a `tp`-way replica holds of `m`'s weights in format `fmt`."""
    vocab = _ceil(_ceil(m.vocab, VOCAB_PADDING) * VOCAB_PADDING, tp)
    embeddings = (1 if m.tie_embeddings else 2) * vocab * m.hidden * 2
    norms = 2 * m.hidden * (m.norms_per_layer * m.layers + 1)
    if m.declared_params:
        # only the count is known: every non-embedding weight in one quantised matrix of
        # hidden-wide inputs, split over the GPUs
        linear = max(0, m.declared_params - m.embedding_params - norms // 2)
        rows = _ceil(linear, m.hidden * tp)
        return WeightBytes(embeddings, 0, linear_bytes(fmt, m.hidden, rows), 0, norms)
    router = m.moe_layers * m.hidden * m.experts * 2
    if m.kept is not None and fmt not in SIXTEEN_BIT:
        return _with_kept(m, fmt, tp, embeddings, norms + router)
    attention, extra = _attention(m, fmt, tp)
    dense_layers = m.layers - m.moe_layers
    mlp = dense_layers * _mlp(fmt, m.hidden, m.intermediate, tp)
    experts = 0
    if m.moe:
        one = _mlp(fmt, m.hidden, m.moe_intermediate, tp)
        experts = m.moe_layers * m.experts * one
        mlp += m.moe_layers * m.shared_experts * one
    return WeightBytes(
        embeddings, m.layers * attention, mlp, experts, norms + m.layers * extra + router
    )


def _with_kept(
    m: ModelArch, fmt: Quantization, tp: int, embeddings: int, replicated: int
) -> WeightBytes:
    """gpu_weight_bytes layer by layer, each module in 16 bits if `m.kept` names it."""
    attention = mlp = experts = 0
    for moe, kept, n in kept_layers(m):
        projections, extra = _attention(m, fmt, tp, kept.attention)
        attention += n * projections
        replicated += n * extra
        if not moe:
            mlp += n * _mlp(fmt, m.hidden, m.intermediate, tp, kept.mlp)
            continue
        if m.shared_experts:
            width = m.shared_experts * m.moe_intermediate
            mlp += n * _shared(fmt, m, tp, width, kept.shared)
        experts += n * _experts(m, fmt, tp, kept.experts)
    return WeightBytes(embeddings, attention, mlp, experts, replicated)


def _shared(fmt: Quantization, m: ModelArch, tp: int, width: int, kept: frozenset[str]) -> int:
    """The shared experts (one module `width` wide); without kept parts counted as the unkept
    path counts them (one expert-wide MLP each), so the two paths agree."""
    if not kept:
        return m.shared_experts * _mlp(fmt, m.hidden, m.moe_intermediate, tp)
    return _mlp(fmt, m.hidden, width, tp, kept)


def weight_bytes(m: ModelArch, fmt: Quantization, tp: int = 1) -> int:
    """The replica's weights: `tp` GPUs' shares (replicated parts counted on each GPU)."""
    return tp * gpu_weight_bytes(m, fmt, tp).total
