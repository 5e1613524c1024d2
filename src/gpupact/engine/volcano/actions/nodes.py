"""Node choice shared by the actions: which nodes a task fits, and the best of them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpupact.engine.volcano.resource import ZERO
from gpupact.kube.status import Code, Status

if TYPE_CHECKING:
    from gpupact.engine.volcano.model import NodeInfo, TaskInfo
    from gpupact.engine.volcano.session import Session


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
    """Highest node-order score; upstream picks at random among equals, here the first."""
    if not nodes:
        return None
    if len(nodes) == 1:
        return nodes[0]
    best, best_score = nodes[0], ssn.node_score(task, nodes[0])
    for node in nodes[1:]:
        score = ssn.node_score(task, node)
        if score > best_score:
            best, best_score = node, score
    return best


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
    scored = [(-ssn.node_score(task, n), i, n) for i, n in enumerate(nodes)]
    return [n for _, _, n in sorted(scored, key=lambda x: (x[0], x[1]))]
