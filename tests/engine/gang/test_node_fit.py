"""The gang sessions' node check on a node without other pods is the filter chain's static
part, the same implementation filter_node runs first (the scalar path and every-node-at-once
path agree); free resources are not its business."""

from __future__ import annotations

from typing import Any

import pytest

from gpupact.engine.placement.framework import (
    REASON_NODE_AFFINITY,
    REASON_NODE_NAME,
    REASON_NODE_UNSCHEDULABLE,
    ClusterView,
    filter_node,
    filter_node_static,
)
from gpupact.engine.placement.session_filters import SessionFilters
from gpupact.kube.objects import Node, Pod, parse_node, parse_pod
from gpupact.kube.status import Code


def static_fit(the_pod: Pod, the_node: Node):
    filters = SessionFilters([the_node])
    status = filters.status(the_pod, the_node)
    assert filters.codes(the_pod).status(0) == status
    return status


def node(name: str = "n1", *, labels=None, taints=None, cordoned: bool = False) -> Node:
    spec: dict[str, Any] = {"unschedulable": cordoned}
    if taints:
        spec["taints"] = taints
    return parse_node(
        {
            "metadata": {"name": name, "labels": labels or {}},
            "spec": spec,
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "10"}},
        }
    )


def pod(*, cpu: str = "1", **spec: Any) -> Pod:
    body = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}], **spec}
    return parse_pod({"metadata": {"name": "p"}, "spec": body})


NO_SCHEDULE = {"key": "workload", "value": "online-infer", "effect": "NoSchedule"}
TOLERATE = {"key": "workload", "operator": "Equal", "value": "online-infer"}
ZONE_AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
            ]
        }
    }
}

CASES = [
    # (node, pod, failing plugin or None, reason)
    (node(cordoned=True), pod(), "NodeUnschedulable", REASON_NODE_UNSCHEDULABLE),
    (
        node(cordoned=True),
        pod(tolerations=[{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]),
        None,
        None,
    ),
    (node(), pod(nodeName="n2"), "NodeName", REASON_NODE_NAME),
    (node(), pod(nodeName="n1"), None, None),
    (node(taints=[NO_SCHEDULE]), pod(), "TaintToleration", None),
    (node(taints=[NO_SCHEDULE]), pod(tolerations=[TOLERATE]), None, None),
    (node(labels={"zone": "b"}), pod(affinity=ZONE_AFFINITY), "NodeAffinity", REASON_NODE_AFFINITY),
    (node(labels={"zone": "a"}), pod(nodeSelector={"zone": "b"}), "NodeAffinity", None),
    (node(labels={"zone": "a"}), pod(affinity=ZONE_AFFINITY), None, None),
    # cordon is checked before the taint, as in the chain's order
    (node(cordoned=True, taints=[NO_SCHEDULE]), pod(), "NodeUnschedulable", None),
]


@pytest.mark.parametrize(("the_node", "the_pod", "plugin", "reason"), CASES)
def test_static_fit_is_the_static_part_of_the_chain(the_node, the_pod, plugin, reason):
    status = static_fit(the_pod, the_node)
    verdict = filter_node_static(the_pod, the_node)
    assert status == verdict.status
    if plugin is None:
        assert status.ok
        return
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.plugin == plugin
    if reason is not None:
        assert status.reasons == (reason,)
    # filter_node stops at the same filter with the same verdict
    view = ClusterView([the_node])
    assert filter_node(the_pod, the_node, view.node_resources[the_node.name], None) == verdict


def test_free_resources_are_not_judged():
    huge = pod(cpu="1000")
    the_node = node()
    assert static_fit(huge, the_node).ok
    view = ClusterView([the_node])
    full = filter_node(huge, the_node, view.node_resources["n1"], None)
    assert full.status.plugin == "NodeResourcesFit"


def test_gpu_pod_on_a_node_without_gpus_passes_the_static_part():
    # devices and extended resources are the sessions' accounting, not the static filters
    gpu_pod = parse_pod(
        {
            "metadata": {"name": "g"},
            "spec": {
                "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "1"}}}]
            },
        }
    )
    assert static_fit(gpu_pod, node()).ok
