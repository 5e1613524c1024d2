"""Why a workload is still pending: Kueue's QuotaReserved=False reasons, with the numbers.

`PendingReason.code` uses Kueue's condition reasons where Kueue has one (NoMatchingFlavor,
ExceedsMaxQuota, WaitingForQuota, WaitingForPreemptedWorkloads, Inadmissible) and adds two the
scheduler only implies: BlockedByStrictFIFOHead (never attempted: a StrictFIFO head that does
not fit blocks everything behind it) and NotYetAttempted (waiting for its turn as a head).
"""

from __future__ import annotations

from dataclasses import dataclass, field

NO_MATCHING_FLAVOR = "NoMatchingFlavor"
EXCEEDS_MAX_QUOTA = "ExceedsMaxQuota"
WAITING_FOR_QUOTA = "WaitingForQuota"
WAITING_FOR_PREEMPTED_WORKLOADS = "WaitingForPreemptedWorkloads"
PENDING_EVALUATION = "PendingEvaluation"
INACTIVE_CLUSTER_QUEUE = "Inactive"
MISCONFIGURED = "Misconfigured"  # e.g. the namespace may not use the ClusterQueue
BLOCKED_BY_STRICT_FIFO_HEAD = "BlockedByStrictFIFOHead"
NOT_YET_ATTEMPTED = "NotYetAttempted"

# what Kueue's ValidateAdmissibility says when a workload's namespace cannot use its queue
NAMESPACE_MISMATCH = "workload namespace doesn't match ClusterQueue selector"


def namespace_missing(namespace: str) -> str:
    return f'workload namespace "{namespace}" does not exist: namespaces "{namespace}" not found'


# the message Kueue writes when an earlier workload of the cycle took the capacity
NO_LONGER_FITS = "Workload no longer fits after processing another workload"
OVERLAPPING_TARGETS = "Workload has overlapping preemption targets with another workload"

_SEVERITY = {
    NO_MATCHING_FLAVOR: 4,
    EXCEEDS_MAX_QUOTA: 3,
    WAITING_FOR_QUOTA: 2,
}


def severity(code: str) -> int:
    return _SEVERITY.get(code, 0)


def most_severe(a: str, b: str) -> str:
    return a if severity(a) >= severity(b) else b


_BINARY_SUFFIXES = (
    ("Ei", 2**60),
    ("Pi", 2**50),
    ("Ti", 2**40),
    ("Gi", 2**30),
    ("Mi", 2**20),
    ("Ki", 2**10),
)
_BYTE_RESOURCES = ("memory", "ephemeral-storage")


def format_amount(resource: str, value: int) -> str:
    """An integer amount in base units as a Kubernetes quantity string (cpu is millicores)."""
    if resource == "cpu":
        return str(value // 1000) if value % 1000 == 0 else f"{value}m"
    if (resource in _BYTE_RESOURCES or resource.startswith("hugepages-")) and value:
        for suffix, factor in _BINARY_SUFFIXES:
            if value % factor == 0:
                return f"{value // factor}{suffix}"
    return str(value)


@dataclass(frozen=True, slots=True)
class QuotaDetail:
    """Usage against quota for one flavor/resource of the workload's ClusterQueue."""

    flavor: str
    resource: str
    requested: int
    usage: int
    nominal: int
    available: int  # what the ClusterQueue could take now, borrowing included
    borrowable: int  # what the cohort could still lend beyond nominal (0 without a cohort)


@dataclass(frozen=True, slots=True)
class PendingReason:
    code: str
    message: str
    subject: str  # the workload key
    cluster_queue: str = ""
    state: str = ""  # "active" | "inadmissible"
    position_in_cluster_queue: int | None = None
    position_in_local_queue: int | None = None
    blocked_by: str | None = None
    quota: tuple[QuotaDetail, ...] = field(default=())
