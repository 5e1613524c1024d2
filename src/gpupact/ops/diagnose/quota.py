"""Runbook step 4, quota: a Kueue Workload's ClusterQueue usage against nominal plus borrowable
quota, its queue position, and zombie Workloads holding quota.
"""

from __future__ import annotations

from gpupact.engine.admission import reasons as kr
from gpupact.engine.admission.reasons import format_amount
from gpupact.ops.cluster import KUEUE_GATE, Analysis
from gpupact.ops.diagnose.case import SLOW_START_SECONDS, Case, gates
from gpupact.ops.findings import Domain, Finding, Severity, format_duration
from gpupact.ops.model import KueueObject, condition


def check_quota(a: Analysis, case: Case) -> Finding | None:
    wl = case.workload
    if wl is None:
        gated = [p for p in case.pods if KUEUE_GATE in gates(p)]
        if gated:
            return Finding(
                Domain.quota,
                "kueue-workload-missing",
                Severity.warning,
                case.subject,
                f"gated by {KUEUE_GATE}, but no Kueue Workload for it is in the snapshot",
                tuple(f"pod {p.key}: schedulingGates {gates(p)}" for p in gated[:3]),
                "check that Kueue's controller is running and that the pod's queue-name label "
                "names an existing LocalQueue",
            )
        case.note(Domain.quota, "n/a", "not admitted through Kueue")
        return None
    item = wl.parsed
    if item.admission is not None:
        case.note(Domain.quota, "ok", f"admitted to ClusterQueue {item.admission.cluster_queue}")
        return None
    view = a.kueue
    if wl.key in view.problems:
        return Finding(
            Domain.quota,
            "kueue-queue-missing",
            Severity.error,
            case.subject,
            f"Kueue cannot queue it: {view.problems[wl.key]}",
            (f"Workload {wl.key}: queueName {item.workload.queue_name!r}", *kueue_said(wl)),
            "create the missing LocalQueue / ClusterQueue / ResourceFlavor (gpupact compile "
            "emits them from the contract), or fix the job's kueue.x-k8s.io/queue-name label",
        )
    if view.outlook is None:
        case.note(Domain.quota, "n/a", "no Kueue objects")
        return None
    if wl.key in view.admitted_in_outlook:
        case.note(Domain.quota, "ok", "quota is free: Kueue admits it at its next cycle")
        return None
    if wl.key in view.preempting:
        victims = view.preempting[wl.key]
        return Finding(
            Domain.quota,
            "quota-preempting",
            Severity.info,
            case.subject,
            f"Kueue admits it after preempting {len(victims)} workload(s)",
            tuple(f"preempting {v}" for v in victims[:6]),
            "nothing to do unless the victims should have been protected (then raise their "
            "priority or change the ClusterQueue's preemption policy)",
        )
    try:
        reason = view.outlook.explain(wl.key)
    except (KeyError, ValueError):
        case.note(Domain.quota, "n/a", "not pending in Kueue")
        return None
    return _quota_finding(a, case, wl, reason)


def kueue_said(wl: KueueObject) -> list[str]:
    cond = condition(wl.conditions, "QuotaReserved")
    if cond is not None and cond.status == "False" and cond.message:
        return [f"Kueue reported: {cond.message}"]
    return []


def _quota_lines(reason: kr.PendingReason) -> tuple[list[str], list[tuple[str, str, int]]]:
    lines, short = [], []
    for d in reason.quota:
        amount = lambda v, r=d.resource: format_amount(r, v)  # noqa: E731
        if d.resource in ("cpu", "memory") and d.requested <= d.available:
            continue
        lines.append(
            f"{d.resource} in flavor {d.flavor}: needs {amount(d.requested)}; used "
            f"{amount(d.usage)} of nominal {amount(d.nominal)}"
            + (f", cohort can lend {amount(d.borrowable)} more" if d.borrowable else "")
            + f"; available {amount(d.available)}"
        )
        if d.requested > d.available:
            short.append((d.flavor, d.resource, d.requested - d.available))
    return lines, short


def _quota_finding(a: Analysis, case: Case, wl: KueueObject, reason: kr.PendingReason) -> Finding:
    lines, short = _quota_lines(reason)
    where = f"ClusterQueue {reason.cluster_queue}"
    if reason.position_in_cluster_queue is not None:
        where += (
            f": position {reason.position_in_cluster_queue + 1} in the ClusterQueue, "
            f"{(reason.position_in_local_queue or 0) + 1} in its LocalQueue ({reason.state})"
        )
    evidence = [where, *lines, *kueue_said(wl)]
    if reason.code == kr.BLOCKED_BY_STRICT_FIFO_HEAD and reason.blocked_by:
        head = a.kueue.outlook.explain(reason.blocked_by) if a.kueue.outlook else None
        if head is not None:
            head_lines, _ = _quota_lines(head)
            evidence.append(f"head {reason.blocked_by}: {head.code}: {head.message}")
            evidence.extend(f"  head {line}" for line in head_lines)
        return Finding(
            Domain.quota,
            "strict-fifo-blocked",
            Severity.warning,
            case.subject,
            f"blocked behind {reason.blocked_by}, the head of StrictFIFO {where.split(':')[0]} "
            "that does not fit",
            tuple(evidence),
            f"the head {reason.blocked_by} blocks everything behind it: give it what it needs "
            "(or remove / shrink it), or let smaller workloads pass it: `kubectl patch "
            f"clusterqueue {reason.cluster_queue} --type=merge -p "
            '\'{"spec":{"queueingStrategy":"BestEffortFIFO"}}\'`',
            {"blockedBy": reason.blocked_by, "clusterQueue": reason.cluster_queue},
        )
    if reason.code == kr.INACTIVE_CLUSTER_QUEUE:
        return Finding(
            Domain.quota,
            "cluster-queue-inactive",
            Severity.error,
            case.subject,
            reason.message,
            tuple(evidence),
            "make the ClusterQueue active: create its ResourceFlavors, clear stopPolicy",
        )
    zombies = _zombies(a, reason.cluster_queue)
    evidence.extend(zombies)
    severity = (
        Severity.error
        if reason.code in (kr.NO_MATCHING_FLAVOR, kr.EXCEEDS_MAX_QUOTA)
        else (Severity.warning)
    )
    if short:
        need = ", ".join(f"{format_amount(r, n)} {r} in {f}" for f, r, n in short)
        summary = f"tenant quota exhausted: {reason.cluster_queue} is short {need}"
    else:
        summary = f"Kueue keeps it pending: {reason.code}: {reason.message}"
    action = (
        f"raise ClusterQueue {reason.cluster_queue}'s nominalQuota (`kubectl edit clusterqueue "
        f"{reason.cluster_queue}`, or a temporary raise with an expiry in the contract), let it "
        "borrow in its cohort (borrowingLimit), or clean zombie jobs holding quota"
        + "".join(f" (`{cmd}`)" for cmd in _zombie_commands(a, reason.cluster_queue)[:2])
        + " (Table 43-6: quota exhausted)"
    )
    if reason.code == kr.EXCEEDS_MAX_QUOTA or reason.code == kr.NO_MATCHING_FLAVOR:
        action = (
            "it asks for more than the ClusterQueue can ever give (nominal + borrowing): "
            "split the job or raise the quota; check its flavors' nodeLabels/taints match"
        )
    return Finding(
        Domain.quota,
        "quota-exhausted" if short else "quota-pending",
        severity,
        case.subject,
        summary,
        tuple(evidence),
        action,
        {
            "clusterQueue": reason.cluster_queue,
            "reason": reason.code,
            "short": [{"flavor": f, "resource": r, "amount": n} for f, r, n in short],
        },
    )


def zombie_workloads(
    a: Analysis, cluster_queue: str | None = None
) -> list[tuple[KueueObject, int]]:
    """Admitted workloads holding quota while none of their pods is running or pending: the
    job finished or died and nobody deleted it. (workload, seconds since admission)."""
    memo_key = ("zombies", cluster_queue)
    if memo_key not in a.memo:
        a.memo[memo_key] = _zombie_workloads(a, cluster_queue)
    return a.memo[memo_key]


def _zombie_workloads(a: Analysis, cluster_queue: str | None) -> list[tuple[KueueObject, int]]:
    out = []
    for key in sorted(a.workloads):
        wl = a.workloads[key]
        item = wl.parsed
        if item.admission is None or item.finished:
            continue
        if cluster_queue is not None and item.admission.cluster_queue != cluster_queue:
            continue
        pods = a.workload_pods.get(key, [])
        if any(p.phase in ("Running", "Pending") and not p.terminating for p in pods):
            continue
        admitted_at = item.reserved_at // 1000 if item.reserved_at else wl.meta.created
        age = a.age(admitted_at) or 0
        if age >= SLOW_START_SECONDS:
            out.append((wl, age))
    return out


def zombie_command(wl: KueueObject) -> str:
    """Delete the job that owns the Workload (Kueue then drops the Workload and its quota)."""
    owner = next((o for o in wl.meta.owners if o.controller), None) or next(
        iter(wl.meta.owners), None
    )
    if owner is not None and owner.kind in _OWNER_RESOURCES:
        return f"kubectl -n {wl.meta.namespace} delete {_OWNER_RESOURCES[owner.kind]} {owner.name}"
    return f"kubectl -n {wl.meta.namespace} delete workload {wl.meta.name}"


_OWNER_RESOURCES = {
    "Job": "job",
    "JobSet": "jobset",
    "RayJob": "rayjob",
    "PyTorchJob": "pytorchjob",
    "LeaderWorkerSet": "leaderworkerset",
}


def _zombie_commands(a: Analysis, cluster_queue: str) -> list[str]:
    return [zombie_command(wl) for wl, _ in zombie_workloads(a, cluster_queue)]


def _zombies(a: Analysis, cluster_queue: str) -> list[str]:
    lines = []
    for wl, age in zombie_workloads(a, cluster_queue)[:5]:
        usage = ", ".join(
            f"{format_amount(r, v)} {r}"
            for ps in wl.parsed.admission.pod_sets
            for r, v in sorted(ps.usage.items())
            if r not in ("cpu", "memory")
        )
        lines.append(
            f"zombie? Workload {wl.key} holds {usage or 'quota'} with no running pod "
            f"(admitted {format_duration(age)} ago)"
        )
    return lines
