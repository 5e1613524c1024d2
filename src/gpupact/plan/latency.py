"""Time per request phase on one replica: prefill is compute-bound, decode bandwidth-bound.

    prefill FLOPs(n)  = 2 x active_params x n + layers x heads x (qk_dim + v_dim) x n^2
                        (the matmuls, and causal attention: n^2/2 query-key pairs, QK^T and AV)
    prefill seconds   = FLOPs / (tp x peak FLOP/s x PREFILL_MFU / slowdown)
    decode step bytes = weights touched / tp + batch x context x KV/token x copies / tp  (per GPU)
    TPOT              = step bytes / (bandwidth x DECODE_BANDWIDTH_EFFICIENCY / slowdown)

A mixture-of-experts step reads the shared weights and only the experts its batch routes to:
with B tokens each picking k of E experts, a given expert is missed by all of them with
probability (1 - k/E)^B. Tensor-parallel all-reduces and kernel launch gaps are not modelled;
the efficiencies absorb them.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

from gpupact.contract.schema import Quantization
from gpupact.plan.gpus import GpuModel
from gpupact.plan.memory import ReplicaMemory
from gpupact.plan.models import ModelArch
from gpupact.plan.weights import weight_bytes

# Fitted across the public measurements of tests/plan/measured/points.yaml (sources there;
# errors per point in docs/plan-accuracy.md), one value for every model, GPU and engine:
# Model FLOPs utilisation of a prefill on 16-bit tensor cores: SGLang's radix-cache-off prompts
# at 1-4 req/s come out within 8 % with it (Llama-3.3-70B bf16, 4 x H200); the long bf16
# prompts of the Tenstorrent tables (~60 % of the dense peak, tenstorrent/tt-inference-server
# #143) were partly prefix-cached (points.yaml), so they only bound it from above. 0.55
# minimises the squared log error over the points as first fitted.
PREFILL_MFU = 0.55
# The same on fp8 tensor cores, of their (twice as high) fp8 peak: an fp8 GEMM reaches a lower
# share of its peak than a bf16 one of its, and the activations are quantised on the way in.
# Fitted on the one cold fp8 prefill measured (Llama-3.3-70B fp8 on 2 x H100, 5,000 tokens in
# 406.8 ms at concurrency 1, NIM 1.8.0 table); checked on the twelve TensorRT-LLM fp8
# throughput runs of its performance overview (an independent source: tests/plan/measured/
# throughput.yaml), whose mean |error| goes from 13.7 % at 0.55 to 10.1 %, the two TP8 rows
# from +40 % / +32 % to +27 % / +19 %.
FP8_PREFILL_MFU = 0.485
# Memory-bandwidth utilisation of a decode step, fitted over the 15 decode-bound points
# (ITL at concurrency 1, vLLM's batch-8 latency suite on A100/H100/H200); the A100 sweep
# source states its single-request decode at ~77 % of the bandwidth ceiling.
DECODE_BANDWIDTH_EFFICIENCY = 0.75


def prefill_flops(model: ModelArch, tokens: float) -> float:
    matmuls = 2.0 * model.active_params * tokens
    attention = model.layers * model.heads * (model.qk_head_dim + model.head_dim) * tokens**2
    return matmuls + attention


def prefill_mfu(gpu: GpuModel, weights: Quantization) -> float:
    """The share of `gpu.flops(weights)` a prefill sustains: fp8 weights on fp8 tensor cores
    have their own (a GPU without them runs fp8 weights at the 16-bit rate and share)."""
    return FP8_PREFILL_MFU if gpu.runs_on_fp8_cores(weights) else PREFILL_MFU


def replica_flops(gpu: GpuModel, weights: Quantization, tp: int, slowdown: float) -> float:
    """Sustained FLOP/s of a replica's prefill."""
    return tp * gpu.flops(weights) * prefill_mfu(gpu, weights) / slowdown


def prefill_seconds(
    model: ModelArch, tokens: float, gpu: GpuModel, weights: Quantization, tp: int, slowdown: float
) -> float:
    return prefill_flops(model, tokens) / replica_flops(gpu, weights, tp, slowdown)


@lru_cache(maxsize=4096)
def kept_ratio(model: ModelArch, weights: Quantization) -> float:
    """How much more a checkpoint that keeps some modules in 16 bits (`model.kept`: Meta's
    FP8 405B keeps attention in bf16) holds than the same model quantised throughout; 1.0
    when nothing is kept. A step reads its weights in the format they are stored in."""
    if model.kept is None:
        return 1.0
    whole = weight_bytes(replace(model, kept=None), weights)
    return weight_bytes(model, weights) / whole if whole else 1.0


def weights_read_per_step(model: ModelArch, weights: Quantization, batch: int) -> int:
    """Weight bytes one decode step of `batch` sequences reads (whole replica)."""
    if not model.moe:
        return round(weights.weight_bytes(model.params) * kept_ratio(model, weights))
    missed = (1 - model.experts_per_token / model.experts) ** max(1, batch)
    touched = model.experts * (1 - missed)
    params = model.shared_params + touched * model.expert_params
    return round(weights.weight_bytes(round(params)) * kept_ratio(model, weights))


def decode_step_seconds(
    model: ModelArch,
    weights: Quantization,
    memory: ReplicaMemory,
    gpu: GpuModel,
    batch: int,
    context: float,
    slowdown: float,
) -> float:
    """Time per output token (TPOT) with `batch` sequences of `context` tokens decoding."""
    per_gpu = (
        weights_read_per_step(model, weights, batch) + batch * context * memory.kv_per_token_replica
    ) / memory.tp
    return per_gpu / (gpu.bandwidth * DECODE_BANDWIDTH_EFFICIENCY / slowdown)
