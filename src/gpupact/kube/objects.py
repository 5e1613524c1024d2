"""Node and Pod read from Kubernetes JSON/YAML exactly as `kubectl get -o json` prints them.

Parsing validates once at the edge; the resulting objects are typed, immutable and hold
integer quantities, so filters and scores never re-parse. Fields the scheduler does not need
stay reachable through `raw` (diagnose reads events, statuses and annotations from it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gpupact.kube.fields import (
    ContentMemo,
    integer,
    object_header,
    optional_list,
    optional_mapping,
    string,
    string_map,
)
from gpupact.kube.host_ports import HostPort, parse_host_ports
from gpupact.kube.pod_affinity import PodAffinity, parse_pod_affinity
from gpupact.kube.requests import (
    PodFootprint,
    PodResources,
    parse_pod_resources,
    parse_resource_list,
    pod_footprint,
    pod_requests,
)
from gpupact.kube.selectors import NodeAffinity, RequiredNodeAffinity, parse_node_affinity
from gpupact.kube.taints import Taint, Toleration, parse_taints, parse_tolerations
from gpupact.kube.topology_spread import (
    TopologySpreadConstraint,
    parse_topology_spread_constraints,
)

DEFAULT_SCHEDULER = "default-scheduler"


def api_group(obj: Mapping[str, Any]) -> str:
    """The API group of an object: "" for core/v1 (also when apiVersion is left off, as in a
    hand-written manifest). A group-less version other than v1 is returned as it is, so it
    matches no group: a `kind: Pod` of another API is never taken for a Pod."""
    api = obj.get("apiVersion")
    if api is None or api == "v1":
        return ""
    if isinstance(api, str) and "/" in api:
        return api.rsplit("/", 1)[0]
    return f"unknown API {api!r}"


@dataclass(frozen=True, slots=True)
class OwnerRef:
    """metadata.ownerReferences[] (the fields the scheduler's default spreading reads)."""

    api_version: str
    kind: str
    name: str


@dataclass(frozen=True, slots=True)
class Node:
    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    allocatable: Mapping[str, int] = field(default_factory=dict)  # cpu in milli, rest base units
    capacity: Mapping[str, int] = field(default_factory=dict)
    unschedulable: bool = False
    ready: bool = True
    conditions: Mapping[str, str] = field(default_factory=dict)  # type -> status
    annotations: Mapping[str, str] = field(default_factory=dict)
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class Pod:
    name: str
    namespace: str = "default"
    uid: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    node_name: str = ""
    phase: str = "Pending"
    priority: int = 0
    priority_class_name: str = ""
    preemption_policy: str = "PreemptLowerPriority"
    scheduler_name: str = DEFAULT_SCHEDULER
    node_selector: Mapping[str, str] = field(default_factory=dict)
    node_affinity: NodeAffinity | None = None
    # inter-pod terms, parsed once (None: no term); see gpupact.kube.pod_affinity
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None
    tolerations: tuple[Toleration, ...] = ()
    topology_spread_constraints: tuple[TopologySpreadConstraint, ...] = ()
    resources: PodResources = field(default_factory=PodResources)
    terminating: bool = False
    creation_timestamp: str = ""
    start_time: str = ""
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    host_ports: tuple[HostPort, ...] = ()
    nominated_node_name: str = ""  # status.nominatedNodeName (set by preemption)
    controller: OwnerRef | None = None  # the ownerReference with controller: true
    claims: tuple[str, ...] = ()  # persistentVolumeClaim claimNames of spec.volumes

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def requests(self, *, pod_level_resources: bool = True) -> dict[str, int]:
        """Requests as the scheduler computes them (init max, sidecars, overhead)."""
        return pod_requests(self.resources, pod_level_resources=pod_level_resources)

    def footprint(self, *, pod_level_resources: bool = True) -> PodFootprint:
        """What this pod adds to its node once bound (requests and scoring non-zero values)."""
        return pod_footprint(self.resources, pod_level_resources=pod_level_resources)

    @property
    def required_node_affinity(self) -> RequiredNodeAffinity:
        return RequiredNodeAffinity(self.node_selector or None, self.node_affinity)

    @property
    def has_inter_pod_affinity(self) -> bool:
        """Declares pod affinity or anti-affinity terms (required or preferred)."""
        return self.pod_affinity is not None or self.pod_anti_affinity is not None

    @property
    def assigned(self) -> bool:
        return bool(self.node_name)

    @property
    def holds_resources(self) -> bool:
        """Bound and not finished: counts against its node's allocatable."""
        return self.assigned and self.phase not in ("Succeeded", "Failed")


# --- parsing ----------------------------------------------------------------------------


# Pods of one controller repeat the same spec subtrees: each distinct one is parsed once (keyed
# by its exact content and path; see ContentMemo) and the immutable result shared by the pods.
_parse_tolerations = ContentMemo(lambda obj, path: tuple(parse_tolerations(obj, path)))
_parse_taints = ContentMemo(lambda obj, path: tuple(parse_taints(obj, path)))
_parse_spread = ContentMemo(parse_topology_spread_constraints)
_parse_node_affinity = ContentMemo(parse_node_affinity)
_parse_pod_affinity = ContentMemo(parse_pod_affinity)


def _resources_of(
    containers: Any, init_containers: Any, overhead: Any, resources: Any, path: tuple[str, ...]
) -> PodResources:
    """parse_pod_resources over the four spec fields it reads (the memo key holds only these,
    not nodeName and the rest of the spec, which differ between replicas)."""
    spec = {
        "containers": containers,
        "initContainers": init_containers,
        "overhead": overhead,
        "resources": resources,
    }
    return parse_pod_resources(spec, path)


_parse_resources = ContentMemo(_resources_of)
_TOLERATIONS_PATH = ("spec", "tolerations")
_SPREAD_PATH = ("spec", "topologySpreadConstraints")
_NODE_AFFINITY_PATH = ("spec", "affinity", "nodeAffinity")
_POD_AFFINITY_PATH = ("spec", "affinity", "podAffinity")
_POD_ANTI_AFFINITY_PATH = ("spec", "affinity", "podAntiAffinity")
_SPEC_PATH = ("spec",)


def parse_node(obj: dict[str, Any]) -> Node:
    _, meta, spec, status, name = object_header(obj, "Node")
    taints = _parse_taints(spec.get("taints"), ("spec", "taints"))
    conditions: dict[str, str] = {}
    for i, c in enumerate(optional_list(status.get("conditions"), ("status", "conditions"))):
        c = optional_mapping(c, ("status", "conditions", i))
        conditions[string(c.get("type"), ("status", "conditions", i, "type"))] = string(
            c.get("status"), ("status", "conditions", i, "status")
        )
    capacity = parse_resource_list(status.get("capacity"), ("status", "capacity"))
    allocatable = (
        parse_resource_list(status.get("allocatable"), ("status", "allocatable"))
        if status.get("allocatable") is not None
        else dict(capacity)
    )
    return Node(
        name=name,
        labels=string_map(meta.get("labels"), ("metadata", "labels")),
        annotations=string_map(meta.get("annotations"), ("metadata", "annotations")),
        taints=taints,
        allocatable=allocatable,
        capacity=capacity,
        unschedulable=bool(spec.get("unschedulable", False)),
        # a node without a Ready condition (e.g. a hand-written fixture) is taken as Ready
        ready=conditions.get("Ready", "True") == "True",
        conditions=conditions,
        raw=obj,
    )


def _optional(parse: ContentMemo[tuple], obj: Any, path: tuple[str, ...]) -> tuple:
    """A list field: absent (None) is the empty tuple without a memo lookup."""
    return () if obj is None else parse(obj, path)


def _node_affinity(obj: Any) -> NodeAffinity | None:
    return None if obj is None else _parse_node_affinity(obj, _NODE_AFFINITY_PATH)


def _pod_affinity(
    obj: Any, namespace: str, labels: dict[str, str], path: tuple[str, ...]
) -> PodAffinity | None:
    # the merged matchLabelKeys and the default namespace depend on the pod: both are in the key
    return None if obj is None else _parse_pod_affinity(obj, namespace, labels, path)


def parse_pod(obj: dict[str, Any]) -> Pod:
    _, meta, spec, status, name = object_header(obj, "Pod", generate_name=True)
    affinity = optional_mapping(spec.get("affinity"), ("spec", "affinity"))
    priority = integer(spec.get("priority"), ("spec", "priority"), bits=32)  # Pod: *int32
    namespace = string(meta.get("namespace"), ("metadata", "namespace"), "default") or "default"
    labels = string_map(meta.get("labels"), ("metadata", "labels"))
    return Pod(
        name=name,
        namespace=namespace,
        uid=string(meta.get("uid"), ("metadata", "uid")),
        labels=labels,
        annotations=string_map(meta.get("annotations"), ("metadata", "annotations")),
        node_name=string(spec.get("nodeName"), ("spec", "nodeName")),
        phase=string(status.get("phase"), ("status", "phase"), "Pending") or "Pending",
        priority=priority,
        priority_class_name=string(spec.get("priorityClassName"), ("spec", "priorityClassName")),
        preemption_policy=string(
            spec.get("preemptionPolicy"), ("spec", "preemptionPolicy"), "PreemptLowerPriority"
        ),
        scheduler_name=string(spec.get("schedulerName"), ("spec", "schedulerName"))
        or DEFAULT_SCHEDULER,
        node_selector=string_map(spec.get("nodeSelector"), ("spec", "nodeSelector")),
        node_affinity=_node_affinity(affinity.get("nodeAffinity")),
        pod_affinity=_pod_affinity(
            affinity.get("podAffinity"), namespace, labels, _POD_AFFINITY_PATH
        ),
        pod_anti_affinity=_pod_affinity(
            affinity.get("podAntiAffinity"), namespace, labels, _POD_ANTI_AFFINITY_PATH
        ),
        tolerations=_optional(_parse_tolerations, spec.get("tolerations"), _TOLERATIONS_PATH),
        topology_spread_constraints=_optional(
            _parse_spread, spec.get("topologySpreadConstraints"), _SPREAD_PATH
        ),
        resources=_parse_resources(
            spec.get("containers"),
            spec.get("initContainers"),
            spec.get("overhead"),
            spec.get("resources"),
            _SPEC_PATH,
        ),
        terminating=meta.get("deletionTimestamp") is not None,
        creation_timestamp=string(meta.get("creationTimestamp"), ("metadata", "creationTimestamp")),
        start_time=string(status.get("startTime"), ("status", "startTime")),
        raw=obj,
        host_ports=parse_host_ports(spec.get("containers"), spec.get("initContainers")),
        nominated_node_name=string(
            status.get("nominatedNodeName"), ("status", "nominatedNodeName")
        ),
        controller=_controller(meta.get("ownerReferences")),
        claims=_claims(spec.get("volumes")),
    )


def _controller(refs: Any) -> OwnerRef | None:
    """metav1.GetControllerOf: the first ownerReference with controller: true."""
    path = ("metadata", "ownerReferences")
    for i, item in enumerate(optional_list(refs, path)):
        ref = optional_mapping(item, (*path, i))
        if ref.get("controller") is True:
            return OwnerRef(
                string(ref.get("apiVersion"), (*path, i, "apiVersion")),
                string(ref.get("kind"), (*path, i, "kind")),
                string(ref.get("name"), (*path, i, "name")),
            )
    return None


def _claims(volumes: Any) -> tuple[str, ...]:
    path = ("spec", "volumes")
    out = []
    for i, item in enumerate(optional_list(volumes, path)):
        claim = optional_mapping(item, (*path, i)).get("persistentVolumeClaim")
        if claim is not None:
            where = (*path, i, "persistentVolumeClaim")
            out.append(
                string(optional_mapping(claim, where).get("claimName"), (*where, "claimName"))
            )
    return tuple(out)
