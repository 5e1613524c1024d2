"""Operations on a running cluster: `diagnose` (why is it Pending — the runbook of 43.5) and
`audit` (the discipline of 43.2-43.6), over a kubectl snapshot or a live cluster.

    snapshot = open_cluster(snapshot_dir="snap/")          # or context="prod"
    analysis = Analysis(snapshot, now=now, contract=None)  # the engine's state + indexes
    report = diagnose(analysis)                            # or audit(analysis)
"""

from __future__ import annotations

from pathlib import Path

from gpupact.errors import InputError
from gpupact.ops.audit import AuditOptions, AuditReport, audit, shortage_plan
from gpupact.ops.cluster import Analysis, PlacementOutcome
from gpupact.ops.diagnose import DiagnoseReport, diagnose
from gpupact.ops.findings import Diagnosis, Domain, Finding, Severity, StepResult
from gpupact.ops.model import ClusterSnapshot, SnapshotBuilder
from gpupact.ops.snapshot_dir import load_snapshot_dir


def open_cluster(
    snapshot_dir: str | Path | None = None,
    context: str | None = None,
    kubeconfig: str | None = None,
    *,
    live: bool = False,
) -> ClusterSnapshot:
    """Exactly one source: a snapshot directory, or a live cluster (a kubeconfig context,
    the current context with `live=True`, or a kubeconfig file)."""
    wants_live = live or context is not None or kubeconfig is not None
    if snapshot_dir is not None and wants_live:
        raise InputError("give either --snapshot DIR or --context/--kubeconfig, not both")
    if snapshot_dir is not None:
        return load_snapshot_dir(snapshot_dir)
    if not wants_live:
        raise InputError("no cluster: give --snapshot DIR or --context NAME [--kubeconfig F]")
    from gpupact.ops.live import load_live

    return load_live(context, kubeconfig)


__all__ = [
    "Analysis",
    "AuditOptions",
    "AuditReport",
    "ClusterSnapshot",
    "DiagnoseReport",
    "Diagnosis",
    "Domain",
    "Finding",
    "PlacementOutcome",
    "Severity",
    "SnapshotBuilder",
    "StepResult",
    "audit",
    "diagnose",
    "load_snapshot_dir",
    "open_cluster",
    "shortage_plan",
]
