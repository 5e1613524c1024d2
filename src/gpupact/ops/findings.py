"""What diagnose and audit report: a Finding names the responsibility domain, how bad it is,
the facts that prove it and the recovery action (Tables 43-5 / 43-6).

Evidence is a list of one-line facts for people; `data` holds the same numbers for machines
(`-o json|yaml`). Everything here is plain data: rendering lives in the CLI.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Severity(StrEnum):
    error = "error"  # blocked until someone acts
    warning = "warning"  # blocked or at risk; may resolve, needs attention
    info = "info"  # will resolve by itself (a scale-up under way), or context

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK = {Severity.error: 0, Severity.warning: 1, Severity.info: 2}


class Domain(StrEnum):
    """The chapter's responsibility domains, in runbook order (43.5)."""

    nodes = "nodes"  # Device Plugin / node health
    placement = "placement"  # kube-scheduler: taints, affinity, fragmentation
    gang = "gang"  # Volcano: minMember, half-started gangs
    quota = "quota"  # Kueue: ClusterQueue quota, queue order
    autoscaler = "autoscaler"  # Cluster Autoscaler / Karpenter: scale-up, cold start
    memory = "memory"  # the model's memory profile vs the GPU
    capacity = "capacity"  # none of the above: the pool is simply full (or it fits now)
    governance = "governance"  # audit: labels, taints, drift, expiries (43.6)

    @property
    def step(self) -> int:
        """Position in the runbook (0 for domains outside it)."""
        return _STEPS.get(self, 0)


_STEPS = {
    Domain.nodes: 1,
    Domain.placement: 2,
    Domain.gang: 3,
    Domain.quota: 4,
    Domain.autoscaler: 5,
    Domain.memory: 6,
}


@dataclass(frozen=True)
class Finding:
    domain: Domain
    code: str  # stable kebab-case id, e.g. "device-plugin-lost"
    severity: Severity
    subject: str  # "pod ns/name", "node gpu-a-1", "clusterqueue finance-gpu"
    summary: str
    evidence: tuple[str, ...] = ()
    action: str = ""
    data: dict[str, Any] = field(default_factory=dict, compare=False)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "domain": self.domain.value,
            "step": self.domain.step or None,
            "code": self.code,
            "severity": self.severity.value,
            "subject": self.subject,
            "summary": self.summary,
            "evidence": list(self.evidence),
            "action": self.action,
        }
        if self.data:
            out["data"] = self.data
        return out


@dataclass(frozen=True)
class StepResult:
    """One runbook step that did not explain the subject: why it was passed."""

    domain: Domain
    outcome: str  # "ok" | "n/a"
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.domain.step,
            "domain": self.domain.value,
            "outcome": self.outcome,
            "note": self.note,
        }


@dataclass(frozen=True)
class Diagnosis:
    """One Pending subject walked through the runbook: the steps passed, then the finding of
    the first domain that explains it (None for a subject that is not Pending)."""

    subject: str
    kind: str  # Pod | PodGroup | Workload
    namespace: str
    name: str
    status: str  # "Pending", "Running (CrashLoopBackOff)", ...
    pending_seconds: int | None
    checked: tuple[StepResult, ...]
    finding: Finding | None
    members: tuple[str, ...] = ()  # pods of a PodGroup / Workload

    @property
    def pending(self) -> bool:
        return self.finding is not None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "subject": self.subject,
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            "status": self.status,
            "pendingSeconds": self.pending_seconds,
        }
        if self.members:
            out["members"] = list(self.members)
        out["checked"] = [s.to_dict() for s in self.checked]
        out["finding"] = self.finding.to_dict() if self.finding else None
        return out


def sort_findings(findings: list[Finding]) -> list[Finding]:
    """Worst first, then by domain order and subject (deterministic output)."""
    order = {d: i for i, d in enumerate(Domain)}
    return sorted(findings, key=lambda f: (f.severity.rank, order[f.domain], f.code, f.subject))


def format_duration(seconds: int | float) -> str:
    """`1h2m`, `13m30s`, `45s` (Go-like, at most two units)."""
    total = int(seconds)
    if total < 0:
        return "-" + format_duration(-total)
    days, rest = divmod(total, 86_400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [(days, "d"), (hours, "h"), (minutes, "m"), (secs, "s")]
    shown = [f"{n}{u}" for n, u in parts if n]
    return "".join(shown[:2]) if shown else "0s"
