"""What one plan is computed from: the model, its formats, the GPU, the request token profile,
the target load and the pool's cold start — from a contract service or from flags.

Token counts are modelled as log-normal, the usual shape of prompt and completion lengths:
p50 is the median and, with p95, fixes the spread; the mean (what throughput and KV use
average to over many sequences) is p50 x exp(sigma^2 / 2) with sigma = ln(p95 / p50) / 1.645.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from datetime import timedelta

from gpupact.contract.schema import ColdStart, Percentiles, Quantization
from gpupact.plan.gpus import GpuModel
from gpupact.plan.memory import EngineSettings
from gpupact.plan.models import ModelArch

Z95 = 1.6448536269514722  # standard normal 95th percentile

# Without a token profile: a chat-like request (documented in docs/plan.md).
DEFAULT_INPUT = (1024, 4096)  # p50, p95
DEFAULT_OUTPUT = (256, 1024)


@dataclass(frozen=True)
class TokenStats:
    """One side of a request (prompt or completion): its median and 95th percentile."""

    p50: int
    p95: int

    @classmethod
    def of(cls, percentiles: Percentiles | None, default: tuple[int, int]) -> TokenStats:
        if percentiles is None:
            return cls(*default)
        return cls(percentiles.p50, percentiles.p95 or percentiles.p50)

    @property
    def mean(self) -> float:
        sigma = math.log(self.p95 / self.p50) / Z95
        return self.p50 * math.exp(sigma * sigma / 2)

    def capped(self, limit: int) -> TokenStats:
        return TokenStats(min(self.p50, limit), min(self.p95, limit))


@dataclass(frozen=True)
class Workload:
    name: str
    model: ModelArch
    quantization: Quantization
    kv_dtype: Quantization  # KV cache format (vLLM's kv_cache_dtype "auto": the model's)
    gpu: GpuModel  # throughput figures; memory comes from `gpu_memory`
    gpu_memory: int  # bytes one device offers the replica
    gpus_per_node: int  # devices per node: tensor parallelism stays inside one node
    context: int  # longest request (prompt + completion) the service must accept
    input: TokenStats
    output: TokenStats
    concurrency: int | None = None  # requests in flight at the target load
    rate: float | None = None  # or requests per second at the target load
    ttft_slo_s: float | None = None
    headroom: int = 0  # per cent of capacity kept free
    tensor_parallel: int | None = None  # as declared; None: the plan picks the smallest
    max_replicas: int | None = None  # as declared
    max_nodes: int | None = None  # the pool's
    cold_start: ColdStart = field(default_factory=ColdStart)
    service_cold_start: timedelta | None = None  # the service's declared cold start
    slowdown: float = 1.0  # > 1: a time-sliced device, compute and bandwidth divided by it
    assumptions: tuple[str, ...] = field(default=())
    engine: EngineSettings = field(default_factory=EngineSettings)  # serving engine and flags

    @property
    def max_num_seqs(self) -> int:
        """The engine's limit on running sequences (its default for this GPU unless set)."""
        return self.engine.flags(self.gpu_memory, self.gpu.name, 1).max_num_seqs

    @property
    def max_num_batched_tokens(self) -> int:
        """Tokens one engine step may schedule (vLLM's chunked-prefill budget)."""
        return self.engine.flags(self.gpu_memory, self.gpu.name, 1).max_num_batched_tokens

    def assuming(self, *notes: str) -> Workload:
        return replace(self, assumptions=(*self.assumptions, *notes))


def default_kv_dtype(weights: Quantization) -> Quantization:
    """vLLM's `kv_cache_dtype=auto`: the model's activation dtype. Quantised weights
    (fp8/int8/int4/nf4) still run bf16 activations, so their cache is bf16 unless set to fp8."""
    if weights in (Quantization.fp32, Quantization.fp16, Quantization.bf16):
        return weights
    return Quantization.bf16
