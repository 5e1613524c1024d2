"""The runbook's fallback, capacity: no domain explains the subject, so it fits now (not bound
yet) or the pool is simply full.
"""

from __future__ import annotations

from gpupact.ops.cluster import Analysis
from gpupact.ops.diagnose.case import Case
from gpupact.ops.diagnose.placement import scheduler_said
from gpupact.ops.diagnose.quota import kueue_said
from gpupact.ops.findings import Domain, Finding, Severity


def check_capacity(a: Analysis, case: Case) -> Finding:
    if case.kind == "Workload" and not case.pods:
        return Finding(
            Domain.capacity,
            "admissible-now",
            Severity.info,
            case.subject,
            "quota is free: Kueue should admit it at its next cycle",
            tuple(kueue_said(case.workload)) if case.workload else (),
            "if it stays pending, check the Kueue controller's logs and the Workload's "
            "admission checks",
        )
    pods = case.placeable or case.pods
    pod = pods[0]
    outcome = a.placement(pod)
    if outcome.fits:
        scheduler = pod.scheduler_name
        return Finding(
            Domain.capacity,
            "fits-now",
            Severity.info,
            case.subject,
            f"fits on {outcome.feasible} node(s) now: {scheduler} should bind it at its next "
            "attempt",
            tuple(scheduler_said(a, pod)),
            f"if it stays Pending, check that the scheduler {scheduler!r} is running and "
            f"picks up the pod (schedulerName): {_scheduler_pods_command(scheduler)}, and "
            f"`kubectl -n {pod.namespace} get events --field-selector "
            f"involvedObject.name={pod.name}`",
            {"feasibleNodes": outcome.feasible},
        )
    return Finding(
        Domain.capacity,
        "insufficient-capacity",
        Severity.warning,
        case.subject,
        "the pool is full: no node has room for it now",
        (f"kube-scheduler: {outcome.message}", *scheduler_said(a, pod)),
        "wait for running work to finish, add nodes to the pool, or apply the shortage plan "
        "(`gpupact audit`: protect online, release half-started gangs, queue low-priority "
        "batch)",
        {"message": outcome.message},
    )


def _scheduler_pods_command(scheduler: str) -> str:
    if scheduler == "volcano":
        return "`kubectl -n volcano-system get pods`"
    if scheduler in ("default-scheduler", ""):
        return "`kubectl -n kube-system get pods -l component=kube-scheduler`"
    return f"`kubectl get pods -A | grep {scheduler}`"
