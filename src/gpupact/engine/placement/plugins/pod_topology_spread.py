"""PodTopologySpread over all nodes: the Filter reads gpupact.kube.topology_spread's
PreFilterState (kept up to date with add_pod/remove_pod), the Score follows upstream scoring.go.

Score (ScheduleAnyway constraints): for the nodes being scored that carry every constraint key,
each non-hostname constraint counts matching pods per domain over all nodes that pass the
constraint's node-inclusion policies; hostname constraints count the node's own pods. A node
scores sum(count * log(domains + 2) + maxSkew - 1) over the constraints whose key it has,
rounded half away from zero; NormalizeScore maps it to 100 * (max + min - s) / max (0 for nodes
missing a key; 100 for all when max is 0).

System defaults (defaultingType System): a pod without constraints of its own is scored with
hostname maxSkew 3 and zone maxSkew 5 (ScheduleAnyway) over the selector helper.DefaultSelector
builds from the Services / ReplicationController / ReplicaSet / StatefulSet in the cluster
(gpupact.kube.scheduling_objects), and none when that selector is empty. With system defaults
upstream does not require every topology key on a node (requireAllTopologies false): a node
without the zone label is scored by its hostname alone and its missing zone counts as the
domain "" (a pair (zone, "")).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace

import numpy as np

from gpupact.kube import topology_spread as pts
from gpupact.kube.objects import Pod
from gpupact.kube.scheduling_objects import SchedulingObjects
from gpupact.kube.status import SUCCESS, Code, Status

# the statuses gpupact.kube.topology_spread.filter_node returns
SKEW_STATUS = Status(Code.UNSCHEDULABLE, (pts.REASON_CONSTRAINTS_NOT_MATCH,), pts.PLUGIN)
MISSING_STATUS = Status(
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (pts.REASON_NODE_LABEL_NOT_MATCH,), pts.PLUGIN
)
FILTER_STATUSES = (SUCCESS, MISSING_STATUS, SKEW_STATUS)
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
MAX_NODE_SCORE = 100
# upstream systemDefaultConstraints, in its order
SYSTEM_DEFAULTS = ((HOSTNAME, 3), (ZONE, 5))


class CountColumns:
    """Per hard constraint, the PreFilter state's domain counts as an int64 column over the
    key's value ids (slot 0: nodes lacking the key), kept in step through the state's watcher,
    so Filter is one lookup per constraint instead of a walk over every domain."""

    __slots__ = ("index", "keys", "tables")

    def __init__(self, state: pts.PreFilterState, index, *, watch: bool = True) -> None:
        self.index = index
        self.keys = [c.topology_key for c in state.constraints]
        self.tables = []
        for i, key in enumerate(self.keys):
            table = np.zeros(len(index.values.get(key, [])) + 1, dtype=np.int64)
            for value, count in state.match_counts(i).items():
                vid = index.value_id(key, value)
                if vid >= 0:
                    table[vid + 1] = count
            self.tables.append(table)
        if watch:
            state.watch(self.update)

    def update(self, i: int, value: str, count: int) -> None:
        vid = self.index.value_id(self.keys[i], value)
        if vid >= 0:
            self.tables[i][vid + 1] = count


def filter_codes(
    state: pts.PreFilterState, index, n: int, columns: CountColumns | None = None
) -> np.ndarray:
    """Per node: 0 passes, 1 a constraint key is missing, 2 skew too large; the first failing
    constraint decides, as Filter. `columns`: the state's count columns on this index."""
    out = np.zeros(n, dtype=np.int8)
    if state.skip:
        return out
    if columns is None or columns.index is not index:
        columns = CountColumns(state, index, watch=False)
    for i, c in enumerate(state.constraints):
        col = index.column(c.topology_key)
        skew = columns.tables[i][col + 1] + state.self_match[i] - state.global_min(i)
        undecided = out == 0
        out[undecided & (col < 0)] = 1
        out[undecided & (col >= 0) & (skew > c.max_skew)] = 2
    return out


def soft_constraints(pod: Pod) -> tuple[pts.HardConstraint, ...]:
    """The pod's ScheduleAnyway constraints with upstream defaults applied: the kube module
    builds them for DoNotSchedule ones, so the actions are swapped before asking it."""
    soft = tuple(
        replace(c, when_unsatisfiable=pts.DO_NOT_SCHEDULE)
        for c in pod.topology_spread_constraints
        if c.when_unsatisfiable == pts.SCHEDULE_ANYWAY
    )
    return _as_hard(pod, soft)


def scoring_constraints(
    pod: Pod, objects: SchedulingObjects | None = None
) -> tuple[tuple[pts.HardConstraint, ...], bool]:
    """(the constraints PreScore uses, requireAllTopologies): the pod's own ScheduleAnyway
    constraints, or for a pod with no constraint at all the system defaults over
    helper.DefaultSelector (none when it is empty)."""
    if pod.topology_spread_constraints:
        return soft_constraints(pod), True
    selector = objects.default_selector(pod) if objects else None
    if selector is None:
        return (), True
    defaults = tuple(
        pts.TopologySpreadConstraint(skew, key, pts.DO_NOT_SCHEDULE, selector)
        for key, skew in SYSTEM_DEFAULTS
    )
    return _as_hard(pod, defaults), False


def _as_hard(
    pod: Pod, soft: tuple[pts.TopologySpreadConstraint, ...]
) -> tuple[pts.HardConstraint, ...]:
    if not soft:
        return ()
    incoming = pts.IncomingPod(
        namespace=pod.namespace,
        labels=pod.labels,
        topology_spread_constraints=soft,
        required_node_affinity=pod.required_node_affinity,
        tolerations=tuple(pod.tolerations),
    )
    return pts.hard_constraints(incoming)


def go_round(values: np.ndarray) -> np.ndarray:
    """math.Round (half away from zero) on float64, exactly."""
    whole = np.trunc(values)
    bump = np.abs(values - whole) >= 0.5
    return (whole + np.where(bump, np.sign(values), 0.0)).astype(np.int64)


def score(
    constraints: Sequence[pts.HardConstraint],
    index,
    scored: np.ndarray,
    node_counts: Callable[[pts.HardConstraint], np.ndarray],
    affinity_ok: np.ndarray,
    taints_ok: np.ndarray,
    active: np.ndarray,
    require_all_topologies: bool = True,
) -> np.ndarray:
    """Normalised 0..100 scores for the nodes `scored` (node indices). `node_counts(c)`:
    matching pods per node (all nodes) for constraint c; `affinity_ok` / `taints_ok`: the
    pod's required node affinity / NoSchedule-NoExecute toleration per node.
    `require_all_topologies` False (system defaults): nodes lacking a key are kept, the
    missing value counting as the domain ""."""
    n = active.shape[0]
    cols = [_domain_column(index, c.topology_key, require_all_topologies) for c in constraints]
    has_all = np.ones(n, dtype=np.bool_)
    if require_all_topologies:
        for col in cols:
            has_all &= col >= 0
    scored_ok = has_all[scored]
    kept = scored[scored_ok]
    raw = np.zeros(scored.shape[0], dtype=np.float64)
    for c, col in zip(constraints, cols, strict=True):
        counts = node_counts(c)
        if c.topology_key == HOSTNAME:
            size = kept.shape[0]
            per_node = counts[scored]
        else:
            domains = np.unique(col[kept])
            size = domains.shape[0]
            eligible = active & has_all
            if c.honor_affinity:
                eligible &= affinity_ok
            if c.honor_taints:
                eligible &= taints_ok
            in_domain = np.zeros(len(index.values.get(c.topology_key, [])) + 2, dtype=np.bool_)
            in_domain[domains + 1] = True
            eligible &= in_domain[col + 1]
            totals = np.zeros(in_domain.shape[0], dtype=np.int64)
            np.add.at(totals, col[eligible] + 1, counts[eligible])
            per_node = totals[col[scored] + 1]
        weight = math.log(float(size + 2))
        term = per_node.astype(np.float64) * weight + float(c.max_skew - 1)
        has_key = index.column(c.topology_key)[scored] >= 0  # Score adds only keys it has
        raw = raw + np.where(has_key, term, 0.0)
    ints = go_round(raw)
    out = np.zeros(scored.shape[0], dtype=np.int64)
    if not scored_ok.any():
        return out
    valid = ints[scored_ok]
    low, high = int(valid.min()), int(valid.max())
    if high == 0:
        out[scored_ok] = MAX_NODE_SCORE
        return out
    out[scored_ok] = MAX_NODE_SCORE * (high + low - valid) // high
    return out


def _domain_column(index, key: str, require_all: bool) -> np.ndarray:
    """The key's value ids per node; without requireAllTopologies a node lacking the key is
    in the domain "" (the id of an explicit "" value, else one id past the key's values)."""
    col = index.column(key)
    if require_all:
        return col
    missing = index.value_id(key, "")
    if missing < 0:
        missing = len(index.values.get(key, []))
    return np.where(col < 0, missing, col).astype(np.int32)


def count_matching(
    constraint: pts.HardConstraint, namespace: str, pods: Iterable[tuple[int, Pod]], n: int
) -> np.ndarray:
    """countPodsMatchSelector per node (namespace, not terminating, selector)."""
    out = np.zeros(n, dtype=np.int64)
    if not constraint.counts_existing:
        return out
    for node, pod in pods:
        if pod.namespace == namespace and not pod.terminating and constraint.matches(pod.labels):
            out[node] += 1
    return out
