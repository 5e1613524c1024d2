"""One replica of a workload at a tensor-parallel size: what it holds and how fast it runs,
and the smallest tensor-parallel size that holds the model (and meets the TTFT SLO)."""

from __future__ import annotations

from dataclasses import dataclass

from gpupact.plan.latency import decode_step_seconds, prefill_seconds
from gpupact.plan.memory import ReplicaMemory, replica_memory
from gpupact.plan.workload import Workload


@dataclass(frozen=True)
class ReplicaEstimate:
    tp: int
    memory: ReplicaMemory
    tokens_per_sequence: float  # KV tokens of a finished mean request (mean input + output)
    sequences: int  # held at once at the mean request (capped at max_num_seqs)
    sequences_p95: int  # ... if every request were a p95 one
    prefill_p50_s: float  # prefill of a p50 / p95 prompt, nothing queued
    prefill_p95_s: float
    tpot_s: float  # time per output token at a full batch
    prefill_tokens_per_s: float  # at the mean prompt
    mean_input: float
    mean_output: float
    context: int

    @property
    def weights_fit(self) -> bool:
        return self.memory.kv_room > 0

    @property
    def full_context_fits(self) -> bool:
        """One request of the service's whole context length fits in the KV cache."""
        return self.memory.kv_tokens >= self.context

    @property
    def fits(self) -> bool:
        return self.weights_fit and self.full_context_fits and self.sequences >= 1

    @property
    def decode_tokens_per_s(self) -> float:
        """Output tokens per second of one sequence in a full batch."""
        return 1.0 / self.tpot_s


def estimate_replica(workload: Workload, tp: int) -> ReplicaEstimate:
    w = workload
    memory = replica_memory(
        w.model, w.quantization, w.kv_dtype, w.gpu_memory, tp, w.engine, w.gpu.name
    )
    mean_in, mean_out = w.input.mean, w.output.mean
    per_sequence = mean_in + mean_out
    sequences = memory.sequences(per_sequence)
    # a decoding sequence holds its prompt and, on average, half of its completion
    decode_context = mean_in + mean_out / 2

    def prefill(tokens: float) -> float:
        return prefill_seconds(w.model, tokens, w.gpu, w.quantization, tp, w.slowdown)

    tpot = decode_step_seconds(
        w.model, w.quantization, memory, w.gpu, max(1, sequences), decode_context, w.slowdown
    )
    return ReplicaEstimate(
        tp=tp,
        memory=memory,
        tokens_per_sequence=per_sequence,
        sequences=sequences,
        sequences_p95=memory.sequences(w.input.p95 + w.output.p95),
        prefill_p50_s=prefill(w.input.p50),
        prefill_p95_s=prefill(w.input.p95),
        tpot_s=tpot,
        prefill_tokens_per_s=mean_in / prefill(mean_in),
        mean_input=mean_in,
        mean_output=mean_out,
        context=w.context,
    )


def tp_candidates(workload: Workload) -> list[int]:
    """Powers of two up to the GPUs of one node that divide the attention heads, and the KV
    heads where there are at least as many (vLLM splits heads evenly and replicates fewer KV
    heads than GPUs; tensor parallelism across nodes is not planned)."""
    m = workload.model
    out, tp = [], 1
    while tp <= workload.gpus_per_node:
        if m.heads % tp == 0 and (m.mla or m.kv_heads < tp or m.kv_heads % tp == 0):
            out.append(tp)
        tp *= 2
    return out


def smallest_fitting_tp(workload: Workload) -> int | None:
    """The smallest tensor-parallel size that holds the weights and one full-context
    request, None when no size within a node does."""
    return next((tp for tp in tp_candidates(workload) if estimate_replica(workload, tp).fits), None)


def choose_tp(workload: Workload) -> tuple[int, int | None]:
    """(tensor-parallel size to plan with, smallest size that fits in memory).

    The declared size when there is one; else the smallest that fits, raised while the p95
    prompt's prefill alone misses the TTFT SLO and a larger size exists. When nothing fits,
    the largest candidate (the plan then reports why)."""
    minimum = smallest_fitting_tp(workload)
    if workload.tensor_parallel is not None:
        return workload.tensor_parallel, minimum
    candidates = tp_candidates(workload)
    if minimum is None:
        return candidates[-1], None
    chosen = minimum
    if workload.ttft_slo_s is not None:
        for tp in (t for t in candidates if t >= minimum):
            chosen = tp
            if estimate_replica(workload, tp).prefill_p95_s <= workload.ttft_slo_s:
                break
    return chosen, minimum
