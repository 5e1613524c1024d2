"""Which subjects a diagnose run walks: every pending pod, PodGroup and Workload (grouped so a
gang or a Workload is walked once), or the one named on the command line.
"""

from __future__ import annotations

from gpupact.engine.gang import PodGroupPhase
from gpupact.errors import InputError
from gpupact.kube.objects import Pod
from gpupact.ops.cluster import Analysis
from gpupact.ops.diagnose.case import Case, is_waiting, pod_status
from gpupact.ops.diagnose.gang import gang_counts
from gpupact.ops.memory import oom_history, waiting_reason
from gpupact.ops.model import GangObject, KueueObject, time_or_none


def _workload_case(a: Analysis, wl: KueueObject) -> Case:
    members = a.workload_pods.get(wl.key, [])
    group = next((a.podgroup_of(p) for p in members if a.podgroup_of(p) is not None), None)
    return Case(
        "Workload",
        wl.meta.namespace,
        wl.meta.name,
        "Pending (no quota reserved)",
        wl.meta.created,
        pods=[p for p in members if is_waiting(p)],
        members=list(members),
        group=group,
        workload=wl,
    )


def _group_case(a: Analysis, group: GangObject) -> Case:
    counts = gang_counts(a, group)
    members = a.members.get(group.key, [])
    workload = next((a.workload_of(p) for p in members if a.workload_of(p) is not None), None)
    return Case(
        "PodGroup",
        group.podgroup.namespace,
        group.podgroup.name,
        f"{group.podgroup.phase.value} ({counts.ready}/{counts.min_member} ready)",
        group.meta.created,
        pods=counts.waiting,
        members=list(members),
        group=group,
        workload=workload,
    )


def _pod_case(a: Analysis, pod: Pod) -> Case:
    return Case(
        "Pod",
        pod.namespace,
        pod.name,
        pod_status(pod),
        time_or_none(pod.creation_timestamp),
        pods=[pod] if is_waiting(pod) else [],
        members=[pod],
        group=a.podgroup_of(pod),
        workload=a.workload_of(pod),
        target=pod,
    )


def _workload_pending(wl: KueueObject) -> bool:
    item = wl.parsed
    return item.admission is None and not item.finished and item.active


def pending_cases(a: Analysis, namespace: str | None = None) -> list[Case]:
    """Every subject with something Pending: Workloads without quota, PodGroups short of
    minMember or with waiting members, other Pending pods, and running pods crash-looping on
    out-of-memory (GPU OOM shows there, not as Pending)."""
    cases: list[Case] = []
    covered: set[str] = set()

    def wanted(ns: str) -> bool:
        return namespace is None or ns == namespace

    for key in sorted(a.workloads):
        wl = a.workloads[key]
        if wanted(wl.meta.namespace) and _workload_pending(wl):
            case = _workload_case(a, wl)
            cases.append(case)
            covered.update(p.key for p in case.members)
            if case.group is not None:
                covered.add("podgroup:" + case.group.key)
    for key in sorted(a.podgroups):
        group = a.podgroups[key]
        if not wanted(group.podgroup.namespace) or "podgroup:" + key in covered:
            continue
        phase = group.podgroup.phase
        if phase is PodGroupPhase.COMPLETED:
            continue
        counts = gang_counts(a, group)
        if counts.waiting or (
            phase is not PodGroupPhase.RUNNING and counts.ready < counts.min_member
        ):
            case = _group_case(a, group)
            cases.append(case)
            covered.update(p.key for p in case.members)
    for pod in sorted(a.snapshot.pods, key=lambda p: p.key):
        if pod.key in covered or not wanted(pod.namespace):
            continue
        if (pod.phase == "Pending" and not pod.terminating) or (
            pod.phase == "Running"
            and waiting_reason(pod) == "CrashLoopBackOff"
            and oom_history(pod)
        ):
            cases.append(_pod_case(a, pod))
    return cases


def target_case(a: Analysis, target: str) -> Case:
    """`NS/POD`, `pod/NS/NAME`, `podgroup/NS/NAME` or `workload/NS/NAME`."""
    parts = target.split("/")
    kind = "pod"
    if len(parts) == 3:
        kind, parts = parts[0].lower(), parts[1:]
    if len(parts) != 2 or not all(parts):
        raise InputError(
            f"target {target!r}: expected NAMESPACE/POD (or podgroup/NS/NAME, workload/NS/NAME)"
        )
    key = "/".join(parts)
    if kind in ("pod", "pods", "po"):
        pod = a.pods.get(key)
        if pod is None:
            raise InputError(f"no pod {key} in the snapshot")
        return _pod_case(a, pod)
    if kind in ("podgroup", "podgroups", "pg"):
        group = a.podgroups.get(key)
        if group is None:
            raise InputError(f"no PodGroup {key} in the snapshot")
        return _group_case(a, group)
    if kind in ("workload", "workloads", "wl"):
        wl = a.workloads.get(key)
        if wl is None:
            raise InputError(f"no Workload {key} in the snapshot")
        return _workload_case(a, wl)
    raise InputError(f"target {target!r}: unknown kind {kind!r} (pod, podgroup, workload)")


def is_pending_case(case: Case) -> bool:
    if case.kind == "Workload":
        return case.workload is not None and _workload_pending(case.workload)
    if case.kind == "PodGroup":
        return bool(case.pods) or (
            case.group is not None
            and case.group.podgroup.phase is not PodGroupPhase.RUNNING
            and case.group.podgroup.phase is not PodGroupPhase.COMPLETED
        )
    return (
        case.target is not None and case.target.phase == "Pending" and not case.target.terminating
    )
