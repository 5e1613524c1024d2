"""ClusterSnapshot: every kind diagnose and audit read, typed once at the edge.

A snapshot comes from a directory of `kubectl get -o json` output (snapshot_dir.py) or from a
live cluster (live.py); both feed raw objects to `SnapshotBuilder.add`, which validates each
one (FieldError with the path inside the object) and keeps the whole object in `raw` for
fields read only by one check (conditions, container statuses).

Kinds: core Node, Pod, Event, Namespace; PriorityClass; Volcano PodGroup and Queue; Kueue
ResourceFlavor, ClusterQueue, Cohort, LocalQueue, WorkloadPriorityClass, Workload; Karpenter
NodePool and NodeClaim; controllers that own GPU pods (Deployment, StatefulSet, ReplicaSet,
Job, LeaderWorkerSet, Volcano Job). Other kinds are counted in `ignored`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gpupact.cluster.snapshot import read_node, read_pod
from gpupact.engine.admission import k8s as kueue
from gpupact.engine.gang import PodGroup, parse_podgroup
from gpupact.engine.preemption.importance import NANOS_PER_SECOND, parse_time_nanos
from gpupact.engine.volcano.model import Queue, parse_queue
from gpupact.errors import FieldError, PathPart
from gpupact.kube.fields import (
    integer,
    mapping,
    optional_list,
    optional_mapping,
    string,
    string_map,
)
from gpupact.kube.objects import Node, Pod, api_group
from gpupact.kube.requests import parse_resource_list
from gpupact.kube.scheduling_objects import SchedulingObjects
from gpupact.ops.cold_start import COLD_START_ANNOTATION, parse_cold_start

KUEUE_KINDS = (
    "ResourceFlavor",
    "ClusterQueue",
    "Cohort",
    "LocalQueue",
    "WorkloadPriorityClass",
    "Workload",
)
CONTROLLER_KINDS = ("Deployment", "StatefulSet", "ReplicaSet", "Job", "LeaderWorkerSet")
CONTROLLER_GROUPS = ("apps", "batch", "leaderworkerset.x-k8s.io")
VOLCANO_JOB_API = "batch.volcano.sh"


# --- time ---------------------------------------------------------------------------------------


def parse_time(text: str, path: tuple[PathPart, ...] = ()) -> int | None:
    """RFC 3339 (as the API server writes it) -> Unix seconds; "" -> None."""
    if not text:
        return None
    return parse_time_nanos(text, path) // NANOS_PER_SECOND


def time_or_none(text: object) -> int | None:
    """`parse_time` for evidence: a missing or unreadable time is None, never an error."""
    if not isinstance(text, str):
        return None
    try:
        return parse_time(text)
    except ValueError:
        return None


def _time(obj: object, path: tuple[PathPart, ...]) -> int | None:
    return parse_time(string(obj, path), path)


# --- shared metadata ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OwnerRef:
    kind: str
    name: str
    uid: str
    controller: bool = False


@dataclass(frozen=True, slots=True)
class Meta:
    kind: str
    name: str
    namespace: str  # "" for cluster-scoped objects
    uid: str
    created: int | None  # Unix seconds
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    owners: tuple[OwnerRef, ...]

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


def read_meta(obj: Mapping[str, Any], kind: str, *, namespaced: bool = True) -> Meta:
    meta = optional_mapping(obj.get("metadata"), ("metadata",))
    name = string(meta.get("name"), ("metadata", "name"))
    if not name:
        raise FieldError(("metadata", "name"), f"a {kind} needs a name")
    owners = []
    for i, raw in enumerate(
        optional_list(meta.get("ownerReferences"), ("metadata", "ownerReferences"))
    ):
        path = ("metadata", "ownerReferences", i)
        ref = mapping(raw, path)
        owners.append(
            OwnerRef(
                string(ref.get("kind"), (*path, "kind")),
                string(ref.get("name"), (*path, "name")),
                string(ref.get("uid"), (*path, "uid")),
                ref.get("controller") is True,
            )
        )
    namespace = ""
    if namespaced:
        namespace = string(meta.get("namespace"), ("metadata", "namespace")) or "default"
    return Meta(
        kind=kind,
        name=name,
        namespace=namespace,
        uid=string(meta.get("uid"), ("metadata", "uid")),
        created=_time(meta.get("creationTimestamp"), ("metadata", "creationTimestamp")),
        labels=string_map(meta.get("labels"), ("metadata", "labels")),
        annotations=string_map(meta.get("annotations"), ("metadata", "annotations")),
        owners=tuple(owners),
    )


@dataclass(frozen=True, slots=True)
class Condition:
    type: str
    status: str
    reason: str = ""
    message: str = ""
    since: int | None = None  # lastTransitionTime, Unix seconds


def read_conditions(status: Mapping[str, Any], path: tuple[PathPart, ...]) -> tuple[Condition, ...]:
    out = []
    for i, raw in enumerate(optional_list(status.get("conditions"), (*path, "conditions"))):
        where = (*path, "conditions", i)
        cond = mapping(raw, where)
        out.append(
            Condition(
                string(cond.get("type"), (*where, "type")),
                string(cond.get("status"), (*where, "status")),
                string(cond.get("reason"), (*where, "reason")),
                string(cond.get("message"), (*where, "message")),
                _time(cond.get("lastTransitionTime"), (*where, "lastTransitionTime")),
            )
        )
    return tuple(out)


def condition(conditions: tuple[Condition, ...], kind: str) -> Condition | None:
    return next((c for c in conditions if c.type == kind), None)


# --- the small kinds ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Event:
    """A core/v1 Event (or events.k8s.io/v1, read into the same fields)."""

    namespace: str
    object_kind: str
    object_name: str
    object_uid: str
    reason: str
    message: str
    type: str  # Normal | Warning
    component: str  # source.component / reportingController
    first: int | None
    last: int | None
    count: int


def parse_event(obj: Mapping[str, Any]) -> Event:
    meta = read_meta(obj, "Event")
    modern = "regarding" in obj  # events.k8s.io/v1
    target_key = "regarding" if modern else "involvedObject"
    target = optional_mapping(obj.get(target_key), (target_key,))
    source = optional_mapping(obj.get("source"), ("source",))
    message_key = "note" if modern else "message"
    component = string(source.get("component"), ("source", "component")) or string(
        obj.get("reportingController") or obj.get("reportingComponent"), ("reportingComponent",)
    )
    first = _time(obj.get("firstTimestamp"), ("firstTimestamp",)) or _time(
        obj.get("eventTime"), ("eventTime",)
    )
    last = _time(obj.get("lastTimestamp"), ("lastTimestamp",)) or first
    series = optional_mapping(obj.get("series"), ("series",))
    count = integer(obj.get("count"), ("count",), 1) if obj.get("count") is not None else 1
    if series.get("count") is not None:
        count = integer(series.get("count"), ("series", "count"))
    return Event(
        namespace=string(target.get("namespace"), (target_key, "namespace")) or meta.namespace,
        object_kind=string(target.get("kind"), (target_key, "kind")),
        object_name=string(target.get("name"), (target_key, "name")),
        object_uid=string(target.get("uid"), (target_key, "uid")),
        reason=string(obj.get("reason"), ("reason",)),
        message=string(obj.get(message_key), (message_key,)),
        type=string(obj.get("type"), ("type",)),
        component=component,
        first=first,
        last=last,
        count=count,
    )


@dataclass(frozen=True, slots=True)
class PriorityClass:
    name: str
    value: int
    preemption_policy: str = "PreemptLowerPriority"
    global_default: bool = False
    labels: Mapping[str, str] = field(default_factory=dict)


def parse_priority_class(obj: Mapping[str, Any]) -> PriorityClass:
    meta = read_meta(obj, "PriorityClass", namespaced=False)
    policy = string(obj.get("preemptionPolicy"), ("preemptionPolicy",)) or "PreemptLowerPriority"
    if policy not in ("PreemptLowerPriority", "Never"):
        raise FieldError(("preemptionPolicy",), f"unsupported value {policy!r}")
    return PriorityClass(
        meta.name,
        integer(obj.get("value"), ("value",), bits=32),
        policy,
        obj.get("globalDefault") is True,
        meta.labels,
    )


@dataclass(frozen=True, slots=True)
class NodeClaim:
    """A Karpenter NodeClaim: a node being (or already) launched for a NodePool."""

    meta: Meta
    nodepool: str
    node_name: str
    conditions: tuple[Condition, ...]
    deleting: bool

    def is_true(self, kind: str) -> bool:
        cond = condition(self.conditions, kind)
        return cond is not None and cond.status == "True"

    @property
    def ready(self) -> bool:
        return self.is_true("Ready") or self.is_true("Initialized")


def parse_node_claim(obj: Mapping[str, Any]) -> NodeClaim:
    meta = read_meta(obj, "NodeClaim", namespaced=False)
    status = optional_mapping(obj.get("status"), ("status",))
    deleting = optional_mapping(obj.get("metadata"), ("metadata",)).get("deletionTimestamp")
    return NodeClaim(
        meta,
        meta.labels.get("karpenter.sh/nodepool", ""),
        string(status.get("nodeName"), ("status", "nodeName")),
        read_conditions(status, ("status",)),
        deleting is not None,
    )


@dataclass(frozen=True, slots=True)
class NodePool:
    """A Karpenter NodePool: its template labels/taints, limits and what it holds now."""

    meta: Meta
    template_labels: Mapping[str, str]
    limits: Mapping[str, int]  # "nodes" counts nodes; others in base units
    resources: Mapping[str, int]  # status.resources (what the pool's nodes hold)


def parse_node_pool(obj: Mapping[str, Any]) -> NodePool:
    meta = read_meta(obj, "NodePool", namespaced=False)
    spec = optional_mapping(obj.get("spec"), ("spec",))
    status = optional_mapping(obj.get("status"), ("status",))
    template = optional_mapping(spec.get("template"), ("spec", "template"))
    tmeta = optional_mapping(template.get("metadata"), ("spec", "template", "metadata"))
    return NodePool(
        meta,
        string_map(tmeta.get("labels"), ("spec", "template", "metadata", "labels")),
        parse_resource_list(spec.get("limits"), ("spec", "limits")),
        parse_resource_list(status.get("resources"), ("status", "resources")),
    )


@dataclass(frozen=True, slots=True)
class Controller:
    """A workload controller (Deployment, Job, LeaderWorkerSet, Volcano Job, ...): its
    metadata and the pod templates it stamps out."""

    meta: Meta
    api_group: str
    templates: tuple[Mapping[str, Any], ...]  # raw PodTemplateSpecs
    replicas: int | None
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def kind(self) -> str:
        return self.meta.kind


def _templates(kind: str, group: str, spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    if group == VOLCANO_JOB_API:
        tasks = optional_list(spec.get("tasks"), ("spec", "tasks"))
        return [
            optional_mapping(
                optional_mapping(t, ("spec", "tasks", i)).get("template"),
                ("spec", "tasks", i, "template"),
            )
            for i, t in enumerate(tasks)
        ]
    if kind == "LeaderWorkerSet":
        lwt = optional_mapping(spec.get("leaderWorkerTemplate"), ("spec", "leaderWorkerTemplate"))
        found = []
        for key in ("leaderTemplate", "workerTemplate"):
            if lwt.get(key) is not None:
                found.append(mapping(lwt[key], ("spec", "leaderWorkerTemplate", key)))
        return found
    if spec.get("template") is None:
        return []
    return [mapping(spec["template"], ("spec", "template"))]


def parse_controller(obj: Mapping[str, Any], kind: str) -> Controller:
    meta = read_meta(obj, kind)
    api = string(obj.get("apiVersion"), ("apiVersion",))
    group = api.rsplit("/", 1)[0] if "/" in api else ""
    spec = optional_mapping(obj.get("spec"), ("spec",))
    replicas = None
    if spec.get("replicas") is not None:
        replicas = integer(spec.get("replicas"), ("spec", "replicas"), bits=32)
    return Controller(meta, group, tuple(_templates(kind, group, spec)), replicas, obj)


@dataclass
class GangObject:
    """A PodGroup with the metadata and status the engine model leaves out."""

    podgroup: PodGroup
    meta: Meta
    conditions: tuple[Condition, ...]
    raw: Mapping[str, Any] = field(repr=False)

    @property
    def key(self) -> str:
        return self.podgroup.key


@dataclass
class KueueObject:
    """A Kueue object, validated by the admission engine's parser, kept raw for load_state."""

    kind: str
    meta: Meta
    raw: Mapping[str, Any] = field(repr=False)
    parsed: Any = None
    conditions: tuple[Condition, ...] = ()

    @property
    def key(self) -> str:
        return self.meta.key


# --- the snapshot -------------------------------------------------------------------------------


@dataclass
class ClusterSnapshot:
    source: str = ""
    nodes: list[Node] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    namespaces: dict[str, Meta] = field(default_factory=dict)
    priority_classes: dict[str, PriorityClass] = field(default_factory=dict)
    podgroups: list[GangObject] = field(default_factory=list)
    volcano_queues: dict[str, Queue] = field(default_factory=dict)
    volcano_queue_meta: dict[str, Meta] = field(default_factory=dict)
    kueue: list[KueueObject] = field(default_factory=list)
    node_claims: list[NodeClaim] = field(default_factory=list)
    node_pools: dict[str, NodePool] = field(default_factory=dict)
    controllers: list[Controller] = field(default_factory=list)
    ignored: dict[str, int] = field(default_factory=dict)
    # Services, RC/RS/StatefulSets, PVCs, PVs as the scheduler's default plugins read them
    scheduling: SchedulingObjects = field(default_factory=SchedulingObjects)

    def kueue_of(self, kind: str) -> list[KueueObject]:
        return [o for o in self.kueue if o.kind == kind]

    def counts(self) -> dict[str, int]:
        return {
            "nodes": len(self.nodes),
            "pods": len(self.pods),
            "events": len(self.events),
            "podgroups": len(self.podgroups),
            "volcanoQueues": len(self.volcano_queues),
            "kueueObjects": len(self.kueue),
            "nodeClaims": len(self.node_claims),
            "nodePools": len(self.node_pools),
            "controllers": len(self.controllers),
        }


def _kueue_parser(kind: str) -> Callable[[object], Any]:
    return {
        "ResourceFlavor": kueue.parse_resource_flavor,
        "ClusterQueue": kueue.parse_cluster_queue,
        "Cohort": kueue.parse_cohort,
        "LocalQueue": kueue.parse_local_queue,
        "WorkloadPriorityClass": kueue.parse_workload_priority_class,
        "Workload": kueue.parse_workload,
    }[kind]


def _is_controller(kind: str, group: str) -> bool:
    if kind == "Job" and group == VOLCANO_JOB_API:
        return True
    return kind in CONTROLLER_KINDS and group in CONTROLLER_GROUPS


def _check_cold_start(pool: NodePool) -> None:
    """The cold-start annotation is read when the autoscaler is explained; checked here too,
    so a bad one is reported with its file and line (FieldError), not later without them."""
    text = pool.meta.annotations.get(COLD_START_ANNOTATION)
    if text is not None:
        parse_cold_start(text, f"NodePool {pool.meta.name} annotation")


class SnapshotBuilder:
    """Adds raw objects one at a time (FieldError on a bad one), then `finish()` checks that
    names are unique and returns the snapshot."""

    def __init__(self, source: str = "") -> None:
        self.snapshot = ClusterSnapshot(source=source)
        self._seen: set[tuple[str, str]] = set()

    def _unique(self, kind: str, key: str) -> None:
        if (kind, key) in self._seen:
            raise FieldError(("metadata", "name"), f"{kind} {key!r} appears twice")
        self._seen.add((kind, key))

    def add(self, obj: Mapping[str, Any]) -> None:
        kind = obj.get("kind")
        if not isinstance(kind, str) or not kind:
            raise FieldError(("kind",), "missing kind")
        group = api_group(obj)
        snap = self.snapshot
        if kind == "Node" and group == "":
            node = read_node(dict(obj))
            self._unique(kind, node.name)
            snap.nodes.append(node)
        elif kind == "Pod" and group == "":
            pod = read_pod(dict(obj))
            self._unique(kind, pod.key)
            snap.pods.append(pod)
        elif kind == "Event" and group in ("", "events.k8s.io"):
            snap.events.append(parse_event(obj))
        elif kind == "Namespace" and group == "":
            meta = read_meta(obj, kind, namespaced=False)
            snap.namespaces[meta.name] = meta
        elif kind == "PriorityClass" and group == "scheduling.k8s.io":
            pc = parse_priority_class(obj)
            self._unique(kind, pc.name)
            snap.priority_classes[pc.name] = pc
        elif kind == "PodGroup" and group == "scheduling.volcano.sh":
            pg = parse_podgroup(obj)
            self._unique(kind, pg.key)
            status = optional_mapping(obj.get("status"), ("status",))
            snap.podgroups.append(
                GangObject(pg, read_meta(obj, kind), read_conditions(status, ("status",)), obj)
            )
        elif kind == "Queue" and group == "scheduling.volcano.sh":
            queue = parse_queue(obj)
            self._unique(kind, queue.name)
            snap.volcano_queues[queue.name] = queue
            snap.volcano_queue_meta[queue.name] = read_meta(obj, kind, namespaced=False)
        elif kind in KUEUE_KINDS and group == kueue.GROUP:
            namespaced = kind in ("LocalQueue", "Workload")
            meta = read_meta(obj, kind, namespaced=namespaced)
            self._unique(kind, meta.key)
            parsed = _kueue_parser(kind)(obj)
            status = optional_mapping(obj.get("status"), ("status",))
            snap.kueue.append(
                KueueObject(kind, meta, obj, parsed, read_conditions(status, ("status",)))
            )
        elif kind == "NodeClaim" and group == "karpenter.sh":
            claim = parse_node_claim(obj)
            self._unique(kind, claim.meta.name)
            snap.node_claims.append(claim)
        elif kind == "NodePool" and group == "karpenter.sh":
            pool = parse_node_pool(obj)
            _check_cold_start(pool)
            self._unique(kind, pool.meta.name)
            snap.node_pools[pool.meta.name] = pool
        elif _is_controller(kind, group):
            ctrl = parse_controller(obj, kind)
            self._unique(f"{group}/{kind}", ctrl.meta.key)
            snap.controllers.append(ctrl)
            snap.scheduling.add(obj)  # ReplicaSet / StatefulSet selectors: default spreading
        elif snap.scheduling.add(obj):
            pass
        else:
            label = f"{kind} ({obj.get('apiVersion')})" if group else kind
            snap.ignored[label] = snap.ignored.get(label, 0) + 1

    def finish(self) -> ClusterSnapshot:
        return self.snapshot


# --- the snapshot's own time --------------------------------------------------------------------

_UTC_STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")


def observed_at(snapshot: ClusterSnapshot) -> int | None:
    """When the snapshot was taken, as well as it tells: the latest time written in it (node
    heartbeats, which the kubelet renews every few minutes; events; creation and condition
    times). None when it holds no time at all. Ages in a report taken hours ago are then
    measured from the snapshot, not from the moment someone reads it."""
    stamps: list[str] = []
    for node in snapshot.nodes:
        status = node.raw.get("status") if isinstance(node.raw, dict) else None
        conds = status.get("conditions") if isinstance(status, dict) else None
        for cond in conds if isinstance(conds, list) else ():
            if isinstance(cond, dict):
                stamps.extend(
                    str(cond.get(k) or "") for k in ("lastHeartbeatTime", "lastTransitionTime")
                )
    stamps.extend(p.creation_timestamp for p in snapshot.pods)
    stamps.extend(p.start_time for p in snapshot.pods)
    latest = max((s for s in stamps if _UTC_STAMP.match(s)), default="")
    best = time_or_none(latest) if latest else None
    others = [e.last for e in snapshot.events if e.last is not None]
    others += [o.meta.created for o in snapshot.kueue if o.meta.created is not None]
    others += [c.meta.created for c in snapshot.node_claims if c.meta.created is not None]
    if best is not None:
        others.append(best)
    return max(others, default=None)


def labels_by_subject(snapshot: ClusterSnapshot) -> dict[str, Mapping[str, str]]:
    """The labels of each object a finding can name, keyed as findings name their subject
    (`"kind namespace/name"`, kind in lower case): what `-l` filters findings by."""
    out: dict[str, Mapping[str, str]] = {}
    for node in snapshot.nodes:
        out[f"node {node.name}"] = node.labels
    for pod in snapshot.pods:
        out[f"pod {pod.key}"] = pod.labels
    metas = [
        *(g.meta for g in snapshot.podgroups),
        *(o.meta for o in snapshot.kueue),
        *(c.meta for c in snapshot.controllers),
        *snapshot.volcano_queue_meta.values(),
    ]
    for meta in metas:
        out[f"{meta.kind.lower()} {meta.key}"] = meta.labels
    return out
