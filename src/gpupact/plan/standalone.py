"""A workload from names and numbers (the `gpupact plan --model ... --gpu ...` form)."""

from __future__ import annotations

from gpupact.contract.schema import ColdStart, Quantization
from gpupact.errors import InputError
from gpupact.plan.gpus import CATALOGUE as GPUS
from gpupact.plan.gpus import find_gpu
from gpupact.plan.models import CATALOGUE as MODELS
from gpupact.plan.models import approximate_dense, find_model
from gpupact.plan.workload import TokenStats, Workload, default_kv_dtype


def standalone_workload(
    *,
    model: str,
    gpu: str,
    quantization: Quantization,
    context: int,
    input_tokens: TokenStats,
    output_tokens: TokenStats,
    params: int | None = None,
    kv_dtype: Quantization | None = None,
    concurrency: int | None = None,
    rate: float | None = None,
    ttft_slo_s: float | None = None,
    headroom: int = 20,
    tensor_parallel: int | None = None,
    gpus_per_node: int = 8,
    gpu_memory: int | None = None,
    cold_start: ColdStart | None = None,
) -> Workload:
    """Unknown model (without `params`) or GPU, or sizes that cannot be, are InputError."""
    notes = []
    arch = find_model(model)
    if arch is None:
        if params is None:
            raise InputError(
                f"--model: unknown model {model!r} (known: {', '.join(MODELS)}); give --params "
                f"to plan it as a dense transformer"
            )
        arch = approximate_dense(model, params)
        notes.append(
            f"model {model!r} is not in the catalogue: approximated as a dense transformer of "
            f"{params / 1e9:g}B parameters"
        )
    spec = find_gpu(gpu)
    if spec is None:
        raise InputError(f"--gpu: unknown GPU {gpu!r} (known: {', '.join(GPUS)})")
    if input_tokens.p95 < input_tokens.p50 or output_tokens.p95 < output_tokens.p50:
        raise InputError("token percentiles must not decrease: p50 <= p95")
    if input_tokens.p95 + output_tokens.p95 > context:
        notes.append(
            f"p95 prompt + completion ({input_tokens.p95 + output_tokens.p95}) exceed --context "
            f"({context}): capped"
        )
    if tensor_parallel is not None and tensor_parallel > gpus_per_node:
        raise InputError(
            f"--tp: {tensor_parallel} is more than --gpus-per-node ({gpus_per_node}); tensor "
            f"parallelism stays inside one node"
        )
    return Workload(
        name=arch.name,
        model=arch,
        quantization=quantization,
        kv_dtype=kv_dtype or default_kv_dtype(quantization),
        gpu=spec,
        gpu_memory=gpu_memory or spec.memory,
        gpus_per_node=gpus_per_node,
        context=context,
        input=input_tokens.capped(context),
        output=output_tokens.capped(context),
        concurrency=concurrency,
        rate=rate,
        ttft_slo_s=ttft_slo_s,
        headroom=headroom,
        tensor_parallel=tensor_parallel,
        cold_start=cold_start or ColdStart(),
        assumptions=tuple(notes),
    )
