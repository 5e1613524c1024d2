"""What one replica of a contract's service offers the twin: its engine and latency curve.

The same engine (`plan.engine`), step-level scheduler (`plan.batching`) and latency curve
(`plan.engine_load`) that `gpupact plan` sizes with, at the service's declared tensor-parallel
size, so the twin and the plan agree on what a replica serves.

A shared GPU keeps a share of the device: a time-sliced one 1/k of the SMs and of the memory
bandwidth (k replicas take turns) and 1/k of the memory budget (the k engines hold their
weights and KV caches at once: `plan.memory.time_sliced`), a MIG slice its compute slices of
7 and its memory slices of 8 (NVIDIA MIG user guide, "Supported MIG Profiles": A100/H100
1g.10gb has 1 of 7 compute and 1 of 8 memory slices, 1g.20gb 1 and 2, 2g 2/8, 3g and 4g 4/8,
7g 8/8; the bandwidth follows the memory slices, which a profile's memory gives: its share of
the GPU's in eighths), so the slow-down comes out of the step formula rather than a fixed divisor.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpupact.contract.schema import Contract, Service
from gpupact.plan.engine import EngineSpec
from gpupact.plan.engine_load import LatencyCurve, engine_spec, latency_curve
from gpupact.plan.from_contract import timeslice_of, workload_for_service
from gpupact.plan.memory import EngineSettings
from gpupact.plan.replica import estimate_replica
from gpupact.plan.workload import TokenStats, Workload

MIG_COMPUTE_SLICES = 7
MIG_MEMORY_SLICES = {1: 1, 2: 2, 3: 4, 4: 4, 7: 8}  # of 8, by compute slices


@dataclass(frozen=True)
class ReplicaServing:
    spec: EngineSpec
    curve: LatencyCurve | None  # None: not one request fits, the replica serves nothing
    input: TokenStats
    output: TokenStats
    context: int


def serving_of(
    workload: Workload,
    tp: int,
    *,
    compute_share: float | None = None,
    bandwidth_share: float | None = None,
) -> ReplicaServing:
    spec = engine_spec(workload, tp, compute_share=compute_share, bandwidth_share=bandwidth_share)
    curve = None
    # vLLM refuses to start when its KV cache cannot hold one request of max_model_len (the
    # context compile passes as MAX_MODEL_LEN): "To serve at least one request with the models's
    # max seq len ... is needed, which is larger than the available KV cache memory"
    # (vllm/v1/core/kv_cache_utils.py, check_enough_kv_cache_memory): such a replica serves
    # nothing, as it would crash-loop on the cluster
    if spec.kv_tokens >= workload.context:
        curve = latency_curve(spec, workload.input, workload.output, workload.context)
    return ReplicaServing(spec, curve, workload.input, workload.output, workload.context)


def shares_of(contract: Contract, service: Service, timeslice: int = 1) -> tuple[float, float]:
    """(compute share, bandwidth share) of the device one replica's GPU gets."""
    pool = contract.pool(service.pool) if service.pool else None
    if pool is not None and pool.sharing.mode == "mig":
        slices = int((pool.sharing.profile or "7g").split("g", 1)[0])
        memory = MIG_MEMORY_SLICES.get(slices, slices)
        if pool.gpu.memory:  # 1g.20gb on an 80 GB GPU: 2 memory slices, not 1
            memory = max(1, min(8, round(8 * pool.device_memory / pool.gpu.memory)))
        return slices / MIG_COMPUTE_SLICES, memory / 8
    return 1.0 / timeslice, 1.0 / timeslice


def replica_serving(
    contract: Contract, service: Service, *, timeslice: int | None = None
) -> ReplicaServing:
    """One replica of `service` (from a linked contract) at its declared tensor parallelism,
    on a device time-sliced `timeslice` ways (default: its pool's): 1/timeslice of the SMs,
    of the bandwidth and of the memory budget (`from_contract.workload_for_service`), as
    `gpupact plan` plans it. A service without a model gets the documented default model
    (see `from_contract`), not an error."""
    pool = contract.pool(service.pool) if service.pool else None
    k = timeslice if timeslice is not None else (timeslice_of(pool) if pool else 1)
    workload = workload_for_service(contract, service, timeslice=k)
    compute, bandwidth = shares_of(contract, service, k)
    return serving_of(
        workload, service.tensor_parallel, compute_share=compute, bandwidth_share=bandwidth
    )


def timeslice_memory_problem(contract: Contract, service: Service) -> str | None:
    """Why a replica of `service` does not fit in its share of a time-sliced device's memory
    (None: it fits, or its pool is not time-sliced): the weights, or one request of its
    context length, are more than 1/k of the engine's budget leaves. Such engines do not
    start (vLLM refuses a KV cache smaller than one max_model_len request:
    vllm/v1/core/kv_cache_utils.py, check_enough_kv_cache_memory), and the twin's replica
    serves nothing when not even a median request fits. `gpupact plan` and `gpupact check`
    both report it."""
    pool = contract.pool(service.pool) if service.pool else None
    k = timeslice_of(pool) if pool else 1
    if pool is None or k <= 1:
        return None
    workload = workload_for_service(contract, service)
    tp = service.tensor_parallel
    replica = estimate_replica(workload, tp)
    if replica.fits:
        return None
    memory = replica.memory
    gib = 2**30
    budget = (
        f"{memory.utilization:.4g} x {memory.device_memory / gib:.1f} GiB = "
        f"{memory.usable_per_gpu / gib:.1f} GiB a GPU"
    )
    if not replica.weights_fit:
        why = (
            f"its weights ({memory.weights_per_gpu / gib:.1f} GiB a GPU) and the engine's "
            f"overhead ({memory.overhead_per_gpu / gib:.1f} GiB) do not fit"
        )
    else:
        why = (
            f"only {memory.kv_tokens} tokens of KV cache fit, below contextLength "
            f"{workload.context}"
        )
    alone = estimate_replica(replace(workload, engine=EngineSettings()), tp).fits
    return (
        f"pool {pool.name} ({pool.sharing}) runs {k} engines a GPU, which share its memory: "
        f"each gets 1/{k} of the budget ({budget}), and {why}; "
        + ("on a GPU of its own it would fit" if alone else "it would not fit a whole GPU either")
        + " (the replica does not start: vLLM refuses a budget above the free memory or a KV "
        "cache smaller than one request)"
    )


def max_context_problem(contract: Contract, service: Service) -> str | None:
    """Why a replica of a service without `contextLength` would not start (None: it would,
    or the model's own maximum is unknown): compile then passes no MAX_MODEL_LEN, vLLM takes
    the model's max_position_embeddings as max_model_len and refuses a KV cache smaller than
    one request of it (vllm/v1/core/kv_cache_utils.py, check_enough_kv_cache_memory). plan
    and the twin size such a service for its profile's p95 prompt + completion instead."""
    if service.context_length is not None or service.model is None:
        return None
    workload = workload_for_service(contract, service)
    longest = workload.model.max_context
    if longest <= 0:
        return None
    replica = estimate_replica(workload, service.tensor_parallel)
    kv_tokens = replica.memory.kv_tokens
    if kv_tokens >= longest or not replica.weights_fit:  # weights too large: said elsewhere
        return None
    return (
        f"no contextLength: compile passes no MAX_MODEL_LEN, so vLLM takes {workload.model.name}'s "
        f"maximum ({longest:,} tokens) and does not start with the {kv_tokens:,} tokens of KV "
        f"cache a replica of tensorParallel {service.tensor_parallel} has"
    )
