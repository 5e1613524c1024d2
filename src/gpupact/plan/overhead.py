"""GPU memory a serving engine uses beside the weights and the KV cache, per GPU.

vLLM sizes its KV cache by profiling (vllm/v1/worker/gpu_worker.py, determine_available_memory;
"Memory profiling takes ... model weights take X GiB; non_torch_memory takes Y GiB; PyTorch
activation peak memory takes Z GiB; the rest of the memory reserved for KV Cache is K GiB"):

    KV = total_memory x gpu_memory_utilization - weights - activation peak - non-torch

- activation peak: `profile_run` runs one forward pass over `max_num_batched_tokens` dummy
  tokens, then the sampler over `min(max_num_seqs, max_num_batched_tokens)` dummy requests.
  The forward pass peaks in the widest layer: per token the residual stream, its normed copy
  and the layer's output (3 x hidden) beside the MLP's gate/up output and activation
  (3 x intermediate / tp; a fused MoE holds top-k copies of each), 2 bytes each. The sampler
  holds full-vocabulary fp32 logits and their temporaries per request (penalty bin counts,
  top-k/top-p sort values and indices, probabilities): SAMPLER_BYTES_PER_LOGIT per entry.
  The forward term is checked against vLLM issue #10517 (RTX 3090, Llama-3.1-8B, 20,000 and
  29,000 tokens: peak 17.06 and 17.98 GiB less 14.99 GiB of weights = 2.07 and 2.99 GiB; this
  model: 2.06 and 2.99 GiB). The sampler term is fitted to vLLM PR #12569 (V1, Llama-3.1-70B
  w8a8 on an 80 GB GPU, 1,024 sequences: 67.72 GiB of weights, 1,381 blocks = 6.74 GiB of KV
  at utilization 0.98 leave 3.18 GiB, 24 bytes per logit beside 0.25 GiB non-torch). vLLM V0
  logs show ~40 bytes (PR #10511: 1.26 GiB for 256 x 128,256 logits), a V1 log with an LMCache
  connector would need ~55 (#21348, where 4.3 GiB a GPU stay unexplained); this model's error
  on them is in tests/plan/test_measured_logs.py.
- non-torch: cuBLAS workspaces, NCCL communicators and vLLM's custom all-reduce buffers;
  logged as 0.13-0.35 GiB at TP 1 and 0.34-0.43 GiB at TP 4 (vLLM #16570, #10517, PR #13109).
- CUDA graphs: captured after the KV cache is allocated, so outside the budget: they and the
  CUDA context must fit in the (1 - utilization) share vLLM leaves (vLLM logs "Graph capturing
  finished ... took 0.5-2 GiB"); reported, not subtracted.
"""

from __future__ import annotations

from gpupact.plan.models import ModelArch

GIB = 2**30
ACTIVATION_BYTES = 2  # bf16 activations
SAMPLER_BYTES_PER_LOGIT = 24  # fitted, see the module doc
NON_TORCH_BYTES = GIB // 4  # TP 1
NON_TORCH_PER_PEER_BYTES = GIB // 20  # NCCL and custom all-reduce buffers per extra GPU
CUDA_CONTEXT_BYTES = GIB // 2  # outside every engine's budget (present before profiling)
GRAPH_BYTES_PER_SEQ_LAYER = 8 * 1024  # captured graph pools: ~1 GiB for 80 layers x 1024 seqs


def forward_peak(m: ModelArch, tp: int, tokens: int) -> int:
    """Bytes of the widest layer's live activations over `tokens` tokens (one GPU)."""
    if m.moe:
        k = m.experts_per_token
        mlp = k * 3 * -(-m.moe_intermediate // tp) + k * m.hidden
        if m.dense_layers:
            mlp = max(mlp, 3 * -(-m.intermediate // tp))
    else:
        mlp = 3 * -(-m.intermediate // tp)
    attention = (-(-m.heads // tp) * 2 + 2) * m.qk_head_dim  # q, k, v and the output
    return tokens * ACTIVATION_BYTES * (3 * m.hidden + max(mlp, attention))


def sampler_peak(m: ModelArch, sequences: int) -> int:
    return sequences * m.vocab * SAMPLER_BYTES_PER_LOGIT


def activation_peak(m: ModelArch, tp: int, max_num_batched_tokens: int, max_num_seqs: int) -> int:
    """vLLM's profiled activation peak on one GPU (the forward pass, then the sampler)."""
    sequences = min(max_num_seqs, max_num_batched_tokens)
    return max(forward_peak(m, tp, max_num_batched_tokens), sampler_peak(m, sequences))


def non_torch(tp: int) -> int:
    return NON_TORCH_BYTES + NON_TORCH_PER_PEER_BYTES * (tp - 1)


def cuda_graphs(m: ModelArch, max_num_seqs: int) -> int:
    """Captured CUDA graph memory (batch sizes up to max_num_seqs): an estimate."""
    return GRAPH_BYTES_PER_SEQ_LAYER * m.layers * min(max_num_seqs, 512)
