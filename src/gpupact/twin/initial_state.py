"""A real cluster as the twin's t = 0: "what happens if I apply this contract to my cluster".

The cluster comes as a ClusterView (the CLI reads it with ops' snapshot or live reader, which
the twin's layer may not import). The contract's compiled objects are applied to it:

- Nodes keep what the snapshot shows (labels, taints, allocatable, GPU devices and MIG
  layout from the GPU feature discovery labels). A node joins a contract pool when it names
  the pool already: its `karpenter.sh/nodepool` label (a node the pool's compiled NodePool
  launched), else its `nodepool` label (a fixed node patched before). Such a node gets the
  pool's compiled node patch (`kubectl patch node --type merge`: labels merged, the taint
  list replaced) and counts as one of the pool's nodes (autoscaler minimum and maximum,
  scale-down, faults). Any other node stays as it is, outside every pool: which fixed node
  becomes which pool's is the operator's `kubectl patch`, not something to guess. Sharing
  (time-slice replicas, MIG layout) stays as the node advertises it: the GPU Operator
  re-partitions a node only once its GPU pods are gone.
- Every bound pod stays where it is, holding what it requests. Pods of a contract service
  (its `app.kubernetes.io/name`, namespace and class) are adopted as the service's ready
  replicas, a LeaderWorkerSet group only whole (the Deployment or LeaderWorkerSet applied
  then scales them to its replicas).
  Every other pod keeps its node until its estimated end (pod_end.py). Pods still pending
  in the snapshot are left out (counted): how long they would run once placed is unknown.
- Kueue: the compiled objects replace same-named ones (kind, namespace, name); the others
  stay, since `kubectl apply` deletes nothing it was not given. Admitted Workloads keep their
  quota until their pods end; one whose ClusterQueue is gone or no longer holds its flavor
  (or whose WorkloadPriorityClass is gone) keeps running, uncharged: Kueue does not evict an
  admitted workload when its queue's spec changes. Workloads not admitted are left out
  (counted), like pending pods. Volcano Queues likewise: the compiled ones replace
  same-named ones, the others stay; a carried pod Volcano schedules keeps its PodGroup (its
  queue's allocation, its gang's minMember).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from gpupact.cluster.snapshot import read_node
from gpupact.engine.admission.k8s import load_state, parse_workload
from gpupact.engine.admission.state import AdmissionState
from gpupact.engine.gang import PodGroup
from gpupact.engine.volcano.model import Queue
from gpupact.errors import FieldError, InputError
from gpupact.kube.objects import Node, Pod
from gpupact.twin.pod_end import EndEstimate, estimate_end, owner_kind
from gpupact.twin.world import (
    APP_LABEL,
    CLASS_LABEL,
    GROUP_ANNOTATION,
    LWS_GROUP_KEY,
    POOL_LABEL,
    TENANT_LABEL,
    VOLCANO,
    World,
)

KARPENTER_POOL_LABEL = "karpenter.sh/nodepool"
REPLICAS_LABEL = "nvidia.com/gpu.replicas"  # time-slicing: devices per physical GPU
# a MIG instance `<n>g.<m>gb` holds n of the GPU's 7 compute slices (an A100 or H100 splits
# into at most 7 GPU instances: https://docs.nvidia.com/datacenter/tesla/mig-user-guide/)
MIG_RESOURCE = re.compile(r"^nvidia\.com/mig-(\d+)g\.")
MIG_COMPUTE_SLICES = 7
GPU = "nvidia.com/gpu"
OUTSIDE = "outside-contract"  # the class reported for pods no contract class owns


@dataclass(frozen=True)
class ClusterView:
    """A cluster as read: `observed` is the Unix time it shows (None: it holds no time)."""

    source: str
    observed: float | None
    nodes: Sequence[Node]
    pods: Sequence[Pod]
    kueue: Sequence[Mapping[str, Any]] = ()  # raw Kueue objects
    jobs: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # ns/name -> batch Job
    priority_classes: Mapping[str, int] = field(default_factory=dict)
    volcano_queues: Sequence[Queue] = ()
    podgroups: Sequence[PodGroup] = ()


@dataclass
class CarriedPod:
    """A pod bound at t = 0, as the twin carries it on."""

    pod: Pod
    end: EndEstimate
    workload_class: str  # the contract class its label names, else OUTSIDE
    tenant: str  # the contract tenant its label names, else ""
    gpus: float  # physical GPUs
    service: str | None = None  # adopted as a replica of this contract service
    replica: str = ""  # ... as (part of) this replica
    workload: str | None = None  # the admitted Kueue Workload it runs under
    group: PodGroup | None = None  # its Volcano PodGroup (pods Volcano schedules)


@dataclass
class StartingState:
    view: ClusterView
    nodes: list[Node]
    pool_of_node: dict[str, str]
    pods: list[CarriedPod]
    admission: AdmissionState
    kueue: dict[str, Any]  # what the reconciliation did, for the report
    pending_left_out: int = 0
    on_unknown_nodes: int = 0
    workload_pods: dict[str, set[str]] = field(default_factory=dict)  # workload -> pod keys
    volcano_queues: list[Queue] = field(default_factory=list)


# --- nodes ------------------------------------------------------------------------------------


def node_pool(node: Node, pools: Sequence[str]) -> str | None:
    for label in (KARPENTER_POOL_LABEL, POOL_LABEL):
        value = node.labels.get(label)
        if value in pools:
            return value
    return None


def patched(node: Node, patch: Mapping[str, Any]) -> Node:
    """The node after `kubectl patch node --type merge` with a compiled node patch."""
    raw = copy.deepcopy(dict(node.raw)) if node.raw else {"kind": "Node", "apiVersion": "v1"}
    meta = raw.setdefault("metadata", {"name": node.name})
    labels = patch.get("metadata", {}).get("labels", {})
    meta["labels"] = {**(meta.get("labels") or {}), **labels}
    taints = patch.get("spec", {}).get("taints")
    if taints is not None:  # `spec: null` is an empty spec, as the API server decodes it
        raw["spec"] = {**(raw.get("spec") or {}), "taints": [dict(t) for t in taints]}
    return read_node(raw)


# --- pods -------------------------------------------------------------------------------------


def physical_gpus(pod: Pod, node: Node | None) -> float:
    """Whole GPUs behind the pod's GPU requests: a time-slice replica is 1/replicas of one, a
    MIG instance its compute slices out of seven."""
    total = 0.0
    replicas = 1
    if node is not None:
        try:
            replicas = max(1, int(node.labels.get(REPLICAS_LABEL, "1")))
        except ValueError:
            replicas = 1
    for name, amount in pod.requests().items():
        if name == GPU:
            total += amount / replicas
            continue
        mig = MIG_RESOURCE.match(name)
        if mig:
            total += amount * int(mig.group(1)) / MIG_COMPUTE_SLICES
    return total


def _with_priority(pod: Pod, classes: Mapping[str, int]) -> Pod:
    """spec.priority as the Priority admission plugin set it at creation; a hand-written
    snapshot without it gets its class's value."""
    spec = pod.raw.get("spec") if pod.raw else None
    if isinstance(spec, Mapping) and "priority" not in spec and pod.priority_class_name:
        value = classes.get(pod.priority_class_name)
        if value is not None:
            return replace(pod, priority=value)
    return pod


def _service_of(pod: Pod, world: World) -> str | None:
    """The contract service whose pod this is: its name label, namespace and class."""
    app = pod.labels.get(APP_LABEL)
    template = world.services.get(app or "")
    if (
        template is None
        or template.pod.namespace != pod.namespace
        or pod.labels.get(CLASS_LABEL) != template.workload_class
    ):
        return None
    return template.service.name


def replica_name(pod: Pod, pods_per_replica: int) -> str:
    """The replica a service pod belongs to: itself for single-pod replicas; a
    LeaderWorkerSet group by its group-key label, its PodGroup annotation, else its name
    without the worker index (`<lws>-<group>-<index>`)."""
    if pods_per_replica == 1:
        return pod.name
    key = pod.labels.get(LWS_GROUP_KEY) or pod.annotations.get(GROUP_ANNOTATION)
    return key or pod.name.rsplit("-", 1)[0]


def _adopt(carried: list[CarriedPod], world: World) -> None:
    """Mark the pods of whole replicas of a contract service as adopted (a multi-pod replica
    only with all its pods running; the others stay carried like any pod)."""
    groups: dict[tuple[str, str], list[CarriedPod]] = {}
    for c in carried:
        service = _service_of(c.pod, world)
        if service is not None:
            size = world.services[service].pods_per_replica
            groups.setdefault((service, replica_name(c.pod, size)), []).append(c)
    for (service, replica), members in groups.items():
        template = world.services[service]
        if len(members) != template.pods_per_replica:
            continue
        for c in members:
            c.service, c.replica, c.gpus = service, replica, template.gpus_per_pod


# --- Kueue ------------------------------------------------------------------------------------


def _key(obj: Mapping[str, Any]) -> tuple[str, str, str]:
    meta = obj.get("metadata") or {}
    return (str(obj.get("kind", "")), str(meta.get("namespace") or ""), str(meta.get("name", "")))


def _flavors_of(cluster_queue: Mapping[str, Any]) -> set[str]:
    groups = (cluster_queue.get("spec") or {}).get("resourceGroups") or []
    return {
        str(f.get("name"))
        for g in groups
        if isinstance(g, Mapping)
        for f in g.get("flavors") or []
        if isinstance(f, Mapping)
    }


def reconcile_kueue(
    compiled: Sequence[Mapping[str, Any]], view: ClusterView
) -> tuple[AdmissionState, dict[str, Any], dict[str, tuple[str, str]]]:
    """The AdmissionState after applying the compiled Kueue objects over the cluster's; the
    report; and each admitted Workload's owner (namespace, Job name) -> workload key is
    returned as key -> (namespace, owner name)."""
    mine = {_key(o): o for o in compiled}
    kept: list[Mapping[str, Any]] = []
    replaced: list[str] = []
    workloads: list[Mapping[str, Any]] = []
    for obj in view.kueue:
        key = _key(obj)
        if key[0] == "Workload":
            workloads.append(obj)
        elif key in mine:
            replaced.append(f"{key[0]} {key[2]}")
        else:
            kept.append(obj)
    merged = [*compiled, *kept]
    queues = {_key(o)[2]: o for o in merged if _key(o)[0] == "ClusterQueue"}
    priority_classes = {_key(o)[2] for o in merged if _key(o)[0] == "WorkloadPriorityClass"}
    admitted: list[Mapping[str, Any]] = []
    owners: dict[str, tuple[str, str]] = {}
    outside: list[str] = []
    pending = 0
    for obj in workloads:
        try:
            parsed = parse_workload(obj)
        except FieldError as err:
            raise InputError(f"{view.source}: Workload {_key(obj)[2]}: {err}") from None
        if parsed.finished or not parsed.active:
            continue
        if parsed.admission is None:
            pending += 1
            continue
        key = parsed.workload.key
        queue = queues.get(parsed.admission.cluster_queue)
        used = {f for psa in parsed.admission.pod_sets for f in psa.flavors.values()}
        unknown_class = (
            parsed.priority_class is not None and parsed.priority_class not in priority_classes
        )
        if queue is None or not used <= _flavors_of(queue) or unknown_class:
            outside.append(key)
        else:
            admitted.append(obj)
        refs = (obj.get("metadata") or {}).get("ownerReferences") or []
        ref = next((r for r in refs if isinstance(r, Mapping)), None)
        if ref is not None:
            owners[key] = (parsed.workload.namespace, str(ref.get("name", "")))
    try:
        state = load_state([*merged, *admitted])
    except (FieldError, ValueError) as err:
        raise InputError(
            f"{view.source}: the cluster's Kueue objects with the contract's applied: {err}"
        ) from None
    for key in outside:
        owners.pop(key, None)
    report = {
        "replacedByContract": sorted(replaced),
        "keptFromCluster": sorted(f"{k[0]} {k[2]}" for k in map(_key, kept)),
        "admittedWorkloads": len(admitted),
        "admittedOutsideQueues": sorted(outside),
        "pendingWorkloadsLeftOut": pending,
    }
    return state, report, owners


def reconcile_volcano(
    compiled: Sequence[Queue], view: ClusterView, report: dict[str, Any]
) -> list[Queue]:
    """The Volcano Queues after applying the compiled ones: same-named replaced, others kept."""
    mine = {q.name for q in compiled}
    kept = [q for q in view.volcano_queues if q.name not in mine]
    report["volcanoQueuesReplacedByContract"] = sorted(
        q.name for q in view.volcano_queues if q.name in mine
    )
    report["volcanoQueuesKeptFromCluster"] = sorted(q.name for q in kept)
    return [*compiled, *kept]


def _podgroup_of(pod: Pod, groups: Mapping[str, PodGroup]) -> PodGroup | None:
    """The PodGroup of a pod Volcano schedules, by its group-name annotation."""
    if pod.scheduler_name != VOLCANO:
        return None
    name = pod.annotations.get(GROUP_ANNOTATION)
    return groups.get(f"{pod.namespace}/{name}") if name else None


# --- the whole --------------------------------------------------------------------------------


def starting_state(view: ClusterView, world: World) -> StartingState:
    pools = list(world.pools)
    nodes: list[Node] = []
    pool_of_node: dict[str, str] = {}
    for node in view.nodes:
        pool = node_pool(node, pools)
        if pool is not None:
            try:
                node = patched(node, world.bundle.node_patches.get(pool, {}))
            except FieldError as err:  # the node's own GPU labels clash with the pool's
                raise InputError(
                    f"{view.source}: node {node.name} with pool {pool}'s node patch: {err}"
                ) from None
            pool_of_node[node.name] = pool
        nodes.append(node)
    by_name = {n.name: n for n in nodes}
    compiled = [e.obj for e in world.bundle.objects if e.target == "kueue"]
    admission, report, owners = reconcile_kueue(compiled, view)
    workload_of = {owner: key for key, owner in owners.items()}
    volcano_queues = reconcile_volcano(world.volcano_queues, view, report)
    podgroups = {g.key: g for g in view.podgroups}
    classes = {c.name for c in world.contract.classes}
    tenants = {t.name for t in world.contract.tenants}
    carried: list[CarriedPod] = []
    workload_pods: dict[str, set[str]] = {key: set() for key in owners}
    pending = unknown = 0
    for raw_pod in view.pods:
        if not raw_pod.holds_resources:
            if raw_pod.phase == "Pending":
                pending += 1
            continue
        node = by_name.get(raw_pod.node_name)
        if node is None:
            unknown += 1
            continue
        pod = _with_priority(raw_pod, view.priority_classes)
        klass = pod.labels.get(CLASS_LABEL, "")
        tenant = pod.labels.get(TENANT_LABEL, "")
        kind, name = owner_kind(pod)
        workload = workload_of.get((pod.namespace, name)) if kind == "Job" else None
        if workload is not None:
            workload_pods[workload].add(pod.key)
        carried.append(
            CarriedPod(
                pod,
                estimate_end(pod, view.observed, view.jobs),
                klass if klass in classes else OUTSIDE,
                tenant if tenant in tenants else "",
                physical_gpus(pod, node),
                workload=workload,
                group=_podgroup_of(pod, podgroups),
            )
        )
    _adopt(carried, world)
    return StartingState(
        view,
        nodes,
        pool_of_node,
        carried,
        admission,
        report,
        pending,
        unknown,
        workload_pods,
        volcano_queues,
    )
