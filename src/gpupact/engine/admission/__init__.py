"""Quota admission with Kueue's semantics: flavors, cohorts, queues, preemption, fair sharing.

Entry point: `AdmissionState` (state.py) holds ResourceFlavors, ClusterQueues, Cohorts,
LocalQueues and workloads; `schedule_cycle(now)` runs one Kueue scheduling cycle and returns
what was admitted, preempted and left pending. `explain(key)` says why a workload waits.
"""

from gpupact.engine.admission.cycle import (
    AdmittedWorkload,
    CycleResult,
    PendingHead,
    PreemptedWorkload,
)
from gpupact.engine.admission.fair_sharing import FairSharingConfig
from gpupact.engine.admission.model import (
    Admission,
    BorrowWithinCohort,
    ClusterQueue,
    Cohort,
    FlavorFungibility,
    FlavorQuotas,
    LocalQueue,
    PodSet,
    PodSetAdmission,
    PreemptionConfig,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
    Workload,
    WorkloadPriorityClass,
)
from gpupact.engine.admission.reasons import PendingReason, QuotaDetail
from gpupact.engine.admission.state import AdmissionState, FeatureGates, PendingWorkload

__all__ = [
    "Admission",
    "AdmissionState",
    "AdmittedWorkload",
    "BorrowWithinCohort",
    "ClusterQueue",
    "Cohort",
    "CycleResult",
    "FairSharingConfig",
    "FeatureGates",
    "FlavorFungibility",
    "FlavorQuotas",
    "LocalQueue",
    "PendingHead",
    "PendingReason",
    "PendingWorkload",
    "PodSet",
    "PodSetAdmission",
    "PreemptedWorkload",
    "PreemptionConfig",
    "QuotaDetail",
    "ResourceFlavor",
    "ResourceGroup",
    "ResourceQuota",
    "Workload",
    "WorkloadPriorityClass",
]
