"""Runbook step 6, memory: the model's memory against the GPU (OOM history, KV cache at its
context length) and host OOM kills.
"""

from __future__ import annotations

from typing import Any

from gpupact.engine.admission.reasons import format_amount
from gpupact.ops.cluster import Analysis
from gpupact.ops.diagnose.case import Case
from gpupact.ops.findings import Domain, Finding, Severity
from gpupact.ops.memory import memory_profile, oom_history, service_of
from gpupact.ops.owners import SET_RESOURCES_KINDS, owner_of


def check_memory(a: Analysis, case: Case) -> Finding | None:
    subjects = [case.target] if case.target is not None else case.members or case.pods
    records = [r for p in subjects for r in oom_history(p)]
    if not records and subjects and case.target is None:
        records = [r for p in a.siblings(subjects[0])[:50] for r in oom_history(p)]
    first = subjects[0] if subjects else None
    service = service_of(a.contract, first) if first is not None else None
    profile = (
        memory_profile(a.contract, service, first)
        if service is not None and a.contract is not None
        else None
    )
    if not records and (profile is None or not profile.over):
        note = "no OOM in container statuses"
        if profile is not None:
            note += f"; {profile.lines()[-1]}"
        case.note(Domain.memory, "ok", note)
        return None
    evidence = [r.line(a.now) for r in records[:5]]
    if case.target is not None:
        seen = {r.pod for r in records}
        siblings = a.siblings(case.target)[:50]
        more = [r for p in siblings for r in oom_history(p) if r.pod not in seen]
        evidence.extend(f"sibling {r.line(a.now)}" for r in more[:3])
    if profile is not None:
        evidence.extend(profile.lines())
    gpu_records = [r for r in records if not r.host_memory]
    if records and not gpu_records:
        return _host_oom(a, case, records, evidence)
    code = "gpu-oom" if records else "model-exceeds-gpu"
    summary = (
        f"out of GPU memory: {len(gpu_records)} container(s) crashed on CUDA out-of-memory"
        if records
        else f"the model does not fit its GPUs at contextLength {profile.context}"  # type: ignore[union-attr]
    )
    action = (
        "lower the batch (max concurrent sequences), cap the context length"
        + (f" (at most {profile.max_context} tokens fit)" if profile is not None else "")
        + ", quantize the weights (fp8/int4), or split the service over more GPUs "
        "(tensor parallel) (Table 43-6: GPU OOM)"
    )
    return Finding(
        Domain.memory,
        code,
        Severity.error,
        case.subject,
        summary,
        tuple(evidence),
        action,
        {"ooms": len(records), "kind": "gpu"},
    )


def _host_oom(a: Analysis, case: Case, records: list[Any], evidence: list[str]) -> Finding:
    """OOMKilled: the kernel's cgroup OOM killer, host memory, not the GPU."""
    first = records[0]
    pod = a.pods.get(first.pod)
    owner = owner_of(a, pod) if pod is not None else None
    what = "init container" if first.init else "container"
    limit = first.limit
    if limit:
        more = format_amount("memory", _round_gib(limit * 3 // 2))
        command = (
            f"`{owner.kubectl('set resources', f'-c {first.container} --limits=memory={more}')}`"
            if owner is not None and owner.kind in SET_RESOURCES_KINDS
            else f"edit the manifest of {owner or first.pod} and re-create it"
        )
        raise_it = (
            f"raise the memory limit of {what} {first.container} (now "
            f"{format_amount('memory', limit)}) in {owner or first.pod}: {command} (1.5 x now; "
            "size it to the peak: model weights loaded through host RAM, tokenizer, dataloader)"
        )
    else:
        raise_it = (
            f"{what} {first.container} has no memory limit: the node itself ran out of memory; "
            "give the pod a memory request that covers its peak so it lands on a node with room"
        )
    return Finding(
        Domain.memory,
        "oom-killed",
        Severity.error,
        case.subject,
        f"out of host memory: {len(records)} container(s) OOMKilled by the kernel at their "
        "memory limit (cgroup), not GPU memory",
        tuple(evidence),
        raise_it + "; or lower what it holds in host memory",
        {"ooms": len(records), "kind": "host", "container": first.container, "init": first.init},
    )


def _round_gib(value: int) -> int:
    gib = 2**30
    return -(-value // gib) * gib
