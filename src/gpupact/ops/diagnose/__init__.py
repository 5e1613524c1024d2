"""`diagnose`: why is it Pending — the chapter's runbook (43.5), executable.

Every Pending pod, PodGroup and Kueue Workload is walked through the runbook in order, and the
walk stops at the first domain that explains it (Table 43-5 names the domains, Table 43-6
the recovery actions). One module per domain, as kube-scheduler keeps one plugin a directory:

1. nodes         Ready, and `nvidia.com/gpu` advertised as the hardware says (Device Plugin)
2. placement     taints / tolerations / affinity satisfiable; GPU fragmentation (kube-scheduler)
3. gang          PodGroup minMember reachable now; GPUs held by half-started gangs (Volcano)
4. quota         ClusterQueue usage vs nominal + borrowable, queue position, StrictFIFO (Kueue)
5. autoscaler    scale-up under way and its cold start; pool at max (Autoscaler / Karpenter)
6. model_memory  the model's memory vs the GPU: OOM history, KV cache at its context length

A subject none of them explains ends in the `capacity` domain: it fits now (the scheduler
has not bound it yet) or the pool is simply full.

Each step is a small function `(analysis, case) -> Finding | None`; a step that passes leaves
a note (`ok` or `n/a`) on the case, so the report shows the whole walk. `runbook` holds the
order and the Diagnosis a walk produces; `case` the subject; `subjects` which ones are walked;
`report` the entry point.
"""

from gpupact.ops.diagnose.autoscaler import check_autoscaler
from gpupact.ops.diagnose.capacity import check_capacity
from gpupact.ops.diagnose.case import (
    SLOW_START_SECONDS,
    Case,
    gates,
    is_starting,
    is_waiting,
    unique_shapes,
)
from gpupact.ops.diagnose.gang import (
    GangCounts,
    a_whatif,
    check_gang,
    gang_counts,
    gang_evidence,
    gang_nodes,
    partial_gangs,
)
from gpupact.ops.diagnose.model_memory import check_memory
from gpupact.ops.diagnose.nodes import STARTING_TROUBLE, check_nodes, condition_text
from gpupact.ops.diagnose.placement import blocking_filter, check_placement
from gpupact.ops.diagnose.quota import check_quota, zombie_command, zombie_workloads
from gpupact.ops.diagnose.report import DiagnoseReport, diagnose, group_by_owner
from gpupact.ops.diagnose.runbook import STEPS, walk
from gpupact.ops.diagnose.subjects import pending_cases, target_case

__all__ = [
    "SLOW_START_SECONDS",
    "STARTING_TROUBLE",
    "STEPS",
    "Case",
    "DiagnoseReport",
    "GangCounts",
    "a_whatif",
    "blocking_filter",
    "check_autoscaler",
    "check_capacity",
    "check_gang",
    "check_memory",
    "check_nodes",
    "check_placement",
    "check_quota",
    "condition_text",
    "diagnose",
    "gang_counts",
    "gang_evidence",
    "gang_nodes",
    "gates",
    "group_by_owner",
    "is_starting",
    "is_waiting",
    "partial_gangs",
    "pending_cases",
    "target_case",
    "unique_shapes",
    "walk",
    "zombie_command",
    "zombie_workloads",
]
