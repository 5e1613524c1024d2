"""ClusterState: a cluster's nodes as numpy columns, with the pods bound to them.

One row per node. Static columns (labels, taints, cordon, GPU hardware) change only when a node
is added, cordoned or re-tainted; dynamic columns (requested resources, device usage) change on
every bind/unbind. Placement reads the columns with array operations; the helpers it needs to
stay incremental are kept here:

- labels: per label key an int32 column of value ids (-1: the node lacks the key), so
  In/NotIn/Exists/DoesNotExist/Gt/Lt become lookups into a per-requirement table;
- taints: each node points at one of the distinct taint sets, so a toleration list is checked
  once per distinct set with the exact scalar rule and broadcast;
- a change log (node, +1/-1, binding) with a version number, so caches built for one version
  catch up by replaying only what changed;
- `static_version`, bumped whenever static columns change (caches of static masks reset).

Amounts are integers in scheduler units (cpu milli, bytes, counts, GPU milli). Time is not
read here: the twin owns the clock and calls bind/unbind.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from gpupact.cluster.devices import (
    ANN_GPU_MILLI,
    ANN_GPU_MODELS,
    ANN_GPU_TOPOLOGY,
    ANN_KAI_GPU_FRACTION,
    GPU_RESOURCE,
    KEY_GPU_SHARING,
    LABEL_GPU_MODEL,
    LABEL_GPU_PRODUCT,
    LABEL_GPU_TOPOLOGY,
    MILLI_PER_GPU,
    GpuRequest,
    NodeGpuSpec,
    SharingMode,
    choose_devices,
    device_usage,
    gpu_request_from,
    node_gpu_spec,
)
from gpupact.errors import FieldError
from gpupact.kube.host_ports import UsedPorts
from gpupact.kube.objects import Node, Pod
from gpupact.kube.requests import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    PODS,
    PodResources,
    is_tracked_resource_name,
    pod_footprint,
    pod_requests,
)
from gpupact.kube.scheduling_objects import SchedulingObjects
from gpupact.kube.taints import Taint

BASE_RESOURCES = (CPU, MEMORY, EPHEMERAL_STORAGE, PODS)
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
HOSTNAME_LABEL = "kubernetes.io/hostname"
_LOG_LIMIT = 1 << 17
_state_ids = itertools.count(1)


# --- what a pod takes -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PodUsage:
    """What one pod adds to its node, in the scheduler's accounting (PodInfo.CalculateResource):
    requested amounts of tracked resources, the non-zero cpu/memory used for scoring, and its
    GPU request."""

    requests: tuple[tuple[str, int], ...]
    nonzero_cpu: int
    nonzero_memory: int
    gpu: GpuRequest | None


def _resources_key(r: PodResources) -> tuple:
    return (
        tuple(tuple(c.requests.items()) for c in r.containers),
        tuple((tuple(c.requests.items()), c.restart_policy) for c in r.init_containers),
        tuple(r.overhead.items()),
        None if r.pod_level_requests is None else tuple(r.pod_level_requests.items()),
    )


_GPU_ANNOTATIONS = (ANN_GPU_MILLI, ANN_KAI_GPU_FRACTION, ANN_GPU_MODELS)
_GPU_SELECTOR_KEYS = (LABEL_GPU_MODEL, LABEL_GPU_PRODUCT)
_USAGE_MEMO: dict[tuple, PodUsage] = {}
_MEMO_LIMIT = 8192


def pod_usage(pod: Pod) -> PodUsage:
    """The pod's PodUsage, memoised by content (pods of one shape share one instance)."""
    return pod_usage_keyed(pod, resources_key(pod))


_RKEY_BY_ID: dict[int, tuple[PodResources, tuple]] = {}


def resources_key(pod: Pod) -> tuple:
    """A hashable key of the pod's resource fields: equal keys, equal requests. Pods that
    share one PodResources object (trace loaders, replicas) hit a by-identity memo."""
    resources = pod.resources
    hit = _RKEY_BY_ID.get(id(resources))
    if hit is not None and hit[0] is resources:
        return hit[1]
    key = _resources_key(resources)
    if len(_RKEY_BY_ID) >= _MEMO_LIMIT:
        _RKEY_BY_ID.clear()
    _RKEY_BY_ID[id(resources)] = (resources, key)  # holding the object keeps its id unique
    return key


def pod_usage_keyed(pod: Pod, rkey: tuple) -> PodUsage:
    """`pod_usage` for a caller that already holds `resources_key(pod)`."""
    annotations = pod.annotations
    selector = pod.node_selector
    key = (
        rkey,
        tuple(annotations.get(k) for k in _GPU_ANNOTATIONS) if annotations else None,
        annotations.get(ANN_GPU_TOPOLOGY) if annotations else None,
        tuple(selector.get(k) for k in _GPU_SELECTOR_KEYS) if selector else None,
    )
    usage = _USAGE_MEMO.get(key)
    if usage is None:
        footprint = pod_footprint(pod.resources, pod_level_resources=True)
        requests = pod_requests(pod.resources, pod_level_resources=True)
        gpu = gpu_request_from(requests, annotations, selector)
        usage = PodUsage(
            tuple(footprint.requests.items()),
            footprint.non_zero_cpu,
            footprint.non_zero_memory,
            gpu,
        )
        if len(_USAGE_MEMO) >= _MEMO_LIMIT:
            _USAGE_MEMO.clear()
        _USAGE_MEMO[key] = usage
    return usage


def has_pod_affinity(pod: Pod) -> bool:
    """Declares podAffinity or podAntiAffinity (inter-pod affinity has to look at it)."""
    return pod.has_inter_pod_affinity


@dataclass(eq=False, slots=True)
class Binding:
    """A pod bound to a node (identity semantics: two bindings are never equal)."""

    pod: Pod
    node: int
    devices: tuple[int, ...]
    usage: PodUsage
    seq: int
    pod_affinity: bool = False

    @property
    def key(self) -> str:
        return self.pod.key


# --- label and taint indexes ------------------------------------------------------------------


class LabelIndex:
    """Per label key an int32 column of value ids (-1 absent), the value strings per key and
    the node-name column (id = node index)."""

    __slots__ = ("columns", "ids", "size", "values")

    def __init__(self, size: int) -> None:
        self.size = size
        self.columns: dict[str, np.ndarray] = {}
        self.values: dict[str, list[str]] = {}
        self.ids: dict[str, dict[str, int]] = {}

    def column(self, key: str) -> np.ndarray:
        col = self.columns.get(key)
        if col is None:
            return np.full(self.size, -1, dtype=np.int32)
        return col

    def value_id(self, key: str, value: str) -> int:
        return self.ids.get(key, {}).get(value, -1)

    def set_node(self, row: int, labels: Mapping[str, str]) -> None:
        for key, col in self.columns.items():
            if key not in labels:
                col[row] = -1
        for key, value in labels.items():
            col = self.columns.get(key)
            if col is None:
                col = np.full(self.size, -1, dtype=np.int32)
                self.columns[key] = col
                self.values[key] = []
                self.ids[key] = {}
            ids = self.ids[key]
            vid = ids.get(value)
            if vid is None:
                vid = len(self.values[key])
                ids[value] = vid
                self.values[key].append(value)
            col[row] = vid

    def grow(self, size: int) -> None:
        for key, col in self.columns.items():
            grown = np.full(size, -1, dtype=np.int32)
            grown[: self.size] = col
            self.columns[key] = grown
        self.size = size

    def copy(self) -> LabelIndex:
        other = LabelIndex(self.size)
        other.columns = {k: c.copy() for k, c in self.columns.items()}
        other.values = {k: list(v) for k, v in self.values.items()}
        other.ids = {k: dict(v) for k, v in self.ids.items()}
        return other

    def nbytes(self) -> int:
        return sum(c.nbytes for c in self.columns.values())


# --- the state --------------------------------------------------------------------------------


class ClusterState:
    """Nodes as columns, bound pods as Bindings. Build with `from_nodes` or `from_arrays`."""

    # --- construction ---------------------------------------------------------------------

    def __init__(self, resource_names: Sequence[str] = BASE_RESOURCES, gpu_slots: int = 0):
        self.uid = next(_state_ids)
        self.nodes: list[Node] = []
        self.node_names: list[str] = []
        self.node_index: dict[str, int] = {}
        self.gpu_specs: list[NodeGpuSpec] = []
        self._dev_capacity: list[list[int]] = []  # per node, Python ints (hot path)
        self.labels = LabelIndex(0)
        self.taint_sets: list[tuple[Taint, ...]] = []
        self._taint_set_ids: dict[tuple[Taint, ...], int] = {}
        self.gpu_models: list[str] = []
        self._gpu_model_ids: dict[str, int] = {}
        self.mig_profiles: list[str] = []
        self.namespace_labels: dict[str, dict[str, str]] = {}
        # Services, controllers, PVCs and PVs the default plugins read (replaced, not mutated)
        self.objects = SchedulingObjects()

        names = list(BASE_RESOURCES) + [r for r in resource_names if r not in BASE_RESOURCES]
        self.resource_names: list[str] = names
        self.resource_index: dict[str, int] = {n: i for i, n in enumerate(names)}
        n, r, g = 0, len(names), gpu_slots
        self.active = np.zeros(n, dtype=np.bool_)
        self.unschedulable = np.zeros(n, dtype=np.bool_)
        self.taint_set = np.zeros(n, dtype=np.int32)
        self.allocatable = np.zeros((n, r), dtype=np.int64)
        self.requested = np.zeros((n, r), dtype=np.int64)
        self.nonzero_requested = np.zeros((n, 2), dtype=np.int64)
        self.gpu_count = np.zeros(n, dtype=np.int16)
        self.gpu_model = np.full(n, -1, dtype=np.int16)
        self.gpu_mode = np.zeros(n, dtype=np.int8)
        self.nvlink_group = np.ones(n, dtype=np.int16)
        self.dev_capacity_milli = np.zeros((n, g), dtype=np.int32)
        self.dev_used_milli = np.zeros((n, g), dtype=np.int32)
        self.mig_capacity = np.zeros((n, g, 0), dtype=np.int16)
        self.mig_used = np.zeros((n, g, 0), dtype=np.int16)
        # per-node GPU aggregates kept in step with the device rows (placement reads these)
        self.gpu_free_units = np.zeros(n, dtype=np.int32)  # free whole devices / replicas
        self.gpu_share_free = np.full(n, -1, dtype=np.int32)  # max free milli of one device
        self.gpu_group_free_units = np.zeros(n, dtype=np.int32)  # best NVLink group
        self.gpu_capacity_units = np.zeros(n, dtype=np.int32)  # the same, all devices free
        self.gpu_group_capacity_units = np.zeros(n, dtype=np.int32)
        self.mig_free = np.zeros((n, 0), dtype=np.int32)

        self._pods: list[tuple[Binding, ...]] = []
        self._by_key: dict[str, Binding] = {}
        self.affinity_bindings: dict[int, Binding] = {}  # id(binding) -> binding
        self.used_ports: dict[int, UsedPorts] = {}  # node -> host ports of its pods (NodePorts)
        self.nominated: dict[str, tuple[Pod, int]] = {}  # pod key -> (pod, node): nominations
        self._seq = 0
        self.version = 0
        self.static_version = 0
        self._log: list[tuple[int, int, Binding]] = []
        self._log_base = 0
        self._static_shared = False

    @classmethod
    def from_nodes(
        cls,
        nodes: Iterable[Node],
        pods: Iterable[Pod] = (),
        *,
        devices: Mapping[str, Sequence[int]] | None = None,
        namespace_labels: Mapping[str, Mapping[str, str]] | None = None,
        objects: SchedulingObjects | None = None,
    ) -> ClusterState:
        """From kube Node objects and the pods bound to them (`spec.nodeName`; finished pods
        and pods on unknown nodes are skipped). `devices` gives known device indices per pod
        key; other GPU pods get devices by the default choice, in the order given. Pending pods
        with status.nominatedNodeName on a known node become nominations (`nominate`).
        `objects`: the Services, controllers, PVCs and PVs of the snapshot."""
        nodes = list(nodes)
        resources: set[str] = set()
        specs = []
        for node in nodes:
            resources.update(r for r in node.allocatable if is_tracked_resource_name(r))
            specs.append(node_gpu_spec(node))
        gpu_slots = max((s.devices for s in specs), default=0)
        state = cls(sorted(resources), gpu_slots)
        for spec in specs:
            for layout in spec.mig_layout:
                for profile, _ in layout:
                    if profile not in state.mig_profiles:
                        state._add_mig_profile(profile)
        state._grow_rows(len(nodes))
        for row, (node, spec) in enumerate(zip(nodes, specs, strict=True)):
            if node.name in state.node_index:
                raise FieldError(("metadata", "name"), f"node {node.name!r} appears twice")
            state.nodes.append(node)
            state.node_names.append(node.name)
            state.node_index[node.name] = row
            state.gpu_specs.append(spec)
            state._set_static(row, node, spec)
            state._pods.append(())
        state._refresh_gpu_rows(np.arange(len(nodes)))
        if namespace_labels:
            state.namespace_labels.update({k: dict(v) for k, v in namespace_labels.items()})
        if objects is not None:
            state.objects = objects
        state._bind_snapshot(pods, devices or {})
        state._log.clear()
        state._log_base = state.version
        return state

    def _bind_snapshot(self, pods: Iterable[Pod], known: Mapping[str, Sequence[int]]) -> None:
        """from_nodes' binds, with the same result as `bind(pod, node, given, lenient=True)`
        per pod in order (same checks and errors, devices chosen in the same order, same
        sequence numbers and version), but the resource columns are summed once at the end
        and each GPU node's aggregates refreshed once instead of after every pod."""
        index = self.node_index
        by_key = self._by_key
        resource_index = self.resource_index
        per_node: dict[int, list[Binding]] = {}
        rows: list[int] = []
        usage_ids: list[int] = []
        usages: dict[int, PodUsage] = {}  # id -> usage (held, so ids stay unique)
        gpu_rows: set[int] = set()
        seq = self._seq
        for pod in pods:
            if not pod.holds_resources:
                nominated = index.get(pod.nominated_node_name) if not pod.assigned else None
                if nominated is not None and pod.phase == "Pending" and not pod.terminating:
                    self.nominated[pod.key] = (pod, nominated)
                continue
            node = index.get(pod.node_name)
            if node is None:
                continue
            key = pod.key
            if key in by_key:
                raise ValueError(f"pod {key} is already bound")
            usage = pod_usage(pod)
            chosen: tuple[int, ...] = ()
            gpu = usage.gpu
            if gpu is not None and self.gpu_specs[node].devices:
                given = known.get(key)
                try:
                    if given is None:
                        free, mig = self.node_gpu_free(node)
                        chosen = choose_devices(self.gpu_specs[node], free, mig, gpu)
                    else:
                        chosen = tuple(int(d) for d in given)
                        self._check_devices(node, gpu, chosen)
                except ValueError:
                    chosen = ()  # lenient: bound without device usage
            for name, _ in usage.requests:
                if name not in resource_index:
                    self._add_resource(name)
            if chosen:
                self._use_devices(node, gpu, chosen, 1)  # type: ignore[arg-type]
                gpu_rows.add(node)
            seq += 1
            binding = Binding(pod, node, chosen, usage, seq, has_pod_affinity(pod))
            per_node.setdefault(node, []).append(binding)
            by_key[key] = binding
            if binding.pod_affinity:
                self.affinity_bindings[id(binding)] = binding
            if pod.host_ports:
                self._use_ports(node, pod, 1)
            rows.append(node)
            usage_ids.append(id(usage))
            usages.setdefault(id(usage), usage)
        if not rows:
            return
        self._seq = seq
        self.version += len(rows)
        for node, bound in per_node.items():
            self._pods[node] = (*self._pods[node], *bound)
        # one row of deltas per distinct usage: requests, one pod, non-zero cpu / memory
        slot = {uid: i for i, uid in enumerate(usages)}
        deltas = np.zeros((len(usages), len(self.resource_names) + 2), dtype=np.int64)
        pods_col = resource_index[PODS]
        for i, usage in enumerate(usages.values()):
            for name, amount in usage.requests:
                deltas[i, resource_index[name]] += amount
            deltas[i, pods_col] += 1
            deltas[i, -2] = usage.nonzero_cpu
            deltas[i, -1] = usage.nonzero_memory
        picked = deltas[np.fromiter((slot[u] for u in usage_ids), np.intp, len(usage_ids))]
        node_rows = np.asarray(rows, dtype=np.intp)
        np.add.at(self.requested, node_rows, picked[:, :-2])
        np.add.at(self.nonzero_requested, node_rows, picked[:, -2:])
        for node in sorted(gpu_rows):
            self._refresh_gpu_row(node)

    @classmethod
    def from_arrays(
        cls,
        names: Sequence[str],
        *,
        cpu_milli: Sequence[int] | np.ndarray,
        memory_bytes: Sequence[int] | np.ndarray,
        gpu_count: Sequence[int] | np.ndarray | None = None,
        gpu_model: Sequence[str | None] | None = None,
        gpu_sharing: str | Sequence[str] = "fractional",
        max_pods: int | Sequence[int] | np.ndarray = 110,
        labels: Mapping[str, Sequence[str | None]] | None = None,
        taints: Sequence[Sequence[Taint]] | None = None,
        gpu_topology: Sequence[str | None] | None = None,
        extra_allocatable: Mapping[str, Sequence[int] | np.ndarray] | None = None,
    ) -> ClusterState:
        """A cluster from plain per-node arrays (traces: openb's 1,213 nodes; synthetic
        10,000). Each row also gets a synthetic Node (labels incl. kubernetes.io/hostname,
        gpu.model, gpupact.io/gpu-sharing) so the scalar chain can read the same cluster."""
        n = len(names)
        if len(set(names)) != n:
            raise FieldError(("names",), "node names must be unique")
        cpu = np.asarray(cpu_milli, dtype=np.int64)
        mem = np.asarray(memory_bytes, dtype=np.int64)
        gpus = np.zeros(n, np.int64) if gpu_count is None else np.asarray(gpu_count, np.int64)
        pods = np.broadcast_to(np.asarray(max_pods, dtype=np.int64), (n,))
        for what, arr in (("cpu_milli", cpu), ("memory_bytes", mem), ("gpu_count", gpus)):
            if arr.shape != (n,):
                raise FieldError((what,), f"expected {n} values, got shape {arr.shape}")
            if (arr < 0).any():
                raise FieldError((what,), "values must not be negative")
        sharing = [gpu_sharing] * n if isinstance(gpu_sharing, str) else list(gpu_sharing)
        models = list(gpu_model) if gpu_model is not None else [None] * n
        topology = list(gpu_topology) if gpu_topology is not None else [None] * n
        extra = {k: np.asarray(v, dtype=np.int64) for k, v in (extra_allocatable or {}).items()}
        label_cols = {k: list(v) for k, v in (labels or {}).items()}
        for what, seq in (
            ("gpu_sharing", sharing),
            ("gpu_model", models),
            ("gpu_topology", topology),
            *((f"labels.{k}", v) for k, v in label_cols.items()),
            *((f"extra_allocatable.{k}", v) for k, v in extra.items()),
        ):
            if len(seq) != n:
                raise FieldError((what,), f"expected {n} values, got {len(seq)}")
        nodes = []
        for i, name in enumerate(names):
            node_labels = {HOSTNAME_LABEL: name}
            for key, values in label_cols.items():
                if values[i] is not None:
                    node_labels[key] = values[i]
            if models[i]:
                node_labels[LABEL_GPU_MODEL] = models[i]
            if topology[i]:
                node_labels[LABEL_GPU_TOPOLOGY] = topology[i]
            alloc = {CPU: int(cpu[i]), MEMORY: int(mem[i]), PODS: int(pods[i])}
            if gpus[i]:
                alloc[GPU_RESOURCE] = int(gpus[i])
                node_labels[KEY_GPU_SHARING] = sharing[i]
            for key, values in extra.items():
                alloc[key] = int(values[i])
            nodes.append(
                Node(
                    name=name,
                    labels=node_labels,
                    taints=tuple(taints[i]) if taints is not None else (),
                    allocatable=alloc,
                    capacity=alloc,
                )
            )
        return cls.from_nodes(nodes)

    def _append_node(self, node: Node, spec: NodeGpuSpec) -> int:
        """Add one row (columns grow by one; callers refresh GPU aggregates)."""
        row = len(self.nodes)
        if node.name in self.node_index:
            raise FieldError(("metadata", "name"), f"node {node.name!r} appears twice")
        for name in node.allocatable:
            if is_tracked_resource_name(name) and name not in self.resource_index:
                self._add_resource(name)
        if spec.devices > self.dev_capacity_milli.shape[1]:
            self._grow_gpu_slots(spec.devices)
        for layout in spec.mig_layout:
            for profile, _ in layout:
                if profile not in self.mig_profiles:
                    self._add_mig_profile(profile)
        self._grow_rows(row + 1)
        self.nodes.append(node)
        self.node_names.append(node.name)
        self.node_index[node.name] = row
        self.gpu_specs.append(spec)
        self._set_static(row, node, spec)
        self._pods.append(())
        return row

    def _set_static(self, row: int, node: Node, spec: NodeGpuSpec) -> None:
        self.active[row] = True
        self.unschedulable[row] = node.unschedulable
        self.labels.set_node(row, node.labels)
        taints = tuple(node.taints)
        tid = self._taint_set_ids.get(taints)
        if tid is None:
            tid = len(self.taint_sets)
            self._taint_set_ids[taints] = tid
            self.taint_sets.append(taints)
        self.taint_set[row] = tid
        for name, idx in self.resource_index.items():
            self.allocatable[row, idx] = node.allocatable.get(name, 0)
        self.gpu_count[row] = spec.devices
        self.gpu_mode[row] = int(spec.mode)
        self.nvlink_group[row] = spec.nvlink_group
        model = -1
        if spec.model:
            model = self._gpu_model_ids.get(spec.model, -1)
            if model < 0:
                model = len(self.gpu_models)
                self._gpu_model_ids[spec.model] = model
                self.gpu_models.append(spec.model)
        self.gpu_model[row] = model
        cap = spec.device_capacity_milli()
        if row < len(self._dev_capacity):
            self._dev_capacity[row] = cap
        else:
            self._dev_capacity.append(cap)
        self.dev_capacity_milli[row, :] = 0
        self.dev_capacity_milli[row, : len(cap)] = cap
        units = [c // MILLI_PER_GPU for c in cap]
        self.gpu_capacity_units[row] = sum(units)
        size = max(spec.nvlink_group, 1)
        self.gpu_group_capacity_units[row] = max(
            (sum(units[s : s + size]) for s in range(0, len(units), size)), default=0
        )
        self.mig_capacity[row] = 0
        for d, layout in enumerate(spec.mig_layout):
            for profile, slots in layout:
                self.mig_capacity[row, d, self.mig_profiles.index(profile)] = slots

    def _grow_rows(self, n: int) -> None:
        def grow(a: np.ndarray, fill: Any = 0) -> np.ndarray:
            out = np.full((n, *a.shape[1:]), fill, dtype=a.dtype)
            out[: a.shape[0]] = a
            return out

        self.active = grow(self.active, False)
        self.unschedulable = grow(self.unschedulable, False)
        self.taint_set = grow(self.taint_set)
        self.allocatable = grow(self.allocatable)
        self.requested = grow(self.requested)
        self.nonzero_requested = grow(self.nonzero_requested)
        self.gpu_count = grow(self.gpu_count)
        self.gpu_model = grow(self.gpu_model, -1)
        self.gpu_mode = grow(self.gpu_mode)
        self.nvlink_group = grow(self.nvlink_group, 1)
        self.dev_capacity_milli = grow(self.dev_capacity_milli)
        self.dev_used_milli = grow(self.dev_used_milli)
        self.mig_capacity = grow(self.mig_capacity)
        self.mig_used = grow(self.mig_used)
        self.gpu_free_units = grow(self.gpu_free_units)
        self.gpu_share_free = grow(self.gpu_share_free, -1)
        self.gpu_group_free_units = grow(self.gpu_group_free_units)
        self.gpu_capacity_units = grow(self.gpu_capacity_units)
        self.gpu_group_capacity_units = grow(self.gpu_group_capacity_units)
        self.mig_free = grow(self.mig_free)
        self.labels.grow(n)

    def _add_resource(self, name: str) -> int:
        self._unshare_static()
        idx = len(self.resource_names)
        self.resource_names.append(name)
        self.resource_index[name] = idx
        pad = np.zeros((self.allocatable.shape[0], 1), dtype=np.int64)
        self.allocatable = np.hstack([self.allocatable, pad])
        self.requested = np.hstack([self.requested, pad])
        self.static_version += 1
        return idx

    def _grow_gpu_slots(self, g: int) -> None:
        n, old = self.dev_capacity_milli.shape
        for attr in ("dev_capacity_milli", "dev_used_milli"):
            arr = getattr(self, attr)
            grown = np.zeros((n, g), dtype=arr.dtype)
            grown[:, :old] = arr
            setattr(self, attr, grown)
        for attr in ("mig_capacity", "mig_used"):
            arr = getattr(self, attr)
            grown = np.zeros((n, g, arr.shape[2]), dtype=arr.dtype)
            grown[:, :old] = arr
            setattr(self, attr, grown)

    def _add_mig_profile(self, profile: str) -> None:
        self.mig_profiles.append(profile)
        for attr in ("mig_capacity", "mig_used"):
            arr = getattr(self, attr)
            pad = np.zeros((*arr.shape[:2], 1), dtype=arr.dtype)
            setattr(self, attr, np.concatenate([arr, pad], axis=2))
        pad = np.zeros((self.mig_free.shape[0], 1), dtype=self.mig_free.dtype)
        self.mig_free = np.hstack([self.mig_free, pad])

    # --- node changes (the twin: autoscaler, cordon, faults) -------------------------------

    def _unshare_static(self) -> None:
        """A copy shares static structures until one side changes them."""
        if self._static_shared:
            self.nodes = list(self.nodes)
            self.node_names = list(self.node_names)
            self.node_index = dict(self.node_index)
            self.gpu_specs = list(self.gpu_specs)
            self._dev_capacity = list(self._dev_capacity)
            self.labels = self.labels.copy()
            self.taint_sets = list(self.taint_sets)
            self._taint_set_ids = dict(self._taint_set_ids)
            self.gpu_models = list(self.gpu_models)
            self._gpu_model_ids = dict(self._gpu_model_ids)
            self.mig_profiles = list(self.mig_profiles)
            self.resource_names = list(self.resource_names)
            self.resource_index = dict(self.resource_index)
            self._static_shared = False

    def add_node(self, node: Node) -> int:
        """A new node (scale-up); returns its row."""
        self._unshare_static()
        row = self._append_node(node, node_gpu_spec(node))
        self._refresh_gpu_rows(np.array([row]))
        self.static_version += 1
        return row

    def replace_node(self, row: int, node: Node) -> None:
        """New labels, taints, cordon or allocatable for an existing node (same name and
        GPU hardware; its pods stay bound)."""
        if node.name != self.node_names[row]:
            raise FieldError(("metadata", "name"), "replace_node keeps the node's name")
        spec = node_gpu_spec(node)
        if spec != self.gpu_specs[row]:
            raise FieldError(("status", "allocatable"), "replace_node keeps the GPU hardware")
        self._unshare_static()
        for name in node.allocatable:
            if is_tracked_resource_name(name) and name not in self.resource_index:
                self._add_resource(name)
        self.nodes[row] = node
        self._set_static(row, node, spec)
        self.static_version += 1

    def set_unschedulable(self, row: int, unschedulable: bool = True) -> None:
        """Cordon / uncordon (spec.unschedulable)."""
        self.replace_node(row, replace(self.nodes[row], unschedulable=unschedulable))

    def set_taints(self, row: int, taints: Sequence[Taint]) -> None:
        self.replace_node(row, replace(self.nodes[row], taints=tuple(taints)))

    def set_allocatable(self, row: int, name: str, amount: int) -> None:
        """One resource's allocatable changes in place while the node keeps its hardware and
        its pods: the device plugin stops (or resumes) advertising GPUs after a driver
        upgrade — Ready node, `nvidia.com/gpu` 0, running pods untouched (43.5)."""
        self._unshare_static()
        idx = self.resource_index.get(name)
        if idx is None:
            idx = self._add_resource(name)
        node = self.nodes[row]
        self.nodes[row] = replace(node, allocatable={**node.allocatable, name: amount})
        self.allocatable[row, idx] = amount
        self.static_version += 1

    def remove_node(self, row: int) -> None:
        """The node leaves (scale-down); its row stays but is inactive: placement ignores it.
        Pods must be unbound first."""
        if self._pods[row]:
            raise ValueError(f"node {self.node_names[row]} still has {len(self._pods[row])} pods")
        self.active[row] = False
        self.static_version += 1

    # --- sizes and views --------------------------------------------------------------------

    @property
    def num_nodes(self) -> int:
        return len(self.nodes)

    @property
    def dev_free_milli(self) -> np.ndarray:
        return self.dev_capacity_milli - self.dev_used_milli

    @property
    def pod_count(self) -> np.ndarray:
        return self.requested[:, self.resource_index[PODS]]

    def pods_on(self, node: int) -> tuple[Binding, ...]:
        return self._pods[node]

    def bindings(self) -> Iterator[Binding]:
        for pods in self._pods:
            yield from pods

    def binding_of(self, pod_key: str) -> Binding | None:
        return self._by_key.get(pod_key)

    @property
    def num_pods(self) -> int:
        return len(self._by_key)

    def namespace_labels_of(self, namespace: str) -> dict[str, str]:
        """A namespace's labels; every namespace carries kubernetes.io/metadata.name."""
        labels = dict(self.namespace_labels.get(namespace, {}))
        labels[NAMESPACE_NAME_LABEL] = namespace
        return labels

    def node_gpu_free(self, node: int) -> tuple[list[int], list[dict[str, int]]]:
        """Free milli per device and free MIG slices per device of one node (Python lists)."""
        spec = self.gpu_specs[node]
        g = spec.devices
        used = self.dev_used_milli[node, :g].tolist()
        free = [c - u for c, u in zip(self._dev_capacity[node], used)]  # noqa: B905 (hot path)
        if not spec.mig_layout:
            return free, [{} for _ in range(g)]
        mig: list[dict[str, int]] = [{} for _ in range(g)]
        left = (self.mig_capacity[node, :g] - self.mig_used[node, :g]).tolist()
        cap = self.mig_capacity[node, :g].tolist()
        for d in range(g):
            for p, name in enumerate(self.mig_profiles):
                if cap[d][p]:
                    mig[d][name] = left[d][p]
        return free, mig

    # --- bind / unbind ----------------------------------------------------------------------

    def bind(
        self,
        pod: Pod,
        node: int,
        devices: Sequence[int] | None = None,
        *,
        usage: PodUsage | None = None,
        lenient: bool = False,
    ) -> Binding:
        """Apply the pod's requests and device usage to `node`. Devices: given, or chosen by
        the default rule (`devices.choose_devices`). Resources are not checked (a snapshot can
        be over-committed); devices are. `lenient` (snapshot import): a GPU pod whose devices
        cannot be placed is bound without device usage instead of raising."""
        key = pod.key
        if key in self._by_key:
            raise ValueError(f"pod {key} is already bound")
        if not 0 <= node < len(self.nodes) or not self.active[node]:
            raise ValueError(f"no active node at row {node}")
        usage = usage if usage is not None else pod_usage(pod)
        chosen: tuple[int, ...] = ()
        gpu = usage.gpu
        if gpu is not None and self.gpu_specs[node].devices:
            try:
                if devices is None:
                    free, mig = self.node_gpu_free(node)
                    chosen = choose_devices(self.gpu_specs[node], free, mig, gpu)
                else:
                    chosen = tuple(int(d) for d in devices)
                    self._check_devices(node, gpu, chosen)
            except ValueError:
                if not lenient:
                    raise
                chosen = ()
        for name, amount in usage.requests:
            idx = self.resource_index.get(name)
            if idx is None:
                idx = self._add_resource(name)
            self.requested[node, idx] += amount
        self.requested[node, self.resource_index[PODS]] += 1
        self.nonzero_requested[node, 0] += usage.nonzero_cpu
        self.nonzero_requested[node, 1] += usage.nonzero_memory
        if chosen:
            self._apply_devices(node, gpu, chosen, 1)  # type: ignore[arg-type]
        self._seq += 1
        binding = Binding(pod, node, chosen, usage, self._seq, has_pod_affinity(pod))
        self._pods[node] = (*self._pods[node], binding)
        self._by_key[key] = binding
        if binding.pod_affinity:
            self.affinity_bindings[id(binding)] = binding
        if pod.host_ports:
            self._use_ports(node, pod, 1)
        self.nominated.pop(key, None)  # bound: no longer only nominated
        self._record(node, 1, binding)
        return binding

    def unbind(self, binding: Binding) -> None:
        """Revert a bind (pod finished, evicted or preempted)."""
        if self._by_key.get(binding.key) is not binding:
            raise ValueError(f"pod {binding.key} is not bound here")
        node = binding.node
        usage = binding.usage
        for name, amount in usage.requests:
            self.requested[node, self.resource_index[name]] -= amount
        self.requested[node, self.resource_index[PODS]] -= 1
        self.nonzero_requested[node, 0] -= usage.nonzero_cpu
        self.nonzero_requested[node, 1] -= usage.nonzero_memory
        if binding.devices:
            self._apply_devices(node, usage.gpu, binding.devices, -1)  # type: ignore[arg-type]
        self._pods[node] = tuple(b for b in self._pods[node] if b is not binding)
        del self._by_key[binding.key]
        self.affinity_bindings.pop(id(binding), None)
        if binding.pod.host_ports:
            self._use_ports(node, binding.pod, -1)
        self._record(node, -1, binding)

    def _use_ports(self, node: int, pod: Pod, delta: int) -> None:
        used = self.used_ports.get(node)
        if used is None:
            used = self.used_ports[node] = UsedPorts()
        used.add(pod.host_ports, delta)
        if not used:
            del self.used_ports[node]

    # --- nominations (pods preemption made room for; the scheduler counts them as placed) ----

    def nominate(self, pod: Pod, node: int) -> None:
        """`pod` waits for `node` (status.nominatedNodeName): the filters of pods with no
        higher priority see it there (RunFilterPluginsWithNominatedPods)."""
        if not 0 <= node < len(self.nodes):
            raise ValueError(f"no node at row {node}")
        if pod.key in self._by_key:
            raise ValueError(f"pod {pod.key} is already bound")
        self.nominated[pod.key] = (pod, node)

    def clear_nomination(self, pod_key: str) -> None:
        self.nominated.pop(pod_key, None)

    def unbind_pod(self, pod_key: str) -> Binding:
        binding = self._by_key.get(pod_key)
        if binding is None:
            raise KeyError(pod_key)
        self.unbind(binding)
        return binding

    def _check_devices(self, node: int, gpu: GpuRequest, devices: tuple[int, ...]) -> None:
        spec = self.gpu_specs[node]
        if any(not 0 <= d < spec.devices for d in devices):
            raise ValueError(f"device index out of range on {self.node_names[node]}: {devices}")
        if len(devices) != gpu.count:
            raise ValueError(f"{gpu.count} device(s) requested, {len(devices)} given")
        free, mig = self.node_gpu_free(node)
        if gpu.mig_profile is not None:
            for d in devices:
                mig[d][gpu.mig_profile] = mig[d].get(gpu.mig_profile, 0) - 1
                if mig[d][gpu.mig_profile] < 0:
                    raise ValueError(f"no free {gpu.mig_profile} slice on device {d}")
            return
        for d, milli in device_usage(spec, gpu, devices):
            free[d] -= milli
            if free[d] < 0:
                raise ValueError(f"device {d} of {self.node_names[node]} is over-committed")

    def _apply_devices(self, node: int, gpu: GpuRequest, devices: Sequence[int], sign: int):
        self._use_devices(node, gpu, devices, sign)
        self._refresh_gpu_row(node)

    def _use_devices(self, node: int, gpu: GpuRequest, devices: Sequence[int], sign: int):
        """Device rows only; the caller refreshes the node's GPU aggregates."""
        if gpu.mig_profile is not None:
            p = self.mig_profiles.index(gpu.mig_profile)
            for d in devices:
                self.mig_used[node, d, p] += sign
        else:
            for d, milli in device_usage(self.gpu_specs[node], gpu, devices):
                self.dev_used_milli[node, d] += sign * milli

    def _refresh_gpu_row(self, row: int) -> None:
        """Recompute one node's GPU aggregates from its device rows (after every change)."""
        spec = self.gpu_specs[row]
        g = spec.devices
        if not g:
            return
        used = self.dev_used_milli[row, :g].tolist()
        units = []
        total = 0
        share = -1
        for capacity, taken in zip(self._dev_capacity[row], used):  # noqa: B905 (hot path)
            free = capacity - taken
            unit = free // MILLI_PER_GPU
            units.append(unit)
            total += unit
            if capacity == MILLI_PER_GPU and free > share:
                share = free
        self.gpu_free_units[row] = total
        self.gpu_share_free[row] = share
        size = spec.nvlink_group
        if size <= 1:
            group = max(units)
        elif size >= g:
            group = total
        else:
            group = max(sum(units[s : s + size]) for s in range(0, g, size))
        self.gpu_group_free_units[row] = group
        if spec.mig_layout:
            self.mig_free[row] = (self.mig_capacity[row] - self.mig_used[row]).sum(axis=0)

    def _refresh_gpu_rows(self, rows: np.ndarray) -> None:
        for row in rows.tolist():
            self._refresh_gpu_row(row)

    # --- change log (incremental caches catch up by replaying it) ---------------------------

    def _record(self, node: int, delta: int, binding: Binding) -> None:
        self.version += 1
        self._log.append((node, delta, binding))
        if len(self._log) > _LOG_LIMIT:
            drop = len(self._log) // 2
            del self._log[:drop]
            self._log_base += drop

    def changes_since(self, version: int) -> list[tuple[int, int, Binding]] | None:
        """(node, +1 bind / -1 unbind, binding) since `version`, oldest first; None if the log
        no longer reaches back that far (rebuild instead)."""
        if version < self._log_base:
            return None
        return self._log[version - self._log_base :]

    # --- copies -----------------------------------------------------------------------------

    def copy(self) -> ClusterState:
        """An independent state (the twin's what-ifs, preemption dry runs): dynamic columns
        are copied, static structures are shared until either side changes them."""
        other = object.__new__(ClusterState)
        other.__dict__.update(self.__dict__)
        for name, value in self.__dict__.items():
            if isinstance(value, np.ndarray):
                setattr(other, name, value.copy())
        other.uid = next(_state_ids)
        other._pods = list(self._pods)
        other._by_key = dict(self._by_key)
        other.affinity_bindings = dict(self.affinity_bindings)
        other.used_ports = {node: used.copy() for node, used in self.used_ports.items()}
        other.nominated = dict(self.nominated)
        other.namespace_labels = {k: dict(v) for k, v in self.namespace_labels.items()}
        other._log = []
        other._log_base = self.version
        self._static_shared = True
        other._static_shared = True
        return other

    snapshot = copy

    def restore(self, snapshot: ClusterState) -> None:
        """Make this state equal to an earlier `snapshot()` of it (caches rebuild)."""
        uid, version = self.uid, self.version
        fresh = snapshot.copy()
        self.__dict__.update(fresh.__dict__)
        self.uid = uid
        self.version = max(version, snapshot.version) + 1
        self.static_version = max(self.static_version, snapshot.static_version) + 1
        self._log = []
        self._log_base = self.version

    def nbytes(self) -> int:
        """Bytes held by the numpy columns (memory per node count in benchmarks)."""
        total = self.labels.nbytes()
        for value in self.__dict__.values():
            if isinstance(value, np.ndarray):
                total += value.nbytes
        return total

    def gpu_request_of(self, pod: Pod) -> GpuRequest | None:
        return pod_usage(pod).gpu

    def sharing_mode(self, node: int) -> SharingMode:
        return SharingMode(int(self.gpu_mode[node]))
