"""Kueue's FlavorAssigner: pick a ResourceFlavor per PodSet and resource group.

For every PodSet (in order, charging earlier PodSets' usage), for every resource group the
workload requests, flavors are tried in the ClusterQueue's order. A flavor is skipped if the
pod template does not tolerate its taints or does not match its node labels; otherwise each
resource gets a mode:

  Fit      fits the unused quota (possibly by borrowing, at some borrowing level),
  Preempt  needs preemption; split into no-candidates / preempt (in-queue) / reclaim,
  NoFit    exceeds the most the ClusterQueue could ever get.

`flavorFungibility` decides whether to stop at the first flavor that fits by borrowing
(whenCanBorrow) or needs preemption (whenCanPreempt), and `preference` how borrowing and
preemption rank against each other.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Protocol

from gpupact.engine.admission import reasons
from gpupact.engine.admission.model import (
    NEVER,
    PREEMPTION_OVER_BORROWING,
    RESOURCE_PODS,
    TRY_NEXT_FLAVOR,
    FlavorFungibility,
    FlavorResource,
    PodSet,
    ResourceFlavor,
    ResourceGroup,
)
from gpupact.engine.admission.resource_tree import (
    available,
    lowest_fitting_subtree_height,
    potential_available,
)
from gpupact.engine.admission.runtime import ClusterQueueRuntime
from gpupact.engine.admission.workload_info import LastAssignment, PodSetResources, WorkloadInfo
from gpupact.kube.taints import Taint, do_not_schedule_taint, find_untolerated_taint


class Mode(IntEnum):
    """Representative mode of an assignment, worst first."""

    NO_FIT = 0
    PREEMPT = 1
    DEFERRED_FIT = 2  # fits once preemptions issued earlier in the cycle complete
    FIT = 3


class Possibility(IntEnum):
    """Outcome of a preemption simulation."""

    NO_CANDIDATES = 0
    PREEMPT = 1  # some targets are in the preemptor's own ClusterQueue
    RECLAIM = 2  # all targets are in other ClusterQueues of the cohort


# granular preemption modes, worst first
_NO_FIT, _NO_CANDIDATES, _PREEMPT, _RECLAIM, _FIT = range(5)
_TO_MODE = {
    _NO_FIT: Mode.NO_FIT,
    _NO_CANDIDATES: Mode.PREEMPT,
    _PREEMPT: Mode.PREEMPT,
    _RECLAIM: Mode.PREEMPT,
    _FIT: Mode.FIT,
}
_FROM_POSSIBILITY = {
    Possibility.NO_CANDIDATES: _NO_CANDIDATES,
    Possibility.PREEMPT: _PREEMPT,
    Possibility.RECLAIM: _RECLAIM,
}
_TO_POSSIBILITY = {v: k for k, v in _FROM_POSSIBILITY.items()}
_WORST = (_NO_FIT, 1 << 62)
_BEST = (_FIT, 0)

PlacementCheck = Callable[[ResourceFlavor, PodSet], str | None]
"""Optional hook: can the nodes of this flavor host this PodSet? Returns a refusal message."""


class PreemptionOracle(Protocol):
    def simulate_preemption(
        self, cq: ClusterQueueRuntime, info: WorkloadInfo, fr: FlavorResource, quantity: int
    ) -> tuple[Possibility, int]: ...


@dataclass(slots=True)
class FlavorChoice:
    flavor: str
    mode: Mode
    borrow: int
    tried_idx: int = 0


@dataclass(slots=True)
class FlavorAttempt:
    flavor: str
    mode: Mode
    borrow: int = 0
    possibility: Possibility | None = None
    reasons: list[str] = field(default_factory=list)
    no_fit_reason: str = ""


@dataclass(slots=True)
class PodSetAssignment:
    name: str
    flavors: dict[str, FlavorChoice]
    requests: dict[str, int]
    count: int
    reasons: list[str] = field(default_factory=list)
    error: str | None = None
    attempts: list[FlavorAttempt] = field(default_factory=list)

    def representative_mode(self) -> Mode:
        if self.error is None and not self.reasons:
            return Mode.FIT
        if self.error is not None or not self.flavors:
            return Mode.NO_FIT
        return min(choice.mode for choice in self.flavors.values())

    def message(self) -> str:
        return self.error if self.error is not None else ", ".join(sorted(self.reasons))


@dataclass(slots=True)
class Assignment:
    pod_sets: list[PodSetAssignment]
    last_state: LastAssignment
    borrowing: int = 0  # borrowing level: 0 within nominal quota, else a cohort subtree height
    usage: dict[FlavorResource, int] = field(default_factory=dict)
    no_fit_reason: str = ""
    mode_override: Mode | None = None

    def representative_mode(self) -> Mode:
        if not self.pod_sets:
            return Mode.NO_FIT
        if self.mode_override is not None:
            return self.mode_override
        return min(ps.representative_mode() for ps in self.pod_sets)

    def set_representative_mode(self, mode: Mode) -> None:
        self.mode_override = mode
        for ps in self.pod_sets:
            for choice in ps.flavors.values():
                choice.mode = mode

    def message(self) -> str:
        parts = []
        for ps in self.pod_sets:
            if ps.error is None and not ps.reasons:
                continue
            if ps.error is not None:
                return f"failed to assign flavors to pod set {ps.name}: {ps.error}"
            parts.append(f"couldn't assign flavors to pod set {ps.name}: {ps.message()}")
        return "; ".join(parts)

    def flavors_needing_preemption(self) -> set[FlavorResource]:
        return {
            (choice.flavor, resource)
            for ps in self.pod_sets
            for resource, choice in ps.flavors.items()
            if choice.mode == Mode.PREEMPT
        }

    def total_requests_for(self, info: WorkloadInfo) -> dict[FlavorResource, int]:
        """Usage charged for preemption: the workload's own requests (scaled to the assigned
        counts) per assigned flavor. Unlike `usage`, the implicit "pods" resource a
        ClusterQueue may cover is not included (as upstream)."""
        out: dict[FlavorResource, int] = {}
        for i, ps in enumerate(info.total_requests):
            scaled = ps.scaled_to(self.pod_sets[i].count)
            flavors = self.pod_sets[i].flavors
            for resource, value in scaled.requests.items():
                if value == 0:
                    continue
                fr = (flavors[resource].flavor, resource)
                out[fr] = out.get(fr, 0) + value
        return out

    @classmethod
    def fixed(
        cls,
        info: WorkloadInfo,
        flavors: Mapping[str, Mapping[str, str]],
        needs_preemption: set[FlavorResource],
    ) -> Assignment:
        """An assignment chosen by the caller (what-if questions, tests): full counts, the
        given flavor per PodSet and resource, Preempt mode where listed, Fit elsewhere."""
        out = cls(pod_sets=[], last_state=LastAssignment([], 0, 0, info.shape))
        for ps in info.total_requests:
            choices = {
                resource: FlavorChoice(
                    flavor, Mode.PREEMPT if (flavor, resource) in needs_preemption else Mode.FIT, 0
                )
                for resource, flavor in flavors.get(ps.name, {}).items()
            }
            preempting = any(c.mode == Mode.PREEMPT for c in choices.values())
            psa = PodSetAssignment(
                ps.name,
                choices,
                dict(ps.requests),
                ps.count,
                reasons=["preemption required"] if preempting else [],
            )
            out.pod_sets.append(psa)
            for resource, choice in choices.items():
                fr = (choice.flavor, resource)
                out.usage[fr] = out.usage.get(fr, 0) + ps.requests.get(resource, 0)
        return out

    def flavor_mapping(self) -> dict[str, dict[str, str]]:
        return {ps.name: {r: c.flavor for r, c in ps.flavors.items()} for ps in self.pod_sets}


def go_taint(taint: Taint) -> str:
    """A taint as Go prints the struct in Kueue's message: {key value effect <nil>}."""
    return f"{{{taint.key} {taint.value} {taint.effect} <nil>}}"


def flavor_matches_pod_set(pod_set: PodSet, flavor: ResourceFlavor) -> bool:
    """nodeSelector and required node affinity against the flavor's nodeLabels, considering only
    the label keys this flavor defines (other keys are left to kube-scheduler). A required term
    left without expressions matches every flavor."""
    labels = flavor.node_labels
    for key, value in pod_set.node_selector.items():
        if key in labels and labels[key] != value:
            return False
    affinity = pod_set.required_affinity
    if affinity is None or not affinity.terms:
        return True
    filtered = []
    for term in affinity.terms:
        kept = [r for r in term.match_expressions if r.key in labels]
        if not kept:
            return True
        filtered.append(kept)
    return any(all(r.matches(labels) for r in kept) for kept in filtered)


def _is_preferred(a: tuple[int, int], b: tuple[int, int], fungibility: FlavorFungibility) -> bool:
    """Is granular mode a=(preemption mode, borrowing level) better than b?"""
    if a[0] == _NO_FIT:
        return False
    if b[0] == _NO_FIT:
        return True
    a_none, b_none = a[0] == _NO_CANDIDATES, b[0] == _NO_CANDIDATES
    if a_none != b_none:
        return not a_none
    if fungibility.preference == PREEMPTION_OVER_BORROWING:
        if a[1] != b[1]:
            return a[1] < b[1]
        return a[0] > b[0]
    # BorrowingOverPreemption, also the ranking without a preference
    if a[0] != b[0]:
        return a[0] > b[0]
    return a[1] < b[1]


def _should_try_next_flavor(mode: tuple[int, int], fungibility: FlavorFungibility) -> bool:
    if mode[0] in (_NO_FIT, _NO_CANDIDATES):
        return True
    if mode[0] in (_PREEMPT, _RECLAIM) and fungibility.when_can_preempt == TRY_NEXT_FLAVOR:
        return True
    return mode[1] != 0 and fungibility.when_can_borrow == TRY_NEXT_FLAVOR


@dataclass(slots=True)
class _Status:
    reasons: list[str] = field(default_factory=list)
    error: str | None = None
    no_fit_reason: str = ""


class FlavorAssigner:
    def __init__(
        self,
        info: WorkloadInfo,
        cq: ClusterQueueRuntime,
        flavors: Mapping[str, ResourceFlavor],
        oracle: PreemptionOracle,
        *,
        fair_sharing: bool = False,
        cycle: int = 0,
        placement: PlacementCheck | None = None,
    ) -> None:
        self.info = info
        self.cq = cq
        self.flavors = flavors
        self.oracle = oracle
        self.fair_sharing = fair_sharing
        self.cycle = cycle
        self.placement = placement

    # --- public -------------------------------------------------------------------------------

    def assign(self, counts: list[int] | None = None) -> Assignment:
        info = self.info
        if counts is None:
            requests = [
                PodSetResources(ps.name, ps.count, dict(ps.requests)) for ps in info.total_requests
            ]
        else:
            requests = [ps.scaled_to(counts[i]) for i, ps in enumerate(info.total_requests)]
        assignment = Assignment(
            pod_sets=[],
            last_state=LastAssignment([], self.cq.generation, self.cycle, info.shape),
        )
        covers_pods = RESOURCE_PODS in self.cq.rg_by_resource
        for index, pod_set in enumerate(requests):
            wanted = dict(pod_set.requests)
            if covers_pods:
                wanted[RESOURCE_PODS] = pod_set.count
            psa = PodSetAssignment(pod_set.name, {}, wanted, pod_set.count)
            self._assign_pod_set(index, psa, assignment.usage)
            self._append(assignment, psa)
            if psa.error is not None or (wanted and not psa.flavors):
                assignment.no_fit_reason = _no_fit_reason(assignment, self.cq)
                return assignment
        if assignment.representative_mode() == Mode.NO_FIT:
            assignment.no_fit_reason = _no_fit_reason(assignment, self.cq)
        return assignment

    # --- per PodSet ---------------------------------------------------------------------------

    def _assign_pod_set(
        self, index: int, psa: PodSetAssignment, usage: dict[FlavorResource, int]
    ) -> None:
        chosen: dict[str, FlavorChoice] = {}
        group_reasons: list[str] = []
        attempts: dict[str, FlavorAttempt] = {}
        for resource in sorted(psa.requests):
            if resource not in self.cq.rg_by_resource and psa.requests[resource] == 0:
                continue
            if resource in chosen:
                continue  # assigned together with its resource group
            found, status, tried = self._find_flavor(index, psa.requests, resource, usage)
            _merge_attempts(attempts, tried)
            if (status is not None and status.error is not None) or (not found and psa.requests):
                psa.flavors = {}
                psa.reasons = list(status.reasons) if status is not None else []
                psa.error = status.error if status is not None else None
                psa.attempts = [attempts[f] for f in sorted(attempts)]
                return
            chosen.update(found)
            if status is not None:
                group_reasons.extend(status.reasons)
        psa.flavors = {r: c for r, c in chosen.items() if r in psa.requests}
        psa.reasons = group_reasons
        psa.attempts = [attempts[f] for f in sorted(attempts)]

    def _append(self, assignment: Assignment, psa: PodSetAssignment) -> None:
        assignment.pod_sets.append(psa)
        tried: dict[str, int] = {}
        for resource, choice in psa.flavors.items():
            assignment.borrowing = max(assignment.borrowing, choice.borrow)
            fr = (choice.flavor, resource)
            assignment.usage[fr] = assignment.usage.get(fr, 0) + psa.requests.get(resource, 0)
            tried[resource] = choice.tried_idx
        assignment.last_state.tried_flavor_idx.append(tried)

    def _find_flavor(
        self,
        index: int,
        requests: Mapping[str, int],
        resource: str,
        usage: Mapping[FlavorResource, int],
    ) -> tuple[dict[str, FlavorChoice], _Status | None, list[FlavorAttempt]]:
        group = self.cq.rg_by_resource.get(resource)
        if group is None:
            return {}, _Status([f"resource {resource} unavailable in ClusterQueue"]), []
        status = _Status()
        in_group = [(r, requests[r]) for r in sorted(requests) if r in group.covered_resources]
        fungibility = self.cq.spec.flavor_fungibility
        best: dict[str, FlavorChoice] | None = None
        best_mode = _WORST
        attempts: list[FlavorAttempt] = []
        last = self.info.last_assignment
        start = last.next_flavor(index, resource) if last is not None else 0
        attempted = -1
        for idx in range(start, len(group.flavors)):
            attempted = idx
            name = group.flavors[idx].name
            if self._skipped_by_nomination(index, name, resource):
                status.reasons.append(
                    f"skipping flavor {name} as it is not found in the nomination mapping "
                    f"for resource {resource}"
                )
                continue
            refusal = self._check_flavor(name, index)
            if refusal is not None:
                status.reasons.append(refusal)
                attempts.append(
                    FlavorAttempt(
                        name,
                        Mode.NO_FIT,
                        reasons=[refusal],
                        no_fit_reason=reasons.NO_MATCHING_FLAVOR,
                    )
                )
                continue
            choices, mode, max_borrow, flavor_reasons, no_fit = self._try_flavor(
                name, in_group, usage, status
            )
            attempts.append(
                FlavorAttempt(
                    name,
                    _TO_MODE[mode[0]],
                    max_borrow,
                    _TO_POSSIBILITY.get(mode[0]),
                    sorted(flavor_reasons),
                    no_fit,
                )
            )
            if not _should_try_next_flavor(mode, fungibility):
                best, best_mode = choices, mode
                break
            if _is_preferred(mode, best_mode, fungibility):
                best, best_mode = choices, mode
        for choice in (best or {}).values():
            # -1: the scan reached the last flavor; the next scan starts from the first again
            choice.tried_idx = -1 if attempted == len(group.flavors) - 1 else attempted
        if best_mode[0] == _FIT:
            return best or {}, None, attempts
        return best or {}, status, attempts

    def _try_flavor(
        self,
        name: str,
        in_group: list[tuple[str, int]],
        usage: Mapping[FlavorResource, int],
        status: _Status,
    ) -> tuple[dict[str, FlavorChoice], tuple[int, int], int, list[str], str]:
        fungibility = self.cq.spec.flavor_fungibility
        choices: dict[str, FlavorChoice] = {}
        mode = _BEST
        max_borrow = 0
        flavor_reasons: list[str] = []
        no_fit = ""
        for resource, value in in_group:
            fr = (name, resource)
            pmode, borrow, res_status = self._fits_quota(fr, usage.get(fr, 0), value)
            if res_status is not None:
                flavor_reasons.extend(res_status.reasons)
                status.reasons.extend(res_status.reasons)
                no_fit = reasons.most_severe(no_fit, res_status.no_fit_reason)
            max_borrow = max(max_borrow, borrow)
            candidate = (pmode, borrow)
            if _is_preferred(mode, candidate, fungibility):
                mode = candidate
            if mode[0] == _NO_FIT:
                continue  # this flavor cannot be used; later resources only add reasons
            choices[resource] = FlavorChoice(name, _TO_MODE[pmode], borrow)
        return choices, mode, max_borrow, flavor_reasons, no_fit

    def _fits_quota(
        self, fr: FlavorResource, assumed: int, request: int
    ) -> tuple[int, int, _Status | None]:
        node = self.cq.node
        flavor, resource = fr
        value = assumed + request
        max_capacity = potential_available(node, fr)
        if value > max_capacity:
            return (
                _NO_FIT,
                0,
                _Status(
                    [
                        f"insufficient quota for {resource} in flavor {flavor}, previously "
                        f"considered podsets requests ({reasons.format_amount(resource, assumed)})"
                        f" + current podset request ({reasons.format_amount(resource, request)})"
                        f" > maximum capacity ({reasons.format_amount(resource, max_capacity)})"
                    ],
                    no_fit_reason=reasons.EXCEEDS_MAX_QUOTA,
                ),
            )
        borrow, may_reclaim = lowest_fitting_subtree_height(node, fr, value)
        free = available(node, fr)
        if value <= free:
            return _FIT, borrow, None
        status = _Status(
            [
                f"insufficient unused quota for {resource} in flavor {flavor}, "
                f"{reasons.format_amount(resource, value - free)} more needed"
            ],
            no_fit_reason=reasons.WAITING_FOR_QUOTA,
        )
        quota = node.quotas.get(fr)
        nominal = quota.nominal if quota is not None else 0
        if nominal >= value or may_reclaim or self._can_preempt_while_borrowing():
            possibility, borrow_after = self.oracle.simulate_preemption(
                self.cq, self.info, fr, value
            )
            status.no_fit_reason = ""
            return _FROM_POSSIBILITY[possibility], borrow_after, status
        return _NO_FIT, borrow, status

    def _can_preempt_while_borrowing(self) -> bool:
        preemption = self.cq.spec.preemption
        bwc = preemption.borrow_within_cohort
        if bwc is not None and bwc.policy != NEVER:
            return True
        return self.fair_sharing and preemption.reclaim_within_cohort != NEVER

    def _check_flavor(self, name: str, index: int) -> str | None:
        flavor = self.flavors.get(name)
        if flavor is None:
            return f"flavor {name} not found"
        pod_set = self.info.workload.pod_sets[index]
        taint = find_untolerated_taint(
            flavor.node_taints, (*pod_set.tolerations, *flavor.tolerations), do_not_schedule_taint
        )
        if taint is not None:
            return f"untolerated taint {go_taint(taint)} in flavor {name}"
        if not flavor_matches_pod_set(pod_set, flavor):
            return f"flavor {name} doesn't match node affinity"
        if self.placement is not None:
            return self.placement(flavor, pod_set)
        return None

    def _skipped_by_nomination(self, index: int, name: str, resource: str) -> bool:
        nomination = self.info.nomination
        if not nomination:
            return False
        pod_set_name = self.info.workload.pod_sets[index].name
        return nomination.get(pod_set_name, {}).get(resource) != name


def _merge_attempts(into: dict[str, FlavorAttempt], tried: list[FlavorAttempt]) -> None:
    for attempt in tried:
        seen = into.get(attempt.flavor)
        if seen is None:
            into[attempt.flavor] = FlavorAttempt(
                attempt.flavor,
                attempt.mode,
                attempt.borrow,
                attempt.possibility,
                sorted(set(attempt.reasons)),
                attempt.no_fit_reason,
            )
            continue
        possibility = seen.possibility
        if attempt.possibility is not None and (
            possibility is None or attempt.possibility < possibility
        ):
            possibility = attempt.possibility
        into[attempt.flavor] = FlavorAttempt(
            attempt.flavor,
            min(seen.mode, attempt.mode),
            max(seen.borrow, attempt.borrow),
            possibility,
            sorted(set(seen.reasons) | set(attempt.reasons)),
            reasons.most_severe(seen.no_fit_reason, attempt.no_fit_reason),
        )


def _groups_of(cq: ClusterQueueRuntime, flavor: str) -> list[int]:
    return [i for i, g in enumerate(cq.spec.resource_groups) if flavor in _names(g)]


def _names(group: ResourceGroup) -> tuple[str, ...]:
    return group.flavor_names


def _no_fit_reason(assignment: Assignment, cq: ClusterQueueRuntime) -> str:
    """The condition reason of a NoFit assignment: per PodSet the mildest blocker among the
    alternative flavors of each resource group, the most severe across groups and PodSets."""
    if assignment.representative_mode() != Mode.NO_FIT:
        return ""
    overall = ""
    for ps in assignment.pod_sets:
        if ps.representative_mode() != Mode.NO_FIT:
            continue
        if not ps.attempts:
            overall = reasons.most_severe(overall, reasons.NO_MATCHING_FLAVOR)
            continue
        per_group: dict[int, str] = {}
        for i, attempt in enumerate(ps.attempts):
            if attempt.mode != Mode.NO_FIT:
                continue
            for group in _groups_of(cq, attempt.flavor) or [-1 - i]:
                existing = per_group.get(group)
                if existing is None or reasons.severity(attempt.no_fit_reason) < reasons.severity(
                    existing
                ):
                    per_group[group] = attempt.no_fit_reason
        pod_set_reason = ""
        for code in per_group.values():
            pod_set_reason = reasons.most_severe(pod_set_reason, code)
        overall = reasons.most_severe(overall, pod_set_reason)
    return overall
