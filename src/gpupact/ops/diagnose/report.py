"""The `diagnose` entry point: walk every subject (or one target) and group the diagnoses by
owner.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from gpupact.kube.selectors import Selector
from gpupact.ops.cluster import Analysis
from gpupact.ops.diagnose.case import Case
from gpupact.ops.diagnose.model_memory import check_memory
from gpupact.ops.diagnose.runbook import diagnosis_of, walk
from gpupact.ops.diagnose.subjects import is_pending_case, pending_cases, target_case
from gpupact.ops.findings import Diagnosis, Domain, Finding, StepResult
from gpupact.ops.owners import owner_of


@dataclass
class DiagnoseReport:
    source: str
    now: int
    nodes: int
    pods: int
    diagnoses: list[Diagnosis]

    @property
    def findings(self) -> list[Finding]:
        return [d.finding for d in self.diagnoses if d.finding is not None]

    def to_dict(self) -> dict[str, Any]:
        by_domain: dict[str, int] = {}
        for f in self.findings:
            by_domain[f.domain.value] = by_domain.get(f.domain.value, 0) + 1
        return {
            "source": self.source,
            "now": self.now,
            "cluster": {"nodes": self.nodes, "pods": self.pods},
            "summary": {"subjects": len(self.diagnoses), "byDomain": by_domain},
            "diagnoses": [d.to_dict() for d in self.diagnoses],
        }


def group_by_owner(a: Analysis, cases: list[Case], diagnoses: list[Diagnosis]) -> list[Diagnosis]:
    """Pods of one owner (Deployment, StatefulSet, Job, ...) stopped by the same cause (same
    finding code, summary and action) are reported once, as the owner with its pods as
    members: twenty replicas of one Deployment are one problem, not twenty."""
    groups: dict[tuple, list[tuple[Case, Diagnosis]]] = {}
    order: list[tuple] = []
    for case, d in zip(cases, diagnoses, strict=True):
        f = d.finding
        if case.kind != "Pod" or case.target is None or f is None:
            key: tuple = ("single", d.subject)
        else:
            owner = owner_of(a, case.target)
            key = (
                (owner, f.code, f.summary, f.action)
                if owner.kind != "Pod"
                else ("single", d.subject)
            )
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append((case, d))
    out = []
    for key in order:
        items = groups[key]
        if len(items) == 1:
            out.append(items[0][1])
            continue
        owner = key[0]
        first = items[0][1]
        pods = [c.target.key for c, _ in items if c.target is not None]
        waits = [d.pending_seconds for _, d in items if d.pending_seconds is not None]
        subject = f"{owner.kind.lower()} {owner.namespace}/{owner.name}"
        shown = ", ".join(p.split("/", 1)[1] for p in pods[:5])
        more = f" (+{len(pods) - 5} more)" if len(pods) > 5 else ""
        finding = replace(
            first.finding,
            subject=subject,
            evidence=(
                f"{len(pods)} pod(s) of {owner} stopped by this: {shown}{more}",
                *first.finding.evidence,
            ),
        )
        out.append(
            replace(
                first,
                subject=subject,
                kind=owner.kind,
                namespace=owner.namespace,
                name=owner.name,
                pending_seconds=max(waits) if waits else None,
                finding=finding,
                members=tuple(pods),
            )
        )
    return out


def _case_matches(case: Case, selector: Selector) -> bool:
    """`-l`: the subject's own labels, or any of its pods' (a PodGroup or Workload is selected
    by the labels its pods carry, as `kubectl get pods -l` would find them)."""
    own = case.group.meta.labels if case.group is not None else None
    if case.workload is not None:
        own = case.workload.meta.labels
    if own is not None and selector.matches(own):
        return True
    pods = [case.target] if case.target is not None else []
    return any(selector.matches(p.labels) for p in [*pods, *case.members, *case.pods])


def diagnose(
    a: Analysis,
    target: str | None = None,
    *,
    namespace: str | None = None,
    selector: Selector | None = None,
) -> DiagnoseReport:
    """Walk the runbook for `target` (one subject) or for every Pending subject (of
    `namespace`, matching `selector`)."""
    if target is not None:
        case = target_case(a, target)
        if is_pending_case(case):
            diagnoses = [walk(a, case)]
        else:
            finding = check_memory(a, case)
            if finding is None:
                case.notes = [StepResult(Domain.nodes, "n/a", f"not Pending: {case.status}")]
            diagnoses = [diagnosis_of(a, case, finding)]
    else:
        cases = pending_cases(a, namespace)
        if selector is not None:
            cases = [case for case in cases if _case_matches(case, selector)]
        diagnoses = group_by_owner(a, cases, [walk(a, case) for case in cases])
    return DiagnoseReport(
        a.snapshot.source, a.now, len(a.snapshot.nodes), len(a.snapshot.pods), diagnoses
    )
