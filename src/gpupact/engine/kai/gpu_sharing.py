"""KAI GPU sharing: fractional and GPU-memory requests placed on GPU groups (shared devices).

A pod asks for part of a GPU with the `gpu-fraction` annotation (0 < f <= 1; anything else
is not a fraction request, as upstream), or for an amount of GPU memory in MiB with the
`gpu-memory` annotation (a positive base-10 integer; a valid fraction wins when a pod has
both), and optionally `gpu-fraction-num-devices` (that much on each of n devices). A running
shared pod names the groups it sits on with the `runai-gpu-group` label (more with
`runai-gpu-group/<name>` labels). Upstream: api/pod_info/pod_info.go,
updatePodAdditionalFields.

A memory request takes its MiB from a group (api/node_info/node_info.go,
GetResourceGpuMemory); its portion of one of the node's GPUs is ceil(100 * MiB / memory) /
100 (getGpuMemoryFractionalOnNode), which must be at most 1 or whole (isValidGpuPortion), and
a node without a readable nvidia.com/gpu.memory label takes no memory request (predicates:
the node's GPU memory is not synced). Queues count a placed memory pod as devices x that
portion on its node (setAcceptedResources), a pod not yet placed as devices x MiB /
MinNodeGPUMemory (plugins/proportion and podgroup_info.GetTasksToAllocateInitResource).
MinNodeGPUMemory starts at the default 100 and is only lowered by nodes above 100
(cache/cluster_info.snapshotNodes), so it is always 100: a pending 2000 MiB pod counts as 20
GPUs, as upstream.

Node accounting follows upstream node_info/gpu_sharing_node_info.go: per group, the used,
allocated and releasing GPU memory (a fraction f takes int(f * memory of one GPU); the memory
is the node's nvidia.com/gpu.memory label floored to a multiple of 100, default 100). A
group in use takes one whole GPU from the node's idle GPUs; a group whose pods are all
releasing counts as one releasing GPU.

Placement (gpu_sharing/gpuSharing.go, FittingGPUs, gpupack): on a node, the groups the
request fits (counting what is being released) and one entry per idle or releasing whole
GPU, ordered by the group's used portion (most used first; a whole GPU scores 0); the first
n of them. A whole GPU opens a new group. The choice waits for releasing resources (is
pipelined) when the group lacks idle room or the node cannot take the pod on idle
resources. Upstream names a new group with a random UUID and iterates groups in Go map
order; here a new group gets the lowest unused integer name and groups go by name.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Protocol

from gpupact.engine.gang import TaskStatus

if TYPE_CHECKING:
    from gpupact.kube.objects import Node, Pod

GPU_FRACTION_ANNOTATION = "gpu-fraction"
GPU_MEMORY_ANNOTATION = "gpu-memory"
NUM_DEVICES_ANNOTATION = "gpu-fraction-num-devices"
GPU_GROUP_LABEL = "runai-gpu-group"
GPU_GROUP_LABEL_PREFIX = GPU_GROUP_LABEL + "/"
GPU_MEMORY_LABEL = "nvidia.com/gpu.memory"
GPU_COUNT_LABEL = "nvidia.com/gpu.count"
DEFAULT_GPU_MEMORY = 100
TIB_IN_MIB = 1024 * 1024
WHOLE_GPU = "-2"  # upstream WholeGpuIndicator in the fitting-GPU list
MIN_NODE_GPU_MEMORY = DEFAULT_GPU_MEMORY  # ClusterInfo.MinNodeGPUMemory (see above)
_INT64 = 1 << 63


@dataclass(frozen=True, slots=True)
class SharedRequest:
    """A fraction of a GPU, or `memory` MiB of one (then `fraction` is 0), on each of
    `devices` devices. A pod with both annotations and a device count keeps both: the
    fraction decides its type, the memory what it takes from a group (as upstream)."""

    fraction: Fraction
    devices: int = 1
    memory: int = 0  # MiB

    @property
    def is_memory(self) -> bool:
        return self.fraction == 0

    @property
    def gpus(self) -> Fraction:
        """What a queue counts while the pod is not placed."""
        if self.is_memory:
            return Fraction(self.devices * self.memory, MIN_NODE_GPU_MEMORY)
        return self.fraction * self.devices

    def portion_on(self, gpu_memory: int) -> Fraction | None:
        """The part of one GPU with `gpu_memory` MiB the request takes (None: the node's
        memory is 0, no portion); ceil is taken on the float64 quotient, as upstream."""
        if self.memory <= 0:
            return self.fraction
        if gpu_memory <= 0:
            return None
        return Fraction(math.ceil(self.memory / gpu_memory * 100), 100)

    def valid_on(self, gpu_memory: int) -> bool:
        """isValidGpuPortion: at most one GPU, or a whole number of them."""
        portion = self.portion_on(gpu_memory)
        return portion is not None and (portion <= 1 or portion.denominator == 1)


def go_parse_int(text: str) -> int | None:
    """strconv.ParseInt(text, 10, 64): an optional sign and decimal digits, in int64."""
    digits = text[1:] if text[:1] in "+-" else text
    if not digits or not digits.isascii() or not digits.isdigit() or len(digits) > 19:
        return None
    value = int(text)
    return value if -_INT64 <= value < _INT64 else None


def _go_float(text: str) -> Fraction | None:
    """strconv.ParseFloat's decimal forms, exactly ("0.5", ".5", "5e-1", "+0.5")."""
    if "/" in text or text != text.strip():
        return None
    try:
        return Fraction(text)
    except (ValueError, ZeroDivisionError):
        return None


def shared_request(pod: Pod) -> SharedRequest | None:
    """The pod's fraction or GPU-memory request, or None (no annotation, or a value
    upstream ignores)."""
    memory = max(go_parse_int(pod.annotations.get(GPU_MEMORY_ANNOTATION, "")) or 0, 0)
    text = pod.annotations.get(GPU_FRACTION_ANNOTATION)
    fraction = _go_float(text) if text is not None else None
    if fraction is None or not 0 < fraction <= 1:
        if memory == 0:
            return None
        fraction = Fraction(0)
    devices = go_parse_int(pod.annotations.get(NUM_DEVICES_ANNOTATION, ""))
    if devices is None:
        # one device; a valid fraction alone replaces the memory request
        return SharedRequest(fraction, 1, 0 if fraction else memory)
    return SharedRequest(fraction, devices, memory)


def pod_gpu_groups(pod: Pod) -> tuple[str, ...]:
    """Upstream GetGpuGroups: the runai-gpu-group label, then each runai-gpu-group/* label
    (here in key order)."""
    first = pod.labels.get(GPU_GROUP_LABEL)
    if first is None:
        return ()
    more = [pod.labels[k] for k in sorted(pod.labels) if k.startswith(GPU_GROUP_LABEL_PREFIX)]
    return (first, *more)


def gpu_memory(node: Node) -> int:
    """Memory of one GPU on the node in MiB (upstream getNodeGpuMemory)."""
    value = go_parse_int(node.labels.get(GPU_MEMORY_LABEL, ""))
    if value is None:
        return DEFAULT_GPU_MEMORY
    if value >= TIB_IN_MIB:  # the label in bytes (a gpu-feature-discovery bug)
        value //= 1024 * 1024
    return value - value % 100


def gpu_memory_synced(node: Node) -> bool:
    """The node's GPU memory label is readable (upstream GpuMemorySynced)."""
    return go_parse_int(node.labels.get(GPU_MEMORY_LABEL, "")) is not None


def gpu_count(node: Node, allocatable_gpus: int) -> int:
    try:
        return int(node.labels[GPU_COUNT_LABEL])
    except (KeyError, ValueError):
        return allocatable_gpus


class GpuNode(Protocol):
    """What the group accounting reads and moves on its node (model.KaiNode): the whole
    GPUs its pods hold and its idle / releasing GPU counts."""

    used_whole_gpus: int

    def idle_gpus(self) -> int: ...

    def releasing_gpus(self) -> int: ...

    def add_gpus(self, kind: str, delta: int) -> None: ...


@dataclass(frozen=True, slots=True)
class GpuChoice:
    groups: tuple[str, ...]
    releasing: bool  # the pod has to wait for releasing resources (pipelined)
    opens_new_group: bool


class SharedGpus:
    """One node's GPU groups."""

    __slots__ = ("allocated", "count", "marked_releasing", "memory", "node", "releasing", "used")

    def __init__(self, node: GpuNode, count: int, memory: int) -> None:
        self.node = node
        self.count = count
        self.memory = memory
        self.used: dict[str, int] = {}
        self.releasing: dict[str, int] = {}
        self.allocated: dict[str, int] = {}
        self.marked_releasing: set[str] = set()

    def task_memory(self, request: SharedRequest) -> int:
        """GetResourceGpuMemory: the MiB asked for, else the fraction of one GPU's memory."""
        if request.memory > 0:
            return request.memory
        return int(request.fraction * self.memory)

    # --- accounting (upstream add/removeSharedTaskResourcesPerPodGroup) -------------------

    def _used_gpus(self) -> int:
        return self.node.used_whole_gpus + sum(1 for v in self.used.values() if v > 0)

    def _take_idle(self) -> None:
        if self.count < self.node.idle_gpus() + self._used_gpus():
            self.node.add_gpus("idle", -1)

    def _give_idle(self) -> None:
        if self.count >= self.node.idle_gpus() + self._used_gpus():
            self.node.add_gpus("idle", 1)

    def add(self, request: SharedRequest, status: TaskStatus, group: str) -> None:
        m = self.task_memory(request)
        self.used[group] = self.used.get(group, 0) + m
        if status is TaskStatus.RELEASING:
            self.releasing[group] = self.releasing.get(group, 0) + m
            self.allocated[group] = self.allocated.get(group, 0) + m
            if self.used[group] == self.releasing[group]:
                if group not in self.marked_releasing:
                    self.node.add_gpus("releasing", 1)
                    self.marked_releasing.add(group)
                self._take_idle()
        elif status is TaskStatus.PIPELINED:
            self.releasing[group] = self.releasing.get(group, 0) - m
            if self.used[group] - m == self.releasing[group] + m:
                self.node.add_gpus("releasing", -1)
        else:
            self.allocated[group] = self.allocated.get(group, 0) + m
            if self.used[group] <= m:
                self._take_idle()
            if group in self.marked_releasing:
                self.node.add_gpus("releasing", -1)
                self.marked_releasing.discard(group)

    def remove(self, request: SharedRequest, status: TaskStatus, group: str) -> None:
        m = self.task_memory(request)
        self.used[group] = self.used.get(group, 0) - m
        if status is TaskStatus.RELEASING:
            self.releasing[group] = self.releasing.get(group, 0) - m
            self.allocated[group] = self.allocated.get(group, 0) - m
            if self.used[group] <= 0:
                self._give_idle()
                if group in self.marked_releasing:
                    self.node.add_gpus("releasing", -1)
                    self.marked_releasing.discard(group)
        elif status is TaskStatus.PIPELINED:
            self.releasing[group] = self.releasing.get(group, 0) + m
            used_before = self.used[group] + m
            releasing_before = self.releasing[group] - m
            if used_before == releasing_before or (
                self.used[group] == 0 and self.releasing[group] == 0
            ):
                self.node.add_gpus("releasing", 1)
        else:
            self.allocated[group] = self.allocated.get(group, 0) - m
            if self.used[group] <= 0:
                self._give_idle()
            if self._releasing_from_shared(group) and group not in self.marked_releasing:
                self.node.add_gpus("releasing", 1)
                self.marked_releasing.add(group)

    def _releasing_from_shared(self, group: str) -> bool:
        used = self.used.get(group, 0)
        return used != 0 and self.releasing.get(group, 0) == used

    # --- fit ------------------------------------------------------------------------------

    def fits_group(self, request: SharedRequest, group: str) -> bool:
        """IsTaskFitOnGpuGroup: a group in use with room counting what is being released,
        not wholly released."""
        allocated, releasing = self.allocated.get(group, 0), self.releasing.get(group, 0)
        return (
            self.used.get(group, 0) != 0
            and self.memory - allocated + releasing - self.task_memory(request) >= 0
            and allocated != releasing
        )

    def idle_room(self, request: SharedRequest, group: str) -> bool:
        """EnoughIdleResourcesOnGpu."""
        if group not in self.allocated:
            return False
        return self.memory - self.allocated[group] - self.task_memory(request) >= 0

    def matching_groups(self, request: SharedRequest) -> int:
        """fractionTaskGpusAllocatableDeviceCount."""
        count = 0
        for group in sorted(self.used):
            if self.fits_group(request, group):
                count += 1
                if count >= request.devices:
                    break
        return count

    def device_fit(self, request: SharedRequest, whole_gpus: Fraction | int) -> bool:
        """Enough devices: whole GPUs (floor) plus groups with room."""
        return int(whole_gpus // 1) + self.matching_groups(request) >= request.devices

    def fitting_gpus(self, request: SharedRequest) -> list[str]:
        """FittingGPUs with gpupack's order: groups by used portion, most used first, whole
        GPUs (score 0) after any used group; ties in group-name order."""
        groups = [g for g in sorted(self.used) if self.fits_group(request, g)]
        wholes = max(self.node.idle_gpus(), 0) + max(self.node.releasing_gpus(), 0)
        entries = [(Fraction(self.used[g], self.memory), g) for g in groups]
        entries += [(Fraction(0), WHOLE_GPU)] * int(wholes)
        order = sorted(range(len(entries)), key=lambda i: -entries[i][0])
        return [entries[i][1] for i in order]

    def choose(
        self, request: SharedRequest, pipeline_only: bool, allocatable: bool
    ) -> GpuChoice | None:
        """GetNodePreferableGpuForSharing; `allocatable`: the pod fits the node's idle
        resources."""
        groups: list[str] = []
        releasing = False
        opened = False
        for gpu in self.fitting_gpus(request):
            if gpu == WHOLE_GPU:
                groups.append(self._new_group(groups))
                releasing = releasing or pipeline_only or not allocatable
                opened = True
            else:
                releasing = releasing or not self.idle_room(request, gpu) or not allocatable
                groups.append(gpu)
            if len(groups) == request.devices:
                return GpuChoice(tuple(groups), releasing, opened)
        return None

    def _new_group(self, taken: list[str]) -> str:
        index = 0
        while str(index) in self.used or str(index) in taken:
            index += 1
        return str(index)
