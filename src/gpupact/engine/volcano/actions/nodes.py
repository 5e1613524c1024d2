"""Node choice shared by the actions: which nodes a task fits, and the best of them."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from gpupact.engine.volcano.resource import ZERO
from gpupact.kube.status import Code, Status

if TYPE_CHECKING:
    from gpupact.engine.volcano.framework import Session
    from gpupact.engine.volcano.model import NodeInfo, TaskInfo


def fits_future_idle(task: TaskInfo, node: NodeInfo) -> Status:
    """The allocate action's own resource check: the task fits what is idle or being
    released on the node and not yet promised to a pipelined task."""
    short = task.init_resreq.exceeding(node.future_idle(), ZERO)
    if short:
        return Status(Code.UNSCHEDULABLE, tuple(f"Insufficient {r}" for r in short), "allocate")
    return Status()


def feasible_nodes(
    ssn: Session, task: TaskInfo, nodes: list[NodeInfo]
) -> tuple[list[NodeInfo], dict[str, Status]]:
    """Nodes passing the resource check and the session's predicates, and why the others
    did not (node name -> status)."""
    fit: list[NodeInfo] = []
    errors: dict[str, Status] = {}
    for node in nodes:
        status = fits_future_idle(task, node)
        if status.ok:
            status = ssn.predicate(task, node)
        if status.ok:
            fit.append(node)
        else:
            errors[node.name] = status
    return fit, errors


def best_node(ssn: Session, task: TaskInfo, nodes: list[NodeInfo]) -> NodeInfo | None:
    """Highest node-order score over these candidates (a single candidate is taken without
    scoring, as upstream); upstream picks at random among equals, here the first."""
    if not nodes:
        return None
    if len(nodes) == 1:
        return nodes[0]
    return nodes[int(np.argmax(ssn.node_order_scores(task, nodes)))]


def prioritize(ssn: Session, task: TaskInfo, nodes: list[NodeInfo]) -> NodeInfo | None:
    """Nodes with enough idle resources first; only when there is none, nodes where the
    task fits once releasing pods are gone."""
    idle = [n for n in nodes if task.init_resreq.less_equal(n.idle, ZERO)]
    if idle:
        return best_node(ssn, task, idle)
    future = [n for n in nodes if task.init_resreq.less_equal(n.future_idle(), ZERO)]
    return best_node(ssn, task, future)


def sorted_by_score(ssn: Session, task: TaskInfo, nodes: list[NodeInfo]) -> list[NodeInfo]:
    """Highest score first; equal scores keep the input order."""
    if not nodes:
        return []
    order = np.argsort(-ssn.node_order_scores(task, nodes), kind="stable")
    return [nodes[i] for i in order.tolist()]


# --- every node at once (the allocate action's hot path) ----------------------------------


def feasible_rows(ssn: Session, task: TaskInfo) -> tuple[np.ndarray, Callable[[], dict]]:
    """`feasible_nodes` over the whole node list as node rows, with the refusals built only
    when asked for (node name -> status). Vectorised when the session and its predicate
    plugins allow it, else one node at a time (the same answers)."""
    nodes = ssn.node_list
    answer = ssn.predicate_all(task) if ssn.vectorised else None
    if answer is None:
        fit, errors = feasible_nodes(ssn, task, nodes)
        return np.array([n.row for n in fit], dtype=np.intp), lambda: errors
    resources = ssn.table.fits(task.init_resreq, future=True)
    ok = resources & answer.ok

    def errors() -> dict[str, Status]:
        out: dict[str, Status] = {}
        for row in np.flatnonzero(~ok).tolist():
            node = nodes[row]
            out[node.name] = (
                fits_future_idle(task, node) if not resources[row] else answer.status(row)
            )
        return out

    return np.flatnonzero(ok), errors


def prioritize_rows(ssn: Session, task: TaskInfo, rows: np.ndarray) -> NodeInfo | None:
    """`prioritize` over node rows."""
    nodes = ssn.node_list
    if not ssn.vectorised:
        return prioritize(ssn, task, [nodes[r] for r in rows.tolist()])
    table = ssn.table
    idle = rows[table.fits(task.init_resreq, future=False)[rows]]
    chosen = idle if idle.size else rows[table.fits(task.init_resreq, future=True)[rows]]
    if chosen.size <= 1:  # one candidate is taken without scoring, as upstream
        return nodes[int(chosen[0])] if chosen.size else None
    scores = ssn.node_order_scores_rows(task, chosen)
    return nodes[int(chosen[int(np.argmax(scores))])]
