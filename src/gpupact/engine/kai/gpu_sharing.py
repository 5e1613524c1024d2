"""KAI GPU sharing: fractional GPU requests placed on GPU groups (shared devices).

A pod asks for part of a GPU with the `gpu-fraction` annotation (0 < f <= 1; anything else
is not a fraction request, as upstream) and optionally `gpu-fraction-num-devices` (that
fraction on each of n devices). A running shared pod names the groups it sits on with the
`runai-gpu-group` label (more with `runai-gpu-group/<name>` labels).

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

from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Protocol

from gpupact.engine.gang import TaskStatus

if TYPE_CHECKING:
    from gpupact.kube.objects import Node, Pod

GPU_FRACTION_ANNOTATION = "gpu-fraction"
NUM_DEVICES_ANNOTATION = "gpu-fraction-num-devices"
GPU_GROUP_LABEL = "runai-gpu-group"
GPU_GROUP_LABEL_PREFIX = GPU_GROUP_LABEL + "/"
GPU_MEMORY_LABEL = "nvidia.com/gpu.memory"
GPU_COUNT_LABEL = "nvidia.com/gpu.count"
DEFAULT_GPU_MEMORY = 100
TIB_IN_MIB = 1024 * 1024
WHOLE_GPU = "-2"  # upstream WholeGpuIndicator in the fitting-GPU list


@dataclass(frozen=True, slots=True)
class SharedRequest:
    fraction: Fraction
    devices: int = 1

    @property
    def gpus(self) -> Fraction:
        return self.fraction * self.devices


def _go_float(text: str) -> Fraction | None:
    """strconv.ParseFloat's decimal forms, exactly ("0.5", ".5", "5e-1", "+0.5")."""
    if "/" in text or text != text.strip():
        return None
    try:
        return Fraction(text)
    except (ValueError, ZeroDivisionError):
        return None


def shared_request(pod: Pod) -> SharedRequest | None:
    """The pod's fraction request, or None (no annotation, or a value upstream ignores)."""
    text = pod.annotations.get(GPU_FRACTION_ANNOTATION)
    if text is None:
        return None
    fraction = _go_float(text)
    if fraction is None or fraction <= 0 or fraction > 1:
        return None
    devices = 1
    count = pod.annotations.get(NUM_DEVICES_ANNOTATION, "")
    if count:
        try:
            devices = int(count)
        except ValueError:
            devices = 1
    return SharedRequest(fraction, devices)


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
    try:
        value = int(node.labels.get(GPU_MEMORY_LABEL, ""))
    except ValueError:
        return DEFAULT_GPU_MEMORY
    if value >= TIB_IN_MIB:  # the label in bytes (a gpu-feature-discovery bug)
        value //= 1024 * 1024
    return value - value % 100


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
