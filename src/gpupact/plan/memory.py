"""GPU memory of one replica, per GPU: weights, the engine's overhead and the KV cache left.

    vLLM     KV = memory x gpu_memory_utilization - weights - activation peak - non-torch
    SGLang   KV = memory x mem_fraction_static - weights - non-torch
             (activations and CUDA graphs live in the 1 - fraction it keeps back)
    TRT-LLM  KV = free_gpu_memory_fraction x (memory - context - weights - activations
                  - non-torch)

`memory` is what the runtime reports (torch total_memory: an "80 GB" H100 is 79.2 GiB; see
`plan.gpus`), `weights` the GPU's share of the architecture's matrices in their format
(`plan.weights`), the overheads `plan.overhead`, the flags `plan.engine_flags`. Everything is
bytes; the CLI prints GiB.

    KV/token = 2 x layers x kv_heads x head_dim x dtype bytes            (K and V per layer)
             = layers x (kv_lora_rank + qk_rope_head_dim) x dtype bytes  (MLA: latent + RoPE key)

With tensor parallelism KV heads are split over the GPUs; when there are fewer KV heads than
GPUs each is replicated (tp / kv_heads copies), and vLLM replicates an MLA latent on every GPU
(it has no heads to split), so the replica pays `KV/token x copies`. The KV cache is whole
blocks of `block_tokens` tokens.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from fractions import Fraction

from gpupact.contract.schema import Quantization
from gpupact.errors import InputError
from gpupact.plan import overhead
from gpupact.plan.engine_flags import (
    VLLM_UTILIZATION,
    Engine,
    EngineFlags,
    default_flags,
    engine_flags,
)
from gpupact.plan.models import ModelArch
from gpupact.plan.weights import gpu_weight_bytes

GIB = 2**30
GPU_MEMORY_UTILIZATION = VLLM_UTILIZATION  # vLLM's default (kept for callers)
MAX_NUM_SEQS = 256  # vLLM's default max_num_seqs below 70 GiB (kept for callers)


@dataclass(frozen=True)
class EngineSettings:
    """What a user set of the engine (None: the engine's default for the device and TP)."""

    engine: Engine = Engine.vllm
    memory_fraction: float | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None

    def flags(self, device_memory: int, gpu_name: str, tp: int) -> EngineFlags:
        return engine_flags(
            self.engine,
            device_memory,
            gpu_name,
            tp,
            memory_fraction=self.memory_fraction,
            max_num_seqs=self.max_num_seqs,
            max_num_batched_tokens=self.max_num_batched_tokens,
        )


def time_sliced(
    settings: EngineSettings, device_memory: int, gpu_name: str, tp: int, replicas: int
) -> EngineSettings:
    """The settings of one of `replicas` engines time-sliced on the same devices (NVIDIA
    time-slicing: k processes share a GPU's SMs in turns and its memory at once, without
    partitioning it): its memory budget is 1/replicas of what the engine takes alone, so that
    all of them start. vLLM's budget is gpu_memory_utilization x the device's total memory,
    and a worker refuses to start when the device's free memory is below it (vLLM
    vllm/v1/worker/gpu_worker.py, Worker.init_device: requested_memory = total_memory x
    gpu_memory_utilization, "Free memory on device ... on startup is less than desired GPU
    memory utilization"; its KV cache is that budget less the weights and the profiled peak,
    Worker.determine_available_memory,
    https://github.com/vllm-project/vllm/blob/35d5cda123ec28581759b6d34cde8052314fb1e6/vllm/v1/worker/gpu_worker.py):
    at the default 0.9 a second engine finds 10 % free and fails, so each must be started
    with at most 0.9 / replicas. SGLang's mem_fraction_static is a share of the total memory
    too. A fraction the user set is kept (it is theirs to divide). TensorRT-LLM's
    free_gpu_memory_fraction is a share of the memory free when it starts, which one setting
    cannot split evenly among co-tenants: refused."""
    if replicas <= 1 or settings.memory_fraction is not None:
        return settings
    flags = settings.flags(device_memory, gpu_name, tp)
    if flags.engine is Engine.trtllm:
        raise InputError(
            "TensorRT-LLM on a time-sliced GPU: its free_gpu_memory_fraction is a share of the "
            "memory free at its start, so co-tenants cannot be given equal budgets; plan it on "
            "an exclusive or MIG device"
        )
    share = flags.memory_fraction / replicas
    return replace(settings, memory_fraction=float(share))


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


@dataclass(frozen=True)
class ReplicaMemory:
    tp: int
    device_memory: int  # bytes per GPU, as the runtime reports it
    weights_per_gpu: int
    activation: int  # profiled activation peak per GPU
    non_torch: int  # per GPU
    cuda_graphs: int  # per GPU, outside vLLM's budget (reported only)
    kv_per_token: int  # bytes, one copy over the whole replica
    copies: int  # KV copies across the replica
    flags: EngineFlags = field(default_factory=lambda: default_flags(Engine.vllm, 0, "", 1))

    @property
    def weights(self) -> int:
        """The replica's weights (replicated parts counted on every GPU)."""
        return self.tp * self.weights_per_gpu

    @property
    def overhead_per_gpu(self) -> int:
        """What the engine keeps beside weights and KV inside its budget, per GPU."""
        if self.flags.engine is Engine.sglang:
            return self.non_torch
        return self.activation + self.non_torch

    @property
    def usable_per_gpu(self) -> int:
        """The engine's budget for weights, overhead and KV cache on one GPU."""
        if self.flags.engine is Engine.trtllm:
            free = self.device_memory - overhead.CUDA_CONTEXT_BYTES
            return (
                self.weights_per_gpu
                + self.overhead_per_gpu
                + math.floor(
                    (free - self.weights_per_gpu - self.overhead_per_gpu)
                    * Fraction(self.flags.memory_fraction)
                )
            )
        return math.floor(self.device_memory * Fraction(self.flags.memory_fraction))

    @property
    def usable(self) -> int:
        return self.tp * self.usable_per_gpu

    @property
    def utilization(self) -> float:
        return float(self.flags.memory_fraction)

    @property
    def kv_room_per_gpu(self) -> int:
        """Bytes left for the KV cache on one GPU (negative: the weights do not fit)."""
        return self.usable_per_gpu - self.weights_per_gpu - self.overhead_per_gpu

    @property
    def kv_room(self) -> int:
        return self.tp * self.kv_room_per_gpu

    @property
    def kv_per_token_replica(self) -> int:
        return self.kv_per_token * self.copies

    @property
    def kv_per_token_gpu(self) -> int:
        return self.kv_per_token_replica // self.tp

    @property
    def kv_tokens(self) -> int:
        """Tokens (over all sequences) the replica's KV cache holds: whole blocks."""
        block = self.flags.block_tokens * max(1, self.kv_per_token_gpu)
        return max(0, self.kv_room_per_gpu) // block * self.flags.block_tokens

    def sequences(self, tokens_per_sequence: float) -> int:
        """Sequences of that many tokens held at once, capped at max_num_seqs."""
        held = int(self.kv_tokens // max(1.0, tokens_per_sequence))
        return min(self.flags.max_num_seqs, held)


def replica_memory(
    model: ModelArch,
    weights_format: Quantization,
    kv_dtype: Quantization,
    device_memory: int,
    tp: int,
    settings: EngineSettings | None = None,
    gpu_name: str = "",
) -> ReplicaMemory:
    flags = (settings or EngineSettings()).flags(device_memory, gpu_name, tp)
    return ReplicaMemory(
        tp=tp,
        device_memory=device_memory,
        weights_per_gpu=gpu_weight_bytes(model, weights_format, tp).total,
        activation=overhead.activation_peak(
            model, tp, flags.max_num_batched_tokens, flags.max_num_seqs
        ),
        non_torch=overhead.non_torch(tp),
        cuda_graphs=overhead.cuda_graphs(model, flags.max_num_seqs),
        kv_per_token=kv_bytes_per_token(model, kv_dtype),
        copies=kv_copies(model, tp),
        flags=flags,
    )
