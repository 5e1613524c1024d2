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

Tensor parallelism (vLLM's layers): column-parallel q/k/v, gate/up and MLA q_b/kv_b split
their outputs, row-parallel o/down their inputs; KV heads fewer than GPUs are replicated; the
vocabulary (padded to a multiple of 64) is split; norms, the router and MLA's q_a/kv_a
projections are replicated on every GPU; each expert's width is split (no expert parallelism).
"""

from __future__ import annotations

from dataclasses import dataclass

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


def _attention(m: ModelArch, fmt: Quantization, tp: int) -> tuple[int, int]:
    """(quantised projections, 16-bit replicated norms and biases) of one layer on one GPU."""
    h, qk = m.hidden, m.qk_head_dim
    heads = _ceil(m.heads, tp)
    if m.mla:
        q = (
            linear_bytes(fmt, h, m.q_lora_rank) + linear_bytes(fmt, m.q_lora_rank, heads * qk)
            if m.q_lora_rank
            else linear_bytes(fmt, h, heads * qk)
        )
        kv_a = linear_bytes(fmt, h, m.kv_lora_rank + m.qk_rope_head_dim)
        kv_b = linear_bytes(fmt, m.kv_lora_rank, heads * 2 * m.head_dim)
        o = linear_bytes(fmt, heads * m.head_dim, h)
        return q + kv_a + kv_b + o, 2 * (m.q_lora_rank + m.kv_lora_rank)
    kv = m.kv_heads // tp if m.kv_heads >= tp else 1
    qkv = linear_bytes(fmt, h, (heads + 2 * kv) * m.head_dim)
    o = linear_bytes(fmt, heads * m.head_dim, h)
    bias = 2 * (heads + 2 * kv) * m.head_dim if m.qkv_bias else 0
    norm = 2 * 2 * m.head_dim if m.qk_norm else 0
    return qkv + o, bias + norm


def _mlp(fmt: Quantization, hidden: int, width: int, tp: int) -> int:
    part = _ceil(width, tp)
    return linear_bytes(fmt, hidden, 2 * part) + linear_bytes(fmt, part, hidden)


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
    attention, extra = _attention(m, fmt, tp)
    dense_layers = m.layers - m.moe_layers
    mlp = dense_layers * _mlp(fmt, m.hidden, m.intermediate, tp)
    experts = 0
    router = 0
    if m.moe:
        one = _mlp(fmt, m.hidden, m.moe_intermediate, tp)
        experts = m.moe_layers * m.experts * one
        mlp += m.moe_layers * m.shared_experts * one
        router = m.moe_layers * m.hidden * m.experts * 2
    return WeightBytes(
        embeddings, m.layers * attention, mlp, experts, norms + m.layers * extra + router
    )


def weight_bytes(m: ModelArch, fmt: Quantization, tp: int = 1) -> int:
    """The replica's weights: `tp` GPUs' shares (replicated parts counted on each GPU)."""
    return tp * gpu_weight_bytes(m, fmt, tp).total
