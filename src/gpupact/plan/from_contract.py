"""A contract service as a `Workload`: its model (catalogue, dense approximation or a default),
its pool's GPU, token profile, headroom, declared sizes and cold start.

Assumptions the contract forces are recorded on the workload and printed with the plan:
- a model outside the catalogue is an error listing the closest names (as `--model` is): a
  parameter count does not fix the KV cache;
- a quantised name (`-AWQ`, `-FP8`, ...) sets the weights format unless `quantization` is given;
- the device memory is the catalogue's runtime figure (an "80 GB" H100 is 79.22 GiB) unless the
  pool declares `gpu.memory`;
- no model at all: a dense bf16 model whose weights take DEFAULT_WEIGHT_SHARE of the replica's
  usable memory — a model filling half the GPUs leaves a modest KV cache, so the profile is on
  the slow, small side of what such a service runs;
- a GPU label outside the catalogue: the pool's `gpu.memory` with the lowest compute and
  bandwidth of the catalogue (CONSERVATIVE_GPU);
- MIG: a `<n>g` slice gets n/7 of the GPU's compute and bandwidth, its own memory;
- time-slicing (`timeslice:k`): each of the k engines on a device gets 1/k of the memory
  budget an engine takes alone (`plan.memory.time_sliced`): k processes share the memory;
- no token profile: DEFAULT_INPUT / DEFAULT_OUTPUT; no contextLength: p95 prompt + p95 completion.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from fractions import Fraction

from gpupact.contract.headroom import service_headroom
from gpupact.contract.loader import LoadedContract
from gpupact.contract.schema import Contract, Pool, Quantization, Service
from gpupact.errors import InputError, PathPart
from gpupact.plan.gpus import CATALOGUE as GPUS
from gpupact.plan.gpus import GpuModel, find_gpu
from gpupact.plan.memory import GPU_MEMORY_UTILIZATION, EngineSettings, time_sliced
from gpupact.plan.model_config import arch_from_flags, arch_problem, with_flags
from gpupact.plan.models import ModelArch, UnknownModel, approximate_dense, resolve_model
from gpupact.plan.workload import (
    DEFAULT_INPUT,
    DEFAULT_OUTPUT,
    TokenStats,
    Workload,
    default_kv_dtype,
)

DEFAULT_WEIGHT_SHARE = Fraction(1, 2)
MIG_COMPUTE_SLICES = 7  # A100/H100 MIG: 7 compute slices per GPU


def conservative_gpu(label: str, memory: int) -> GpuModel:
    """An unknown GPU: its declared memory, the slowest catalogue compute and bandwidth."""
    return GpuModel(
        name=label,
        memory=memory,
        bf16_tflops=min(g.bf16_tflops for g in GPUS.values()),
        fp8_tflops=None,
        bandwidth=min(g.bandwidth for g in GPUS.values()),
        link="unknown",
        link_bandwidth=0.0,
    )


def pool_gpu(pool: Pool) -> tuple[GpuModel, list[str]]:
    """The pool's GPU from its `gpu.model` (or `gpu.product`) label, and any assumption made."""
    for label in (pool.gpu.model, pool.gpu.product):
        if label and (gpu := find_gpu(label)):
            return gpu, []
    memory = pool.gpu.memory or 0
    note = (
        f"GPU {pool.gpu.model!r} is not in the catalogue: planned with its {memory / 2**30:g} GiB "
        f"and the catalogue's lowest compute and bandwidth"
    )
    return conservative_gpu(pool.gpu.model, memory), [note]


def runtime_memory(pool: Pool, gpu: GpuModel) -> int | None:
    """The catalogue's runtime-reported memory when the pool declares none of its own (the
    `-<N>g` label suffix is a name, N GiB, not what the runtime reports) and the GPU is whole
    (exclusive or time-sliced: time-slicing does not partition the memory; a MIG slice is
    its profile's)."""
    declared = "memory" in pool.gpu.model_fields_set
    if declared or pool.sharing.mode == "mig":
        return None
    if find_gpu(pool.gpu.model or "") is None and find_gpu(pool.gpu.product or "") is None:
        return None
    return gpu.memory


def timeslice_of(pool: Pool) -> int:
    """Engines sharing each of the pool's devices: its time-slice replicas, else 1."""
    return pool.sharing.replicas if pool.sharing.mode == "timeslice" else 1


def service_model(
    service: Service, device_memory: int, tp: int, utilization: Fraction = GPU_MEMORY_UTILIZATION
) -> tuple[ModelArch, Quantization, list[str]]:
    """The service's model; without one, a default sized on the replica's usable memory
    (`utilization` of its devices: a time-sliced replica's share)."""
    spec = service.model
    if spec is None:
        usable = device_memory * tp * utilization
        params = math.floor(usable * DEFAULT_WEIGHT_SHARE / 2)  # bf16: 2 bytes a weight
        note = (
            f"no model declared: planned as a dense bf16 model of {params / 1e9:.1f}B parameters "
            f"(weights fill {float(DEFAULT_WEIGHT_SHARE):.0%} of the replica's usable memory)"
        )
        return approximate_dense("default", params), Quantization.bf16, [note]
    problem = model_problem(service)
    if problem is not None:
        field, message = problem
        raise InputError(f"service {service.name}: model.{field}: {message}")
    given = spec.architecture.given() if spec.architecture else {}
    try:
        resolved = resolve_model(spec.name)
    except UnknownModel:
        return arch_from_flags(spec.name, **given), spec.quantization, []
    explicit = "quantization" in spec.model_fields_set
    implied = resolved.from_name or resolved.arch.native is not Quantization.bf16
    weights = spec.quantization if explicit or not implied else resolved.weights
    return with_flags(resolved.arch, **given), weights, []


def model_problems(contract: Contract) -> Iterator[tuple[tuple[PathPart, ...], Service, str]]:
    """(field path, service, message) of every service whose model the planner cannot know."""
    for i, service in enumerate(contract.services):
        problem = model_problem(service)
        if problem is not None:
            field, message = problem
            yield ("services", i, "model", field), service, message


def require_known_models(loaded: LoadedContract) -> None:
    """Refuse, at the contract's file and line, the first service whose model the planner
    cannot know (what `check` reports as unknown-model)."""
    for path, _service, message in model_problems(loaded.contract):
        where = loaded.locate(path)
        line, column = where if where else (None, None)
        raise InputError(message, file=loaded.file, path=path, line=line, column=column)


def model_problem(service: Service) -> tuple[str, str] | None:
    """Why the planner cannot know a service's model, as (field under `model`, message): a
    name outside the catalogue without enough of `model.architecture`. `check` reports it;
    plan and the twin refuse it (never a silent approximation)."""
    spec = service.model
    if spec is None:
        return None
    given = spec.architecture.given() if spec.architecture else {}
    try:
        arch = with_flags(resolve_model(spec.name).arch, **given)
    except UnknownModel as err:
        if not given:
            close = f"closest: {', '.join(err.close)}; " if err.close else ""
            return "name", (
                f"unknown model {spec.name!r} ({close}describe it under model.architecture: "
                f"layers, hidden, heads, kvHeads, vocab, ...)"
            )
        missing = [k for k in ("layers", "hidden", "heads", "vocab") if k not in given]
        if missing:
            return "architecture", (
                f"{spec.name!r} is not in the catalogue, so its architecture needs "
                f"{', '.join(missing)}"
            )
        arch = arch_from_flags(spec.name, **given)
    # the catalogue's shape with the contract's fields in it: a head 0 wide or KV heads that
    # do not divide the heads would be planned, not refused
    problem = arch_problem(arch)
    if problem is not None:
        field, reason = problem
        return "architecture", f"{_CONTRACT_FIELDS[field]}: {reason}"
    return None


# ModelArch field -> the contract's model.architecture field that sets it
_CONTRACT_FIELDS = {
    "head_dim": "heads",
    "kv_heads": "kvHeads",
    "vocab": "vocab",
    "experts_per_token": "expertsPerToken",
    "dense_layers": "denseLayers",
    "layers": "layers",
}


def headroom_of(contract: Contract, service: Service) -> int:
    """The service's headroom, else its class's (the one rule in contract.headroom)."""
    return service_headroom(service, contract.workload_class(service.workload_class))


def workload_for_service(
    contract: Contract, service: Service, slowdown: float = 1.0, *, timeslice: int | None = None
) -> Workload:
    """The workload of a linked contract's service; `slowdown` as in `Workload`. On a device
    time-sliced `timeslice` ways (default: the pool's) the engine gets 1/timeslice of the
    memory budget it would take alone (`plan.memory.time_sliced`), the default model is
    sized on that share, and the plan says which `--gpu-memory-utilization` that is."""
    if service.pool is None:
        raise InputError(f"service {service.name} has no pool: check the contract first")
    pool = contract.pool(service.pool)
    gpu, notes = pool_gpu(pool)
    sharing = pool.sharing
    if sharing.mode == "mig":
        slices = int((sharing.profile or "7g").split("g", 1)[0])
        slowdown *= MIG_COMPUTE_SLICES / slices
    k = timeslice_of(pool) if timeslice is None else timeslice
    device_memory = pool.device_memory
    runtime = runtime_memory(pool, gpu)
    if runtime is not None:
        device_memory = runtime
    tp = service.tensor_parallel
    engine = time_sliced(EngineSettings(), device_memory, gpu.name, tp, k)
    utilization = engine.flags(device_memory, gpu.name, tp).memory_fraction
    model, quantization, model_notes = service_model(service, pool.device_memory, tp, utilization)
    notes += model_notes
    if k > 1:
        notes.append(
            f"time-sliced GPU ({k} engines a device): they share its memory, each within "
            f"1/{k} of an engine's budget (--gpu-memory-utilization {float(utilization):.4g}; "
            f"vLLM refuses to start with more than the device has free)"
        )
    tokens = service.tokens
    inputs = TokenStats.of(tokens.input if tokens else None, DEFAULT_INPUT)
    outputs = TokenStats.of(tokens.output if tokens else None, DEFAULT_OUTPUT)
    if tokens is None or tokens.input is None or tokens.output is None:
        notes.append(
            f"no full token profile: prompts p50/p95 {inputs.p50}/{inputs.p95}, completions "
            f"{outputs.p50}/{outputs.p95} tokens assumed where missing"
        )
    context = service.context_length or inputs.p95 + outputs.p95
    return Workload(
        name=service.name,
        model=model,
        quantization=quantization,
        kv_dtype=default_kv_dtype(quantization),
        gpu=gpu,
        gpu_memory=device_memory,
        gpus_per_node=pool.devices_per_node,
        context=context,
        input=inputs.capped(context),
        output=outputs.capped(context),
        concurrency=service.concurrency,
        headroom=headroom_of(contract, service),
        tensor_parallel=service.tensor_parallel,
        max_replicas=service.replicas.upper,
        max_nodes=pool.nodes.max,
        cold_start=pool.cold_start,
        service_cold_start=service.cold_start,
        slowdown=slowdown,
        assumptions=tuple(notes),
        engine=engine,
    )
