"""kube-scheduler's default filter chain, one node at a time (the explaining path).

Plugins run in the default profile's order and a node stops at its first failing plugin,
as upstream's RunFilterPlugins does. This scalar path explains a single pod (`fit`,
`diagnose`); the vectorised engine must agree with it node for node.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from gpupact.engine.placement.reasons import fit_error_message
from gpupact.kube import topology_spread as pts
from gpupact.kube.objects import Node, Pod
from gpupact.kube.requests import NodeResources, scheduler_view
from gpupact.kube.resources_fit import (
    InsufficientResource,
    compute_fit_request,
    fit_status,
    fits_request,
)
from gpupact.kube.status import SUCCESS, Code, Status
from gpupact.kube.taints import (
    NO_SCHEDULE,
    Taint,
    do_not_schedule_taint,
    find_untolerated_taint,
    taint_toleration_filter,
    tolerations_tolerate_taint,
)

UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", NO_SCHEDULE)
REASON_NODE_UNSCHEDULABLE = "node(s) were unschedulable"
REASON_NODE_NAME = "node(s) didn't match the requested node name"
REASON_NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"

# default-profile filter plugins, in upstream order (volume and port plugins: nothing to
# check for pods without host ports or volumes in a snapshot; not modelled yet)
FILTER_PLUGINS = (
    "NodeUnschedulable",
    "NodeName",
    "TaintToleration",
    "NodeAffinity",
    "NodeResourcesFit",
    "PodTopologySpread",
)


@dataclass(frozen=True, slots=True)
class NodeVerdict:
    """One node's answer for the pod: the failing plugin's status (or success) and a
    human detail naming the exact taint or shortfall."""

    node: str
    status: Status
    detail: str = ""
    insufficient: tuple[InsufficientResource, ...] = ()

    @property
    def fits(self) -> bool:
        return self.status.ok


@dataclass(frozen=True, slots=True)
class FitResult:
    pod: str
    verdicts: tuple[NodeVerdict, ...]
    message: str = ""  # the FitError line; empty when some node fits

    @property
    def feasible(self) -> tuple[str, ...]:
        return tuple(v.node for v in self.verdicts if v.fits)


@dataclass
class ClusterView:
    """Nodes and the pods bound to them, with per-node resource sums ready for filtering."""

    nodes: Sequence[Node]
    pods: Sequence[Pod] = ()
    node_resources: dict[str, NodeResources] = field(init=False)

    def __post_init__(self) -> None:
        self.node_resources = {}
        for node in self.nodes:
            alloc = dict(node.allocatable)
            self.node_resources[node.name] = NodeResources(
                allocatable=scheduler_view(alloc), allowed_pods=alloc.get("pods", 0)
            )
        for pod in self.pods:
            res = self.node_resources.get(pod.node_name)
            if res is not None and pod.holds_resources:
                res.add_pod(pod.footprint())




def filter_node(
    pod: Pod, node: Node, resources: NodeResources, spread: pts.PreFilterState | None
) -> NodeVerdict:
    if node.unschedulable and not tolerations_tolerate_taint(pod.tolerations, UNSCHEDULABLE_TAINT):
        status = Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON_NODE_UNSCHEDULABLE,), "NodeUnschedulable"
        )
        return NodeVerdict(node.name, status, "spec.unschedulable is true (cordoned)")
    if pod.node_name and pod.node_name != node.name:
        status = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON_NODE_NAME,), "NodeName")
        return NodeVerdict(node.name, status, f"pod asks for node {pod.node_name}")
    status = taint_toleration_filter(node.taints, pod.tolerations)
    if not status.ok:
        taint = find_untolerated_taint(node.taints, pod.tolerations, do_not_schedule_taint)
        detail = f"untolerated taint {taint}" if taint else ""
        return NodeVerdict(node.name, status, detail)
    if not pod.required_node_affinity.matches(node.name, node.labels):
        status = Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON_NODE_AFFINITY,), "NodeAffinity"
        )
        return NodeVerdict(node.name, status, "nodeSelector / required node affinity")
    short = fits_request(compute_fit_request(pod.resources, pod_level_resources=True), resources)
    if short:
        detail = "; ".join(
            f"{r.resource_name} {r.requested} requested, {r.used}/{r.capacity} used"
            for r in short
        )
        return NodeVerdict(node.name, fit_status(short), detail, tuple(short))
    if spread is not None:
        status = pts.filter_node(spread, node)
        if not status.ok:
            return NodeVerdict(node.name, status, "topology spread constraint")
    return NodeVerdict(node.name, SUCCESS)


def explain_fit(pod: Pod, cluster: ClusterView, nodes: Iterable[Node] | None = None) -> FitResult:
    """Run the filter chain for `pod` on every node; the FitError line when none fits."""
    candidates = list(cluster.nodes if nodes is None else nodes)
    spread = None
    if pod.topology_spread_constraints:
        spread = pts.prefilter(pod, cluster.nodes, [p for p in cluster.pods if p.holds_resources])
    verdicts = tuple(
        filter_node(pod, n, cluster.node_resources[n.name], spread) for n in candidates
    )
    message = ""
    if not any(v.fits for v in verdicts):
        message = fit_error_message(len(candidates), {v.node: v.status for v in verdicts})
    return FitResult(pod.key, verdicts, message)


def node_statuses(result: FitResult) -> Mapping[str, Status]:
    return {v.node: v.status for v in result.verdicts}
