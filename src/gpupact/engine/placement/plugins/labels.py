"""Label requirements and node selectors evaluated for all nodes at once.

A requirement on key k becomes a lookup table over k's value ids (slot 0: the node lacks k),
filled with the scalar `Requirement.matches` semantics; the node mask is `table[column + 1]`.
Set operators fill the table from the ids of their values; every other operator (Gt, Lt, an
unknown one) asks the scalar rule once per distinct value, so the two paths cannot disagree.
"""

from __future__ import annotations

import numpy as np

from gpupact.cluster.state import ClusterState, LabelIndex
from gpupact.kube.selectors import (
    DOES_NOT_EXIST,
    EQUALS,
    EXISTS,
    IN,
    NODE_NAME_FIELD,
    NOT_IN,
    FieldRequirement,
    NodeSelector,
    NodeSelectorTerm,
    RequiredNodeAffinity,
    Requirement,
)


def requirement_table(index: LabelIndex, req: Requirement) -> np.ndarray:
    """bool[V + 1]: slot 0 for "key absent", slot v + 1 for value id v."""
    values = index.values.get(req.key, [])
    ids = index.ids.get(req.key, {})
    table = np.zeros(len(values) + 1, dtype=np.bool_)
    op = req.operator
    if op in (IN, EQUALS, NOT_IN):
        for value in req.values:
            vid = ids.get(value)
            if vid is not None:
                table[vid + 1] = True
        if op == NOT_IN:
            table = ~table  # absent keys match NotIn
        return table
    if op == EXISTS:
        table[1:] = True
        return table
    if op == DOES_NOT_EXIST:
        table[0] = True
        return table
    table[0] = req.matches({})
    for vid, value in enumerate(values):
        table[vid + 1] = req.matches({req.key: value})
    return table


def requirement_mask(index: LabelIndex, req: Requirement) -> np.ndarray:
    return requirement_table(index, req)[index.column(req.key) + 1]


def label_equals_mask(index: LabelIndex, key: str, value: str) -> np.ndarray:
    vid = index.value_id(key, value)
    if vid < 0:
        return np.zeros(index.size, dtype=np.bool_)
    return index.column(key) == vid


def _field_mask(state: ClusterState, req: FieldRequirement) -> np.ndarray:
    n = state.num_nodes
    if len(req.values) != 1:
        return np.zeros(n, dtype=np.bool_)
    if req.key != NODE_NAME_FIELD:
        # any other field reads as "" upstream: a constant answer for every node
        return np.full(n, req.matches(""), dtype=np.bool_)
    mask = np.zeros(n, dtype=np.bool_)
    row = state.node_index.get(req.values[0])
    if row is not None:
        mask[row] = True
    if req.operator == NOT_IN:
        return ~mask
    if req.operator == IN:
        return mask
    return np.zeros(n, dtype=np.bool_)


def term_mask(state: ClusterState, term: NodeSelectorTerm) -> np.ndarray:
    """A NodeSelectorTerm (requirements ANDed); empty or invalid terms match no node."""
    if term.empty or term.issues:
        return np.zeros(state.num_nodes, dtype=np.bool_)
    mask = np.ones(state.num_nodes, dtype=np.bool_)
    for req in term.match_expressions:
        mask &= requirement_mask(state.labels, req)
    for freq in term.match_fields:
        mask &= _field_mask(state, freq)
    return mask


def node_selector_mask(state: ClusterState, selector: NodeSelector) -> np.ndarray:
    """Terms ORed (no term: no node)."""
    mask = np.zeros(state.num_nodes, dtype=np.bool_)
    for term in selector.terms:
        mask |= term_mask(state, term)
    return mask


def required_affinity_mask(state: ClusterState, affinity: RequiredNodeAffinity) -> np.ndarray:
    """GetRequiredNodeAffinity(pod).Match for every node: nodeSelector AND required terms."""
    mask = np.ones(state.num_nodes, dtype=np.bool_)
    for key, value in affinity.node_selector:
        mask &= label_equals_mask(state.labels, key, value)
    if affinity.required is not None:
        mask &= node_selector_mask(state, affinity.required)
    return mask
