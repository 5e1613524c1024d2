"""InterPodAffinity: required pod affinity / anti-affinity (Filter) and preferred terms (Score).

Semantics follow upstream pkg/scheduler/framework/plugins/interpodaffinity (filtering.go,
scoring.go). The terms are the pod's typed fields (`Pod.pod_affinity`, `Pod.pod_anti_affinity`,
parsed once by `gpupact.kube.pod_affinity`, which also defines when a term matches a pod).

- PreFilter counts, per topology pair (key, value of the node an existing pod runs on):
  existing pods whose required anti-affinity terms match the incoming pod; existing pods that
  match *all* the incoming pod's required affinity terms (one count per term key); existing pods
  matching each of its required anti-affinity terms.
- Filter, in this order: affinity (every term's key must be on the node and its pair counted,
  except that the first pod of a self-affine group may go anywhere with all keys when nothing
  matches yet) -> UnschedulableAndUnresolvable; the pod's anti-affinity -> Unschedulable;
  existing pods' anti-affinity -> Unschedulable.
- Score: preferred terms of the pod (+/- weight per matching existing pod), existing pods'
  required affinity terms matching the pod (hardPodAffinityWeight, default 1) and their
  preferred terms (+/- weight), summed per topology pair; normalised to 0..100 by min and max.

Namespace labels: every namespace carries kubernetes.io/metadata.name; more come from the
ClusterState. Upstream merges a namespaceSelector of the incoming pod into its namespace list
from the namespaces that exist; every existing pod's namespace exists, so evaluating the
selector on that pod's namespace labels gives the same answer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpupact.kube.objects import Node, Pod
from gpupact.kube.pod_affinity import PodAffinityTerm, WeightedPodAffinityTerm
from gpupact.kube.status import SUCCESS, Code, Status

PLUGIN_NAME = "InterPodAffinity"
REASON_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
DEFAULT_HARD_POD_AFFINITY_WEIGHT = 1
MAX_NODE_SCORE = 100

STATUS_AFFINITY = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON_AFFINITY,), PLUGIN_NAME)
STATUS_ANTI_AFFINITY = Status(Code.UNSCHEDULABLE, (REASON_ANTI_AFFINITY,), PLUGIN_NAME)
STATUS_EXISTING = Status(Code.UNSCHEDULABLE, (REASON_EXISTING_ANTI_AFFINITY,), PLUGIN_NAME)


# --- terms (parsed once by gpupact.kube.pod_affinity into Pod fields) ---------------------------


@dataclass(frozen=True, slots=True)
class PodAffinityInfo:
    """The pod's terms as the plugin walks them: hard and soft, affinity and anti-affinity."""

    required_affinity: tuple[PodAffinityTerm, ...] = ()
    required_anti_affinity: tuple[PodAffinityTerm, ...] = ()
    preferred_affinity: tuple[WeightedPodAffinityTerm, ...] = ()
    preferred_anti_affinity: tuple[WeightedPodAffinityTerm, ...] = ()

    @property
    def empty(self) -> bool:
        return not (
            self.required_affinity
            or self.required_anti_affinity
            or self.preferred_affinity
            or self.preferred_anti_affinity
        )

    @property
    def has_preferred(self) -> bool:
        return bool(self.preferred_affinity or self.preferred_anti_affinity)


NO_AFFINITY = PodAffinityInfo()


def pod_affinity_info(pod: Pod) -> PodAffinityInfo:
    """The plugin's view of `pod.pod_affinity` / `pod.pod_anti_affinity` (no parsing)."""
    affinity, anti = pod.pod_affinity, pod.pod_anti_affinity
    if affinity is None and anti is None:
        return NO_AFFINITY
    return PodAffinityInfo(
        affinity.required if affinity is not None else (),
        anti.required if anti is not None else (),
        affinity.preferred if affinity is not None else (),
        anti.preferred if anti is not None else (),
    )


# --- Filter: PreFilter state and the per-node check (scalar reference) ------------------------

Pair = tuple[str, str]
NamespaceLabels = Callable[[str], Mapping[str, str]]


def _default_ns_labels(namespace: str) -> Mapping[str, str]:
    return {"kubernetes.io/metadata.name": namespace}


@dataclass(frozen=True, slots=True)
class ExistingPod:
    """An existing pod as the plugin sees it: namespace, labels, parsed terms, node labels."""

    pod: Pod
    info: PodAffinityInfo
    node_labels: Mapping[str, str]


class PairCounts:
    """Counts per topology pair (key, value), upstream's topologyToMatchedTermCount. With a
    LabelIndex attached it also keeps, per key, an int64 column over the key's value ids
    (slot 0: nodes lacking the key, always 0), so a mask over every node is one lookup instead
    of a walk over the pairs. Pairs whose count returns to 0 are dropped (truthiness: any pair
    counted)."""

    __slots__ = ("counts", "index", "tables")

    def __init__(self, index: Any = None) -> None:
        self.counts: dict[Pair, int] = {}
        self.index = index
        self.tables: dict[str, np.ndarray] = {}

    def add(self, key: str, value: str, delta: int) -> None:
        pair = (key, value)
        count = self.counts.get(pair, 0) + delta
        if count == 0:
            self.counts.pop(pair, None)
        else:
            self.counts[pair] = count
        index = self.index
        if index is not None:
            vid = index.value_id(key, value)
            if vid >= 0:
                table = self.tables.get(key)
                if table is None:
                    table = np.zeros(len(index.values[key]) + 1, dtype=np.int64)
                    self.tables[key] = table
                table[vid + 1] += delta

    def get(self, pair: Pair, default: int = 0) -> int:
        return self.counts.get(pair, default)

    def items(self):
        return self.counts.items()

    def __bool__(self) -> bool:
        return bool(self.counts)

    def __len__(self) -> int:
        return len(self.counts)

    def __eq__(self, other: object) -> bool:
        """Equal to another PairCounts or a plain mapping with the same nonzero counts."""
        if isinstance(other, PairCounts):
            return self.counts == other.counts
        return isinstance(other, Mapping) and self.counts == dict(other)

    __hash__ = None  # type: ignore[assignment]

    def copy(self) -> PairCounts:
        other = PairCounts(self.index)
        other.counts = dict(self.counts)
        other.tables = {k: t.copy() for k, t in self.tables.items()}
        return other

    def topology_keys(self) -> set[str]:
        return {key for key, _ in self.counts}

    def column(self, key: str, index: Any) -> np.ndarray:
        """int64[N]: the count of each node's pair for `key` (0 where the node lacks it)."""
        col = index.column(key)
        if self.index is index:
            table = self.tables.get(key)
            if table is None:
                return np.zeros(col.shape[0], dtype=np.int64)
            return table[col + 1]
        return _pair_table(self.counts, index, key)[col + 1]


class FilterState:
    """PreFilter counts for one incoming pod; `update` is upstream's AddPod/RemovePod. `index`
    (the ClusterState's LabelIndex) keeps numpy columns for `filter_statuses`."""

    __slots__ = ("affinity", "anti_affinity", "existing_anti", "info", "ns_labels", "pod")

    def __init__(
        self, pod: Pod, info: PodAffinityInfo, ns_labels: NamespaceLabels, index: Any = None
    ) -> None:
        self.pod = pod
        self.info = info
        self.ns_labels = ns_labels
        self.existing_anti = PairCounts(index)
        self.affinity = PairCounts(index)
        self.anti_affinity = PairCounts(index)

    @property
    def skip(self) -> bool:
        """Upstream PreFilter returns Skip: every node passes."""
        return (
            not self.existing_anti
            and not self.info.required_affinity
            and not (self.info.required_anti_affinity)
        )

    def update(self, existing: ExistingPod, delta: int) -> None:
        node_labels = existing.node_labels
        pod = self.pod
        anti_terms = existing.info.required_anti_affinity
        if anti_terms:
            incoming_ns = self.ns_labels(pod.namespace)
            for term in anti_terms:
                if term.matches(pod.namespace, pod.labels, incoming_ns):
                    _bump(self.existing_anti, node_labels, term.topology_key, delta)
        terms = self.info.required_affinity
        own_anti = self.info.required_anti_affinity
        if not terms and not own_anti:
            return
        other = existing.pod
        other_ns = self.ns_labels(other.namespace)
        if terms and all(t.matches(other.namespace, other.labels, other_ns) for t in terms):
            for term in terms:
                _bump(self.affinity, node_labels, term.topology_key, delta)
        for term in own_anti:
            if term.matches(other.namespace, other.labels, other_ns):
                _bump(self.anti_affinity, node_labels, term.topology_key, delta)

    def copy(self) -> FilterState:
        other = FilterState(self.pod, self.info, self.ns_labels)
        other.existing_anti = self.existing_anti.copy()
        other.affinity = self.affinity.copy()
        other.anti_affinity = self.anti_affinity.copy()
        return other

    def matches_own_terms(self) -> bool:
        pod = self.pod
        ns_labels = self.ns_labels(pod.namespace)
        terms = self.info.required_affinity
        return bool(terms) and all(t.matches(pod.namespace, pod.labels, ns_labels) for t in terms)

    def filter(self, node_labels: Mapping[str, str]) -> Status:
        if self.skip:
            return SUCCESS
        pods_exist = True
        for term in self.info.required_affinity:
            value = node_labels.get(term.topology_key)
            if value is None:
                return STATUS_AFFINITY
            if self.affinity.get((term.topology_key, value), 0) <= 0:
                pods_exist = False
        if not pods_exist and not (not self.affinity and self.matches_own_terms()):
            return STATUS_AFFINITY
        if self.anti_affinity:
            for term in self.info.required_anti_affinity:
                value = node_labels.get(term.topology_key)
                if value is not None and self.anti_affinity.get((term.topology_key, value), 0) > 0:
                    return STATUS_ANTI_AFFINITY
        if self.existing_anti:
            for pair in node_labels.items():
                if self.existing_anti.get(pair, 0) > 0:
                    return STATUS_EXISTING
        return SUCCESS


def _bump(counts: PairCounts, node_labels: Mapping[str, str], key: str, delta: int) -> None:
    value = node_labels.get(key)
    if value is not None:
        counts.add(key, value, delta)


def prefilter(
    pod: Pod,
    info: PodAffinityInfo,
    existing: Iterable[ExistingPod],
    ns_labels: NamespaceLabels = _default_ns_labels,
    index: Any = None,
) -> FilterState:
    """Counts over every existing pod (upstream visits only pods with required anti-affinity for
    the first map; the others add nothing to it)."""
    state = FilterState(pod, info, ns_labels, index)
    for other in existing:
        state.update(other, 1)
    return state


# --- Filter: all nodes at once ------------------------------------------------------------


def filter_statuses(state: FilterState, index: Any, n: int) -> np.ndarray:
    """Per node: 0 passes, 1 affinity, 2 anti-affinity, 3 existing anti-affinity (first failing
    check, as Filter). `index` is the ClusterState's LabelIndex; a state built on it answers
    from its count columns (no walk over the pairs)."""
    out = np.zeros(n, dtype=np.int8)
    if state.skip:
        return out
    terms = state.info.required_affinity
    if terms:
        missing = np.zeros(n, dtype=np.bool_)
        exists = np.ones(n, dtype=np.bool_)
        for term in terms:
            missing |= index.column(term.topology_key) < 0
            exists &= state.affinity.column(term.topology_key, index) > 0
        self_ok = not state.affinity and state.matches_own_terms()
        fail = missing | (~exists & (not self_ok))
        out[fail] = 1
    if state.anti_affinity:
        fail = np.zeros(n, dtype=np.bool_)
        for term in state.info.required_anti_affinity:
            fail |= state.anti_affinity.column(term.topology_key, index) > 0
        out[(out == 0) & fail] = 2
    if state.existing_anti:
        fail = np.zeros(n, dtype=np.bool_)
        for key in state.existing_anti.topology_keys():
            fail |= state.existing_anti.column(key, index) > 0
        out[(out == 0) & fail] = 3
    return out


FILTER_STATUSES = (SUCCESS, STATUS_AFFINITY, STATUS_ANTI_AFFINITY, STATUS_EXISTING)


def _pair_table(counts: Mapping[Pair, int], index: Any, key: str) -> np.ndarray:
    """int64[V + 1] over the key's value ids (slot 0: key absent) holding the pair counts."""
    values = index.values.get(key, [])
    table = np.zeros(len(values) + 1, dtype=np.int64)
    for (k, value), count in counts.items():
        if k == key:
            vid = index.value_id(key, value)
            if vid >= 0:
                table[vid + 1] = count
    return table


# --- Score ----------------------------------------------------------------------------------


class ScoreState:
    """PreScore's topologyScore for one incoming pod, kept up to date by `update(existing,
    +1/-1)` as pods bind and leave: per topology pair, the summed weights of the pod's preferred
    terms matching existing pods (anti-affinity negative), existing pods' required affinity terms
    matching the pod (hardPodAffinityWeight) and their preferred terms (+/- weight)."""

    __slots__ = ("hard_weight", "incoming_ns", "info", "ns_labels", "pod", "scores")

    def __init__(
        self,
        pod: Pod,
        info: PodAffinityInfo,
        ns_labels: NamespaceLabels = _default_ns_labels,
        hard_pod_affinity_weight: int = DEFAULT_HARD_POD_AFFINITY_WEIGHT,
        index: Any = None,
    ) -> None:
        self.pod = pod
        self.info = info
        self.ns_labels = ns_labels
        self.hard_weight = hard_pod_affinity_weight
        self.incoming_ns = ns_labels(pod.namespace)
        self.scores = PairCounts(index)

    def update(self, other: ExistingPod, delta: int) -> None:
        node = other.node_labels
        if not node:
            return
        info = self.info
        if info.preferred_affinity or info.preferred_anti_affinity:
            # the pod's preferred terms, matched against the existing pod
            o = other.pod
            seen = (o.namespace, o.labels, self.ns_labels(o.namespace))
            self._add(info.preferred_affinity, seen, node, delta)
            self._add(info.preferred_anti_affinity, seen, node, -delta)
        theirs = other.info
        if not (
            theirs.required_affinity or theirs.preferred_affinity or theirs.preferred_anti_affinity
        ):
            return
        # the existing pod's terms, matched against the incoming pod
        pod = self.pod
        seen = (pod.namespace, pod.labels, self.incoming_ns)
        if self.hard_weight > 0:
            hard = [WeightedPodAffinityTerm(t, self.hard_weight) for t in theirs.required_affinity]
            self._add(hard, seen, node, delta)
        self._add(theirs.preferred_affinity, seen, node, delta)
        self._add(theirs.preferred_anti_affinity, seen, node, -delta)

    def _add(
        self,
        terms: Iterable[WeightedPodAffinityTerm],
        seen: tuple[str, Mapping[str, str], Mapping[str, str]],
        node: Mapping[str, str],
        sign: int,
    ) -> None:
        """Add sign * weight at the node's pair of each term that selects the pod `seen`
        (namespace, labels, namespace labels)."""
        for wt in terms:
            if wt.term.matches(*seen):
                _bump(self.scores, node, wt.term.topology_key, wt.weight * sign)

    def raw_scores(self, index: Any, n: int) -> np.ndarray:
        """Score: per node, the sum over the keys of its pair's total."""
        out = np.zeros(n, dtype=np.int64)
        for key in self.scores.topology_keys():
            out += self.scores.column(key, index)
        return out


def topology_scores(
    pod: Pod,
    info: PodAffinityInfo,
    existing: Iterable[ExistingPod],
    ns_labels: NamespaceLabels = _default_ns_labels,
    hard_pod_affinity_weight: int = DEFAULT_HARD_POD_AFFINITY_WEIGHT,
) -> dict[str, dict[str, int]]:
    """PreScore: topology key -> value -> summed weight (pairs summing to 0 are left out: they
    add nothing to any node). `existing`: every bound pod when the pod has preferred terms,
    else the bound pods that declare any pod (anti-)affinity."""
    state = ScoreState(pod, info, ns_labels, hard_pod_affinity_weight)
    for other in existing:
        state.update(other, 1)
    scores: dict[str, dict[str, int]] = {}
    for (key, value), total in state.scores.items():
        scores.setdefault(key, {})[value] = total
    return scores


def raw_score(scores: Mapping[str, Mapping[str, int]], node_labels: Mapping[str, str]) -> int:
    total = 0
    for key, per_value in scores.items():
        value = node_labels.get(key)
        if value is not None:
            total += per_value.get(value, 0)
    return total


def normalize(raw: Sequence[int] | np.ndarray) -> np.ndarray:
    """NormalizeScore: int64(100 * (s - min) / (max - min)) in float64; all 0 if max == min."""
    arr = np.asarray(raw, dtype=np.int64)
    if arr.size == 0:
        return arr
    low, high = int(arr.min()), int(arr.max())
    if high - low <= 0:
        return np.zeros_like(arr)
    scaled = float(MAX_NODE_SCORE) * ((arr - low).astype(np.float64) / float(high - low))
    return scaled.astype(np.int64)


def existing_pods(
    bindings: Iterable[Any], nodes: Sequence[Node], info_of: Callable[[Pod], PodAffinityInfo]
) -> list[ExistingPod]:
    """ExistingPod views of ClusterState bindings."""
    return [ExistingPod(b.pod, info_of(b.pod), nodes[b.node].labels) for b in bindings]
