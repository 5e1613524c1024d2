"""Kueue's preemptor: which admitted workloads to evict so a pending one fits.

Classical preemption (fair sharing off) considers three kinds of candidates, in this order:
1. hierarchy candidates: in other ClusterQueues over their quota, where the preemptor has a
   hierarchical advantage (its subtree owns the quota they borrow): any priority
   (reclaimWithinCohort permitting) -> InCohortReclamation;
2. priority candidates: other borrowing ClusterQueues without that advantage; without
   borrowWithinCohort they are only valid if the preemptor ends up not borrowing
   (InCohortReclamation), with it also while borrowing when below the priority threshold
   (InCohortReclaimWhileBorrowing);
3. same-queue candidates by withinClusterQueue policy -> InClusterQueue.
Each kind lists already-evicted workloads first, then lower priority, then the most recently
admitted. Candidates are removed one by one until the preemptor fits, then added back in
reverse order while it still fits (a minimal victim set, not a minimum one).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from operator import attrgetter

from gpupact.engine.admission.flavor_assigner import Assignment, Possibility
from gpupact.engine.admission.model import (
    ANY,
    IN_CLUSTER_QUEUE,
    IN_COHORT_RECLAIM_WHILE_BORROWING,
    IN_COHORT_RECLAMATION,
    LOWER_OR_NEWER_EQUAL_PRIORITY,
    LOWER_PRIORITY,
    NEVER,
    FlavorResource,
)
from gpupact.engine.admission.resource_tree import (
    QuotaNode,
    add_usages,
    available,
    borrowing_with,
    is_borrowing,
    lowest_fitting_subtree_height,
    quantities_fit_in_quota,
    remove_usages,
    within_nominal,
)
from gpupact.engine.admission.runtime import ClusterQueueRuntime
from gpupact.engine.admission.workload_info import WorkloadInfo


@dataclass(frozen=True, slots=True)
class Target:
    info: WorkloadInfo
    reason: str

    @property
    def key(self) -> str:
        return self.info.key

    @property
    def cluster_queue(self) -> str:
        return self.info.cluster_queue


@dataclass(slots=True)
class PreemptionContext:
    preemptor: WorkloadInfo
    cq: ClusterQueueRuntime
    frs: set[FlavorResource]  # the flavor-resources whose assignment needs preemption
    usage: dict[FlavorResource, int]  # what the preemptor would charge


# --- snapshot edits (undone by the caller) ----------------------------------------------------


def remove_workload(cqs: Mapping[str, ClusterQueueRuntime], info: WorkloadInfo) -> None:
    cq = cqs[info.cluster_queue]
    cq.workloads.pop(info.key, None)
    remove_usages(cq.node, info.usage)


def add_workload(cqs: Mapping[str, ClusterQueueRuntime], info: WorkloadInfo) -> None:
    cq = cqs[info.cluster_queue]
    cq.workloads[info.key] = info
    add_usages(cq.node, info.usage)


def satisfies_policy(preemptor: WorkloadInfo, candidate: WorkloadInfo, policy: str) -> bool:
    if policy == LOWER_PRIORITY:
        return preemptor.priority > candidate.priority
    if policy == LOWER_OR_NEWER_EQUAL_PRIORITY:
        if preemptor.priority > candidate.priority:
            return True
        return (
            preemptor.priority == candidate.priority
            and preemptor.workload.creation_time < candidate.workload.creation_time
        )
    return policy == ANY


def can_always_reclaim(cq: ClusterQueueRuntime) -> bool:
    """The ClusterQueue is guaranteed to get back what it lends (reclaimWithinCohort=Any)."""
    return cq.spec.preemption.reclaim_within_cohort == ANY


def borrowing_within_cohort_forbidden(cq: ClusterQueueRuntime) -> tuple[bool, int | None]:
    bwc = cq.spec.preemption.borrow_within_cohort
    if bwc is None or bwc.policy == NEVER:
        return True, None
    return False, bwc.max_priority_threshold


def candidate_order_key(info: WorkloadInfo, preemptor_cq: str, now: int) -> tuple:
    """Victim order: already evicted, other ClusterQueues, lower priority, most recently
    admitted, then UID and key."""
    reserved = info.quota_reserved_at if info.quota_reserved_at is not None else now
    return (
        not info.evicted,
        info.cluster_queue == preemptor_cq,
        info.priority,
        -reserved,
        info.workload.uid,
        info.key,
    )


# --- classical candidates ---------------------------------------------------------------------

_NEVER, _WITHIN_CQ, _HIERARCHICAL, _RECLAIM_WITHOUT_BORROWING, _RECLAIM_WHILE_BORROWING = range(5)
_VARIANT_REASON = {
    _WITHIN_CQ: IN_CLUSTER_QUEUE,
    _HIERARCHICAL: IN_COHORT_RECLAMATION,
    _RECLAIM_WITHOUT_BORROWING: IN_COHORT_RECLAMATION,
    _RECLAIM_WHILE_BORROWING: IN_COHORT_RECLAIM_WHILE_BORROWING,
}


@dataclass(slots=True)
class _Candidate:
    info: WorkloadInfo
    lca: QuotaNode | None  # lowest common ancestor with the preemptor's ClusterQueue
    variant: int
    order: tuple  # candidate_order_key, computed once


def _classify(ctx: PreemptionContext, info: WorkloadInfo, advantage: bool) -> int:
    if not info.uses_any(ctx.frs):
        return _NEVER
    preemption = ctx.cq.spec.preemption
    same_queue = info.cluster_queue == ctx.cq.name
    policy = preemption.within_cluster_queue if same_queue else preemption.reclaim_within_cohort
    if not satisfies_policy(ctx.preemptor, info, policy):
        return _NEVER
    if same_queue:
        return _WITHIN_CQ
    if advantage:
        return _HIERARCHICAL
    forbidden, threshold = borrowing_within_cohort_forbidden(ctx.cq)
    if forbidden:
        return _RECLAIM_WITHOUT_BORROWING
    if info.priority >= ctx.preemptor.priority or (
        threshold is not None and info.priority > threshold
    ):
        return _RECLAIM_WITHOUT_BORROWING
    return _RECLAIM_WHILE_BORROWING


def _policy_matches(
    preemptor: WorkloadInfo, cq: ClusterQueueRuntime, policy: str
) -> list[WorkloadInfo]:
    """The admitted workloads of `cq` that `policy` lets `preemptor` preempt, by priority
    (the same set as filtering with `satisfies_policy`, read from the priority index)."""
    priorities, infos = cq.by_priority()
    if policy == LOWER_PRIORITY:
        end = bisect_left(priorities, preemptor.workload.priority)
        return infos[:end] if end < len(infos) else infos
    if policy == LOWER_OR_NEWER_EQUAL_PRIORITY:
        priority = preemptor.workload.priority
        created = preemptor.workload.creation_time
        end = bisect_right(priorities, priority)
        return [
            info
            for info in infos[:end]
            if info.workload.priority < priority or created < info.workload.creation_time
        ]
    if policy == ANY:
        return infos
    return []


def _from_queue(
    ctx: PreemptionContext,
    cq: ClusterQueueRuntime,
    lca: QuotaNode | None,
    advantage: bool,
    now: int,
) -> list[_Candidate]:
    """`_classify` for every admitted workload of `cq`, reading only those the policy allows."""
    preemption = ctx.cq.spec.preemption
    same_queue = cq.name == ctx.cq.name
    policy = preemption.within_cluster_queue if same_queue else preemption.reclaim_within_cohort
    matches = _policy_matches(ctx.preemptor, cq, policy)
    return _candidates(ctx, matches, same_queue, lca, advantage, now)


def _candidates(
    ctx: PreemptionContext,
    matches: list[WorkloadInfo],
    same_queue: bool,
    lca: QuotaNode | None,
    advantage: bool,
    now: int,
) -> list[_Candidate]:
    frs = ctx.frs
    preemptor_cq = ctx.cq.name
    out = []
    for info in matches:
        if info.held.isdisjoint(frs):
            continue
        if same_queue:
            variant = _WITHIN_CQ
        elif advantage:
            variant = _HIERARCHICAL
        else:
            variant = _classify(ctx, info, advantage)
        out.append(_Candidate(info, lca, variant, candidate_order_key(info, preemptor_cq, now)))
    return out


_by_order = attrgetter("order")


class CandidateIterator:
    def __init__(
        self, ctx: PreemptionContext, cqs: Mapping[str, ClusterQueueRuntime], now: int
    ) -> None:
        self.ctx = ctx
        self.cqs = cqs
        self.now = now
        same: list[_Candidate] = []
        if ctx.cq.spec.preemption.within_cluster_queue != NEVER:
            same = _from_queue(ctx, ctx.cq, None, False, now)
        hierarchy, priority = self._collect_hierarchical()
        self.none_from_other_queues = not hierarchy and not priority
        self.none_for_hierarchical_reclaim = not hierarchy
        if not same and self.none_from_other_queues:
            self.candidates: list[_Candidate] = []
            return

        groups = [sorted(g, key=_by_order) for g in (hierarchy, priority, same)]
        evicted = [[c for c in g if c.info.evicted] for g in groups]
        rest = [[c for c in g if not c.info.evicted] for g in groups]
        self.candidates = [c for g in (*evicted, *rest) for c in g]

    def _collect_hierarchical(self) -> tuple[list[_Candidate], list[_Candidate]]:
        ctx = self.ctx
        hierarchy: list[_Candidate] = []
        priority: list[_Candidate] = []
        node = ctx.cq.node
        if node.parent is None or ctx.cq.spec.preemption.reclaim_within_cohort == NEVER:
            return hierarchy, priority
        advantage, remaining = quantities_fit_in_quota(node, ctx.usage)
        previous: QuotaNode | None = None
        for subtree_root in node.ancestors():
            out = hierarchy if advantage else priority
            self._collect_in_subtree(subtree_root, subtree_root, previous, advantage, out)
            fits, remaining = quantities_fit_in_quota(subtree_root, remaining)
            # the preemptor's subtree owns the quota: it keeps its advantage further up
            advantage = advantage or fits
            previous = subtree_root
        return hierarchy, priority

    def _collect_in_subtree(
        self,
        cohort: QuotaNode,
        subtree_root: QuotaNode,
        skip: QuotaNode | None,
        advantage: bool,
        out: list[_Candidate],
    ) -> None:
        frs = self.ctx.frs
        for child in cohort.child_cohorts:
            if child is skip or within_nominal(child, frs):
                continue
            self._collect_in_subtree(child, subtree_root, skip, advantage, out)
        ctx = self.ctx
        policy = ctx.cq.spec.preemption.reclaim_within_cohort
        # test first what usually filters: the policy (LowerPriority mostly allows nothing),
        # except Any, which allows everything and leaves it to the quota test
        quota_first = policy == ANY
        for child in cohort.child_cqs:
            if child is ctx.cq.node:
                continue
            if quota_first and within_nominal(child, frs):
                continue
            matches = _policy_matches(ctx.preemptor, self.cqs[child.name], policy)
            if not matches or (not quota_first and within_nominal(child, frs)):
                continue
            out.extend(_candidates(ctx, matches, False, subtree_root, advantage, self.now))

    def iterate(self, allow_borrowing: bool) -> Iterator[tuple[WorkloadInfo, str]]:
        """Valid candidates, re-checked lazily against the current (simulated) usage."""
        for candidate in self.candidates:
            if self._valid(candidate, allow_borrowing):
                yield candidate.info, _VARIANT_REASON[candidate.variant]

    def _valid(self, candidate: _Candidate, allow_borrowing: bool) -> bool:
        ctx = self.ctx
        if candidate.info.cluster_queue == ctx.cq.name:
            return True
        if allow_borrowing and candidate.variant == _RECLAIM_WITHOUT_BORROWING:
            return False
        node = self.cqs[candidate.info.cluster_queue].node
        if within_nominal(node, ctx.frs):
            return False
        for ancestor in node.ancestors():
            if ancestor is candidate.lca:
                break
            if within_nominal(ancestor, ctx.frs):
                return False
        return True


# --- the preemptor ----------------------------------------------------------------------------


def workload_fits(ctx: PreemptionContext, allow_borrowing: bool) -> bool:
    node = ctx.cq.node
    for fr, value in ctx.usage.items():
        if not allow_borrowing and borrowing_with(node, fr, value):
            return False
        if value > available(node, fr):
            return False
    return True


def fill_back(
    ctx: PreemptionContext,
    cqs: Mapping[str, ClusterQueueRuntime],
    targets: list[Target],
    allow_borrowing: bool,
) -> list[Target]:
    """Re-admit removed candidates, last removed first, while the preemptor still fits."""
    for i in range(len(targets) - 2, -1, -1):
        add_workload(cqs, targets[i].info)
        if workload_fits(ctx, allow_borrowing):
            targets[i] = targets[-1]
            targets.pop()
        else:
            remove_workload(cqs, targets[i].info)
    return targets


def restore(cqs: Mapping[str, ClusterQueueRuntime], targets: list[Target]) -> None:
    for target in targets:
        add_workload(cqs, target.info)


def queue_under_nominal(ctx: PreemptionContext) -> bool:
    """Usage strictly below nominal for every flavor-resource needing preemption."""
    node = ctx.cq.node
    for fr in ctx.frs:
        quota = node.quotas.get(fr)
        if (quota.nominal if quota is not None else 0) <= node.usage.get(fr, 0):
            return False
    return True


def queue_within_nominal(ctx: PreemptionContext) -> bool:
    """Usage at most nominal for every flavor-resource needing preemption."""
    return not any(is_borrowing(ctx.cq.node, fr) for fr in ctx.frs)


class Preemptor:
    """Finds preemption targets on the live quota tree (every simulated change is undone)."""

    def __init__(self, cqs: Mapping[str, ClusterQueueRuntime], now: int, fair_sharing=None) -> None:
        self.cqs = cqs
        self.now = now
        # a FairSharingPreemption (fair_sharing.py) when fair sharing is enabled
        self.fair_sharing = fair_sharing
        # targets per question while the quota tree cannot change (see `remembering`)
        self._memo: dict[tuple, list[Target]] | None = None

    @contextmanager
    def remembering(self) -> Iterator[None]:
        """Answer a repeated question from memory while the caller changes nothing: the flavor
        assigner's simulation and the targets of the assignment it picks ask the same one (as
        in Kueue, which computes both)."""
        self._memo = {}
        try:
            yield
        finally:
            self._memo = None

    def get_targets(self, info: WorkloadInfo, assignment: Assignment) -> list[Target]:
        ctx = PreemptionContext(
            info,
            self.cqs[info.cluster_queue],
            assignment.flavors_needing_preemption(),
            assignment.total_requests_for(info),
        )
        return self.targets(ctx)

    def targets(self, ctx: PreemptionContext) -> list[Target]:
        memo = self._memo
        if memo is None:
            return self._targets(ctx)
        question = (ctx.preemptor.key, frozenset(ctx.frs), frozenset(ctx.usage.items()))
        found = memo.get(question)
        if found is None:
            found = memo[question] = self._targets(ctx)
        return list(found)

    def _targets(self, ctx: PreemptionContext) -> list[Target]:
        if self.fair_sharing is not None:
            return self.fair_sharing.targets(self, ctx)
        return self.classical_targets(ctx)

    def simulate_preemption(
        self, cq: ClusterQueueRuntime, info: WorkloadInfo, fr: FlavorResource, quantity: int
    ) -> tuple[Possibility, int]:
        """The flavor assigner's oracle: can preemption make `quantity` of `fr` available, and
        at which borrowing level would the workload then be?"""
        ctx = PreemptionContext(info, self.cqs[info.cluster_queue], {fr}, {fr: quantity})
        targets = self.targets(ctx)
        if not targets:
            borrow, _ = lowest_fitting_subtree_height(cq.node, fr, quantity)
            return Possibility.NO_CANDIDATES, borrow
        for target in targets:
            remove_usages(self.cqs[target.cluster_queue].node, target.info.usage)
        borrow, _ = lowest_fitting_subtree_height(cq.node, fr, quantity)
        for target in targets:
            add_usages(self.cqs[target.cluster_queue].node, target.info.usage)
        if any(t.cluster_queue == cq.name for t in targets):
            return Possibility.PREEMPT, borrow
        return Possibility.RECLAIM, borrow

    def classical_targets(self, ctx: PreemptionContext) -> list[Target]:
        cqs = self.cqs
        candidates = CandidateIterator(ctx, cqs, self.now)
        forbidden, _ = borrowing_within_cohort_forbidden(ctx.cq)
        if candidates.none_from_other_queues or (forbidden and not queue_under_nominal(ctx)):
            attempts = (True,)
        elif forbidden and candidates.none_for_hierarchical_reclaim:
            attempts = (False, True)
        else:
            attempts = (True, False)
        for allow_borrowing in attempts:
            targets: list[Target] = []
            for info, reason in candidates.iterate(allow_borrowing):
                remove_workload(cqs, info)
                targets.append(Target(info, reason))
                if workload_fits(ctx, allow_borrowing):
                    targets = fill_back(ctx, cqs, targets, allow_borrowing)
                    restore(cqs, targets)
                    return targets
            restore(cqs, targets)
        return []
