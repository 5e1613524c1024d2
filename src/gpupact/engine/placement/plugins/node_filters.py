"""NodeUnschedulable, NodeName, TaintToleration and NodeAffinity for all nodes at once: the
static part of the filter chain (it changes only when nodes change), plus the raw inputs of
the TaintToleration and NodeAffinity scores.

Taints are evaluated once per distinct taint set with gpupact.kube.taints' scalar functions and
broadcast; node affinity goes through the label tables of `labels.py`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from gpupact.cluster.state import ClusterState
from gpupact.kube.selectors import NodeSelectorTerm, RequiredNodeAffinity
from gpupact.kube.status import Code, Status
from gpupact.kube.taints import (
    NO_SCHEDULE,
    REASON_UNTOLERATED,
    Taint,
    Toleration,
    count_intolerable_prefer_no_schedule,
    do_not_schedule_taint,
    find_untolerated_taint,
    prefer_no_schedule_tolerations,
    tolerations_tolerate_taint,
)
from gpupact.kube.taints import (
    PLUGIN_NAME as TAINT_PLUGIN,
)

from .labels import required_affinity_mask, term_mask

UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", NO_SCHEDULE)
REASON_NODE_UNSCHEDULABLE = "node(s) were unschedulable"
REASON_NODE_NAME = "node(s) didn't match the requested node name"
REASON_NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"

UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
STATUS_UNSCHEDULABLE = Status(UNRESOLVABLE, (REASON_NODE_UNSCHEDULABLE,), "NodeUnschedulable")
STATUS_NODE_NAME = Status(UNRESOLVABLE, (REASON_NODE_NAME,), "NodeName")
STATUS_TAINT = Status(UNRESOLVABLE, (REASON_UNTOLERATED,), TAINT_PLUGIN)
STATUS_NODE_AFFINITY = Status(UNRESOLVABLE, (REASON_NODE_AFFINITY,), "NodeAffinity")
# codes of `NodeChecks.codes`, in filter order
PASS, UNSCHEDULABLE, NODE_NAME, TAINT, AFFINITY = range(5)
STATUSES = (None, STATUS_UNSCHEDULABLE, STATUS_NODE_NAME, STATUS_TAINT, STATUS_NODE_AFFINITY)


@dataclass(eq=False, slots=True)
class NodeChecks:
    """The first failing of the four plugins per node (0: all pass), what the pod's
    TaintToleration / NodeAffinity see on every node regardless of order (PodTopologySpread's
    node-inclusion policies need them) and the raw score inputs."""

    codes: np.ndarray
    untolerated: list[Taint | None]  # per distinct taint set
    taints_ok: np.ndarray
    affinity_ok: np.ndarray
    prefer_no_schedule: np.ndarray | None  # None: zero on every node
    preferred_affinity: np.ndarray | None  # None: the pod has no preferred terms


def evaluate(
    state: ClusterState,
    node_name: str,
    tolerations: Sequence[Toleration],
    required: RequiredNodeAffinity,
    preferred: Sequence[tuple[int, NodeSelectorTerm]],
) -> NodeChecks:
    n = state.num_nodes
    codes = np.zeros(n, dtype=np.int8)
    if not tolerations_tolerate_taint(tolerations, UNSCHEDULABLE_TAINT):
        codes[state.unschedulable] = UNSCHEDULABLE
    if node_name:
        wrong = np.ones(n, dtype=np.bool_)
        row = state.node_index.get(node_name)
        if row is not None:
            wrong[row] = False
        codes[(codes == PASS) & wrong] = NODE_NAME
    untolerated = [
        find_untolerated_taint(taints, tolerations, do_not_schedule_taint)
        for taints in state.taint_sets
    ]
    set_ok = np.array([t is None for t in untolerated], dtype=np.bool_)
    taints_ok = set_ok[state.taint_set] if n else np.zeros(0, dtype=np.bool_)
    codes[(codes == PASS) & ~taints_ok] = TAINT
    affinity_ok = required_affinity_mask(state, required)
    codes[(codes == PASS) & ~affinity_ok] = AFFINITY

    prefer = prefer_no_schedule_tolerations(tolerations)
    counts = np.array(
        [count_intolerable_prefer_no_schedule(taints, prefer) for taints in state.taint_sets],
        dtype=np.int64,
    )
    prefer_raw = counts[state.taint_set] if counts.any() else None
    preferred_raw = None
    if preferred:
        preferred_raw = np.zeros(n, dtype=np.int64)
        for weight, term in preferred:
            preferred_raw += np.where(term_mask(state, term), weight, 0)
    return NodeChecks(codes, untolerated, taints_ok, affinity_ok, prefer_raw, preferred_raw)


def normalize_reversed(raw: np.ndarray) -> np.ndarray:
    """DefaultNormalizeScore(100, reverse=true): 100 - 100 * s / max (all 100 if max is 0)."""
    high = int(raw.max()) if raw.size else 0
    if high == 0:
        return np.full(raw.shape, 100, dtype=np.int64)
    return 100 - 100 * raw // high


def normalize(raw: np.ndarray) -> np.ndarray:
    """DefaultNormalizeScore(100, reverse=false): 100 * s / max (unchanged if max is 0)."""
    high = int(raw.max()) if raw.size else 0
    if high == 0:
        return raw.copy()
    return 100 * raw // high
