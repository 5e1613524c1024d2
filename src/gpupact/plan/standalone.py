"""A workload from names and numbers (the `gpupact plan --model ... --gpu ...` form).

The model is a catalogue name (quantised names resolve to their base model and format), a
config.json (`--model-config`), or an architecture given by flags. `--params` alone is refused:
the KV cache depends on layers x KV heads x head width, which a parameter count does not fix
(Llama-2-7B keeps 32 KV heads, Llama-3-8B 8: a 4x difference at the same size), so a guess
would be off by up to 4x. With `--layers` and `--kv-heads` beside it the KV cache is exact and
only the split of the weights between layers is assumed, and the plan says so.
"""

from __future__ import annotations

from dataclasses import replace

from gpupact.contract.schema import ColdStart, Quantization
from gpupact.errors import InputError
from gpupact.plan.gpus import close_gpus, find_gpu
from gpupact.plan.memory import EngineSettings
from gpupact.plan.model_config import (
    arch_from_flags,
    check_flag_arch,
    kept_notes,
    read_model_config,
    with_flags,
)
from gpupact.plan.models import ModelArch, UnknownModel, dense_shape, resolve_model
from gpupact.plan.workload import TokenStats, Workload, default_kv_dtype


def _model(
    model: str | None,
    model_config: str | None,
    params: int | None,
    arch_flags: dict[str, int | None],
) -> tuple[ModelArch, Quantization | None, list[str]]:
    """(architecture, the format its name or config implies, notes)."""
    given = {k: v for k, v in arch_flags.items() if v is not None}
    if model_config is not None:
        arch, fmt = read_model_config(model_config)
        if model:
            arch = replace(arch, name=model)
        return with_flags(arch, **given), fmt, kept_notes(arch)
    if model is None:
        raise InputError("give --model NAME or --model-config CONFIG.json")
    try:
        resolved = resolve_model(model)
    except UnknownModel as err:
        if params is not None:
            if not (given.get("layers") and given.get("kv_heads")):
                raise InputError(
                    f"--params: {params / 1e9:g}B parameters do not fix the KV cache (layers x "
                    f"KV heads x head width: Llama-2-7B has 32 KV heads, Llama-3-8B 8); give "
                    f"--layers and --kv-heads with it, or --model-config CONFIG.json"
                ) from None
            arch = dense_shape(
                model,
                params,
                layers=given.get("layers"),
                kv_heads=given.get("kv_heads"),
                head_dim=given.get("head_dim"),
                vocab=given.get("vocab"),
            )
            note = (
                f"model {model!r}: {params / 1e9:g}B parameters, {arch.layers} layers x "
                f"{arch.kv_heads} KV heads x {arch.head_dim} as given; width "
                f"{arch.hidden} and the weights' split between layers assumed"
            )
            return arch, None, [note]
        if any(given.get(k) for k in ("layers", "hidden", "heads", "vocab")):
            arch = arch_from_flags(model, **given)
            notes = []
            if given.get("intermediate") is None:
                notes.append(
                    f"--intermediate not given: MLP width 4 x hidden ({arch.intermediate})"
                )
            if given.get("kv_heads") is None:
                notes.append(f"--kv-heads not given: multi-head attention ({arch.heads} KV heads)")
            return arch, None, notes
        raise InputError(f"--model: {err}") from None
    native = resolved.arch.native is not Quantization.bf16
    fmt = resolved.weights if resolved.from_name or native else None
    return with_flags(resolved.arch, **given), fmt, []


def standalone_workload(
    *,
    model: str | None,
    gpu: str,
    quantization: Quantization | None,
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
    model_config: str | None = None,
    arch_flags: dict[str, int | None] | None = None,
    engine: EngineSettings | None = None,
) -> Workload:
    """Unknown model or GPU, or sizes that cannot be, are InputError."""
    arch, implied, notes = _model(model, model_config, params, arch_flags or {})
    check_flag_arch(arch)  # what the flags changed (a config.json is checked as it is read)
    if quantization is not None and implied is not None and quantization is not implied:
        notes.append(
            f"--quantization {quantization.value} overrides the {implied.value} the model's "
            f"name or config implies"
        )
    weights = quantization or implied or Quantization.bf16
    spec = find_gpu(gpu)
    if spec is None:
        close = close_gpus(gpu)
        hint = f"closest: {', '.join(close)}" if close else "see docs/plan.md, GPU catalogue"
        raise InputError(f"--gpu: unknown GPU {gpu!r} ({hint})")
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
    if not spec.memory_source:
        notes.append(
            f"{spec.name}: device memory {spec.memory / 2**30:.2f} GiB estimated from the "
            f"datasheet (no runtime log found; give --gpu-memory to override)"
        )
    return Workload(
        name=arch.name,
        model=arch,
        quantization=weights,
        kv_dtype=kv_dtype or default_kv_dtype(weights),
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
        engine=engine or EngineSettings(),
    )
