"""Who is who in a snapshot: a pod's workload class, a node's pool, its GPUs as labelled.

Classes follow Table 43-1 (online-infer, burst, fine-tune, batch). A pod's class comes from
the label the compiler writes (`gpupact.io/class`), else from its PriorityClass name (the
compiler names PriorityClasses `<class>` or `<class>-<business priority>`), else it is
unknown. A class is online when its latency tier is seconds and it is not preemptible (the
contract's definition; the chapter's defaults without a contract).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from gpupact.cluster.devices import (
    GPU_RESOURCE,
    LABEL_GPU_COUNT,
    LABEL_GPU_MODEL,
    LABEL_GPU_PRODUCT,
    MIG_RESOURCE_PREFIX,
)
from gpupact.contract.keys import LABEL_CLASS, LABEL_COST_CENTRE, LABEL_OWNER
from gpupact.contract.schema import KNOWN_CLASSES, Contract
from gpupact.kube.objects import Node, Pod

# where a node names its pool: the chapter's label first, then the common provisioners'
POOL_LABELS = (
    "nodepool",
    "karpenter.sh/nodepool",
    "cloud.google.com/gke-nodepool",
    "eks.amazonaws.com/nodegroup",
    "kubernetes.azure.com/agentpool",
)
LABEL_GPU_PRESENT = "nvidia.com/gpu.present"
WORKLOAD_TAINT_KEY = "workload"
INFERENCE_POOL = "gpu-inference"


class Roles:
    """Class and pool lookups, from the contract when given, else the chapter's defaults."""

    def __init__(self, contract: Contract | None = None) -> None:
        self.contract = contract
        if contract is not None:
            self.online_classes = frozenset(c.name for c in contract.classes if c.online)
            self.classes = frozenset(c.name for c in contract.classes)
            self.online_pools = frozenset(
                p.name for p in contract.pools if p.classes and p.classes[0] in self.online_classes
            )
        else:
            self.online_classes = frozenset(
                name
                for name, spec in KNOWN_CLASSES.items()
                if spec["latency"] == "seconds" and not spec["preemptible"]
            )
            self.classes = frozenset(KNOWN_CLASSES)
            self.online_pools = frozenset({INFERENCE_POOL})
        # longest names first, so "online-infer-high" is not read as a class "online"
        self._by_length = sorted(self.classes, key=len, reverse=True)

    # --- pods -------------------------------------------------------------------------------

    def pod_class(self, pod: Pod) -> str:
        labelled = pod.labels.get(LABEL_CLASS)
        if labelled:
            return labelled
        return self.class_of_priority_class(pod.priority_class_name)

    def class_of_priority_class(self, name: str) -> str:
        if not name:
            return ""
        for klass in self._by_length:
            if name == klass or name.startswith(klass + "-"):
                return klass
        return ""

    def is_online(self, pod: Pod) -> bool:
        return self.pod_class(pod) in self.online_classes

    def is_offline(self, pod: Pod) -> bool:
        """Known to be batch / fine-tune (or another non-online class)."""
        klass = self.pod_class(pod)
        return bool(klass) and klass not in self.online_classes

    # --- nodes ------------------------------------------------------------------------------

    def node_pool(self, node: Node) -> str:
        for key in POOL_LABELS:
            value = node.labels.get(key)
            if value:
                return value
        return ""

    def is_online_pool_node(self, node: Node) -> bool:
        pool = self.node_pool(node)
        if pool and pool in self.online_pools:
            return True
        return node.labels.get(WORKLOAD_TAINT_KEY, "") in self.online_classes

    def expected_gpus(self, node: Node) -> int | None:
        """How many GPUs the node should advertise, from what is known about its hardware:
        GPU feature discovery's count label, kubelet's capacity, the contract's pool; 1 when it
        is only known to have some (a GPU model label); None for a node without GPUs."""
        count = node.labels.get(LABEL_GPU_COUNT, "")
        if count.isdigit() and int(count) > 0:
            return int(count)
        capacity = node.capacity.get(GPU_RESOURCE, 0)
        if capacity > 0:
            return capacity
        pool = self.node_pool(node)
        if self.contract is not None and pool:
            spec = next((p for p in self.contract.pools if p.name == pool), None)
            if spec is not None:
                return spec.gpu.per_node
        if (
            node.labels.get(LABEL_GPU_MODEL)
            or node.labels.get(LABEL_GPU_PRODUCT)
            or node.labels.get(LABEL_GPU_PRESENT) == "true"
        ):
            return 1
        return None


def allocatable_gpus(node: Node) -> int:
    return node.allocatable.get(GPU_RESOURCE, 0)


def has_mig(node: Node) -> bool:
    return any(r.startswith(MIG_RESOURCE_PREFIX) and v > 0 for r, v in node.allocatable.items())


def gpu_lost(roles: Roles, node: Node) -> tuple[int, int] | None:
    """(expected, allocatable) for a Ready node advertising fewer whole GPUs than it has: the
    device plugin is gone (driver upgrade) or marked devices unhealthy. None when healthy."""
    if not node.ready or has_mig(node):
        return None
    expected = roles.expected_gpus(node)
    alloc = allocatable_gpus(node)
    if expected is None or alloc >= expected:
        return None
    # a time-sliced node advertises replicas x devices, so only a shortfall below the physical
    # count is a loss; a node with some GPUs and no count label cannot be judged
    return expected, alloc


# the spellings organisations use for "who pays" (label or annotation keys); gpupact compile
# writes the first of each
OWNER_KEYS = (LABEL_OWNER, "owner", "team", "gpupact.io/team", "app.kubernetes.io/owner")
COST_CENTRE_KEYS = (
    LABEL_COST_CENTRE,
    "gpupact.io/cost-center",
    "cost-centre",
    "cost-center",
    "costcenter",
    "cost_center",
    "costCenter",
)


def owner_labels_missing(
    labels: Mapping[str, str],
    annotations: Mapping[str, str],
    owner_keys: Iterable[str] = OWNER_KEYS,
    cost_keys: Iterable[str] = COST_CENTRE_KEYS,
) -> list[str]:
    """The owner / cost-centre keys an object lacks: each is present when any accepted
    spelling is set (non-empty) as a label or an annotation. Named by the first spelling."""
    missing = []
    for keys in (tuple(owner_keys), tuple(cost_keys)):
        if not any(labels.get(k) or annotations.get(k) for k in keys):
            missing.append(keys[0])
    return missing


def pools_of(roles: Roles, nodes: Iterable[Node]) -> dict[str, list[Node]]:
    out: dict[str, list[Node]] = {}
    for node in nodes:
        pool = roles.node_pool(node)
        if pool:
            out.setdefault(pool, []).append(node)
    return out
