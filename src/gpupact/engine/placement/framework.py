"""kube-scheduler's default filter chain, one node at a time (the explaining path).

Plugins run in the default profile's order and a node stops at its first failing plugin,
as upstream's RunFilterPlugins does. This scalar path explains a single pod (`fit`,
`diagnose`) and is the reference the vectorised engine (`engine/placement/scheduler.py`) must
agree with node for node.

Chain: NodeUnschedulable, NodeName, TaintToleration, NodeAffinity, NodePorts,
NodeResourcesFit, GPUDevices (device-level fit: model, sharing, free devices / GPU-milli / MIG
slices, NVLink; where upstream runs DynamicResources), VolumeBinding, VolumeZone (bound PVs,
plugins/volumes.py; their PreFilter can reject the pod on every node), PodTopologySpread,
InterPodAffinity.
`filter_node_static` is the chain's first four (pod and node only); `filter_node` runs it
first, so gang sessions and preemption share this one implementation.

Pods in Succeeded/Failed phase hold nothing and are invisible to every plugin, as in the
scheduler's cache.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from gpupact.cluster.devices import PLUGIN_NAME as GPU_PLUGIN
from gpupact.cluster.devices import GpuRequest, NodeDevices, node_gpu_spec
from gpupact.cluster.state import NAMESPACE_NAME_LABEL, pod_usage
from gpupact.engine.placement.plugins import inter_pod_affinity as ipa
from gpupact.engine.placement.plugins import volumes as vol
from gpupact.engine.placement.reasons import Reason, fit_error_message, reasons_from_counts
from gpupact.kube import host_ports as hp
from gpupact.kube import topology_spread as pts
from gpupact.kube.objects import Node, Pod
from gpupact.kube.requests import NodeResources
from gpupact.kube.resources_fit import (
    DEFAULT_RESOURCES,
    FitArgs,
    InsufficientResource,
    NodeResourcesBalancedAllocation,
    NodeResourcesFit,
    ResourceSpec,
    compute_fit_request,
    fit_status,
    fits_request,
)
from gpupact.kube.scheduling_objects import SchedulingObjects
from gpupact.kube.selectors import preferred_node_affinity_score
from gpupact.kube.status import SUCCESS, Code, Status
from gpupact.kube.taints import (
    NO_SCHEDULE,
    Taint,
    do_not_schedule_taint,
    find_untolerated_taint,
    taint_toleration_filter,
    taint_toleration_scores,
    tolerations_tolerate_taint,
)

if TYPE_CHECKING:
    from gpupact.cluster.state import ClusterState

UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", NO_SCHEDULE)
REASON_NODE_UNSCHEDULABLE = "node(s) were unschedulable"
REASON_NODE_NAME = "node(s) didn't match the requested node name"
REASON_NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"

# default-profile filter plugins, in upstream order (GPUDevices is this project's)
FILTER_PLUGINS = (
    "NodeUnschedulable",
    "NodeName",
    "TaintToleration",
    "NodeAffinity",
    hp.PLUGIN,
    "NodeResourcesFit",
    GPU_PLUGIN,
    vol.BINDING,
    vol.ZONE,
    "PodTopologySpread",
    "InterPodAffinity",
)

DETAIL_UNSCHEDULABLE = "spec.unschedulable is true (cordoned)"
DETAIL_NODE_AFFINITY = "nodeSelector / required node affinity"
DETAIL_SPREAD = "topology spread constraint"
DETAIL_POD_AFFINITY = "inter-pod affinity / anti-affinity"
DETAIL_VOLUMES = "bound PersistentVolume node affinity / zone"


def detail_ports(ports: Sequence[hp.HostPort]) -> str:
    return "host port(s) " + ", ".join(f"{p.ip}:{p.port}/{p.protocol}" for p in ports) + " in use"


def detail_node_name(node_name: str) -> str:
    return f"pod asks for node {node_name}"


def detail_taint(taint: Taint | None) -> str:
    return f"untolerated taint {taint}" if taint else ""


def detail_resources(short: Sequence[InsufficientResource]) -> str:
    return "; ".join(
        f"{r.resource_name} {r.requested} requested, {r.used}/{r.capacity} used" for r in short
    )


def detail_gpu(request: GpuRequest) -> str:
    if request.mig_profile is not None:
        what = f"{request.count} x MIG {request.mig_profile}"
    elif request.fractional:
        what = f"{request.milli} GPU-milli of one GPU"
    else:
        what = f"{request.count} whole GPU(s)"
    if request.models is not None:
        what += f", model in {{{', '.join(sorted(request.models))}}}"
    if request.nvlink:
        what += ", in one NVLink group"
    return what


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


class FitResult:
    """The pod's answer over all nodes: per-node verdicts (built lazily by the vectorised
    engine), the kube-scheduler FitError line when no node fits, and the refusal reasons
    aggregated per (plugin, code, reason) with their node counts."""

    __slots__ = ("_explain", "_verdicts", "message", "pod", "reasons")

    def __init__(
        self,
        pod: str,
        verdicts: Sequence[NodeVerdict] | None = None,
        message: str = "",
        *,
        reasons: Sequence[Reason] | None = None,
        explain: Callable[[], Sequence[NodeVerdict]] | None = None,
    ) -> None:
        if verdicts is None and explain is None:
            raise ValueError("FitResult needs verdicts or an explain function")
        self.pod = pod
        self.message = message
        self._verdicts = tuple(verdicts) if verdicts is not None else None
        self._explain = explain
        if reasons is None:
            reasons = aggregate_reasons(pod, self.verdicts) if message else ()
        self.reasons: tuple[Reason, ...] = tuple(reasons)

    @property
    def verdicts(self) -> tuple[NodeVerdict, ...]:
        if self._verdicts is None:
            assert self._explain is not None
            self._verdicts = tuple(self._explain())
        return self._verdicts

    @property
    def feasible(self) -> tuple[str, ...]:
        return tuple(v.node for v in self.verdicts if v.fits)

    def __repr__(self) -> str:
        return f"FitResult(pod={self.pod!r}, message={self.message!r})"


def aggregate_reasons(pod: str, verdicts: Iterable[NodeVerdict]) -> tuple[Reason, ...]:
    """One Reason per (plugin, code, reason), detail "<n> node(s)", in first-seen order."""
    counts: dict[tuple[str, str, str], int] = {}
    for v in verdicts:
        for reason in v.status.reasons:
            key = (v.status.plugin, v.status.code.value, reason)
            counts[key] = counts.get(key, 0) + 1
    return reasons_from_counts(pod, counts)


@dataclass
class ClusterView:
    """Nodes and the pods bound to them, with per-node resource sums and device usage ready
    for filtering. `devices`: device indices per pod key (pods not listed get devices by the
    default choice, in the order given)."""

    nodes: Sequence[Node]
    pods: Sequence[Pod] = ()
    devices: Mapping[str, Sequence[int]] | None = None
    namespace_labels: Mapping[str, Mapping[str, str]] | None = None
    objects: SchedulingObjects | None = None  # Services, owners, PVs, PVCs
    node_resources: dict[str, NodeResources] = field(init=False)
    node_devices: dict[str, NodeDevices] = field(init=False)
    node_ports: dict[str, hp.UsedPorts] = field(init=False)
    pod_devices: dict[str, tuple[int, ...]] = field(init=False)  # pod key -> devices it holds
    _node_labels: dict[str, Mapping[str, str]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.node_resources = {}
        self.node_devices = {}
        self.node_ports = {}
        self.pod_devices = {}
        self._node_labels = {node.name: node.labels for node in self.nodes}
        for node in self.nodes:
            self.node_resources[node.name] = NodeResources.from_amounts(node.allocatable)
            self.node_devices[node.name] = NodeDevices(node_gpu_spec(node))
        known = self.devices or {}
        for pod in self.pods:
            res = self.node_resources.get(pod.node_name)
            if res is None or not pod.holds_resources:
                continue
            res.add_pod(pod.footprint())
            if pod.host_ports:
                self.node_ports.setdefault(pod.node_name, hp.UsedPorts()).add(pod.host_ports)
            gpu = pod_usage(pod).gpu
            node_devices = self.node_devices[pod.node_name]
            if gpu is None or not node_devices.spec.devices:
                continue
            given = known.get(pod.key)
            try:
                chosen = tuple(given) if given is not None else node_devices.choose(gpu)
            except ValueError:
                continue  # an inconsistent snapshot: the pod's devices stay unknown
            node_devices.allocate(gpu, chosen)
            self.pod_devices[pod.key] = chosen

    @property
    def bound_pods(self) -> list[Pod]:
        """Pods the plugins see: bound to a listed node and not finished."""
        return [p for p in self.pods if p.holds_resources and p.node_name in self.node_resources]

    def existing_pod(self, pod: Pod) -> ipa.ExistingPod:
        """A bound pod as InterPodAffinity sees it (its terms and its node's labels)."""
        return ipa.ExistingPod(pod, ipa.pod_affinity_info(pod), self._node_labels[pod.node_name])

    def namespace_labels_of(self, namespace: str) -> dict[str, str]:
        labels = dict((self.namespace_labels or {}).get(namespace, {}))
        labels[NAMESPACE_NAME_LABEL] = namespace
        return labels

    @classmethod
    def from_state(cls, state: ClusterState) -> ClusterView:
        """The scalar view of a ClusterState: its active nodes, its bound pods (with
        spec.nodeName set) and their devices."""
        nodes = [node for row, node in enumerate(state.nodes) if state.active[row]]
        pods: list[Pod] = []
        devices: dict[str, tuple[int, ...]] = {}
        for binding in state.bindings():
            name = state.node_names[binding.node]
            pod = binding.pod
            if pod.node_name != name or not pod.holds_resources:
                pod = replace(pod, node_name=name, phase="Running")
            pods.append(pod)
            devices[pod.key] = binding.devices
        return cls(nodes, pods, devices, state.namespace_labels, state.objects)


def _static_failure(
    pod: Pod, node: Node, enabled: Collection[str] | None = None
) -> NodeVerdict | None:
    def on(plugin: str) -> bool:
        return enabled is None or plugin in enabled

    if (
        on("NodeUnschedulable")
        and node.unschedulable
        and not tolerations_tolerate_taint(pod.tolerations, UNSCHEDULABLE_TAINT)
    ):
        status = Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON_NODE_UNSCHEDULABLE,), "NodeUnschedulable"
        )
        return NodeVerdict(node.name, status, DETAIL_UNSCHEDULABLE)
    if on("NodeName") and pod.node_name and pod.node_name != node.name:
        status = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON_NODE_NAME,), "NodeName")
        return NodeVerdict(node.name, status, detail_node_name(pod.node_name))
    status = (
        taint_toleration_filter(node.taints, pod.tolerations) if on("TaintToleration") else SUCCESS
    )
    if not status.ok:
        taint = find_untolerated_taint(node.taints, pod.tolerations, do_not_schedule_taint)
        return NodeVerdict(node.name, status, detail_taint(taint))
    if on("NodeAffinity") and not pod.required_node_affinity.matches(node.name, node.labels):
        status = Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON_NODE_AFFINITY,), "NodeAffinity"
        )
        return NodeVerdict(node.name, status, DETAIL_NODE_AFFINITY)
    return None


def filter_node_static(pod: Pod, node: Node) -> NodeVerdict:
    """The chain's first four filters (NodeUnschedulable, NodeName, TaintToleration,
    NodeAffinity): those that read only the pod and the node, never other pods or free
    resources. Gang sessions (Volcano, KAI) run these and keep resources in their own books."""
    return _static_failure(pod, node) or NodeVerdict(node.name, SUCCESS)


def filter_node(
    pod: Pod,
    node: Node,
    resources: NodeResources,
    spread: pts.PreFilterState | None,
    devices: NodeDevices | None = None,
    gpu: GpuRequest | None = None,
    affinity: ipa.FilterState | None = None,
    ports: hp.UsedPorts | None = None,
    volumes: vol.VolumeState | None = None,
    enabled: Collection[str] | None = None,
) -> NodeVerdict:
    """The whole chain on one node, stopping at the first failing plugin. `spread` / `affinity`
    None skip PodTopologySpread / InterPodAffinity, `devices` or `gpu` None skip GPUDevices;
    `ports`: the host ports the node's pods use (None: none). `enabled`: the filter plugins a
    profile registers (None: all of FILTER_PLUGINS), as upstream tests build frameworks with
    a few plugins only."""
    failure = _static_failure(pod, node, enabled)
    if failure is not None:
        return failure
    if enabled is not None:
        spread = spread if "PodTopologySpread" in enabled else None
        affinity = affinity if "InterPodAffinity" in enabled else None
        ports = ports if hp.PLUGIN in enabled else None
        devices = devices if GPU_PLUGIN in enabled else None
        if vol.BINDING not in enabled and vol.ZONE not in enabled:
            volumes = None
    if pod.host_ports and (enabled is None or hp.PLUGIN in enabled):
        status = hp.filter_ports(pod.host_ports, ports)
        if not status.ok:
            return NodeVerdict(node.name, status, detail_ports(pod.host_ports))
    short = []
    if enabled is None or "NodeResourcesFit" in enabled:
        request = compute_fit_request(pod.resources, pod_level_resources=True)
        short = fits_request(request, resources)
    if short:
        return NodeVerdict(node.name, fit_status(short), detail_resources(short), tuple(short))
    if gpu is not None and devices is not None:
        failure = devices.failure(gpu)
        if failure is not None:
            reason, unresolvable = failure
            code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else Code.UNSCHEDULABLE
            return NodeVerdict(node.name, Status(code, (reason,), GPU_PLUGIN), detail_gpu(gpu))
    if volumes is not None:
        status = volumes.rejection or vol.filter_node(volumes, node.labels)
        if not status.ok:
            return NodeVerdict(node.name, status, DETAIL_VOLUMES)
    if spread is not None:
        status = pts.filter_node(spread, node)
        if not status.ok:
            return NodeVerdict(node.name, status, DETAIL_SPREAD)
    if affinity is not None:
        status = affinity.filter(node.labels)
        if not status.ok:
            return NodeVerdict(node.name, status, DETAIL_POD_AFFINITY)
    return NodeVerdict(node.name, SUCCESS)


def affinity_prefilter(pod: Pod, cluster: ClusterView) -> ipa.FilterState:
    """InterPodAffinity PreFilter over the cluster's bound pods."""
    existing = [cluster.existing_pod(p) for p in cluster.bound_pods]
    return ipa.prefilter(pod, ipa.pod_affinity_info(pod), existing, cluster.namespace_labels_of)


def explain_fit(pod: Pod, cluster: ClusterView, nodes: Iterable[Node] | None = None) -> FitResult:
    """Run the filter chain for `pod` on every node; the FitError line when none fits."""
    candidates = list(cluster.nodes if nodes is None else nodes)
    bound = cluster.bound_pods
    spread = None
    if pod.topology_spread_constraints:
        spread = pts.prefilter(pod, cluster.nodes, bound)
    gpu = pod_usage(pod).gpu
    affinity = affinity_prefilter(pod, cluster)
    volumes = vol.prefilter(pod, cluster.objects)
    if volumes is not None and volumes.rejection is not None:
        # a PreFilter rejection: every node, and the FitError names only the PreFilter message
        verdicts = tuple(NodeVerdict(n.name, volumes.rejection, DETAIL_VOLUMES) for n in candidates)
        message = fit_error_message(len(candidates), {}, prefilter_msg=volumes.rejection.message)
        return FitResult(pod.key, verdicts, message)
    verdicts = tuple(
        filter_node(
            pod,
            n,
            cluster.node_resources[n.name],
            spread,
            cluster.node_devices[n.name],
            gpu,
            affinity,
            cluster.node_ports.get(n.name),
            volumes,
        )
        for n in candidates
    )
    message = ""
    if not any(v.fits for v in verdicts):
        message = fit_error_message(len(candidates), {v.node: v.status for v in verdicts})
    return FitResult(pod.key, verdicts, message)


def node_statuses(result: FitResult) -> Mapping[str, Status]:
    return {v.node: v.status for v in result.verdicts}


# --- scores, one node at a time (the reference for the engine's vectorised scores) ----------

DEFAULT_WEIGHTS: Mapping[str, int] = {
    "NodeResourcesFit": 1,
    "NodeResourcesBalancedAllocation": 1,
    "TaintToleration": 3,
    "NodeAffinity": 2,
    "PodTopologySpread": 2,
    "InterPodAffinity": 2,
}


def _normalize_max(raw: Mapping[str, int]) -> dict[str, int]:
    """DefaultNormalizeScore(100, reverse=false)."""
    high = max(raw.values(), default=0)
    if high == 0:
        return dict(raw)
    return {name: 100 * score // high for name, score in raw.items()}


def _normalize_min_max(raw: Mapping[str, int]) -> dict[str, int]:
    """InterPodAffinity's NormalizeScore: int64(100 * (s - min) / (max - min)) in float64."""
    if not raw:
        return {}
    low, high = min(raw.values()), max(raw.values())
    if high - low <= 0:
        return dict.fromkeys(raw, 0)
    return {n: int(100.0 * (float(s - low) / float(high - low))) for n, s in raw.items()}


def spread_scores(pod: Pod, cluster: ClusterView, scored: Sequence[Node]) -> dict[str, int]:
    """PodTopologySpread PreScore + Score + NormalizeScore for the ScheduleAnyway constraints,
    or the system defaults (see plugins/pod_topology_spread.py), one node at a time."""
    import math

    from gpupact.engine.placement.plugins.pod_topology_spread import scoring_constraints
    from gpupact.kube.resources_fit import go_round

    constraints, require_all = scoring_constraints(pod, cluster.objects)
    if not constraints:
        return {n.name: 0 for n in scored}
    keys = [c.topology_key for c in constraints] if require_all else []
    ignored = {n.name for n in scored if any(k not in n.labels for k in keys)}
    kept = [n for n in scored if n.name not in ignored]
    pods_on: dict[str, list[Pod]] = {}
    for p in cluster.bound_pods:
        pods_on.setdefault(p.node_name, []).append(p)

    def count(c: pts.HardConstraint, node: Node) -> int:
        if not c.counts_existing:
            return 0
        return sum(
            1
            for p in pods_on.get(node.name, ())
            if p.namespace == pod.namespace and not p.terminating and c.matches(p.labels)
        )

    affinity = pod.required_node_affinity
    weights: list[float] = []
    domain_counts: list[dict[str, int]] = []
    for c in constraints:
        if c.topology_key == "kubernetes.io/hostname":
            weights.append(math.log(float(len(kept) + 2)))
            domain_counts.append({})
            continue
        domains = {n.labels.get(c.topology_key, "") for n in kept}
        weights.append(math.log(float(len(domains) + 2)))
        totals = dict.fromkeys(domains, 0)
        for node in cluster.nodes:
            if any(k not in node.labels for k in keys):
                continue
            if c.honor_affinity and not affinity.matches(node.name, node.labels):
                continue
            if c.honor_taints and (
                find_untolerated_taint(node.taints, pod.tolerations, do_not_schedule_taint)
                is not None
            ):
                continue
            value = node.labels.get(c.topology_key, "")
            if value in totals:
                totals[value] += count(c, node)
        domain_counts.append(totals)
    raw: dict[str, int] = {}
    for node in kept:
        total = 0.0
        for i, c in enumerate(constraints):
            value = node.labels.get(c.topology_key)
            if value is None:
                continue
            if c.topology_key == "kubernetes.io/hostname":
                cnt = count(c, node)
            else:
                cnt = domain_counts[i][value]
            total += float(cnt) * weights[i] + float(c.max_skew - 1)
        raw[node.name] = go_round(total)
    out = dict.fromkeys((n.name for n in scored), 0)
    if raw:
        low, high = min(raw.values()), max(raw.values())
        for name, score in raw.items():
            out[name] = 100 if high == 0 else 100 * (high + low - score) // high
    return out


def score_nodes(
    pod: Pod,
    cluster: ClusterView,
    scored: Sequence[Node],
    *,
    fit_args: FitArgs | None = None,
    balanced_resources: Sequence[ResourceSpec] | None = None,
    weights: Mapping[str, int] = DEFAULT_WEIGHTS,
    hard_pod_affinity_weight: int = ipa.DEFAULT_HARD_POD_AFFINITY_WEIGHT,
) -> dict[str, dict[str, int]]:
    """Every default score plugin for the nodes `scored` (the feasible ones), normalised,
    plus the weighted "total": node name -> plugin -> score."""
    fit = NodeResourcesFit(fit_args, pod_level_resources=True)
    balanced = NodeResourcesBalancedAllocation(
        tuple(balanced_resources) if balanced_resources is not None else DEFAULT_RESOURCES,
        pod_level_resources=True,
    )
    fit_request = fit.pre_score(pod.resources)
    balanced_request = balanced.pre_score(pod.resources)
    taint = taint_toleration_scores([(n.name, n.taints) for n in scored], pod.tolerations)
    node_affinity = _normalize_max(
        {n.name: preferred_node_affinity_score(pod.node_affinity, n.name, n.labels) for n in scored}
    )
    spread = spread_scores(pod, cluster, scored)
    info = ipa.pod_affinity_info(pod)
    bound = cluster.bound_pods
    if not info.has_preferred:
        bound = [p for p in bound if p.has_inter_pod_affinity]
    existing = [cluster.existing_pod(p) for p in bound]
    topology = ipa.topology_scores(
        pod, info, existing, cluster.namespace_labels_of, hard_pod_affinity_weight
    )
    pod_affinity = dict.fromkeys((n.name for n in scored), 0)
    if topology:
        pod_affinity = _normalize_min_max(
            {n.name: ipa.raw_score(topology, n.labels) for n in scored}
        )
    out: dict[str, dict[str, int]] = {}
    for node in scored:
        resources = cluster.node_resources[node.name]
        parts = {
            "NodeResourcesFit": fit.score(fit_request, resources)[0],
            "NodeResourcesBalancedAllocation": balanced.score(balanced_request, resources)[0],
            "TaintToleration": taint[node.name],
            "NodeAffinity": node_affinity[node.name],
            "PodTopologySpread": spread[node.name],
            "InterPodAffinity": pod_affinity[node.name],
        }
        parts["total"] = sum(weights.get(k, 0) * v for k, v in parts.items())
        out[node.name] = parts
    return out
