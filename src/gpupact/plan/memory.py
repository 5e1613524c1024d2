"""GPU memory of one replica: weights, runtime and activations, and the KV cache that is left.

    usable   = tp x device memory x GPU_MEMORY_UTILIZATION
    kv room  = usable - weights - tp x (RUNTIME_OVERHEAD + activations)
    KV/token = 2 x layers x kv_heads x head_dim x dtype bytes          (K and V per layer)
             = layers x (kv_lora_rank + qk_rope_head_dim) x dtype bytes (MLA: latent + RoPE key)

With tensor parallelism KV heads are split over the GPUs; when there are fewer KV heads than
GPUs each is replicated (tp / kv_heads copies), and vLLM replicates an MLA latent on every GPU
(it has no heads to split), so the replica pays `KV/token x copies`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from gpupact.contract.schema import Quantization
from gpupact.plan.models import ModelArch

GIB = 2**30
# vLLM's default `gpu_memory_utilization`: the share of each GPU the engine may take.
GPU_MEMORY_UTILIZATION = Fraction(9, 10)  # exact: byte counts stay integers
# Per GPU, outside the weights and the KV cache: CUDA context, cuBLAS workspaces, NCCL
# buffers and captured CUDA graphs (vLLM logs 1-3 GiB of "non-torch" plus graph memory).
RUNTIME_OVERHEAD_BYTES = 2 * GIB
# vLLM's default token budget of one scheduler step with chunked prefill
# (`max_num_batched_tokens`): the largest activation batch a forward pass holds.
PREFILL_CHUNK_TOKENS = 8192
# vLLM's default `max_num_seqs`: a replica never runs more sequences than this at once.
MAX_NUM_SEQS = 256
ACTIVATION_BYTES = 2  # bf16 activations
LOGIT_BYTES = 4  # fp32 logits of the sampled positions


def kv_bytes_per_token(model: ModelArch, kv_dtype: Quantization) -> int:
    """KV cache bytes one token of one sequence adds, before tensor-parallel replication."""
    if model.mla:
        return model.layers * (model.kv_lora_rank + model.qk_rope_head_dim) * kv_dtype.bits // 8
    return 2 * model.layers * model.kv_heads * model.head_dim * kv_dtype.bits // 8


def kv_copies(model: ModelArch, tp: int) -> int:
    """Copies of each token's KV cache a replica of `tp` GPUs keeps (see the module doc)."""
    if model.mla:
        return tp
    return max(1, tp // model.kv_heads)


def activation_bytes(model: ModelArch, tp: int) -> int:
    """Peak activations per GPU: one prefill chunk through the widest layer (the FFN's gate
    and up projections, split over tp) beside the residual stream, plus the logits of a full
    batch of sampled positions."""
    per_token = model.hidden + 2 * model.ffn_width // tp
    logits = MAX_NUM_SEQS * model.vocab * LOGIT_BYTES
    return PREFILL_CHUNK_TOKENS * per_token * ACTIVATION_BYTES + logits


@dataclass(frozen=True)
class ReplicaMemory:
    tp: int
    device_memory: int  # bytes per GPU
    weights: int  # bytes, whole model
    overhead_per_gpu: int  # runtime + activations
    kv_per_token: int  # bytes, one copy
    copies: int  # KV copies across the replica

    @property
    def usable(self) -> int:
        return math.floor(self.tp * self.device_memory * GPU_MEMORY_UTILIZATION)

    @property
    def kv_room(self) -> int:
        """Bytes left for the KV cache (negative: the weights do not fit)."""
        return self.usable - self.weights - self.tp * self.overhead_per_gpu

    @property
    def kv_per_token_replica(self) -> int:
        return self.kv_per_token * self.copies

    @property
    def kv_tokens(self) -> int:
        """Tokens (over all sequences) the replica's KV cache holds."""
        return max(0, self.kv_room) // self.kv_per_token_replica

    def sequences(self, tokens_per_sequence: float) -> int:
        """Sequences of that many tokens held at once, capped at MAX_NUM_SEQS."""
        return min(MAX_NUM_SEQS, int(self.kv_tokens // max(1.0, tokens_per_sequence)))


def replica_memory(
    model: ModelArch,
    weights_format: Quantization,
    kv_dtype: Quantization,
    device_memory: int,
    tp: int,
) -> ReplicaMemory:
    return ReplicaMemory(
        tp=tp,
        device_memory=device_memory,
        weights=weights_format.weight_bytes(model.params),
        overhead_per_gpu=RUNTIME_OVERHEAD_BYTES + activation_bytes(model, tp),
        kv_per_token=kv_bytes_per_token(model, kv_dtype),
        copies=kv_copies(model, tp),
    )
