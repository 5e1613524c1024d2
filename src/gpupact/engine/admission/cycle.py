"""One Kueue scheduling cycle (`scheduler.schedule()`).

1. Take one head per active ClusterQueue.
2. Nominate: a head whose namespace may not use its ClusterQueue (namespaceSelector) is
   inadmissible at once; flavors are assigned to ALL other heads against the same starting
   state (with preemption targets when a flavor needs preemption; partial admission shrinks
   PodSets if allowed).
3. Order: classically non-borrowing before borrowing (borrowing level), then priority, then
   FIFO; with fair sharing by a per-cohort DRS tournament re-run after each admission.
4. Process in that order, re-checking quota after every admission: a head that no longer fits
   (or whose victims another head already claimed) is skipped, keeping the flavor it was
   nominated for; a head needing preemption issues it and waits; a head needing preemption
   without candidates may hold back its quota for the rest of the cycle.
5. Requeue every head that was not admitted (see queues.py).

Usage charged for preemptors, deferred fits and reservations only lasts for the cycle; the
quota of admitted workloads stays. Workloads admitted in the cycle only become preemption
candidates from the next cycle on; victims are marked evicted (they hold their quota until
`AdmissionState.complete_eviction`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from gpupact.engine.admission import queues as q
from gpupact.engine.admission import reasons
from gpupact.engine.admission.fair_sharing import FairSharingIterator, FairSharingPreemption
from gpupact.engine.admission.flavor_assigner import Assignment, FlavorAssigner, Mode
from gpupact.engine.admission.model import Admission, FlavorResource, PodSetAdmission
from gpupact.engine.admission.preemption import (
    Preemptor,
    Target,
    add_workload,
    can_always_reclaim,
    remove_workload,
)
from gpupact.engine.admission.resource_tree import (
    QuotaNode,
    add_usages,
    available,
    remove_usages,
)
from gpupact.engine.admission.runtime import ClusterQueueRuntime
from gpupact.engine.admission.views import CycleView
from gpupact.engine.admission.workload_info import WorkloadInfo

# entry status
_NOT_NOMINATED = ""
_SKIPPED = "skipped"
_ASSUMED = "assumed"


@dataclass(frozen=True, slots=True)
class AdmittedWorkload:
    key: str
    cluster_queue: str
    admission: Admission
    borrowing: int  # borrowing level (0: within nominal quota)

    @property
    def flavors(self) -> dict[str, dict[str, str]]:
        """Per PodSet, the flavor of each resource."""
        return {ps.name: dict(ps.flavors) for ps in self.admission.pod_sets}

    @property
    def counts(self) -> dict[str, int]:
        return {ps.name: ps.count for ps in self.admission.pod_sets}


@dataclass(frozen=True, slots=True)
class PreemptedWorkload:
    key: str
    cluster_queue: str
    reason: str  # InClusterQueue | InCohortReclamation | InCohortReclaimWhileBorrowing | ...
    preemptor: str


@dataclass(frozen=True, slots=True)
class PendingHead:
    """A head of this cycle that was not admitted."""

    key: str
    cluster_queue: str
    state: str  # "active" | "inadmissible"
    reason: str  # QuotaReserved=False reason (WaitingForQuota, NoMatchingFlavor, ...)
    message: str


@dataclass(slots=True)
class CycleResult:
    admitted: list[AdmittedWorkload] = field(default_factory=list)
    preempted: list[PreemptedWorkload] = field(default_factory=list)
    left_pending: list[PendingHead] = field(default_factory=list)
    # heads that needed preemption but were skipped (admission_cycle_preemption_skips)
    skipped_preemptions: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class _Entry:
    info: WorkloadInfo
    cq: ClusterQueueRuntime
    assignment: Assignment  # of a nominated entry; an inadmissible one (nominate) has none
    targets: list[Target] = field(default_factory=list)
    status: str = _NOT_NOMINATED
    requeue_reason: str = q.GENERIC
    message: str = ""
    quota_reason: str = ""

    @property
    def usage(self) -> dict[FlavorResource, int]:
        return self.assignment.usage

    def record(self, assignment: Assignment, targets: list[Target]) -> None:
        self.assignment = assignment
        self.targets = targets
        self.message = assignment.message()
        self.info.last_assignment = assignment.last_state

    def skip(self, message: str) -> None:
        self.status = _SKIPPED
        self.message = message
        self.quota_reason = reasons.WAITING_FOR_QUOTA


class _Cycle:
    def __init__(self, state: CycleView, now: int) -> None:
        self.state = state
        self.now = now
        self.number = state.cycle_number
        self.cqs = state.cluster_queue_runtimes
        fair = state.fair_sharing
        self.preemptor = Preemptor(
            self.cqs, now, FairSharingPreemption(fair) if fair is not None else None
        )
        self.result = CycleResult()
        self.preempted: dict[str, WorkloadInfo] = {}
        # the same victims per root of their quota tree: only those can change what a
        # ClusterQueue of that tree has available
        self.preempted_by_root: dict[QuotaNode, dict[str, WorkloadInfo]] = {}
        self.temporary: list[tuple[ClusterQueueRuntime, dict[FlavorResource, int]]] = []
        self.assumed: list[tuple[_Entry, Admission]] = []

    # --- nomination -----------------------------------------------------------------------

    def assignments(self, info: WorkloadInfo, cq: ClusterQueueRuntime) -> tuple[Assignment, list]:
        last = info.last_assignment
        if last is not None and self._outdated(last, cq, info):
            info.last_assignment = None
        with self.preemptor.remembering():
            return self._assignments(info, cq)

    def _assignments(self, info: WorkloadInfo, cq: ClusterQueueRuntime) -> tuple[Assignment, list]:
        state = self.state
        assigner = FlavorAssigner(
            info,
            cq,
            state.resource_flavors,
            self.preemptor,
            fair_sharing=state.fair_sharing is not None,
            cycle=self.number,
            placement=state.placement,
        )
        full = assigner.assign()
        mode = full.representative_mode()
        if mode == Mode.FIT:
            return full, []
        if mode == Mode.PREEMPT:
            targets = self.preemptor.get_targets(info, full)
            if targets:
                return full, targets
        if state.features.partial_admission and info.workload.can_be_partially_admitted:
            found = _reduce_pod_sets(info, lambda counts: self._partial(assigner, info, counts))
            if found is not None:
                return found
        return full, []

    def _partial(
        self, assigner: FlavorAssigner, info: WorkloadInfo, counts: list[int]
    ) -> tuple[Assignment, list[Target]] | None:
        assignment = assigner.assign(counts)
        mode = assignment.representative_mode()
        if mode == Mode.FIT:
            return assignment, []
        if mode == Mode.PREEMPT:
            targets = self.preemptor.get_targets(info, assignment)
            if targets:
                return assignment, targets
        return None

    def _outdated(self, last, cq: ClusterQueueRuntime, info: WorkloadInfo) -> bool:
        if self.state.features.flavor_fungibility_preserve_scan_progress:
            if last.shape != info.shape:
                return True
            if self.number - last.cycle <= 1:
                return False
        return cq.generation > last.generation

    def nominate(self, heads: list[WorkloadInfo]) -> tuple[list[_Entry], list[_Entry]]:
        """(entries with a flavor assignment, inadmissible entries). A head whose namespace
        may not use its ClusterQueue is inadmissible before any flavor is tried (Kueue's
        ValidateAdmissibility): QuotaReserved=False, Misconfigured."""
        entries = []
        inadmissible = []
        for info in heads:
            cq = self.cqs[info.cluster_queue]
            problem = self.state.namespace_problem(info)
            if problem is not None:
                entry = _Entry(info, cq, None)  # type: ignore[arg-type]
                entry.requeue_reason, entry.message = problem
                entry.quota_reason = reasons.MISCONFIGURED
                inadmissible.append(entry)
                continue
            assignment, targets = self.assignments(info, cq)
            entry = _Entry(info, cq, assignment)
            entry.record(assignment, targets)
            entries.append(entry)
        return entries, inadmissible

    # --- ordering ---------------------------------------------------------------------------

    def ordered(self, entries: list[_Entry]) -> Iterator[_Entry]:
        if self.state.fair_sharing is not None:
            fair = FairSharingIterator(entries)
            while fair:
                yield fair.pop()  # type: ignore[misc]
            return

        def key(e: _Entry) -> tuple:
            w = e.info.workload
            return (e.assignment.borrowing, -w.priority, w.creation_time, w.uid, w.key)

        yield from sorted(entries, key=key)

    # --- processing -------------------------------------------------------------------------

    def fits(self, cq: ClusterQueueRuntime, usage: dict, targets: list[Target]) -> bool:
        """Does `usage` fit once every victim of this cycle (and `targets`) is gone?"""
        victims = dict(self.preempted_by_root.get(cq.node.root(), ()))
        for t in targets:
            victims[t.key] = t.info
        for victim in victims.values():
            remove_usages(self.cqs[victim.cluster_queue].node, victim.usage)
        try:
            return all(available(cq.node, fr) >= value for fr, value in usage.items())
        finally:
            for victim in victims.values():
                add_usages(self.cqs[victim.cluster_queue].node, victim.usage)

    def _refresh(self, e: _Entry) -> tuple[dict, bool]:
        """Kueue updateAssignmentIfNeeded: when this head's victims overlap with victims already
        claimed, recompute its assignment as if those preemptions had completed, pinned to the
        flavors it was nominated for; a fit then has to wait for them (DeferredFit)."""
        usage = e.usage
        overlap = any(t.key in self.preempted for t in e.targets)
        if (
            not overlap
            or not self.state.features.recompute_assignment_upon_preemption_targets_overlap
        ):
            return usage, self.fits(e.cq, usage, e.targets)
        # victims in other quota trees change nothing this head can see
        victims = list(self.preempted_by_root.get(e.cq.node.root(), {}).values())
        for victim in victims:
            remove_workload(self.cqs, victim)
        e.info.last_assignment = None
        e.info.nomination = e.assignment.flavor_mapping()
        try:
            assignment, targets = self.assignments(e.info, e.cq)
            e.record(assignment, targets)
        finally:
            for victim in victims:
                add_workload(self.cqs, victim)
            e.info.nomination = None
        if e.assignment.representative_mode() == Mode.FIT:
            e.assignment.set_representative_mode(Mode.DEFERRED_FIT)
        return e.usage, self.fits(e.cq, e.usage, e.targets)

    def _charge(self, cq: ClusterQueueRuntime, usage: dict, temporary: bool) -> None:
        add_usages(cq.node, usage)
        if temporary:
            self.temporary.append((cq, usage))

    def process(self, e: _Entry) -> None:
        cq = e.cq
        usage, fits = self._refresh(e)
        mode = e.assignment.representative_mode()
        if mode == Mode.NO_FIT:
            e.requeue_reason = q.NO_FIT
            e.quota_reason = e.assignment.no_fit_reason or reasons.PENDING_EVALUATION
            return
        if mode == Mode.PREEMPT and not e.targets:
            e.requeue_reason = q.PREEMPTION_NO_CANDIDATES
            e.quota_reason = reasons.WAITING_FOR_QUOTA
            # without a guaranteed reclaim, hold the quota back so that later heads cannot
            # take capacity this one is waiting for
            if not can_always_reclaim(cq):
                self._charge(cq, _to_reserve(e), temporary=True)
            return
        if mode == Mode.DEFERRED_FIT:
            e.message = (
                "Workload has overlapping preemption targets with another workload, but will "
                "fit after these preemptions complete"
            )
            e.quota_reason = reasons.WAITING_FOR_PREEMPTED_WORKLOADS
            e.requeue_reason = q.PENDING_PREEMPTION
            e.info.last_assignment = None
            self._charge(cq, usage, temporary=True)
            return
        skips = self.result.skipped_preemptions
        overlapping = any(t.key in self.preempted for t in e.targets)
        if overlapping or not fits:
            e.skip(reasons.OVERLAPPING_TARGETS if overlapping else reasons.NO_LONGER_FITS)
            if overlapping or mode == Mode.PREEMPT:
                skips[cq.name] = skips.get(cq.name, 0) + 1
            # skipped for contention, not for the flavor: the scan progress stays useful
            if not self.state.features.flavor_fungibility_preserve_scan_progress:
                e.info.last_assignment = None
            return
        for t in e.targets:
            self.preempted[t.key] = t.info
            root = self.cqs[t.cluster_queue].node.root()
            self.preempted_by_root.setdefault(root, {})[t.key] = t.info
        if mode == Mode.PREEMPT:
            self._charge(cq, usage, temporary=True)
            e.quota_reason = reasons.WAITING_FOR_PREEMPTED_WORKLOADS
            for t in e.targets:
                if not t.info.evicted:
                    self.result.preempted.append(
                        PreemptedWorkload(t.key, t.cluster_queue, t.reason, e.info.key)
                    )
            e.info.last_assignment = None
            e.message += f". Pending the preemption of {len(e.targets)} workload(s)"
            e.requeue_reason = q.PENDING_PREEMPTION
            return
        self._charge(cq, usage, temporary=False)
        e.status = _ASSUMED
        self.assumed.append((e, _admission(e)))

    # --- the cycle --------------------------------------------------------------------------

    def run(self) -> CycleResult:
        state = self.state
        heads = state.pop_heads()
        entries, inadmissible = self.nominate(heads)
        try:
            for entry in self.ordered(entries):
                self.process(entry)
        finally:
            for cq, usage in reversed(self.temporary):
                remove_usages(cq.node, usage)
        for victim in self.preempted.values():
            victim.evicted = True
        for entry, admission in self.assumed:
            state.record_admission(entry.info, admission, self.now)
            self.result.admitted.append(
                AdmittedWorkload(
                    entry.info.key, entry.cq.name, admission, entry.assignment.borrowing
                )
            )
        for entry in entries + inadmissible:
            if entry.status == _ASSUMED:
                continue
            reason = entry.requeue_reason
            if entry.status != _NOT_NOMINATED and reason == q.GENERIC:
                reason = q.FAILED_AFTER_NOMINATION
            where = state.requeue(entry.info, reason)
            code = entry.quota_reason or reasons.PENDING_EVALUATION
            state.note_pending(entry.info.key, code, entry.message)
            self.result.left_pending.append(
                PendingHead(entry.info.key, entry.cq.name, where, code, entry.message)
            )
        return self.result


def _admission(e: _Entry) -> Admission:
    pod_sets = tuple(
        PodSetAdmission(
            ps.name,
            {r: c.flavor for r, c in ps.flavors.items()},
            ps.count,
            {r: ps.requests.get(r, 0) for r in ps.flavors},
        )
        for ps in e.assignment.pod_sets
    )
    return Admission(e.cq.name, pod_sets)


def _to_reserve(e: _Entry) -> dict[FlavorResource, int]:
    """What a head that needs preemption but has no candidates holds back: its request, capped
    by what the ClusterQueue may still use (nominal, or nominal + borrowingLimit)."""
    assignment = e.assignment
    node = e.cq.node
    out = {}
    for fr, value in assignment.usage.items():
        quota = node.quotas.get(fr)
        nominal = quota.nominal if quota is not None else 0
        used = node.usage.get(fr, 0)
        if assignment.borrowing > 0:
            if quota is None or quota.borrowing_limit is None:
                out[fr] = value
            else:
                # clamped at 0: upstream would charge a negative amount when already over
                out[fr] = max(0, min(value, nominal + quota.borrowing_limit - used))
        else:
            out[fr] = max(0, min(value, nominal - used))
    return out


def _reduce_pod_sets(
    info: WorkloadInfo,
    fits: Callable[[list[int]], tuple[Assignment, list[Target]] | None],
) -> tuple[Assignment, list[Target]] | None:
    """Kueue PodSetReducer: binary-search the largest counts, shrinking every PodSet towards
    its minCount in proportion, for which `fits` finds an assignment."""
    full = [ps.count for ps in info.workload.pod_sets]
    deltas = [
        ps.count - (ps.min_count if ps.min_count is not None else ps.count)
        for ps in info.workload.pod_sets
    ]
    total = sum(deltas)
    if total == 0:
        return None
    lo, hi = 0, total + 1
    last_good = 0
    found = None
    while lo < hi:
        mid = (lo + hi) // 2
        counts = [full[i] - d * mid // total for i, d in enumerate(deltas)]
        result = fits(counts)
        if result is not None:
            last_good, found = mid, result
            hi = mid
        else:
            lo = mid + 1
    return found if lo == last_good else None


def run_cycle(state: CycleView, now: int) -> CycleResult:
    return _Cycle(state, now).run()
