"""Does a pod fit a node, apart from free resources? The one seam between the session
models and the node filters, so a vectorised cluster view can replace it later.

It runs the static part of kube-scheduler's filter chain
(`gpupact.engine.placement.framework.filter_node_static`: cordon, nodeName, taints, node
affinity / selector), as Volcano's `predicates` plugin does. Resources are each action's own
comparison on the session's accounting (idle, or future idle after releases), as upstream.
"""

from __future__ import annotations

from gpupact.engine.placement.framework import filter_node_static
from gpupact.kube.objects import Node, Pod
from gpupact.kube.status import Status


def static_fit(pod: Pod, node: Node) -> Status:
    return filter_node_static(pod, node).status
