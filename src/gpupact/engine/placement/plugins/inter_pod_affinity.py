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

from collections import Counter
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


class FilterState:
    """PreFilter counts for one incoming pod; `update` is upstream's AddPod/RemovePod."""

    __slots__ = ("affinity", "anti_affinity", "existing_anti", "info", "ns_labels", "pod")

    def __init__(self, pod: Pod, info: PodAffinityInfo, ns_labels: NamespaceLabels) -> None:
        self.pod = pod
        self.info = info
        self.ns_labels = ns_labels
        self.existing_anti: Counter[Pair] = Counter()
        self.affinity: Counter[Pair] = Counter()
        self.anti_affinity: Counter[Pair] = Counter()

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
        incoming_ns = self.ns_labels(pod.namespace)
        for term in existing.info.required_anti_affinity:
            if term.matches(pod.namespace, pod.labels, incoming_ns):
                _bump(self.existing_anti, node_labels, term.topology_key, delta)
        other = existing.pod
        other_ns = self.ns_labels(other.namespace)
        terms = self.info.required_affinity
        if terms and all(t.matches(other.namespace, other.labels, other_ns) for t in terms):
            for term in terms:
                _bump(self.affinity, node_labels, term.topology_key, delta)
        for term in self.info.required_anti_affinity:
            if term.matches(other.namespace, other.labels, other_ns):
                _bump(self.anti_affinity, node_labels, term.topology_key, delta)

    def copy(self) -> FilterState:
        other = FilterState(self.pod, self.info, self.ns_labels)
        other.existing_anti = Counter(self.existing_anti)
        other.affinity = Counter(self.affinity)
        other.anti_affinity = Counter(self.anti_affinity)
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


def _bump(counts: Counter[Pair], node_labels: Mapping[str, str], key: str, delta: int) -> None:
    value = node_labels.get(key)
    if value is None:
        return
    pair = (key, value)
    count = counts.get(pair, 0) + delta
    if count == 0:
        counts.pop(pair, None)
    else:
        counts[pair] = count


def prefilter(
    pod: Pod,
    info: PodAffinityInfo,
    existing: Iterable[ExistingPod],
    ns_labels: NamespaceLabels = _default_ns_labels,
) -> FilterState:
    """Counts over every existing pod (upstream visits only pods with required anti-affinity for
    the first map; the others add nothing to it)."""
    state = FilterState(pod, info, ns_labels)
    for other in existing:
        state.update(other, 1)
    return state


# --- Filter: all nodes at once ------------------------------------------------------------


def filter_statuses(state: FilterState, index: Any, n: int) -> np.ndarray:
    """Per node: 0 passes, 1 affinity, 2 anti-affinity, 3 existing anti-affinity (first failing
    check, as Filter). `index` is the ClusterState's LabelIndex."""
    out = np.zeros(n, dtype=np.int8)
    if state.skip:
        return out
    terms = state.info.required_affinity
    if terms:
        missing = np.zeros(n, dtype=np.bool_)
        exists = np.ones(n, dtype=np.bool_)
        for term in terms:
            col = index.column(term.topology_key)
            missing |= col < 0
            exists &= _pair_table(state.affinity, index, term.topology_key)[col + 1] > 0
        self_ok = not state.affinity and state.matches_own_terms()
        fail = missing | (~exists & (not self_ok))
        out[fail] = 1
    if state.anti_affinity:
        fail = np.zeros(n, dtype=np.bool_)
        for term in state.info.required_anti_affinity:
            col = index.column(term.topology_key)
            fail |= _pair_table(state.anti_affinity, index, term.topology_key)[col + 1] > 0
        out[(out == 0) & fail] = 2
    if state.existing_anti:
        fail = np.zeros(n, dtype=np.bool_)
        for (key, value), count in state.existing_anti.items():
            vid = index.value_id(key, value)
            if count > 0 and vid >= 0:
                fail |= index.column(key) == vid
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


def topology_scores(
    pod: Pod,
    info: PodAffinityInfo,
    existing: Iterable[ExistingPod],
    ns_labels: NamespaceLabels = _default_ns_labels,
    hard_pod_affinity_weight: int = DEFAULT_HARD_POD_AFFINITY_WEIGHT,
) -> dict[str, dict[str, int]]:
    """PreScore: topology key -> value -> summed weight. `existing`: every bound pod when the
    pod has preferred terms, else the bound pods that declare any pod (anti-)affinity."""
    scores: dict[str, dict[str, int]] = {}

    def add(term: PodAffinityTerm, weight: int, ns: str, labels: Mapping[str, str], nsl, node):
        if term.matches(ns, labels, nsl):
            value = node.get(term.topology_key)
            if value is not None:
                per = scores.setdefault(term.topology_key, {})
                per[value] = per.get(value, 0) + weight

    incoming_ns = ns_labels(pod.namespace)
    for other in existing:
        node = other.node_labels
        if not node:
            continue
        o = other.pod
        o_ns = ns_labels(o.namespace)
        for wt in info.preferred_affinity:
            add(wt.term, wt.weight, o.namespace, o.labels, o_ns, node)
        for wt in info.preferred_anti_affinity:
            add(wt.term, -wt.weight, o.namespace, o.labels, o_ns, node)
        if hard_pod_affinity_weight > 0:
            for term in other.info.required_affinity:
                add(term, hard_pod_affinity_weight, pod.namespace, pod.labels, incoming_ns, node)
        for wt in other.info.preferred_affinity:
            add(wt.term, wt.weight, pod.namespace, pod.labels, incoming_ns, node)
        for wt in other.info.preferred_anti_affinity:
            add(wt.term, -wt.weight, pod.namespace, pod.labels, incoming_ns, node)
    return scores


def raw_score(scores: Mapping[str, Mapping[str, int]], node_labels: Mapping[str, str]) -> int:
    total = 0
    for key, per_value in scores.items():
        value = node_labels.get(key)
        if value is not None:
            total += per_value.get(value, 0)
    return total


def raw_scores(scores: Mapping[str, Mapping[str, int]], index: Any, n: int) -> np.ndarray:
    out = np.zeros(n, dtype=np.int64)
    for key, per_value in scores.items():
        col = index.column(key)
        out += _pair_table({(key, v): c for v, c in per_value.items()}, index, key)[col + 1]
    return out


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
