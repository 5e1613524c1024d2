"""kube-scheduler DefaultPreemption: the PostFilter that frees a node for a pod nothing fits.

Semantics follow upstream pkg/scheduler/framework/plugins/defaultpreemption and
framework/preemption (Evaluator.Preempt, DryRunPreemption, SelectCandidate):

1. Eligibility: a pod with `preemptionPolicy: Never` never preempts. A pod already nominated
   to a node waits while a lower-priority pod there is terminating *because the scheduler
   preempted it* (deletionTimestamp set and condition DisruptionTarget=True with reason
   PreemptionByScheduler) — unless the filters now call that node UnschedulableAndUnresolvable.
2. Potential nodes: those the filters marked `Unschedulable`. `UnschedulableAndUnresolvable`
   nodes, and nodes without a status, are never tried.
3. Dry run, from an offset (upstream: random; here a parameter, default 0), node by node:
   select victims on the node; stop once at least one candidate violates no
   PodDisruptionBudget and the candidates reach max(10% of potential nodes, 100), capped at
   the potential node count (`minCandidateNodesPercentage` / `minCandidateNodesAbsolute`).
   Candidates violating no budget come first. (Upstream runs nodes in parallel; this is its
   one-worker order.)
4. Victims on a node: remove every pod of strictly lower priority (that the protection rules
   let go); if the pod still does not fit, the filter's status is the node's answer. Otherwise
   put pods back from the most important (higher priority, then earlier start), first those
   whose eviction would violate a budget, then the rest, keeping each one the pod still fits
   beside. The pods that could not stay are the victims; the budget-violating ones among them
   are counted.
5. The node: fewest budget violations; then the lowest highest-victim priority; then the
   smallest sum of (priority + 2^31) over victims (int64, as upstream); then fewest victims;
   then the latest earliest-start among the highest-priority victims; then the first candidate
   (upstream: first in Go map order, i.e. any).
6. No candidate: `preemption: 0/N nodes are available: ...`, each tried node with its dry-run
   status, every other node "Preemption is not helpful for scheduling"; the nomination is
   cleared (nominated node name "").

Nominated pods of other preemptors count in the fit check when the FitCheck knows them
(`FilterChainFit(..., nominated=...)` or `FilterChainFit.from_state`; the default check built
from a PreemptionCluster has none). Not modelled: scheduler extenders, async preemption
bookkeeping. Time is a parameter (`now`, unix nanoseconds), never the clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpupact.engine.placement.reasons import fit_error_message
from gpupact.engine.preemption.disruption_budget import (
    PodDisruptionBudget,
    pods_violating_pdbs,
)
from gpupact.engine.preemption.fit_check import FilterChainFit, FitCheck
from gpupact.engine.preemption.importance import (
    earliest_start_of_highest_priority,
    importance_key,
    sort_by_importance,
)
from gpupact.engine.preemption.protection import NO_PROTECTION, GangKey, Protection
from gpupact.engine.preemption.snapshot import PreemptionCluster
from gpupact.errors import FieldError, PathPart
from gpupact.kube.objects import Node, Pod
from gpupact.kube.resources_fit import wrap_int64
from gpupact.kube.status import SUCCESS, Code, Status

PLUGIN = "DefaultPreemption"
PREEMPT_NEVER = "Never"

REASON_NO_VICTIMS = "No preemption victims found for incoming pod"
REASON_NOT_HELPFUL = "Preemption is not helpful for scheduling"
# ours: lower-priority pods exist on the node but the contract's protection rules keep them
REASON_PROTECTED = "No preemption victims allowed by protection rules"
MSG_PREEMPT_NEVER = "not eligible due to preemptionPolicy=Never."
MSG_TERMINATING_VICTIM = "not eligible due to a terminating pod on the nominated node."
MSG_NO_NODES = "no nodes available"
STATUS_PREFIX = "preemption: "

DISRUPTION_TARGET = "DisruptionTarget"
REASON_PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"

_PRIORITY_OFFSET = 2**31  # math.MaxInt32 + 1: makes every priority non-negative in the sum
_NOT_HELPFUL = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON_NOT_HELPFUL,), PLUGIN)
_NO_VICTIMS = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON_NO_VICTIMS,), PLUGIN)
_PROTECTED = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON_PROTECTED,), PLUGIN)


# --- arguments -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DefaultPreemptionArgs:
    """DefaultPreemptionArgs with the v1 defaults; invalid values raise FieldError."""

    min_candidate_nodes_percentage: int = 10
    min_candidate_nodes_absolute: int = 100

    def __post_init__(self) -> None:
        percentage, absolute = (
            self.min_candidate_nodes_percentage,
            self.min_candidate_nodes_absolute,
        )
        for name, value in (
            ("minCandidateNodesPercentage", percentage),
            ("minCandidateNodesAbsolute", absolute),
        ):
            if isinstance(value, bool) or not isinstance(value, int):
                raise FieldError((name,), f"expected an integer, got {value!r}")
        if not 0 <= percentage <= 100:
            raise FieldError(
                ("minCandidateNodesPercentage",), f"{percentage}: not in valid range [0, 100]"
            )
        if absolute < 0:
            raise FieldError(
                ("minCandidateNodesAbsolute",), f"{absolute}: not in valid range [0, inf)"
            )
        if percentage == 0 and absolute == 0:
            raise FieldError(
                ("minCandidateNodesPercentage",),
                "cannot be zero at the same time as minCandidateNodesAbsolute",
            )


def parse_preemption_args(obj: Any, path: Sequence[PathPart] = ()) -> DefaultPreemptionArgs:
    """DefaultPreemptionArgs from its v1 form; unset fields take the defaults (10, 100)."""
    path = tuple(path)
    if obj is None:
        return DefaultPreemptionArgs()
    if not isinstance(obj, Mapping):
        raise FieldError(path, f"expected an object, got {type(obj).__name__}")
    allowed = ("minCandidateNodesPercentage", "minCandidateNodesAbsolute", "kind", "apiVersion")
    for key in obj:
        if key not in allowed:
            raise FieldError((*path, str(key)), "unknown field")
    defaults = DefaultPreemptionArgs()
    percentage = obj.get("minCandidateNodesPercentage")
    absolute = obj.get("minCandidateNodesAbsolute")
    try:
        return DefaultPreemptionArgs(
            defaults.min_candidate_nodes_percentage if percentage is None else percentage,
            defaults.min_candidate_nodes_absolute if absolute is None else absolute,
        )
    except FieldError as exc:
        raise exc.prefixed(path) from None


def calculate_num_candidates(num_nodes: int, args: DefaultPreemptionArgs) -> int:
    """How many candidates the dry run looks for among `num_nodes` potential nodes."""
    wanted = num_nodes * args.min_candidate_nodes_percentage // 100
    wanted = max(wanted, args.min_candidate_nodes_absolute)
    return min(wanted, num_nodes)


# --- results ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Candidate:
    """A node where evicting `victims` (most important first) lets the pod fit."""

    node: str
    victims: tuple[Pod, ...]
    num_pdb_violations: int = 0


@dataclass(frozen=True, slots=True)
class PostFilterResult:
    """The nomination to record on the pod; "" clears an earlier one."""

    nominated_node_name: str


@dataclass(frozen=True, slots=True)
class DryRun:
    candidates: tuple[Candidate, ...]
    node_statuses: Mapping[str, Status]  # nodes tried without becoming a candidate
    errors: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PreemptionOutcome:
    """PostFilter's answer: upstream's (result, status) pair, plus the chosen candidate (whose
    victims the caller evicts) and the per-node statuses behind a refusal."""

    result: PostFilterResult | None
    status: Status
    candidate: Candidate | None = None
    node_statuses: Mapping[str, Status] = field(default_factory=dict)

    @property
    def victims(self) -> tuple[Pod, ...]:
        return self.candidate.victims if self.candidate is not None else ()


# --- pod facts read from the raw object ----------------------------------------------------------


def _status_of(pod: Pod) -> Mapping[str, Any]:
    status = pod.raw.get("status") if isinstance(pod.raw, Mapping) else None
    return status if isinstance(status, Mapping) else {}


def nominated_node_name(pod: Pod) -> str:
    name = _status_of(pod).get("nominatedNodeName")
    return name if isinstance(name, str) else ""


def terminating_by_preemption(pod: Pod) -> bool:
    """Being deleted, and the first DisruptionTarget condition says the scheduler did it."""
    if not pod.terminating:
        return False
    conditions = _status_of(pod).get("conditions")
    for condition in conditions if isinstance(conditions, list) else ():
        if isinstance(condition, Mapping) and condition.get("type") == DISRUPTION_TARGET:
            return (
                condition.get("status") == "True"
                and condition.get("reason") == REASON_PREEMPTION_BY_SCHEDULER
            )
    return False


# --- choosing among candidates -------------------------------------------------------------------


def pick_one_node_for_preemption(candidates: Sequence[Candidate], *, now: int) -> Candidate | None:
    """pickOneNodeForPreemption's default criteria, in order, each keeping the best-scoring
    candidates; the first remaining candidate wins. Victims must be most important first."""
    if not candidates:
        return None

    def sum_of_priorities(c: Candidate) -> int:
        return wrap_int64(sum(p.priority + _PRIORITY_OFFSET for p in c.victims))

    criteria = (
        lambda c: -c.num_pdb_violations,
        lambda c: -c.victims[0].priority,
        lambda c: wrap_int64(-sum_of_priorities(c)),
        lambda c: -len(c.victims),
        lambda c: earliest_start_of_highest_priority(c.victims, now),
    )
    remaining = list(candidates)
    for score in criteria:
        scores = [score(c) for c in remaining]
        best = max(scores)
        remaining = [c for c, s in zip(remaining, scores, strict=True) if s == best]
        if len(remaining) == 1:
            break
    return remaining[0]


def aggregate_errors(messages: Sequence[str]) -> str:
    """utilerrors.NewAggregate(errs).Error(): one message as is, several deduplicated in
    brackets."""
    unique = list(dict.fromkeys(messages))
    if len(unique) == 1:
        return unique[0]
    return "[" + ", ".join(unique) + "]"


# --- the plugin ----------------------------------------------------------------------------------


class DefaultPreemption:
    """The PostFilter plugin with its arguments and the contract's protection rules."""

    __slots__ = ("args", "protection")

    def __init__(
        self,
        args: DefaultPreemptionArgs | None = None,
        protection: Protection = NO_PROTECTION,
    ) -> None:
        self.args = args if args is not None else DefaultPreemptionArgs()
        self.protection = protection

    # -- eligibility --

    def is_preemption_allowed(self, node: Node | None, victim: Pod, preemptor: Pod) -> bool:
        """Strictly lower priority, and no protection rule against it."""
        return victim.priority < preemptor.priority and self.protection.allows(
            node, victim, preemptor
        )

    def pod_eligible_to_preempt_others(
        self, pod: Pod, cluster: PreemptionCluster, nominated_node_status: Status | None
    ) -> tuple[bool, str]:
        """(eligible, reason when not). `nominated_node_status` None means no status known
        (as a nil status upstream: not UnschedulableAndUnresolvable)."""
        if pod.preemption_policy == PREEMPT_NEVER:
            return False, MSG_PREEMPT_NEVER
        nominated = nominated_node_name(pod)
        if nominated:
            if (
                nominated_node_status is not None
                and nominated_node_status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            ):
                return True, ""
            node = cluster.node(nominated)
            if node is not None:
                for other in cluster.pods_on(nominated):
                    if self.is_preemption_allowed(node, other, pod) and terminating_by_preemption(
                        other
                    ):
                        return False, MSG_TERMINATING_VICTIM
        return True, ""

    # -- victims on one node --

    def select_victims_on_node(
        self,
        pod: Pod,
        node: Node,
        cluster: PreemptionCluster,
        fits: FitCheck,
        *,
        now: int,
        pdbs: Sequence[PodDisruptionBudget] | None = None,
        gangs: Mapping[GangKey, Sequence[Pod]] | None = None,
    ) -> tuple[tuple[Pod, ...], int, Status]:
        """(victims most important first, number violating a budget, status). `pdbs` default
        to the cluster's; `gangs` (running members per PodGroup) is computed when needed."""
        if pdbs is None:
            pdbs = cluster.pdbs
        if gangs is None and self.protection.gang_units:
            gangs = gang_index(self.protection, cluster.running_pods())
        units, blocked = self._eviction_units(pod, node, cluster, gangs or {}, now)
        if not units:
            return (), 0, _PROTECTED if blocked else _NO_VICTIMS

        removed: dict[str, Pod] = {victim.key: victim for unit in units for victim in unit}
        status = fits(pod, node, removed.values())
        if not status.ok:
            return (), 0, status

        # a unit ranks as its most important member (units are listed most important first)
        units.sort(key=lambda unit: importance_key(unit[0], now))
        flags = pods_violating_pdbs((victim for unit in units for victim in unit), pdbs)
        violating: list[tuple[tuple[Pod, ...], int]] = []
        non_violating: list[tuple[Pod, ...]] = []
        start = 0
        for unit in units:
            count = sum(flags[start : start + len(unit)])
            start += len(unit)
            if count:
                violating.append((unit, count))
            else:
                non_violating.append(unit)

        victims: list[Pod] = []

        def reprieve(unit: tuple[Pod, ...]) -> bool:
            for victim in unit:
                del removed[victim.key]
            if fits(pod, node, removed.values()).ok:
                return True
            for victim in unit:
                removed[victim.key] = victim
            victims.extend(unit)
            return False

        num_violating = 0
        for unit, count in violating:
            if not reprieve(unit):
                num_violating += count
        for unit in non_violating:
            reprieve(unit)
        return tuple(sort_by_importance(victims, now)), num_violating, SUCCESS

    def _eviction_units(
        self,
        pod: Pod,
        node: Node,
        cluster: PreemptionCluster,
        gangs: Mapping[GangKey, Sequence[Pod]],
        now: int,
    ) -> tuple[list[tuple[Pod, ...]], bool]:
        """Pods that may go, grouped into what is evicted together (a pod alone, or a whole
        gang with members most important first); and whether protection kept any
        lower-priority pod."""
        protection = self.protection
        units: list[tuple[Pod, ...]] = []
        blocked = False
        seen: set[GangKey] = set()
        for victim in cluster.pods_on(node.name):
            if victim.priority >= pod.priority:
                continue
            gang = protection.gang_of(victim)
            if gang is None:
                if protection.allows(node, victim, pod):
                    units.append((victim,))
                else:
                    blocked = True
                continue
            if gang in seen:
                continue
            seen.add(gang)
            members = gangs.get(gang) or (victim,)
            if all(self.is_preemption_allowed(cluster.node(m.node_name), m, pod) for m in members):
                units.append(tuple(sort_by_importance(members, now)))
            else:
                blocked = True
        return units, blocked

    # -- dry run over nodes --

    def dry_run_preemption(
        self,
        pod: Pod,
        potential_nodes: Sequence[Node],
        cluster: PreemptionCluster,
        fits: FitCheck,
        *,
        now: int,
        offset: int = 0,
        num_candidates: int | None = None,
    ) -> DryRun:
        total = len(potential_nodes)
        if num_candidates is None:
            num_candidates = calculate_num_candidates(total, self.args)
        gangs = gang_index(self.protection, cluster.running_pods())
        pdbs = cluster.pdbs
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        statuses: dict[str, Status] = {}
        errors: list[str] = []
        for i in range(total):
            node = potential_nodes[(offset + i) % total]
            victims, violations, status = self.select_victims_on_node(
                pod, node, cluster, fits, now=now, pdbs=pdbs, gangs=gangs
            )
            if status.ok and victims:
                found = violating if violations else non_violating
                if len(found) < num_candidates:  # upstream's lists have a fixed size
                    found.append(Candidate(node.name, victims, violations))
                if non_violating and len(non_violating) + len(violating) >= num_candidates:
                    break
                continue
            if status.ok:
                status = Status(
                    Code.ERROR, (f'expected at least one victim pod on node "{node.name}"',), PLUGIN
                )
            if status.code is Code.ERROR:
                errors.append(status.message)
            statuses[node.name] = status
        return DryRun(tuple(non_violating + violating), statuses, tuple(errors))

    def select_candidate(self, candidates: Sequence[Candidate], *, now: int) -> Candidate | None:
        if len(candidates) <= 1:
            return candidates[0] if candidates else None
        return pick_one_node_for_preemption(candidates, now=now)

    # -- PostFilter --

    def post_filter(
        self,
        pod: Pod,
        cluster: PreemptionCluster,
        node_statuses: Mapping[str, Status],
        *,
        now: int,
        fits: FitCheck | None = None,
        offset: int = 0,
    ) -> PreemptionOutcome:
        """Preempt for `pod`, given the filter status of each node (a node without a status
        was not evaluated and counts as UnschedulableAndUnresolvable). `fits` defaults to the
        scalar filter chain over the cluster's running pods."""
        nominated = nominated_node_name(pod)
        nominated_status = None
        if nominated:
            nominated_status = node_statuses.get(nominated, _NOT_HELPFUL)
        eligible, why = self.pod_eligible_to_preempt_others(pod, cluster, nominated_status)
        if not eligible:
            return PreemptionOutcome(None, _prefixed(Code.UNSCHEDULABLE, why))

        nodes = cluster.nodes
        if not nodes:
            return PreemptionOutcome(None, _prefixed(Code.ERROR, MSG_NO_NODES))
        potential = [
            node
            for node in nodes
            if (status := node_statuses.get(node.name)) is not None
            and status.code is Code.UNSCHEDULABLE
        ]
        dry = DryRun((), {})
        if potential:
            if fits is None:
                fits = FilterChainFit(nodes, cluster.running_pods())
            dry = self.dry_run_preemption(pod, potential, cluster, fits, now=now, offset=offset)

        if dry.errors and not dry.candidates:
            return PreemptionOutcome(None, _prefixed(Code.ERROR, aggregate_errors(dry.errors)))
        if not dry.candidates:
            statuses = {node.name: dry.node_statuses.get(node.name, _NOT_HELPFUL) for node in nodes}
            message = fit_error_message(len(nodes), statuses)
            return PreemptionOutcome(
                PostFilterResult(""), _prefixed(Code.UNSCHEDULABLE, message), None, statuses
            )
        best = self.select_candidate(dry.candidates, now=now)
        assert best is not None  # there are candidates
        return PreemptionOutcome(PostFilterResult(best.node), SUCCESS, best, dry.node_statuses)


def _prefixed(code: Code, message: str) -> Status:
    return Status(code, (STATUS_PREFIX + message,) if message else (), PLUGIN)


def gang_index(protection: Protection, pods: Iterable[Pod]) -> dict[GangKey, list[Pod]]:
    """Running members of each PodGroup (empty when gangs are not preempted as units)."""
    index: dict[GangKey, list[Pod]] = {}
    if not protection.gang_units:
        return index
    for pod in pods:
        gang = protection.gang_of(pod)
        if gang is not None:
            index.setdefault(gang, []).append(pod)
    return index
