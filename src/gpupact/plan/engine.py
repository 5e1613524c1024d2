"""The time one forward step of a serving engine takes, from the hardware and the batch.

A continuous-batching engine (vLLM, SGLang) runs one forward pass per step over every token it
scheduled: the next token of each decoding sequence and a chunk of some prompts. That pass is

    compute = FLOPs(tokens) / (tp x peak FLOP/s x PREFILL_MFU x compute share)
    memory  = (weights touched + KV read) / tp / (bandwidth x BANDWIDTH_EFFICIENCY x bw share)
    comm    = tp > 1: 2 all-reduces per layer of tokens x hidden x 2 bytes, ring algorithm,
              each 2 (tp - 1) / tp x size / link bandwidth + a fixed launch latency
    step    = max(compute, memory) + comm + STEP_OVERHEAD_S

so decode (few tokens, every weight read) is memory-bound and a prefill chunk compute-bound,
and a step that carries both is slower than a pure decode step: the prefill-decode
interference a decoding user feels as TPOT. FLOPs per token are 2 x active parameters plus
attention: a token at position p attends to p earlier tokens (QK^T and AV, 2 FLOPs a
multiply-add, over the query/key and value widths of every head and layer).

A MIG slice or a time-sliced GPU has a share of the SMs and of the memory bandwidth (`shares`);
the same step formula then gives its slow-down, not a fixed divisor.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from gpupact.contract.schema import Quantization
from gpupact.plan.engine_flags import Admission
from gpupact.plan.gpus import GpuModel
from gpupact.plan.latency import DECODE_BANDWIDTH_EFFICIENCY, PREFILL_MFU, weights_read_per_step
from gpupact.plan.models import ModelArch

# Per step outside the kernels: the scheduler, input preparation, sampling and detokenising
# on the CPU, partly hidden by CUDA graphs. Fitted with the efficiencies of plan.latency over
# the measured points (tests/plan/measured/points.yaml): vLLM's batch-8 suite spends 6.5 ms a
# step on Llama-3.1-8B/H200 where the weights take ~4.5 ms to read; the vLLM v0.6.0
# performance post (blog.vllm.ai/2024/09/05/perf-update.html) attributes most of an 8B H100
# step to CPU work (API server and scheduling) before its fixes.
STEP_OVERHEAD_S = 1.5e-3
# One small all-reduce, with the per-layer synchronisation a tensor-parallel step adds: the
# NVLink value is fitted on the TP2/TP4 points of the batch-8 suite (Llama-3-70B TP4 and
# Mixtral TP2 against Llama-3.1-8B TP1 on the same GPUs); PCIe through NCCL is not measured
# here and stays the larger, NCCL-typical tens of microseconds.
ALLREDUCE_LATENCY_S = {"nvlink": 20e-6, "pcie": 25e-6}
ACTIVATION_BYTES = 2  # bf16 hidden states through the all-reduces


@lru_cache(maxsize=65536)
def _weight_bytes(model: ModelArch, weights: Quantization, batch: int) -> float:
    return float(weights_read_per_step(model, weights, batch))


@dataclass(frozen=True)
class EngineSpec:
    """Everything a step's duration depends on, for one replica."""

    model: ModelArch
    weights: Quantization
    gpu: GpuModel
    tp: int
    kv_per_token: int  # KV bytes one token adds over the whole replica (copies included)
    kv_tokens: int  # tokens the replica's KV cache holds
    max_num_seqs: int = 256
    max_num_batched_tokens: int = 2048
    block_tokens: int = 16  # vLLM's default KV block size
    admission: Admission = Admission.recompute  # the engine's KV admission (plan/batching.py)
    compute_share: float = 1.0  # of the GPU's SMs (MIG slice, time-slice)
    bandwidth_share: float = 1.0  # of its memory bandwidth

    @property
    def flops_per_s(self) -> float:
        return self.tp * self.gpu.flops(self.weights) * PREFILL_MFU * self.compute_share

    @property
    def bytes_per_s(self) -> float:
        return self.gpu.bandwidth * DECODE_BANDWIDTH_EFFICIENCY * self.bandwidth_share

    @property
    def attention_flops_per_pair(self) -> float:
        """FLOPs one query-key pair costs over all heads and layers (QK^T and AV)."""
        m = self.model
        return 2.0 * m.layers * m.heads * (m.qk_head_dim + m.head_dim)

    def comm_s(self, tokens: int | np.ndarray) -> float | np.ndarray:
        if self.tp <= 1:
            return 0.0 * tokens
        link = "nvlink" if self.gpu.link.startswith("nvlink") else "pcie"
        size = tokens * self.model.hidden * ACTIVATION_BYTES
        one = 2 * (self.tp - 1) / self.tp * size / self.gpu.link_bandwidth
        return 2 * self.model.layers * (one + ALLREDUCE_LATENCY_S[link])

    def weight_bytes(self, batch: int) -> float:
        return _weight_bytes(self.model, self.weights, batch)

    def step_s(self, tokens: int, attention_pairs: float, kv_read_tokens: float) -> float:
        """One step over `tokens` scheduled tokens, `attention_pairs` query-key pairs among
        them and `kv_read_tokens` cached tokens read (their sequences' earlier context)."""
        flops = 2.0 * self.model.active_params * tokens
        flops += self.attention_flops_per_pair * attention_pairs
        compute = flops / self.flops_per_s
        memory = (self.weight_bytes(tokens) + kv_read_tokens * self.kv_per_token) / self.tp
        memory /= self.bytes_per_s
        return max(compute, memory) + float(self.comm_s(tokens)) + STEP_OVERHEAD_S

    def decode_steps_s(
        self, batch: int, attention_pairs: np.ndarray, kv_read_tokens: np.ndarray
    ) -> np.ndarray:
        """`step_s` of pure decode steps of `batch` sequences, one per element (vectorised:
        the fast path of a steady decode run)."""
        flops = 2.0 * self.model.active_params * batch
        compute = (flops + self.attention_flops_per_pair * attention_pairs) / self.flops_per_s
        memory = (self.weight_bytes(batch) + kv_read_tokens * self.kv_per_token) / self.tp
        memory = memory / self.bytes_per_s
        return np.maximum(compute, memory) + self.comm_s(batch) + STEP_OVERHEAD_S

    def prefill_s(self, tokens: int) -> float:
        """A lone prompt of `tokens`, in chunks of the step budget, nothing else batched."""
        total, done = 0.0, 0
        while done < tokens:
            n = min(self.max_num_batched_tokens, tokens - done)
            pairs = n * done + n * (n + 1) / 2
            total += self.step_s(n, pairs, done)
            done += n
        return total
