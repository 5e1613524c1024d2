"""Kueue's admission objects as immutable, already-validated values.

Quantities are integers in base units (cpu in millicores, memory in bytes, GPUs and pods as
counts), exactly as `gpupact.kube.quantity.resource_amount` returns them. Times are integers in
the caller's clock unit (the twin uses milliseconds); the engine never reads a wall clock.

A policy string left empty ("") means "unset in the object": Kueue treats an unset policy
differently from an explicit "Never" in a few comparisons (see `PreemptionConfig`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from types import MappingProxyType

from gpupact.kube.selectors import LabelSelector, NodeSelector
from gpupact.kube.taints import Taint, Toleration

FlavorResource = tuple[str, str]
"""(flavor name, resource name): the unit quotas and usage are tracked in."""

# queueing strategies
STRICT_FIFO = "StrictFIFO"
BEST_EFFORT_FIFO = "BestEffortFIFO"

# preemption policies (withinClusterQueue, reclaimWithinCohort, borrowWithinCohort.policy)
NEVER = "Never"
LOWER_PRIORITY = "LowerPriority"
LOWER_OR_NEWER_EQUAL_PRIORITY = "LowerOrNewerEqualPriority"
ANY = "Any"
UNSET = ""

# flavor fungibility
MAY_STOP_SEARCH = "MayStopSearch"
TRY_NEXT_FLAVOR = "TryNextFlavor"
BORROWING_OVER_PREEMPTION = "BorrowingOverPreemption"
PREEMPTION_OVER_BORROWING = "PreemptionOverBorrowing"

# Preempted condition reasons
IN_CLUSTER_QUEUE = "InClusterQueue"
IN_COHORT_RECLAMATION = "InCohortReclamation"
IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"
IN_COHORT_FAIR_SHARING = "InCohortFairSharing"

RESOURCE_PODS = "pods"

_EMPTY: Mapping[str, str] = MappingProxyType({})
EVERY_NAMESPACE = LabelSelector()  # `namespaceSelector: {}`


@dataclass(frozen=True, slots=True)
class ResourceFlavor:
    name: str
    node_labels: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    node_taints: tuple[Taint, ...] = ()
    tolerations: tuple[Toleration, ...] = ()


@dataclass(frozen=True, slots=True)
class ResourceQuota:
    """nominalQuota, borrowingLimit (None: unlimited), lendingLimit (None: lend everything)."""

    nominal: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None


@dataclass(frozen=True, slots=True)
class FlavorQuotas:
    name: str
    resources: Mapping[str, ResourceQuota]


@dataclass(frozen=True, slots=True)
class ResourceGroup:
    """Resources that always share one flavor; `flavors` in preference order."""

    covered_resources: tuple[str, ...]
    flavors: tuple[FlavorQuotas, ...]

    @property
    def flavor_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.flavors)


@dataclass(frozen=True, slots=True)
class BorrowWithinCohort:
    policy: str = NEVER
    max_priority_threshold: int | None = None


@dataclass(frozen=True, slots=True)
class PreemptionConfig:
    """ClusterQueue.spec.preemption. The API server defaults every policy to Never; an UNSET
    ("") policy never yields candidates either, but compares unequal to Never (Kueue's
    `!= Never` checks, e.g. preempting while borrowing under fair sharing)."""

    within_cluster_queue: str = NEVER
    reclaim_within_cohort: str = NEVER
    borrow_within_cohort: BorrowWithinCohort | None = None


@dataclass(frozen=True, slots=True)
class FlavorFungibility:
    when_can_borrow: str = MAY_STOP_SEARCH
    when_can_preempt: str = TRY_NEXT_FLAVOR
    preference: str | None = None


@dataclass(frozen=True, slots=True)
class ClusterQueue:
    name: str
    resource_groups: tuple[ResourceGroup, ...] = ()
    cohort: str | None = None
    queueing_strategy: str = BEST_EFFORT_FIFO
    preemption: PreemptionConfig = PreemptionConfig()
    flavor_fungibility: FlavorFungibility = FlavorFungibility()
    fair_weight: Fraction = Fraction(1)
    # stopPolicy Hold/HoldAndDrain or any other reason the ClusterQueue is not Active
    active: bool = True
    # spec.namespaceSelector, compiled: the namespaces that may submit to the queue. Kueue
    # reads a missing (nil) selector as "no namespace" (k8s.py passes None) and `{}` as every
    # namespace, the default here.
    namespace_selector: LabelSelector | None = EVERY_NAMESPACE


@dataclass(frozen=True, slots=True)
class Cohort:
    """An explicit Cohort object (hierarchical cohorts); quota-less when no resource groups."""

    name: str
    parent: str | None = None
    resource_groups: tuple[ResourceGroup, ...] = ()
    fair_weight: Fraction = Fraction(1)


@dataclass(frozen=True, slots=True)
class LocalQueue:
    namespace: str
    name: str
    cluster_queue: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class WorkloadPriorityClass:
    name: str
    value: int


@dataclass(frozen=True, slots=True)
class PodSet:
    """One homogeneous group of pods. `requests` are per pod; `min_count` enables partial
    admission down to that many pods."""

    name: str
    count: int
    requests: Mapping[str, int]
    min_count: int | None = None
    node_selector: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    required_affinity: NodeSelector | None = None
    tolerations: tuple[Toleration, ...] = ()


@dataclass(frozen=True, slots=True)
class PodSetAdmission:
    """What an admission assigns to one PodSet: a flavor per resource and the total usage."""

    name: str
    flavors: Mapping[str, str]
    count: int
    usage: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class Admission:
    cluster_queue: str
    pod_sets: tuple[PodSetAdmission, ...]


@dataclass(frozen=True, slots=True)
class Workload:
    """A Kueue Workload. `queue_name` is the LocalQueue in `namespace`; `creation_time` and
    `uid` order it in its queue (FIFO, then UID, then key for determinism)."""

    name: str
    pod_sets: tuple[PodSet, ...]
    namespace: str = "default"
    queue_name: str = ""
    priority: int = 0
    creation_time: int = 0
    uid: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def can_be_partially_admitted(self) -> bool:
        return any(ps.min_count is not None and ps.min_count < ps.count for ps in self.pod_sets)


# --- temporary quota raises (a gpupact extension; Kueue only sees the nominalQuota change) ---

# what happens to workloads admitted on a raise when it expires
KEEP = "keep"  # Kueue's behaviour: lowering nominalQuota never evicts anything
EVICT_NEWEST = "evict-newest"
ON_EXPIRY_POLICIES = (KEEP, EVICT_NEWEST)
# eviction reason of workloads stopped under EVICT_NEWEST
QUOTA_RAISE_EXPIRED = "QuotaRaiseExpired"


@dataclass(frozen=True, slots=True)
class QuotaRaise:
    """`amount` more nominalQuota for one ClusterQueue, flavor and resource, active while the
    injected clock is before `expires_at` (same unit as every other time)."""

    cluster_queue: str
    flavor: str
    resource: str
    amount: int
    expires_at: int
    reason: str = ""
