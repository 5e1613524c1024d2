"""Fair sharing: Dominant Resource Share (DRS), the admission tournament and fair preemption.

The DRS of a ClusterQueue or Cohort is, over the resources it borrows, the largest ratio
borrowed / lendable (x1000), lendable being everything its parent could make available summed
over flavors; divided by the node's fair-sharing weight. A weight of 0 makes any borrowing an
infinite share. Ratios are exact fractions here (Kueue uses float64; orderings agree).

Admission: per cohort tree a tournament picks, at every cohort, the child whose DRS after
admitting its nominated workload is lowest (non-borrowing first, then DRS, priority, FIFO).
Preemption: victims come from the ClusterQueue with the highest DRS, subject to the configured
strategies (LessThanOrEqualToFinalShare, then LessThanInitialShare).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Protocol

from gpupact.engine.admission.model import (
    IN_CLUSTER_QUEUE,
    IN_COHORT_FAIR_SHARING,
    IN_COHORT_RECLAMATION,
    NEVER,
    FlavorResource,
)
from gpupact.engine.admission.preemption import (
    PreemptionContext,
    Preemptor,
    Target,
    candidate_order_key,
    fill_back,
    queue_within_nominal,
    remove_workload,
    restore,
    satisfies_policy,
    workload_fits,
)
from gpupact.engine.admission.resource_tree import (
    QuotaNode,
    add_usages,
    is_borrowing,
    potential_available,
    remove_usages,
)
from gpupact.engine.admission.runtime import ClusterQueueRuntime
from gpupact.engine.admission.workload_info import WorkloadInfo

LESS_THAN_OR_EQUAL_TO_FINAL_SHARE = "LessThanOrEqualToFinalShare"
LESS_THAN_INITIAL_SHARE = "LessThanInitialShare"


@dataclass(frozen=True, slots=True)
class FairSharingConfig:
    preemption_strategies: tuple[str, ...] = (
        LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,
        LESS_THAN_INITIAL_SHARE,
    )


# --- DRS -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DRS:
    weight: Fraction
    ratio: Fraction  # unweighted: borrowed * 1000 / lendable, for the dominant resource
    dominant: str = ""
    borrowing: bool = False
    borrowed: tuple[FlavorResource, ...] = field(default=())

    @property
    def zero_weight_borrows(self) -> bool:
        return self.weight == 0 and self.ratio != 0

    @property
    def weighted_share(self) -> Fraction:
        """Not meaningful when `zero_weight_borrows` (an infinite share)."""
        if self.ratio == 0 or self.weight == 0:
            return Fraction(0)
        return self.ratio / self.weight

    def borrowing_on(self, requested: Mapping[FlavorResource, int]) -> bool:
        return any(requested.get(fr, 0) > 0 for fr in self.borrowed)


NEGATIVE_DRS = DRS(Fraction(1), Fraction(-1))


def compare_drs(a: DRS, b: DRS) -> int:
    """-1: a is the fairer (lower) share; 1: b is."""
    if a.zero_weight_borrows and b.zero_weight_borrows:
        x, y = a.ratio, b.ratio
    elif a.zero_weight_borrows:
        return 1
    elif b.zero_weight_borrows:
        return -1
    else:
        x, y = a.weighted_share, b.weighted_share
    return (x > y) - (x < y)


def lendable(node: QuotaNode) -> dict[str, int]:
    """Per resource name, the most this node could use (summed over flavors)."""
    cached = node.lendable
    if cached is None:
        cached = {}
        for fr in node.root().subtree_quota:
            cached[fr[1]] = cached.get(fr[1], 0) + potential_available(node, fr)
        node.lendable = cached
    return cached


def dominant_resource_share(node: QuotaNode) -> DRS:
    weight = Fraction(node.fair_weight)
    parent = node.parent
    if parent is None:
        return DRS(weight, Fraction(0))
    borrowed: dict[str, int] = {}
    borrowed_frs = []
    for fr, quota in node.subtree_quota.items():
        amount = node.usage.get(fr, 0) - quota
        if amount > 0:
            borrowed[fr[1]] = borrowed.get(fr[1], 0) + amount
            borrowed_frs.append(fr)
    if not borrowed:
        return DRS(weight, Fraction(0))
    capacity = lendable(parent)
    ratio = Fraction(0)
    dominant = ""
    for resource in sorted(borrowed):
        total = capacity.get(resource, 0)
        if total > 0:
            share = Fraction(borrowed[resource] * 1000, total)
            if share > ratio:
                ratio, dominant = share, resource
    return DRS(weight, ratio, dominant, True, tuple(borrowed_frs))


# --- admission ordering: the tournament --------------------------------------------------------


class Entry(Protocol):
    """What the tournament needs from a scheduling-cycle entry."""

    info: WorkloadInfo
    cq: ClusterQueueRuntime

    @property
    def usage(self) -> dict[FlavorResource, int]: ...


class FairSharingIterator:
    """Yields the cycle's entries in fair-sharing order, re-running the tournament of an entry's
    cohort tree after each admission (DRS values include the admissions made so far)."""

    def __init__(self, entries: Sequence[Entry]) -> None:
        self.by_cq: dict[str, Entry] = {e.cq.name: e for e in entries}

    def __bool__(self) -> bool:
        return bool(self.by_cq)

    def pop(self) -> Entry:
        first = next(iter(self.by_cq.values()))
        node = first.cq.node
        if node.parent is None:
            return self.by_cq.pop(first.cq.name)
        root = node.root()
        drs, requested = self._compute(root)
        winner = self._tournament(root, drs, requested)
        assert winner is not None
        return self.by_cq.pop(winner.cq.name)

    def _compute(
        self, root: QuotaNode
    ) -> tuple[dict[tuple[str, str], DRS], dict[str, dict[FlavorResource, int]]]:
        values: dict[tuple[str, str], DRS] = {}
        requested: dict[str, dict[FlavorResource, int]] = {}
        for cq_node in root.subtree_cluster_queues():
            entry = self.by_cq.get(cq_node.name)
            if entry is None:
                continue
            usage = entry.usage
            add_usages(cq_node, usage)
            requested[entry.info.key] = usage
            share = dominant_resource_share(cq_node)
            for ancestor in cq_node.ancestors():
                values[(ancestor.name, entry.info.key)] = share
                share = dominant_resource_share(ancestor)
            remove_usages(cq_node, usage)
        return values, requested

    def _tournament(
        self,
        cohort: QuotaNode,
        drs: dict[tuple[str, str], DRS],
        requested: dict[str, dict[FlavorResource, int]],
    ) -> Entry | None:
        candidates: list[Entry] = []
        for child in cohort.child_cohorts:
            winner = self._tournament(child, drs, requested)
            if winner is not None:
                candidates.append(winner)
        for child in cohort.child_cqs:
            entry = self.by_cq.get(child.name)
            if entry is not None:
                candidates.append(entry)
        if not candidates:
            return None
        best = candidates[0]
        for current in candidates[1:]:
            if _fairer(current, best, cohort.name, drs, requested):
                best = current
        return best


def _fairer(
    a: Entry,
    b: Entry,
    cohort: str,
    drs: dict[tuple[str, str], DRS],
    requested: dict[str, dict[FlavorResource, int]],
) -> bool:
    a_drs, b_drs = drs[(cohort, a.info.key)], drs[(cohort, b.info.key)]
    # prefer a subtree not borrowing from this cohort on the flavors it asks for
    a_borrows = a_drs.borrowing_on(requested[a.info.key])
    b_borrows = b_drs.borrowing_on(requested[b.info.key])
    if a_borrows != b_borrows:
        return not a_borrows
    c = compare_drs(a_drs, b_drs)
    if c != 0:
        return c < 0
    if a.info.priority != b.info.priority:
        return a.info.priority > b.info.priority
    return a.info.workload.creation_time < b.info.workload.creation_time


# --- preemption --------------------------------------------------------------------------------

Strategy = Callable[[DRS, DRS, DRS], bool]


def less_than_or_equal_to_final_share(
    preemptor_new: DRS, _target_old: DRS, target_new: DRS
) -> bool:
    return compare_drs(preemptor_new, target_new) <= 0


def less_than_initial_share(preemptor_new: DRS, target_old: DRS, _target_new: DRS) -> bool:
    return compare_drs(preemptor_new, target_old) < 0


_STRATEGIES: dict[str, Strategy] = {
    LESS_THAN_OR_EQUAL_TO_FINAL_SHARE: less_than_or_equal_to_final_share,
    LESS_THAN_INITIAL_SHARE: less_than_initial_share,
}


class _TargetOrdering:
    """ClusterQueues to take victims from: walking down from the root, the child with the
    highest DRS that still has candidates (the preemptor's own queue is always eligible)."""

    def __init__(
        self, preemptor_cq: QuotaNode, candidates: list[WorkloadInfo], order_key: Callable
    ) -> None:
        self.preemptor_cq = preemptor_cq
        self.path = set(map(id, preemptor_cq.ancestors()))
        self.by_cq: dict[str, list[WorkloadInfo]] = {}
        for info in candidates:
            self.by_cq.setdefault(info.cluster_queue, []).append(info)
        self.pruned_cqs: set[str] = set()
        self.pruned_cohorts: set[str] = set()
        self.order_key = order_key

    def has_workload(self, cq: QuotaNode) -> bool:
        return bool(self.by_cq.get(cq.name))

    def pop(self, cq: QuotaNode) -> WorkloadInfo:
        return self.by_cq[cq.name].pop(0)

    def drop(self, cq: QuotaNode) -> None:
        self.pruned_cqs.add(cq.name)

    def __iter__(self) -> Iterator[QuotaNode]:
        cq = self.preemptor_cq
        if cq.parent is None:
            while cq.name not in self.pruned_cqs and self.has_workload(cq):
                yield cq
            return
        root = cq.root()
        while root.name not in self.pruned_cohorts:
            target = self._next(root)
            if target is not None:
                yield target

    def _next(self, cohort: QuotaNode) -> QuotaNode | None:
        best_cq: QuotaNode | None = None
        best_cq_drs = NEGATIVE_DRS
        for cq in cohort.child_cqs:
            if cq.name in self.pruned_cqs:
                continue
            drs = dominant_resource_share(cq)
            if (not drs.borrowing and cq is not self.preemptor_cq) or not self.has_workload(cq):
                self.pruned_cqs.add(cq.name)
                continue
            c = compare_drs(drs, best_cq_drs)
            if c == 0:
                assert best_cq is not None
                mine = self.order_key(self.by_cq[cq.name][0])
                theirs = self.order_key(self.by_cq[best_cq.name][0])
                if mine < theirs:
                    best_cq = cq
            elif c > 0:
                best_cq, best_cq_drs = cq, drs
        best_cohort: QuotaNode | None = None
        best_cohort_drs = NEGATIVE_DRS
        for child in cohort.child_cohorts:
            if child.name in self.pruned_cohorts:
                continue
            drs = dominant_resource_share(child)
            if not drs.borrowing and id(child) not in self.path:
                self.pruned_cohorts.add(child.name)
            elif compare_drs(drs, best_cohort_drs) >= 0:
                best_cohort, best_cohort_drs = child, drs
        if best_cohort is None and best_cq is None:
            self.pruned_cohorts.add(cohort.name)
            return None
        # ties go to the cohort: the most unfair node may be inside it
        if best_cohort is not None and compare_drs(best_cohort_drs, best_cq_drs) >= 0:
            return self._next(best_cohort)
        return best_cq


def _almost_lca(cq: QuotaNode, lca: QuotaNode) -> QuotaNode:
    node = cq
    for ancestor in cq.ancestors():
        if ancestor is lca:
            return node
        node = ancestor
    raise AssertionError("no common ancestor")


def _shares(preemptor_cq: QuotaNode, target_cq: QuotaNode) -> tuple[QuotaNode, QuotaNode]:
    path = {id(a) for a in preemptor_cq.ancestors()}
    lca = next(a for a in target_cq.ancestors() if id(a) in path)
    return _almost_lca(preemptor_cq, lca), _almost_lca(target_cq, lca)


class FairSharingPreemption:
    def __init__(self, config: FairSharingConfig) -> None:
        self.strategies = [_STRATEGIES[s] for s in config.preemption_strategies] or [
            less_than_or_equal_to_final_share,
            less_than_initial_share,
        ]

    def targets(self, preemptor: Preemptor, ctx: PreemptionContext) -> list[Target]:
        cqs = preemptor.cqs
        candidates = self._candidates(cqs, ctx)
        if not candidates:
            return []

        def order_key(info: WorkloadInfo) -> tuple:
            return candidate_order_key(info, ctx.cq.name, preemptor.now)

        candidates.sort(key=order_key)
        # shares are computed with the incoming workload admitted
        add_usages(ctx.cq.node, ctx.usage)
        fits, targets, retry = self._first(cqs, ctx, candidates, order_key)
        if not fits and len(self.strategies) > 1:
            fits, targets = self._second(cqs, ctx, retry, targets, order_key)
        remove_usages(ctx.cq.node, ctx.usage)
        if not fits:
            restore(cqs, targets)
            return []
        targets = fill_back(ctx, cqs, targets, True)
        restore(cqs, targets)
        return targets

    @staticmethod
    def _candidates(
        cqs: Mapping[str, ClusterQueueRuntime], ctx: PreemptionContext
    ) -> list[WorkloadInfo]:
        out = []
        preemption = ctx.cq.spec.preemption
        if preemption.within_cluster_queue != NEVER:
            out.extend(_matching(ctx, ctx.cq, preemption.within_cluster_queue))
        node = ctx.cq.node
        if node.parent is not None and preemption.reclaim_within_cohort != NEVER:
            for other in node.root().subtree_cluster_queues():
                if other is node or not any(is_borrowing(other, fr) for fr in ctx.frs):
                    continue
                out.extend(_matching(ctx, cqs[other.name], preemption.reclaim_within_cohort))
        return out

    def _first(
        self,
        cqs: Mapping[str, ClusterQueueRuntime],
        ctx: PreemptionContext,
        candidates: list[WorkloadInfo],
        order_key: Callable,
    ) -> tuple[bool, list[Target], list[WorkloadInfo]]:
        strategy = self.strategies[0]
        ordering = _TargetOrdering(ctx.cq.node, candidates, order_key)
        targets: list[Target] = []
        retry: list[WorkloadInfo] = []
        # within its nominal quota (incoming included) the preemptor takes back what is owed
        within_nominal = queue_within_nominal(ctx)
        for cq in ordering:
            if cq is ctx.cq.node:
                info = ordering.pop(cq)
                if _take(cqs, ctx, targets, info, IN_CLUSTER_QUEUE):
                    return True, targets, []
                continue
            if within_nominal:
                info = ordering.pop(cq)
                if _take(cqs, ctx, targets, info, IN_COHORT_RECLAMATION):
                    return True, targets, []
                continue
            mine, theirs = _shares(ctx.cq.node, cq)
            preemptor_new = dominant_resource_share(mine)
            target_old = dominant_resource_share(theirs)
            if preemptor_new.zero_weight_borrows and not target_old.zero_weight_borrows:
                # an infinite share passes no strategy
                while ordering.has_workload(cq):
                    retry.append(ordering.pop(cq))
                continue
            while ordering.has_workload(cq):
                info = ordering.pop(cq)
                remove_usages(cqs[info.cluster_queue].node, info.usage)
                target_new = dominant_resource_share(_shares(ctx.cq.node, cq)[1])
                add_usages(cqs[info.cluster_queue].node, info.usage)
                if strategy(preemptor_new, target_old, target_new):
                    if _take(cqs, ctx, targets, info, IN_COHORT_FAIR_SHARING):
                        return True, targets, []
                    break  # shares changed: pick the queue again
                retry.append(info)
        return False, targets, retry

    @staticmethod
    def _second(
        cqs: Mapping[str, ClusterQueueRuntime],
        ctx: PreemptionContext,
        retry: list[WorkloadInfo],
        targets: list[Target],
        order_key: Callable,
    ) -> tuple[bool, list[Target]]:
        ordering = _TargetOrdering(ctx.cq.node, retry, order_key)
        for cq in ordering:
            mine, theirs = _shares(ctx.cq.node, cq)
            passed = less_than_initial_share(
                dominant_resource_share(mine), dominant_resource_share(theirs), NEGATIVE_DRS
            )
            info = ordering.pop(cq)
            if passed and _take(cqs, ctx, targets, info, IN_COHORT_FAIR_SHARING):
                return True, targets
            ordering.drop(cq)
        return False, targets


def _matching(ctx: PreemptionContext, cq: ClusterQueueRuntime, policy: str) -> list[WorkloadInfo]:
    return [
        info
        for info in cq.workloads.values()
        if satisfies_policy(ctx.preemptor, info, policy) and info.uses_any(ctx.frs)
    ]


def _take(
    cqs: Mapping[str, ClusterQueueRuntime],
    ctx: PreemptionContext,
    targets: list[Target],
    info: WorkloadInfo,
    reason: str,
) -> bool:
    """Evict `info` in the simulation; does the preemptor fit now?"""
    remove_workload(cqs, info)
    targets.append(Target(info, reason))
    # the incoming usage was added for the shares: take it out to check the fit
    remove_usages(ctx.cq.node, ctx.usage)
    fits = workload_fits(ctx, True)
    add_usages(ctx.cq.node, ctx.usage)
    return fits
