"""One snapshot, read for diagnosis: the engine's state plus the indexes the runbook needs.

`Analysis` builds the ClusterState and a Scheduler over it (the same engine the twin uses),
the Kueue AdmissionState from the Kueue objects, and indexes: events per object, PodGroup
members, the Workload of a pod, controllers by uid. Placement answers are cached per pod
shape (requests, selector, affinity, tolerations, spread): pending pods of one Deployment
are explained once. Time is `now` (Unix seconds), given, never read.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np

from gpupact.cluster.devices import GPU_RESOURCE, GpuRequest
from gpupact.cluster.devices import PLUGIN_NAME as GPU_PLUGIN
from gpupact.cluster.state import ClusterState, has_pod_affinity, pod_usage
from gpupact.contract.schema import Contract
from gpupact.engine.admission import AdmissionState
from gpupact.engine.admission import k8s as kueue
from gpupact.engine.admission.reasons import format_amount
from gpupact.engine.gang import GROUP_NAME_ANNOTATION
from gpupact.engine.placement import FitResult, Profile, Scheduler
from gpupact.engine.placement.plugins.gpu_devices import STATIC_REASONS
from gpupact.engine.placement.reasons import Reason
from gpupact.engine.placement.shape import compile_pod
from gpupact.errors import FieldError, InputError
from gpupact.kube.objects import Node, Pod
from gpupact.kube.taints import do_not_schedule_taint, tolerations_tolerate_taint
from gpupact.ops.autoscale import (
    COLD_START_ANNOTATION,
    KARPENTER_POOL_LABEL,
    ColdStart,
    gpu_limit_reached,
    parse_cold_start,
)
from gpupact.ops.model import (
    ClusterSnapshot,
    Controller,
    Event,
    GangObject,
    KueueObject,
    NodePool,
    OwnerRef,
)
from gpupact.ops.owners import owner_of
from gpupact.ops.roles import Roles, gpu_lost

# plugins whose refusal depends on the node alone (labels, taints, cordon, GPU hardware)
STATIC_PLUGINS = frozenset({"NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity"})
GPU_STATIC_REASONS = frozenset(r for r in STATIC_REASONS if r)
CONSTRAINT_PLUGINS = frozenset({"PodTopologySpread", "InterPodAffinity"})
KUEUE_GATE = "kueue.x-k8s.io/admission"
NODE_LIFECYCLE_TAINT_PREFIX = "node.kubernetes.io/"
_MAX_KUEUE_CYCLES = 10_000


# --- placement answers ------------------------------------------------------------------------


@dataclass(frozen=True)
class PlacementOutcome:
    """What the filter chain says about one pod shape on the cluster as it is.

    kind: "fits" | "unsatisfiable" (no node passes the static filters: taints, affinity,
    selector, cordon, GPU hardware) | "fragmented" (enough GPUs free in total among the
    eligible nodes, not on one) | "constraints" (eligible nodes refused only by topology
    spread / inter-pod affinity) | "capacity" (eligible nodes are full)."""

    kind: str
    feasible: int
    nodes: int
    message: str = ""
    reasons: tuple[Reason, ...] = ()
    eligible: int = 0
    free_gpu_milli: int = 0  # summed over eligible nodes
    largest_free_milli: int = 0  # on one eligible node (one device for a share)
    examples: tuple[str, ...] = ()  # per-node details for evidence
    eligible_nodes: tuple[str, ...] = ()  # nodes past the static filters (names)
    # (resource, line) for requests no eligible node has as much allocatable of, even empty
    never_enough: tuple[tuple[str, str], ...] = ()

    @property
    def fits(self) -> bool:
        return self.feasible > 0


def _is_static(plugin: str, reason: str) -> bool:
    if plugin in STATIC_PLUGINS:
        return True
    return plugin == GPU_PLUGIN and reason in GPU_STATIC_REASONS


def shape_key(pod: Pod) -> tuple | None:
    """Pods with equal keys get equal placement answers (None: not cacheable)."""
    key: Any = compile_pod(pod).dynamic_key
    if key is None:
        return None
    if pod.topology_spread_constraints or has_pod_affinity(pod):
        key = (
            key,
            pod.namespace,
            tuple(sorted(pod.labels.items())),
            pod.topology_spread_constraints,
            pod.pod_affinity,
            pod.pod_anti_affinity,
        )
    try:
        hash(key)
    except TypeError:
        return None
    return key


# --- the analysis -----------------------------------------------------------------------------


@dataclass
class KueueView:
    """The AdmissionState of the consistent Kueue objects, what one more run of Kueue's
    scheduler would do, and the objects it could not take (with why)."""

    state: AdmissionState | None
    outlook: AdmissionState | None  # after running cycles until nothing changes
    admitted_in_outlook: dict[str, int] = field(default_factory=dict)  # key -> cycle
    preempting: dict[str, list[str]] = field(default_factory=dict)  # preemptor -> victims
    problems: dict[str, str] = field(default_factory=dict)  # workload key -> why not queued


class Analysis:
    def __init__(
        self, snapshot: ClusterSnapshot, *, now: int, contract: Contract | None = None
    ) -> None:
        self.snapshot = snapshot
        self.now = now
        self.contract = contract
        self.roles = Roles(contract)
        self.pods: dict[str, Pod] = {p.key: p for p in snapshot.pods}
        self.nodes: dict[str, Node] = {n.name: n for n in snapshot.nodes}
        namespace_labels = {name: dict(m.labels) for name, m in snapshot.namespaces.items()}
        try:
            self.state = ClusterState.from_nodes(
                snapshot.nodes,
                snapshot.pods,
                namespace_labels=namespace_labels,
                objects=snapshot.scheduling,
            )
        except FieldError as err:
            raise InputError(f"{snapshot.source}: {err}") from None
        self.scheduler = Scheduler(self.state, Profile(tie_break="first"))
        self._placements: dict[Any, PlacementOutcome] = {}
        self.memo: dict[Any, Any] = {}  # per-analysis caches of derived lists (see diagnose)
        self._pools_for: dict[Any, list[PoolView]] = {}
        self._shapes: dict[str, tuple | None] = {}
        self._pool_views: dict[str, PoolView] = {}
        self._holdings_of: dict[str, list[tuple[str, int]]] = {}
        self._index_events(snapshot.events)
        self._index_groups(snapshot.podgroups)
        self._index_workloads(snapshot.kueue)
        self.controllers: dict[str, Controller] = {
            c.meta.uid: c for c in snapshot.controllers if c.meta.uid
        }

    # --- indexes --------------------------------------------------------------------------

    def _index_events(self, events: Iterable[Event]) -> None:
        self._events: dict[tuple[str, str, str], list[Event]] = {}
        for event in events:
            key = (event.object_kind, event.namespace, event.object_name)
            self._events.setdefault(key, []).append(event)
        for items in self._events.values():
            items.sort(key=lambda e: (e.last or 0, e.first or 0))

    def events_for(self, kind: str, namespace: str, name: str) -> list[Event]:
        return self._events.get((kind, namespace, name), [])

    def _index_groups(self, groups: Sequence[GangObject]) -> None:
        self.podgroups: dict[str, GangObject] = {g.key: g for g in groups}
        by_owner = {o.uid: g.key for g in groups for o in g.meta.owners if o.uid}
        self.members: dict[str, list[Pod]] = {g.key: [] for g in groups}
        self._group_of: dict[str, str] = {}
        for pod in self.snapshot.pods:
            name = pod.annotations.get(GROUP_NAME_ANNOTATION)
            key = f"{pod.namespace}/{name}" if name else ""
            if key not in self.podgroups:
                key = next((by_owner[o.uid] for o in _owner_refs(pod) if o.uid in by_owner), "")
            if key:
                self.members[key].append(pod)
                self._group_of[pod.key] = key

    def podgroup_of(self, pod: Pod) -> GangObject | None:
        key = self._group_of.get(pod.key)
        return self.podgroups.get(key) if key else None

    def _index_workloads(self, objects: Sequence[KueueObject]) -> None:
        self.workloads: dict[str, KueueObject] = {o.key: o for o in objects if o.kind == "Workload"}
        by_owner: dict[str, str] = {}
        for wl in self.workloads.values():
            for owner in wl.meta.owners:
                if owner.uid:
                    by_owner[owner.uid] = wl.key
        self.workload_pods: dict[str, list[Pod]] = {k: [] for k in self.workloads}
        self._workload_of: dict[str, str] = {}
        for pod in self.snapshot.pods:
            key = by_owner.get(pod.uid) if pod.uid else None
            if key is None:
                key = next((by_owner[o.uid] for o in _owner_refs(pod) if o.uid in by_owner), None)
            if key is not None:
                self.workload_pods[key].append(pod)
                self._workload_of[pod.key] = key

    def workload_of(self, pod: Pod) -> KueueObject | None:
        key = self._workload_of.get(pod.key)
        return self.workloads.get(key) if key else None

    def controller_of(self, pod: Pod) -> Controller | None:
        """The top controller in the snapshot (a ReplicaSet's Deployment, say)."""
        found = None
        refs = _owner_refs(pod)
        seen: set[str] = set()
        while refs:
            ref = next((r for r in refs if r.controller), refs[0])
            ctrl = self.controllers.get(ref.uid)
            if ctrl is None or ref.uid in seen:
                break
            seen.add(ref.uid)
            found = ctrl
            refs = list(ctrl.meta.owners)
        return found

    @cached_property
    def _by_controller(self) -> dict[str, list[Pod]]:
        out: dict[str, list[Pod]] = {}
        for pod in self.snapshot.pods:
            for ref in _owner_refs(pod):
                if ref.controller and ref.uid:
                    out.setdefault(ref.uid, []).append(pod)
        return out

    def siblings(self, pod: Pod) -> list[Pod]:
        """Other pods with the same controlling owner."""
        uid = next((r.uid for r in _owner_refs(pod) if r.controller and r.uid), None)
        if uid is None:
            return []
        return [p for p in self._by_controller.get(uid, []) if p.key != pod.key]

    @cached_property
    def label_index(self) -> dict[str, dict[str, int]]:
        """label key -> value -> how many nodes carry it."""
        out: dict[str, dict[str, int]] = {}
        for node in self.snapshot.nodes:
            for key, value in node.labels.items():
                values = out.setdefault(key, {})
                values[value] = values.get(value, 0) + 1
        return out

    @cached_property
    def pods_by_node(self) -> dict[str, list[Pod]]:
        out: dict[str, list[Pod]] = {}
        for pod in self.snapshot.pods:
            if pod.node_name:
                out.setdefault(pod.node_name, []).append(pod)
        return out

    # --- nodes ----------------------------------------------------------------------------

    @cached_property
    def unhealthy_nodes(self) -> list[tuple[Node, str, int, int]]:
        """(node, "not-ready" | "gpu-lost", expected GPUs, allocatable GPUs)."""
        out = []
        for node in self.snapshot.nodes:
            if not node.ready:
                expected = self.roles.expected_gpus(node) or 0
                out.append((node, "not-ready", expected, node.allocatable.get(GPU_RESOURCE, 0)))
                continue
            lost = gpu_lost(self.roles, node)
            if lost is not None:
                out.append((node, "gpu-lost", *lost))
        return out

    def node_relevant(self, pod: Pod, node: Node) -> bool:
        """Would the pod go to this node if it were healthy: its selector and required
        affinity match, and it tolerates the node's taints apart from the node lifecycle ones
        (not-ready, unreachable) that only say the node is sick."""
        if not required_affinity(pod).matches(node.name, node.labels):
            return False
        return all(
            tolerations_tolerate_taint(pod.tolerations, t)
            for t in node.taints
            if do_not_schedule_taint(t) and not t.key.startswith(NODE_LIFECYCLE_TAINT_PREFIX)
        )

    # --- placement ------------------------------------------------------------------------

    def shape_of(self, pod: Pod) -> tuple | None:
        """`shape_key(pod)`, memoised per pod (pods are unique by namespace/name)."""
        try:
            return self._shapes[pod.key]
        except KeyError:
            key = self._shapes[pod.key] = shape_key(pod)
            return key

    def placement(self, pod: Pod) -> PlacementOutcome:
        key = self.shape_of(pod)
        cached = self._placements.get(key) if key is not None else None
        if cached is not None:
            return cached
        outcome = self._placement(pod)
        if key is not None:
            self._placements[key] = outcome
        return outcome

    def _placement(self, pod: Pod) -> PlacementOutcome:
        unbound = pod if not pod.node_name else _unbound(pod)
        nodes = int(np.count_nonzero(self.state.active))
        answer = self.scheduler.schedule_one(unbound, bind=False)
        if not isinstance(answer, FitResult):
            return PlacementOutcome("fits", answer.feasible_nodes, nodes)
        return self._refusal(unbound, answer, nodes)

    def _refusal(self, pod: Pod, result: FitResult, nodes: int) -> PlacementOutcome:
        gpu = pod_usage(pod).gpu
        eligible_rows: list[int] = []
        eligible_names: list[str] = []
        resource_blocked = constraint_blocked = 0
        examples: list[str] = []
        seen_details: set[str] = set()
        for verdict in result.verdicts:
            status = verdict.status
            reason = status.reasons[0] if status.reasons else ""
            if _is_static(status.plugin, reason):
                line = f"{verdict.detail or reason}"
                if line not in seen_details and len(examples) < 5:
                    seen_details.add(line)
                    examples.append(f"node {verdict.node}: {line}")
                continue
            eligible_rows.append(self.state.node_index[verdict.node])
            eligible_names.append(verdict.node)
            if status.plugin in CONSTRAINT_PLUGINS:
                constraint_blocked += 1
            else:
                resource_blocked += 1
                if len(examples) < 5:
                    examples.append(f"node {verdict.node}: {verdict.detail or reason}")
        free_total, largest = self._free_gpus(eligible_rows, gpu)
        common = dict(
            feasible=0,
            nodes=nodes,
            message=result.message,
            reasons=result.reasons,
            eligible=len(eligible_rows),
            free_gpu_milli=free_total,
            largest_free_milli=largest,
            examples=tuple(examples),
            eligible_nodes=tuple(eligible_names),
        )
        if not eligible_rows:
            return PlacementOutcome("unsatisfiable", **common)
        never = self._never_enough(pod, eligible_rows)
        if never:
            # NodeResourcesFit says Insufficient, but no eligible node has that much even
            # empty (a MIG profile nobody advertises, 16 GPUs on 8-GPU nodes): waiting is futile
            return PlacementOutcome("unsatisfiable", **common, never_enough=tuple(never))
        if gpu is not None and gpu.mig_profile is None and free_total >= gpu.total_milli > largest:
            return PlacementOutcome("fragmented", **common)
        if constraint_blocked and not resource_blocked:
            return PlacementOutcome("constraints", **common)
        return PlacementOutcome("capacity", **common)

    def _never_enough(self, pod: Pod, rows: list[int]) -> list[tuple[str, str]]:
        """Requested resources no node in `rows` has as much allocatable of, even empty."""
        index = np.asarray(rows, dtype=np.intp)
        out = []
        for name, amount in sorted(pod.requests().items()):
            col = self.state.resource_index.get(name)
            most = int(self.state.allocatable[index, col].max()) if col is not None else 0
            if amount > most:
                out.append(
                    (
                        name,
                        f"{name}: {format_amount(name, amount)} requested; the {len(rows)} "
                        f"node(s) it may use have at most {format_amount(name, most)} "
                        "allocatable"
                        + (
                            f" ({self._offered(name, index)})"
                            if name.startswith("nvidia.com/")
                            else ""
                        ),
                    )
                )
        return out

    def _offered(self, resource: str, rows: Any) -> str:
        """What GPU resources the nodes advertise instead (names and most per node)."""
        offered: dict[str, int] = {}
        for name, col in self.state.resource_index.items():
            if name.startswith("nvidia.com/") and name != resource:
                most = int(self.state.allocatable[rows, col].max())
                if most > 0:
                    offered[name] = most
        if not offered:
            return "they advertise no nvidia.com resource"
        return "they advertise " + ", ".join(f"{n} (up to {v})" for n, v in sorted(offered.items()))

    def _free_gpus(self, rows: list[int], gpu: GpuRequest | None) -> tuple[int, int]:
        """(free GPU-milli summed over `rows`, the most on one node — or on one device for a
        GPU share)."""
        if gpu is None or not rows:
            return 0, 0
        index = np.asarray(rows, dtype=np.intp)
        free = self.state.dev_free_milli[index]
        if free.size == 0:
            return 0, 0
        usable = np.where(free > 0, free, 0)
        if gpu.fractional:
            return int(usable.sum()), int(usable.max())
        whole = (usable // 1000) * 1000  # a whole-GPU pod takes only fully free devices
        per_node = whole.sum(axis=1)
        return int(per_node.sum()), int(per_node.max())

    def gpu_room(self, names: Sequence[str], fractional: bool = False) -> list[NodeRoom]:
        """Free and total GPUs of each named node, most free first (whole GPUs: only fully
        free devices count; `fractional`: free GPU-milli on the freest device)."""
        if not names:
            return []
        rows = np.fromiter((self.state.node_index[n] for n in names), dtype=np.intp)
        free = np.clip(self.state.dev_free_milli[rows], 0, None)
        devices = np.count_nonzero(self.state.dev_capacity_milli[rows], axis=1)
        if fractional:
            room = free.max(axis=1) if free.shape[1] else np.zeros(len(rows), dtype=np.int64)
        else:
            room = (free // 1000).sum(axis=1) * 1000
        order = np.lexsort((np.arange(len(rows)), -room))  # most free first, then given order
        pool = self.roles.node_pool
        return [
            NodeRoom(names[i], pool(self.nodes[names[i]]), int(room[i]), int(devices[i]))
            for i in order
        ]

    def _holdings(self, node: str) -> list[tuple[str, int]]:
        """(owner, GPU-milli) of each GPU pod bound to the node, computed once per node."""
        found = self._holdings_of.get(node)
        if found is None:
            found = []
            for pod in self.pods_by_node.get(node, ()):
                gpu = pod_usage(pod).gpu
                if gpu is not None and pod.holds_resources:
                    found.append((str(owner_of(self, pod)), gpu.total_milli))
            self._holdings_of[node] = found
        return found

    def gpu_holders(self, names: Iterable[str], limit: int = 5) -> list[tuple[str, int, int]]:
        """Who holds the GPUs of the named nodes: (owner, GPU-milli, pods), largest first."""
        held: dict[str, list[int]] = {}
        for name in names:
            for owner, milli in self._holdings(name):
                entry = held.setdefault(owner, [0, 0])
                entry[0] += milli
                entry[1] += 1
        ranked = heapq.nsmallest(limit, held.items(), key=lambda kv: (-kv[1][0], kv[0]))
        return [(k, v[0], v[1]) for k, v in ranked]

    # --- Kueue ----------------------------------------------------------------------------

    @cached_property
    def kueue(self) -> KueueView:
        objects = self.snapshot.kueue
        if not objects:
            return KueueView(None, None)
        problems, usable = _consistent_kueue(objects)
        now_ms = self.now * 1000
        try:
            namespaces = {n: dict(m.labels) for n, m in self.snapshot.namespaces.items()}
            state = kueue.load_state(
                [o.raw for o in usable], now=now_ms, namespaces=namespaces or None
            )
        except (FieldError, ValueError) as err:
            raise InputError(f"{self.snapshot.source}: Kueue objects: {err}") from None
        outlook = state.copy()
        admitted: dict[str, int] = {}
        preempting: dict[str, list[str]] = {}
        attempted: set[str] = set()
        for cycle in range(1, _MAX_KUEUE_CYCLES + 1):
            result = outlook.schedule_cycle(now_ms)
            for a in result.admitted:
                admitted[a.key] = cycle
            for p in result.preempted:
                preempting.setdefault(p.preemptor, []).append(p.key)
            fresh = {h.key for h in result.left_pending} - attempted
            attempted |= fresh
            # a StrictFIFO head that does not fit is popped every cycle: stop once a cycle
            # changes nothing and tries no workload it has not tried before
            if not (result.admitted or result.preempted or fresh):
                break
        return KueueView(state, outlook, admitted, preempting, problems)

    # --- what-ifs (the state is restored exactly afterwards) ------------------------------

    def whatif_place(
        self, pods: Sequence[Pod], need: int, release: Sequence[Pod] = ()
    ) -> tuple[int, FitResult | None]:
        """Place `pods` in order, as one gang would be, until `need` are placed or one does not
        fit; with `release`, first as if those bound pods were gone. Returns how many were
        placed and the refusal that stopped it."""
        return _place_all(self.state, self.scheduler, pods, need, release)

    @cached_property
    def _empty(self) -> tuple[ClusterState, Scheduler]:
        state = ClusterState.from_nodes(self.snapshot.nodes)
        return state, Scheduler(state, Profile(tie_break="first"))

    def whatif_empty(self, pods: Sequence[Pod], need: int) -> int:
        """How many of `pods` an empty cluster of the same nodes holds at once (up to need)."""
        state, scheduler = self._empty
        placed, _ = _place_all(state, scheduler, pods, need, ())
        return placed

    # --- pools ----------------------------------------------------------------------------

    def pools_for(self, pod: Pod) -> list[PoolView]:
        """The pools (Karpenter NodePools, contract pools) whose nodes the pod could use."""
        key = pod.required_node_affinity
        try:
            cached = self._pools_for.get(key)
        except TypeError:  # an unhashable selector: not cached
            return self._pools_for_uncached(pod)
        if cached is None:
            cached = self._pools_for[key] = self._pools_for_uncached(pod)
        return cached

    def _pools_for_uncached(self, pod: Pod) -> list[PoolView]:
        views: dict[str, PoolView] = {}
        for name, np_ in sorted(self.snapshot.node_pools.items()):
            labels = {**np_.template_labels, KARPENTER_POOL_LABEL: name}
            if pod.required_node_affinity.matches("", labels):
                views[name] = self._pool_view_cached(name, np_)
        if self.contract is not None:
            for pool in self.contract.pools:
                labels = {**pool.node_labels(), "nodepool": pool.name}
                if pool.name not in views and pod.required_node_affinity.matches("", labels):
                    views[pool.name] = self._pool_view_cached(pool.name, None)
        return list(views.values())

    def _pool_view_cached(self, name: str, node_pool: NodePool | None) -> PoolView:
        view = self._pool_views.get(name)
        if view is None:
            view = self._pool_views[name] = self._pool_view(name, node_pool)
        return view

    def _pool_view(self, name: str, node_pool: NodePool | None) -> PoolView:
        nodes = [n for n in self.snapshot.nodes if self.roles.node_pool(n) == name]
        karpenter_nodes = sum(1 for n in nodes if n.labels.get(KARPENTER_POOL_LABEL) == name)
        claims = [c for c in self.snapshot.node_claims if c.nodepool == name and not c.ready]
        spec = None
        if self.contract is not None:
            spec = next((p for p in self.contract.pools if p.name == name), None)
        cold = None
        reasons = []
        at_max = False
        if node_pool is not None:
            text = node_pool.meta.annotations.get(COLD_START_ANNOTATION)
            if text:
                try:
                    cold = parse_cold_start(text, f"NodePool {name} annotation")
                except FieldError as err:
                    raise InputError(f"NodePool {name}: {err}") from None
            limit = node_pool.limits.get("nodes")
            if limit is not None and karpenter_nodes + len(claims) >= limit:
                at_max = True
                reasons.append(f"NodePool limit {limit} node(s) reached")
            per_node = max((n.capacity.get(GPU_RESOURCE, 0) for n in nodes), default=0)
            if gpu_limit_reached(dict(node_pool.limits), dict(node_pool.resources), per_node):
                at_max = True
                reasons.append(
                    f"NodePool limit {node_pool.limits[GPU_RESOURCE]} GPUs reached "
                    f"({node_pool.resources.get(GPU_RESOURCE, 0)} in use)"
                )
        max_nodes = None
        if spec is not None:
            max_nodes = spec.nodes.max
            if len(nodes) + len(claims) >= max_nodes:
                at_max = True
                reasons.append(f"contract nodes.max {max_nodes} reached")
            if cold is None and spec.cold_start.total.total_seconds() > 0:
                cold = _contract_cold_start(spec)
        elastic = node_pool is not None or (spec is not None and spec.nodes.max > spec.nodes.min)
        return PoolView(name, len(nodes), max_nodes, len(claims), at_max, elastic, cold, reasons)

    def max_queue_wait(self, pod: Pod) -> int | None:
        """The pod's class promise (contract `maxQueueWait`), in seconds."""
        if self.contract is None:
            return None
        klass = self.roles.pod_class(pod)
        spec = next((c for c in self.contract.classes if c.name == klass), None)
        if spec is None or spec.max_queue_wait is None:
            return None
        return int(spec.max_queue_wait.total_seconds())

    # --- small helpers --------------------------------------------------------------------

    def age(self, created: int | None) -> int | None:
        return None if created is None else max(0, self.now - created)


@dataclass(frozen=True)
class NodeRoom:
    node: str
    pool: str
    free_milli: int
    devices: int


@dataclass(frozen=True)
class PoolView:
    name: str
    nodes: int
    max_nodes: int | None
    in_flight: int  # NodeClaims launched, not ready
    at_max: bool
    elastic: bool  # an autoscaler can add nodes (NodePool, or contract max > min)
    cold_start: ColdStart | None
    reasons: list[str]

    def describe(self) -> str:
        size = f"{self.nodes}/{self.max_nodes}" if self.max_nodes is not None else f"{self.nodes}"
        text = f"pool {self.name}: {size} node(s)"
        if self.in_flight:
            text += f", {self.in_flight} launching"
        if self.reasons:
            text += f" ({'; '.join(self.reasons)})"
        return text


def _contract_cold_start(pool: Any) -> ColdStart:
    cs = pool.cold_start
    phases = tuple(
        (name, int(getattr(cs, attr).total_seconds()))
        for name, attr in (
            ("provision", "provision"),
            ("driver", "driver"),
            ("devicePlugin", "device_plugin"),
            ("imagePull", "image_pull"),
            ("modelLoad", "model_load"),
        )
    )
    return ColdStart(int(cs.total.total_seconds()), phases, f"contract pool {pool.name}")


def _place_all(
    state: ClusterState,
    scheduler: Scheduler,
    pods: Sequence[Pod],
    need: int,
    release: Sequence[Pod],
) -> tuple[int, FitResult | None]:
    removed = []
    placed = []
    failure = None
    try:
        for pod in release:
            binding = state.binding_of(pod.key)
            if binding is not None:
                state.unbind(binding)
                removed.append(binding)
        for pod in pods:
            if len(placed) >= need:
                break
            answer = scheduler.schedule_one(_unbound(pod), bind=True)
            if isinstance(answer, FitResult):
                failure = answer
                break
            assert answer.binding is not None
            placed.append(answer.binding)
    finally:
        for binding in reversed(placed):
            state.unbind(binding)
        for binding in reversed(removed):
            state.bind(binding.pod, binding.node, binding.devices, usage=binding.usage)
    return len(placed), failure


def _owner_refs(pod: Pod) -> list[OwnerRef]:
    meta = pod.raw.get("metadata") if pod.raw else None
    refs = meta.get("ownerReferences") if isinstance(meta, dict) else None
    if not isinstance(refs, list):
        return []
    return [
        OwnerRef(
            str(r.get("kind", "")),
            str(r.get("name", "")),
            str(r.get("uid", "")),
            r.get("controller") is True,
        )
        for r in refs
        if isinstance(r, dict)
    ]


_REQUIRED: dict[int, tuple[Pod, Any]] = {}


def required_affinity(pod: Pod) -> Any:
    """pod.required_node_affinity, built once per pod object (the property builds anew)."""
    hit = _REQUIRED.get(id(pod))
    if hit is not None and hit[0] is pod:
        return hit[1]
    if len(_REQUIRED) > 65_536:
        _REQUIRED.clear()
    value = pod.required_node_affinity
    _REQUIRED[id(pod)] = (pod, value)
    return value


def _unbound(pod: Pod) -> Pod:
    return replace(pod, node_name="", phase="Pending")


def _consistent_kueue(
    objects: Sequence[KueueObject],
) -> tuple[dict[str, str], list[KueueObject]]:
    """Split off the objects whose references dangle (Kueue would leave them inactive or
    inadmissible; diagnose reports why) from those load_state can take."""
    flavors = {o.meta.name for o in objects if o.kind == "ResourceFlavor"}
    classes = {o.meta.name for o in objects if o.kind == "WorkloadPriorityClass"}
    problems: dict[str, str] = {}
    bad_cqs: dict[str, str] = {}
    for o in objects:
        if o.kind == "ClusterQueue":
            missing = sorted(
                f for g in o.parsed.resource_groups for f in g.flavor_names if f not in flavors
            )
            if missing:
                bad_cqs[o.meta.name] = (
                    f"ClusterQueue {o.meta.name} is inactive: ResourceFlavor "
                    f"{', '.join(missing)} not found"
                )
    cqs = {o.meta.name for o in objects if o.kind == "ClusterQueue"} - set(bad_cqs)
    lqs = {o.key: o.parsed.cluster_queue for o in objects if o.kind == "LocalQueue"}
    usable = []
    for o in objects:
        if o.kind == "ClusterQueue" and o.meta.name in bad_cqs:
            continue
        if o.kind != "Workload":
            usable.append(o)
            continue
        item = o.parsed
        wl = item.workload
        if item.priority_class is not None and item.priority_class not in classes:
            problems[o.key] = f"WorkloadPriorityClass {item.priority_class} not found"
            continue
        if item.admission is not None:
            if item.admission.cluster_queue in cqs:
                usable.append(o)
            continue
        if item.finished or not item.active:
            continue
        lq = f"{wl.namespace}/{wl.queue_name}"
        if lq not in lqs:
            problems[o.key] = (
                f"LocalQueue {wl.queue_name!r} does not exist in namespace {wl.namespace}"
            )
            continue
        cq = lqs[lq]
        if cq in bad_cqs:
            problems[o.key] = bad_cqs[cq]
            continue
        if cq not in cqs:
            problems[o.key] = f"ClusterQueue {cq} (of LocalQueue {wl.queue_name}) does not exist"
            continue
        usable.append(o)
    # a LocalQueue pointing at an inactive ClusterQueue would leave its workloads unqueued
    usable = [
        o for o in usable if not (o.kind == "LocalQueue" and o.parsed.cluster_queue in bad_cqs)
    ]
    return problems, usable
