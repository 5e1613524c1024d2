"""Does a pod fit a node, apart from free resources? The one seam between the session
models and the node filters, so a vectorised cluster view can replace it later.

It runs kube-scheduler's own filter chain (`gpupact.engine.placement.framework.filter_node`:
cordon, nodeName, taints, node affinity / selector, resource fit) against an *empty* copy of
the node: only requests larger than the node's whole allocatable fail the resource part,
which upstream marks unresolvable. Whether the pod fits the resources still free now (or
after releases) is each action's own comparison on the session's accounting.
"""

from __future__ import annotations

from gpupact.engine.placement.framework import filter_node
from gpupact.kube.objects import Node, Pod
from gpupact.kube.requests import NodeResources, scheduler_view
from gpupact.kube.status import Status


def static_fit(pod: Pod, node: Node) -> Status:
    # allowed_pods >= 1: pod counts are the caller's business (upstream counts them apart)
    resources = NodeResources(
        allocatable=scheduler_view(node.allocatable),
        allowed_pods=max(1, node.allocatable.get("pods", 0)),
    )
    return filter_node(pod, node, resources, None).status
