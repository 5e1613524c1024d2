"""kube-scheduler DefaultPreemption for the engine, with contract protection rules on top.

`DefaultPreemption.post_filter` is the entry point: given the pod nothing fits, the cluster
(`PreemptionCluster`, e.g. `PreemptionSnapshot`), each node's filter status and `now`, it
returns the node to nominate and the victims to evict, or the upstream refusal message.
"""

from gpupact.engine.preemption.default_preemption import (
    PLUGIN,
    REASON_NO_VICTIMS,
    REASON_NOT_HELPFUL,
    REASON_PROTECTED,
    Candidate,
    DefaultPreemption,
    DefaultPreemptionArgs,
    DryRun,
    PostFilterResult,
    PreemptionOutcome,
    calculate_num_candidates,
    nominated_node_name,
    parse_preemption_args,
    pick_one_node_for_preemption,
    terminating_by_preemption,
)
from gpupact.engine.preemption.disruption_budget import (
    PodDisruptionBudget,
    filter_pods_with_pdb_violation,
    parse_pdb,
)
from gpupact.engine.preemption.fit_check import FilterChainFit, FitCheck
from gpupact.engine.preemption.importance import (
    format_time_nanos,
    more_important_pod,
    parse_time_nanos,
    pod_start_time,
)
from gpupact.engine.preemption.protection import (
    GANG,
    NEVER_PREEMPTS,
    NEVER_VICTIM,
    NO_PROTECTION,
    Protection,
    ProtectionRule,
    parse_protection,
    parse_protection_rule,
)
from gpupact.engine.preemption.snapshot import PreemptionCluster, PreemptionSnapshot

__all__ = [
    "GANG",
    "NEVER_PREEMPTS",
    "NEVER_VICTIM",
    "NO_PROTECTION",
    "PLUGIN",
    "REASON_NOT_HELPFUL",
    "REASON_NO_VICTIMS",
    "REASON_PROTECTED",
    "Candidate",
    "DefaultPreemption",
    "DefaultPreemptionArgs",
    "DryRun",
    "FilterChainFit",
    "FitCheck",
    "PodDisruptionBudget",
    "PostFilterResult",
    "PreemptionCluster",
    "PreemptionOutcome",
    "PreemptionSnapshot",
    "Protection",
    "ProtectionRule",
    "calculate_num_candidates",
    "filter_pods_with_pdb_violation",
    "format_time_nanos",
    "more_important_pod",
    "nominated_node_name",
    "parse_pdb",
    "parse_preemption_args",
    "parse_protection",
    "parse_protection_rule",
    "parse_time_nanos",
    "pick_one_node_for_preemption",
    "pod_start_time",
    "terminating_by_preemption",
]
