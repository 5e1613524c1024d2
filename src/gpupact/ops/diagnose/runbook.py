"""The runbook's order (Table 43-5's domains, first match wins) and the Diagnosis one walk
produces: the steps checked, the finding that stopped the walk, how long it has waited.
"""

from __future__ import annotations

from collections.abc import Callable

from gpupact.ops.cluster import Analysis
from gpupact.ops.diagnose.autoscaler import check_autoscaler
from gpupact.ops.diagnose.capacity import check_capacity
from gpupact.ops.diagnose.case import Case
from gpupact.ops.diagnose.gang import check_gang
from gpupact.ops.diagnose.model_memory import check_memory
from gpupact.ops.diagnose.nodes import check_nodes
from gpupact.ops.diagnose.placement import check_placement
from gpupact.ops.diagnose.quota import check_quota
from gpupact.ops.findings import Diagnosis, Domain, Finding

STEPS: tuple[Callable[[Analysis, Case], Finding | None], ...] = (
    check_nodes,
    check_placement,
    check_gang,
    check_quota,
    check_autoscaler,
    check_memory,
)


def walk(a: Analysis, case: Case) -> Diagnosis:
    finding = None
    pod = case.target
    if pod is not None and pod.phase == "Running":
        # crash-looping, not Pending: scheduling worked, only the memory step applies
        for domain in (Domain.nodes, Domain.placement, Domain.gang, Domain.quota):
            case.note(domain, "n/a", f"running on {pod.node_name}")
        finding = check_memory(a, case)
        return diagnosis_of(a, case, finding or check_capacity(a, case))
    for step in STEPS:
        finding = step(a, case)
        if finding is not None:
            break
    if finding is None:
        finding = check_capacity(a, case)
    return diagnosis_of(a, case, finding)


def diagnosis_of(a: Analysis, case: Case, finding: Finding | None) -> Diagnosis:
    pending = None
    if finding is not None and case.created is not None:
        pending = a.age(case.created)
    return Diagnosis(
        subject=case.subject,
        kind=case.kind,
        namespace=case.namespace,
        name=case.name,
        status=case.status,
        pending_seconds=pending,
        checked=tuple(case.notes),
        finding=finding,
        members=tuple(p.key for p in case.members) if case.kind != "Pod" else (),
    )
