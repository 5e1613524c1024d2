"""PodTopologySpread filter: kube-scheduler's PreFilter, Filter and AddPod/RemovePod.

`prefilter` counts, for every hard (`DoNotSchedule`) constraint of the incoming pod, the matching
pods in each topology domain; `filter` then checks one node:
`count(domain of node) + selfMatch - globalMin > maxSkew` fails the node.

Facts from upstream that shape this module:
- Only nodes that carry *every* constraint's topologyKey contribute domains and counts.
- Node inclusion: with the NodeInclusionPolicyInPodTopologySpread gate on, each constraint
  decides per node (nodeAffinityPolicy Honor by default, nodeTaintsPolicy Ignore by default;
  Honor on taints means "skip nodes with an untolerated NoSchedule/NoExecute taint"). With the
  gate off, nodes failing the pod's required node affinity/nodeSelector are skipped for all
  constraints and taints never matter.
- A domain that exists but holds no matching pod still counts as a domain (for minDomains and
  the global minimum). With fewer domains than minDomains the global minimum is taken as 0.
- Pods count only in the incoming pod's namespace, and terminating pods never count.
- A nil labelSelector matches nothing. A non-nil selector without requirements (`{}`) counts
  no existing pod yet matches the incoming pod itself: the revision the conformance vectors
  come from short-circuits "empty" selectors when counting (fixed upstream later, #141340).
- matchLabelKeys add `key=<incoming pod's value>` to the selector for keys the pod carries;
  a nil selector stays "match nothing".

The state keeps an exact global minimum per constraint (a histogram of domain counts), so
`add_pod`/`remove_pod` keep it equal to what a fresh `prefilter` over the new pod set would give.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from gpupact.errors import PathPart
from gpupact.kube.fields import mapping, optional_integer, optional_list, required_string
from gpupact.kube.selectors import LabelSelector, RequiredNodeAffinity, parse_label_selector
from gpupact.kube.status import Code, Status
from gpupact.kube.taints import Taint, Toleration, do_not_schedule_taint, find_untolerated_taint
from gpupact.kube.validation import (
    check_label_key,
    check_supported,
    duplicate_issue,
    invalid_issue,
    required_issue,
)

PLUGIN = "PodTopologySpread"
DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"

REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
REASON_NODE_LABEL_NOT_MATCH = REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

_SUCCESS = Status(Code.SUCCESS, (), PLUGIN)
_SKEW_TOO_LARGE = Status(Code.UNSCHEDULABLE, (REASON_CONSTRAINTS_NOT_MATCH,), PLUGIN)
_MISSING_LABEL = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON_NODE_LABEL_NOT_MATCH,), PLUGIN)

_WHEN_UNSATISFIABLE = (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY)
_POLICIES = (HONOR, IGNORE)


# --- inputs -----------------------------------------------------------------------------


class NodeLike(Protocol):
    """What the filter reads from a node (gpupact.kube.objects.Node fits)."""

    @property
    def name(self) -> str: ...
    @property
    def labels(self) -> Mapping[str, str]: ...
    @property
    def taints(self) -> Sequence[Taint]: ...


class PodLike(Protocol):
    """What the filter reads from an existing pod (gpupact.kube.objects.Pod fits)."""

    @property
    def namespace(self) -> str: ...
    @property
    def labels(self) -> Mapping[str, str]: ...
    @property
    def node_name(self) -> str: ...
    @property
    def terminating(self) -> bool: ...


class IncomingPodLike(Protocol):
    """What the filter reads from the pod being scheduled (gpupact.kube.objects.Pod fits)."""

    @property
    def namespace(self) -> str: ...
    @property
    def labels(self) -> Mapping[str, str]: ...
    @property
    def topology_spread_constraints(self) -> Sequence[TopologySpreadConstraint]: ...
    @property
    def required_node_affinity(self) -> RequiredNodeAffinity | None: ...
    @property
    def tolerations(self) -> Sequence[Toleration]: ...


@dataclass(frozen=True, slots=True)
class NodeView:
    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()


@dataclass(frozen=True, slots=True)
class PodView:
    namespace: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    node_name: str = ""
    terminating: bool = False
    name: str = ""


@dataclass(frozen=True, slots=True)
class IncomingPod:
    namespace: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    topology_spread_constraints: tuple[TopologySpreadConstraint, ...] = ()
    required_node_affinity: RequiredNodeAffinity | None = None
    tolerations: tuple[Toleration, ...] = ()
    name: str = ""


# --- the API object ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TopologySpreadConstraint:
    """One `spec.topologySpreadConstraints[]` entry, validated as the API server does."""

    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    label_selector: LabelSelector | None = None
    min_domains: int | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: tuple[str, ...] = ()


def _int32(
    obj: Mapping[str, Any], key: str, path: tuple[PathPart, ...], validate: bool
) -> int | None:
    value = optional_integer(obj.get(key), (*path, key), bits=32)
    if validate and value is not None and value <= 0:
        raise invalid_issue((*path, key), value, "must be greater than zero").as_error()
    return value


def _optional_choice(
    obj: Mapping[str, Any], key: str, choices: tuple[str, ...], path: tuple[PathPart, ...]
) -> str | None:
    value = obj.get(key)
    if value is not None:
        check_supported(value, choices, (*path, key))
    return value


def parse_topology_spread_constraint(
    obj: Any, path: Sequence[PathPart] = (), *, validate: bool = True
) -> TopologySpreadConstraint:
    """Parse one constraint; errors name the field under `path`.

    `validate` applies the API server's rules (maxSkew > 0, minDomains > 0 and only with
    DoNotSchedule, valid and non-overlapping matchLabelKeys); without it only the shape and the
    enumerations are checked (for objects that never passed the API server, e.g. test fixtures).
    """
    path = tuple(path)
    obj = mapping(obj, path)

    max_skew = _int32(obj, "maxSkew", path, validate)
    if max_skew is None:
        if validate:  # Go's zero value
            raise invalid_issue((*path, "maxSkew"), 0, "must be greater than zero").as_error()
        max_skew = 0

    # a missing key is Go's "", an explicit null is not a string
    topology_key = required_string(obj.get("topologyKey", ""), (*path, "topologyKey"))
    if validate and not topology_key:
        raise required_issue((*path, "topologyKey"), "can not be empty").as_error()

    when = obj.get("whenUnsatisfiable")
    check_supported("" if when is None else when, _WHEN_UNSATISFIABLE, (*path, "whenUnsatisfiable"))

    selector = parse_label_selector(obj.get("labelSelector"), (*path, "labelSelector"))
    selector_keys: set[str] = set()
    if selector is not None:
        selector_keys = {k for k, _ in selector.match_labels}
        selector_keys.update(r.key for r in selector.match_expressions)

    min_domains = _int32(obj, "minDomains", path, validate)
    if validate and min_domains is not None and when != DO_NOT_SCHEDULE:
        raise invalid_issue(
            (*path, "minDomains"),
            min_domains,
            f"can only use minDomains if whenUnsatisfiable={DO_NOT_SCHEDULE}, not {when}",
        ).as_error()

    affinity_policy = _optional_choice(obj, "nodeAffinityPolicy", _POLICIES, path)
    taints_policy = _optional_choice(obj, "nodeTaintsPolicy", _POLICIES, path)

    raw_keys = optional_list(obj.get("matchLabelKeys"), (*path, "matchLabelKeys"))
    for i, key in enumerate(raw_keys):
        where = (*path, "matchLabelKeys", i)
        # checked item by item so the first bad entry is the one reported
        required_string(key, where)
        if not validate:
            continue
        check_label_key(key, where)
        if key in selector_keys:
            raise invalid_issue(
                where, key, "exists in both matchLabelKeys and labelSelector"
            ).as_error()

    return TopologySpreadConstraint(
        max_skew=max_skew,
        topology_key=topology_key,
        when_unsatisfiable=when,
        label_selector=selector,
        min_domains=min_domains,
        node_affinity_policy=affinity_policy,
        node_taints_policy=taints_policy,
        match_label_keys=tuple(raw_keys),
    )


def parse_topology_spread_constraints(
    obj: Any, path: Sequence[PathPart] = (), *, validate: bool = True
) -> tuple[TopologySpreadConstraint, ...]:
    """Parse a pod's whole list; validation also rejects a repeated {topologyKey, action}."""
    path = tuple(path)
    out = tuple(
        parse_topology_spread_constraint(c, (*path, i), validate=validate)
        for i, c in enumerate(optional_list(obj, path))
    )
    if not validate:
        return out
    seen: dict[tuple[str, str], int] = {}
    for i, c in enumerate(out):
        pair = (c.topology_key, c.when_unsatisfiable)
        if pair in seen:
            raise duplicate_issue(
                (*path, seen[pair], "{topologyKey, whenUnsatisfiable}"), f"{{{pair[0]}, {pair[1]}}}"
            ).as_error()
        seen[pair] = i
    return out


# --- the scheduler's view of a hard constraint ------------------------------------------

Matcher = Callable[[Mapping[str, str]], bool]


@dataclass(frozen=True, slots=True)
class HardConstraint:
    """A DoNotSchedule constraint as the scheduler evaluates it (defaults and gates applied)."""

    topology_key: str
    max_skew: int
    min_domains: int
    matches: Matcher
    # False when the selector has no requirements: PreFilter then counts no existing pod
    counts_existing: bool
    honor_affinity: bool
    honor_taints: bool


def _never(_labels: Mapping[str, str]) -> bool:
    return False


def _selector_matcher(
    c: TopologySpreadConstraint, pod_labels: Mapping[str, str], merge_keys: bool
) -> tuple[Matcher, bool]:
    if c.label_selector is None:
        # nil selector: matches nothing, and matchLabelKeys cannot widen it
        return _never, True
    selector = c.label_selector
    if merge_keys:
        extra = tuple((k, pod_labels[k]) for k in c.match_label_keys if k in pod_labels)
        if extra:
            selector = LabelSelector(
                tuple(sorted(extra + selector.match_labels)), selector.match_expressions
            )
    # a selector without requirements counts no existing pod (revision quirk, see module doc)
    counts_existing = bool(selector.match_labels or selector.match_expressions)
    return selector.matches, counts_existing


def hard_constraints(
    pod: IncomingPodLike, *, node_inclusion_policy: bool = True, match_label_keys: bool = True
) -> tuple[HardConstraint, ...]:
    """The pod's DoNotSchedule constraints with upstream defaults applied."""
    out = []
    for c in pod.topology_spread_constraints:
        if c.when_unsatisfiable != DO_NOT_SCHEDULE:
            continue
        matches, counts_existing = _selector_matcher(c, pod.labels, match_label_keys)
        affinity_policy, taints_policy = HONOR, IGNORE
        if node_inclusion_policy:
            affinity_policy = c.node_affinity_policy or HONOR
            taints_policy = c.node_taints_policy or IGNORE
        out.append(
            HardConstraint(
                topology_key=c.topology_key,
                max_skew=c.max_skew,
                min_domains=c.min_domains if c.min_domains is not None else 1,
                matches=matches,
                counts_existing=counts_existing,
                honor_affinity=affinity_policy == HONOR,
                honor_taints=taints_policy == HONOR,
            )
        )
    return tuple(out)


# --- PreFilter state --------------------------------------------------------------------


class PreFilterState:
    """Per-constraint match counts by topology value, with an exact global minimum each."""

    __slots__ = (
        "_counts",
        "_domains_cache",
        "_eligibility",
        "_histograms",
        "_minimums",
        "_watcher",
        "constraints",
        "namespace",
        "self_match",
    )

    def __init__(
        self,
        constraints: tuple[HardConstraint, ...],
        namespace: str,
        self_match: tuple[int, ...],
        eligibility: Callable[[NodeLike], tuple[str | None, ...] | None],
    ) -> None:
        self.constraints = constraints
        self.namespace = namespace
        self.self_match = self_match
        self._eligibility = eligibility
        self._domains_cache: dict[str, tuple[str | None, ...] | None] = {}
        self._counts: list[dict[str, int]] = [{} for _ in constraints]
        self._histograms: list[Counter[int]] = [Counter() for _ in constraints]
        self._minimums: list[int] = [0 for _ in constraints]
        self._watcher: Callable[[int, str, int], None] | None = None

    def watch(self, watcher: Callable[[int, str, int], None] | None) -> None:
        """Call `watcher(constraint index, domain value, new count)` on every count change
        (the vectorised engine keeps count columns in step; copies are not watched)."""
        self._watcher = watcher

    @property
    def skip(self) -> bool:
        """No hard constraint: upstream PreFilter returns Skip and Filter passes every node."""
        return not self.constraints

    def match_counts(self, index: int) -> dict[str, int]:
        return dict(self._counts[index])

    def global_min(self, index: int) -> int:
        """Minimum used for skew: 0 while fewer domains than minDomains exist."""
        if len(self._counts[index]) < self.constraints[index].min_domains:
            return 0
        return self._minimums[index]

    def domains_of(self, node: NodeLike) -> tuple[str | None, ...] | None:
        """Topology value per constraint this node counts in (None: excluded); None if skipped."""
        cached = self._domains_cache.get(node.name, _MISSING)
        if cached is _MISSING:
            cached = self._eligibility(node)
            self._domains_cache[node.name] = cached
        return cached  # type: ignore[return-value]

    def _set(self, index: int, value: str, count: int) -> None:
        counts, hist = self._counts[index], self._histograms[index]
        old = counts.get(value)
        if old is not None:
            hist[old] -= 1
            if not hist[old]:
                del hist[old]
        counts[value] = count
        hist[count] += 1
        if (old is None and len(counts) == 1) or count < self._minimums[index]:
            self._minimums[index] = count
        elif old == self._minimums[index] and old not in hist:
            self._minimums[index] = min(hist)
        if self._watcher is not None:
            self._watcher(index, value, count)

    def _update(self, pod: PodLike, node: NodeLike, delta: int) -> None:
        if pod.namespace != self.namespace or pod.terminating:
            return
        domains = self.domains_of(node)
        if domains is None:
            return
        labels = pod.labels
        for i, c in enumerate(self.constraints):
            value = domains[i]
            if value is None or not c.counts_existing or not c.matches(labels):
                continue
            self._set(i, value, self._counts[i].get(value, 0) + delta)

    def add_pod(self, pod: PodLike, node: NodeLike) -> None:
        """A pod now runs on `node` (placed, or nominated): count it (upstream AddPod)."""
        self._update(pod, node, 1)

    def remove_pod(self, pod: PodLike, node: NodeLike) -> None:
        """A pod left `node` (preemption victim, finished): uncount it (upstream RemovePod)."""
        self._update(pod, node, -1)

    def copy(self) -> PreFilterState:
        """Independent counts (one per preemption candidate node, as upstream Clone)."""
        other = PreFilterState(self.constraints, self.namespace, self.self_match, self._eligibility)
        other._domains_cache = self._domains_cache  # nodes do not change within a cycle
        other._counts = [dict(c) for c in self._counts]
        other._histograms = [Counter(h) for h in self._histograms]
        other._minimums = list(self._minimums)
        return other


_MISSING = object()


def _eligibility_for(
    pod: IncomingPodLike,
    constraints: tuple[HardConstraint, ...],
    *,
    node_inclusion_policy: bool,
    enable_comparison_operators: bool,
) -> Callable[[NodeLike], tuple[str | None, ...] | None]:
    affinity = pod.required_node_affinity
    tolerations = tuple(pod.tolerations)
    keys = tuple(c.topology_key for c in constraints)
    need_affinity = affinity is not None and (
        not node_inclusion_policy or any(c.honor_affinity for c in constraints)
    )
    need_taints = node_inclusion_policy and any(c.honor_taints for c in constraints)

    def domains(node: NodeLike) -> tuple[str | None, ...] | None:
        labels = node.labels
        for key in keys:
            if key not in labels:
                return None
        affinity_ok = not need_affinity or affinity.matches(node.name, labels)  # type: ignore[union-attr]
        if not node_inclusion_policy:
            return tuple(labels[k] for k in keys) if affinity_ok else None
        taints_ok = True
        if need_taints:
            taints_ok = (
                find_untolerated_taint(
                    node.taints,
                    tolerations,
                    do_not_schedule_taint,
                    enable_comparison_operators=enable_comparison_operators,
                )
                is None
            )
        return tuple(
            None
            if (c.honor_affinity and not affinity_ok) or (c.honor_taints and not taints_ok)
            else labels[c.topology_key]
            for c in constraints
        )

    return domains


def prefilter(
    pod: IncomingPodLike,
    nodes: Iterable[NodeLike],
    existing_pods: Iterable[PodLike],
    *,
    node_inclusion_policy: bool = True,
    match_label_keys: bool = True,
    enable_comparison_operators: bool = True,
) -> PreFilterState:
    """Count matching pods per domain over all cluster nodes (upstream PreFilter).

    `nodes` are all nodes of the cluster (not only candidates); `existing_pods` are the pods
    bound to them (`node_name`); pods on nodes not listed are ignored. Feature flags:
    NodeInclusionPolicyInPodTopologySpread, MatchLabelKeysInPodTopologySpread,
    TaintTolerationComparisonOperators.
    """
    constraints = hard_constraints(
        pod, node_inclusion_policy=node_inclusion_policy, match_label_keys=match_label_keys
    )
    self_match = tuple(1 if c.matches(pod.labels) else 0 for c in constraints)
    eligibility = _eligibility_for(
        pod,
        constraints,
        node_inclusion_policy=node_inclusion_policy,
        enable_comparison_operators=enable_comparison_operators,
    )
    state = PreFilterState(constraints, pod.namespace, self_match, eligibility)
    if not constraints:
        return state

    namespace = pod.namespace
    pods_by_node: dict[str, list[Mapping[str, str]]] = defaultdict(list)
    for p in existing_pods:
        if p.namespace == namespace and not p.terminating and p.node_name:
            pods_by_node[p.node_name].append(p.labels)

    totals: list[dict[str, int]] = [{} for _ in constraints]
    for node in nodes:
        domains = state.domains_of(node)
        if domains is None:
            continue
        node_pods = pods_by_node.get(node.name, ())
        for i, c in enumerate(constraints):
            value = domains[i]
            if value is None:
                continue
            count = 0
            if c.counts_existing:
                matches = c.matches
                count = sum(1 for labels in node_pods if matches(labels))
            totals[i][value] = totals[i].get(value, 0) + count

    for i, per_domain in enumerate(totals):
        state._counts[i] = per_domain
        hist = Counter(per_domain.values())
        state._histograms[i] = hist
        state._minimums[i] = min(hist) if hist else 0
    return state


def filter_node(state: PreFilterState, node: NodeLike) -> Status:
    """Can the incoming pod go on `node` without exceeding any maxSkew? (upstream Filter)."""
    labels = node.labels
    for i, c in enumerate(state.constraints):
        value = labels.get(c.topology_key)
        if value is None:
            return _MISSING_LABEL
        skew = state._counts[i].get(value, 0) + state.self_match[i] - state.global_min(i)
        if skew > c.max_skew:
            return _SKEW_TOO_LARGE
    return _SUCCESS


def filter_nodes(
    pod: IncomingPodLike,
    nodes: Sequence[NodeLike],
    existing_pods: Iterable[PodLike],
    *,
    node_inclusion_policy: bool = True,
    match_label_keys: bool = True,
    enable_comparison_operators: bool = True,
) -> dict[str, Status]:
    """PreFilter over `nodes`, then Filter each of them: node name -> Status."""
    state = prefilter(
        pod,
        nodes,
        existing_pods,
        node_inclusion_policy=node_inclusion_policy,
        match_label_keys=match_label_keys,
        enable_comparison_operators=enable_comparison_operators,
    )
    return {node.name: filter_node(state, node) for node in nodes}


# upstream's name for the per-node check; `filter_node` avoids shadowing the builtin
filter = filter_node
