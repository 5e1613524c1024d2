"""A plan as plain data (what `-o json|yaml` prints and the text view renders)."""

from __future__ import annotations

import math
from typing import Any

from gpupact.plan.capacity import ServicePlan
from gpupact.plan.gpus import FP8_FORMATS
from gpupact.plan.planner import ContractPlan


def _round(value: float | None, digits: int = 3) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return round(float(value), digits)  # numpy scalars are not YAML


def notes(plan: ServicePlan) -> list[str]:
    """The plan's assumptions: from its inputs, and those its numbers depend on."""
    w, r = plan.workload, plan.replica
    out = list(w.assumptions)
    if w.model.max_context and w.context > w.model.max_context:
        out.append(
            f"contextLength {w.context} is beyond {w.model.name}'s max_position_embeddings "
            f"({w.model.max_context}): needs RoPE scaling (e.g. YaRN) to serve"
        )
    seqs = r.memory.flags.max_num_seqs
    if r.sequences == seqs:
        out.append(
            f"sequences per replica capped at max_num_seqs ({seqs}); "
            f"the KV cache would hold {r.memory.kv_tokens // max(1, round(r.tokens_per_sequence))}"
        )
    if w.quantization in FP8_FORMATS and not w.gpu.runs_on_fp8_cores(w.quantization):
        out.append(
            f"{w.gpu.name} has no fp8 tensor cores: fp8 weights are dequantised, prefill runs "
            f"at the 16-bit rate"
        )
    return out


def service_dict(plan: ServicePlan) -> dict[str, Any]:
    w, r, m = plan.workload, plan.replica, plan.replica.memory
    return {
        "service": w.name,
        "ok": plan.ok,
        "model": {
            "name": w.model.name,
            "source": f"https://huggingface.co/{w.model.repo}" if w.model.repo else None,
            "approximate": w.model.approximate,
            "params": w.model.params,
            "activeParams": w.model.active_params,
            "quantization": w.quantization.value,
            "kvCacheDtype": w.kv_dtype.value,
            "attention": "mla" if w.model.mla else "gqa",
        },
        "gpu": {
            "model": w.gpu.name,
            "memoryBytes": w.gpu_memory,
            "perNode": w.gpus_per_node,
            "slowdown": w.slowdown,
        },
        "memory": {
            "engine": m.flags.engine.value,
            "tensorParallel": r.tp,
            "minTensorParallel": plan.min_tp,
            "deviceBytes": m.device_memory,
            "weightsBytes": m.weights,
            "weightsBytesPerGpu": m.weights_per_gpu,
            "usableBytes": m.usable,
            "utilization": m.utilization,
            "overheadBytesPerGpu": m.overhead_per_gpu,
            "activationBytesPerGpu": m.activation,
            "nonTorchBytesPerGpu": m.non_torch,
            "cudaGraphBytesPerGpu": m.cuda_graphs,
            "kvCacheBytes": max(0, m.kv_room),
            "kvBytesPerToken": m.kv_per_token,
            "kvCopies": m.copies,
            "kvTokens": m.kv_tokens,
            "context": w.context,
            "fullContextFits": r.full_context_fits,
        },
        "requests": {
            "input": {"p50": w.input.p50, "p95": w.input.p95, "mean": _round(r.mean_input, 1)},
            "output": {"p50": w.output.p50, "p95": w.output.p95, "mean": _round(r.mean_output, 1)},
        },
        "replica": {
            "sequences": r.sequences,
            "sequencesAtP95": r.sequences_p95,
            "prefillTokensPerSecond": _round(r.prefill_tokens_per_s, 1),
            "decodeTokensPerSecond": _round(r.decode_tokens_per_s, 2),
            "tpotSeconds": _round(r.tpot_s, 4),
            "prefillP50Seconds": _round(r.prefill_p50_s),
            "prefillP95Seconds": _round(r.prefill_p95_s),
        },
        "engine": _engine(plan),
        "capacity": {
            "concurrency": w.concurrency,
            "headroomPercent": w.headroom,
            "ttftSloSeconds": w.ttft_slo_s,
            "replicas": plan.replicas,
            "replicasBy": dict(plan.replicas_by),
            "maxReplicas": w.max_replicas,
            "gpus": plan.gpus,
            "nodes": plan.nodes,
            "rate": _round(plan.rate),
            "ratePerReplica": _round(plan.load.rate if plan.load else None),
            "ttftP50Seconds": _round(plan.load.ttft_p50_s if plan.load else None),
            "ttftP99Seconds": _round(plan.load.ttft_p99_s if plan.load else None),
            "tpotP50Seconds": _round(plan.load.tpot_p50_s if plan.load else None, 4),
            "tpotP99Seconds": _round(plan.load.tpot_p99_s if plan.load else None, 4),
        },
        "prewarm": {
            "phasesSeconds": {name: _round(s, 1) for name, s in plan.prewarm.phases},
            "modelLoadEstimated": plan.prewarm.model_load_estimated,
            "serviceColdStartSeconds": plan.prewarm.service_cold_start_s,
            "leadSeconds": _round(plan.prewarm.lead_s, 1),
        },
        "assumptions": notes(plan),
        "findings": [{"code": f.code, "message": f.message} for f in plan.findings],
    }


def _engine(plan: ServicePlan) -> dict[str, Any]:
    """The replica as an engine: its limits, and what its latency curve says."""
    spec, curve = plan.serving.spec, plan.serving.curve
    out: dict[str, Any] = {
        "maxNumSeqs": spec.max_num_seqs,
        "maxNumBatchedTokens": spec.max_num_batched_tokens,
        "kvTokens": spec.kv_tokens,
        "computeShare": spec.compute_share,
        "bandwidthShare": spec.bandwidth_share,
        "saturationRate": None,
        "sloRate": None,
    }
    if curve is not None:
        idle = curve.points[0]
        out.update(
            saturationRate=_round(curve.saturation),
            sloRate=_round(plan.capacity_rate),
            idleTtftP50Seconds=_round(idle.ttft_p50_s),
            idleTpotP50Seconds=_round(idle.tpot_p50_s, 4),
        )
    return out


def contract_dict(plan: ContractPlan) -> dict[str, Any]:
    return {
        "contract": plan.contract,
        "ok": not plan.findings,
        "services": [service_dict(p) for p in plan.services],
        "pools": [{"pool": t.pool, "gpus": t.gpus, "maxGpus": t.max_devices} for t in plan.pools],
        "prewarm": [
            {
                "pool": w.pool,
                "window": w.window,
                "minNodes": w.min_nodes,
                "leadSeconds": _round(w.lead_s, 1),
                "start": w.start.isoformat() if w.start else None,
                "scaleAt": w.scale_at.isoformat() if w.scale_at else None,
                "schedule": w.schedule,
                "scaleSchedule": w.scale_schedule,
            }
            for w in plan.prewarm
        ],
        "findings": [
            {"subject": subject, "code": f.code, "message": f.message}
            for subject, f in plan.findings
        ],
    }
