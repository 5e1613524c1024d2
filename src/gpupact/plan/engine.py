"""The time one forward step of a serving engine takes, from the hardware and the batch.

A continuous-batching engine (vLLM, SGLang) runs one forward pass per step over every token it
scheduled: the next token of each decoding sequence and a chunk of some prompts. That pass is

    compute = FLOPs(tokens) / (tp x peak FLOP/s x prefill MFU x compute share)
    memory  = (weights touched + KV read) / tp / (bandwidth x BANDWIDTH_EFFICIENCY x bw share)
    comm    = tp > 1: 2 all-reduces per layer of tokens x hidden x 2 bytes, ring algorithm,
              each 2 (tp - 1) / tp x size / link bandwidth + a fixed launch latency
    step    = max(compute, memory) [+ dispatch] + comm + STEP_OVERHEAD_S

so decode (few tokens, every weight read) is memory-bound and a prefill chunk compute-bound,
and a step that carries both is slower than a pure decode step: the prefill-decode
interference a decoding user feels as TPOT. FLOPs per token are 2 x active parameters plus
attention: a token at position p attends to p earlier tokens (QK^T and AV, 2 FLOPs a
multiply-add, over the query/key and value widths of every head and layer).

A step outside CUDA graphs (`eager`) launches its kernels one by one from Python and adds
`dispatch` = layers x DISPATCH_PER_LAYER_S: the GPU waits for the CPU between the small kernels
of each layer (norms, rotary, activations, all-reduce launches) whatever the size of its
matrix products, so the measurements fit a sum, not the longer of the two (see the constant).
Which steps run eagerly is the engine's (`graph_max_tokens`, `graph_prefill`, set by
plan/engine_load.py from plan/engine_flags.py):
    vLLM V1  steps replay (piecewise) CUDA graphs up to the capture size and run compiled
             above it; only enforce_eager makes them eager.
    SGLang   only decode batches of up to cuda_graph_max_bs sequences replay graphs; every
             prefill (extend) batch runs eagerly.
    TRT-LLM  a compiled engine: no step pays a per-layer Python dispatch.

A MIG slice or a time-sliced GPU has a share of the SMs and of the memory bandwidth (`shares`);
the same step formula then gives its slow-down, not a fixed divisor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

from gpupact.contract.schema import Quantization
from gpupact.plan.engine_flags import Admission
from gpupact.plan.gpus import GpuModel
from gpupact.plan.latency import (
    DECODE_BANDWIDTH_EFFICIENCY,
    prefill_mfu,
    weights_read_per_step,
)
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
# Time an eager step adds per decoder layer: the CPU's Python dispatch of its kernels, which
# the GPU waits on (norms, projections, rotary, attention, MLP, the all-reduce launches of a
# TP rank: every rank dispatches its own in parallel). Fitted on the one eager point with a
# graph-run twin on the same model and GPU: vLLM 0.15.1 with enforce_eager runs Llama-3.1-8B
# on an A100-40GB at 25.6 ms a token (github.com/ilseokoh/vllm-gce README.md, test.py output:
# 1,024 tokens in 26.22 s) where graph-run vLLM measures 13.3 ms and plan 15.4 (johnmusgrave.com
# vllm-throughput-latency-sweep-on): 32 layers x 0.32 ms added. Checked against an independent
# engine, host and model: SGLang v0.4.0 on 4 x H200 with Llama-3.3-70B (datacrunch-research/
# h200-benchmarks, sglang/outputs/llama_3_3_70b_online_output.jsonl), whose prefill steps are
# always eager and whose decode batches outgrow its 160 captured sizes at 8 and 16 req/s:
# median ITL 64 / 139 ms predicted, 70.8 / 179 measured; TTFT at 1-16 req/s -41 % to +8 %
# (docs/plan-accuracy.md). Sum, not max: the longer of dispatch (fitted: 0.75 ms a layer) and
# kernels fits 1-8 req/s as well but says 111 ms ITL and 264 ms TTFT at 16 req/s (-38 %,
# -57 %), where the batch's KV reads make the kernels longer than the dispatch. Other stacks
# measure the same order: SGLang v0.5.20, Qwen3-0.6B on an RTX 5090, 5.44 ms eager vs 2.64 ms
# graphed, ~0.1 ms a layer (github.com/sgl-project/sglang/pull/40346).
DISPATCH_PER_LAYER_S = 0.32e-3


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
    # The largest step (scheduled tokens) replayed as a CUDA graph; larger ones run eagerly
    # (0: every step, vLLM enforce_eager; inf: none, a compiled TRT-LLM engine).
    graph_max_tokens: float = math.inf
    graph_prefill: bool = True  # steps carrying prompt tokens replay graphs (SGLang: no)
    # Steps carry prompts or decodes, never both: a prefill batch runs alone whenever one can
    # be formed, decoding waits (SGLang without --enable-mixed-chunk; plan/batching.py).
    separate_prefill: bool = False
    # The scheduler plans each step while the one before runs (SGLang's overlap scheduler):
    # a request is first seen one step later than it comes (plan/batching.py).
    overlap_schedule: bool = False
    compute_share: float = 1.0  # of the GPU's SMs (MIG slice, time-slice)
    bandwidth_share: float = 1.0  # of its memory bandwidth

    # Per-spec constants of the step formula, computed once (a step is priced millions of times
    # a curve; the model's parameter counts are sums over its matrices).
    @cached_property
    def flops_per_token(self) -> float:
        return 2.0 * self.model.active_params

    @cached_property
    def flops_per_s(self) -> float:
        mfu = prefill_mfu(self.gpu, self.weights)
        return self.tp * self.gpu.flops(self.weights) * mfu * self.compute_share

    @cached_property
    def bytes_per_s(self) -> float:
        return self.gpu.bandwidth * DECODE_BANDWIDTH_EFFICIENCY * self.bandwidth_share

    @cached_property
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

    @cached_property
    def dense_weight_bytes(self) -> float | None:
        """The weights a step reads whatever its batch (None: a mixture of experts)."""
        return None if self.model.moe else _weight_bytes(self.model, self.weights, 1)

    def weight_bytes(self, batch: int) -> float:
        dense = self.dense_weight_bytes
        return dense if dense is not None else _weight_bytes(self.model, self.weights, batch)

    @cached_property
    def dispatch_s(self) -> float:
        """CPU time an eager step takes to launch its kernels."""
        return self.model.layers * DISPATCH_PER_LAYER_S

    def eager(self, tokens: int, decode: bool) -> bool:
        """Whether a step of `tokens` (`decode`: no prompt tokens) runs outside CUDA graphs."""
        return tokens > self.graph_max_tokens or not (decode or self.graph_prefill)

    def step_s(
        self, tokens: int, attention_pairs: float, kv_read_tokens: float, decode: bool = False
    ) -> float:
        """One step over `tokens` scheduled tokens, `attention_pairs` query-key pairs among
        them and `kv_read_tokens` cached tokens read (their sequences' earlier context);
        `decode`: every token is a decoding sequence's next (no prompt tokens)."""
        flops = self.flops_per_token * tokens
        flops += self.attention_flops_per_pair * attention_pairs
        compute = flops / self.flops_per_s
        memory = (self.weight_bytes(tokens) + kv_read_tokens * self.kv_per_token) / self.tp
        memory /= self.bytes_per_s
        kernels = max(compute, memory)
        if self.eager(tokens, decode):
            kernels += self.dispatch_s
        return kernels + float(self.comm_s(tokens)) + STEP_OVERHEAD_S

    def decode_steps_s(
        self, batch: int, attention_pairs: np.ndarray, kv_read_tokens: np.ndarray
    ) -> np.ndarray:
        """`step_s` of pure decode steps of `batch` sequences, one per element (vectorised:
        the fast path of a steady decode run)."""
        flops = self.flops_per_token * batch
        compute = (flops + self.attention_flops_per_pair * attention_pairs) / self.flops_per_s
        memory = (self.weight_bytes(batch) + kv_read_tokens * self.kv_per_token) / self.tp
        memory = memory / self.bytes_per_s
        kernels = np.maximum(compute, memory)
        if self.eager(batch, True):
            kernels = kernels + self.dispatch_s
        return kernels + self.comm_s(batch) + STEP_OVERHEAD_S

    def prefill_s(self, tokens: int) -> float:
        """A lone prompt of `tokens`, in chunks of the step budget, nothing else batched."""
        total, done = 0.0, 0
        while done < tokens:
            n = min(self.max_num_batched_tokens, tokens - done)
            pairs = n * done + n * (n + 1) / 2
            total += self.step_s(n, pairs, done)
            done += n
        return total
