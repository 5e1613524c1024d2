"""GPU devices on a node: whole GPUs, GPU-milli shares, MIG slices, time-slice replicas, NVLink.

A node's GPUs are read once from the Node object (`node_gpu_spec`) and a pod's GPU need once
from the Pod (`gpu_request_from`); both are plain values. The per-node logic (does the request fit
this node's devices, which devices does it take) lives here as scalar functions over one node's
rows, so the scalar filter chain and the vectorised engine share one device-choice rule.

Sharing modes (one per node):
- exclusive: whole devices only (the NVIDIA device plugin's default);
- fractional: GPU-milli as in the Alibaba 2023 (openb) trace: a pod asking for one GPU with
  milli < 1000 shares one device with others up to 1000; multi-GPU pods take whole free devices;
- time-sliced: every device is advertised `replicas` times; a pod takes `count` replicas,
  possibly of the same device, with no memory isolation (audit flags online pods there);
- MIG (mixed strategy): devices are cut into MIG slices (profiles below) advertised as
  `nvidia.com/mig-<profile>`; a pod asks for slices of one profile. Devices of a MIG node that
  have no layout still serve whole-GPU pods.

NVLink: `gpu.topology: nvlink-<k>` groups a node's devices in consecutive groups of k
("nvlink" alone: one group of all devices); a pod that requires NVLink and k GPUs needs k free
devices inside one group.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from gpupact.errors import FieldError

GPU_RESOURCE = "nvidia.com/gpu"
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"
MILLI_PER_GPU = 1000

# node labels (GPU feature discovery / gpu-operator, and the project's own)
LABEL_GPU_MODEL = "gpu.model"
LABEL_GPU_PRODUCT = "nvidia.com/gpu.product"
LABEL_GPU_COUNT = "nvidia.com/gpu.count"
LABEL_GPU_REPLICAS = "nvidia.com/gpu.replicas"
LABEL_SHARING_STRATEGY = "nvidia.com/gpu.sharing-strategy"
LABEL_GPU_TOPOLOGY = "gpu.topology"
# node annotations or labels of this project
KEY_GPU_SHARING = "gpupact.io/gpu-sharing"  # exclusive | fractional | time-slicing
KEY_MIG_LAYOUT = "gpupact.io/mig-layout"  # JSON: one {profile: count} object per device

# pod annotations
ANN_GPU_MILLI = "gpupact.io/gpu-milli"
ANN_KAI_GPU_FRACTION = "gpu-fraction"  # NVIDIA KAI-Scheduler's fractional GPU request
ANN_GPU_MODELS = "gpupact.io/gpu-models"  # comma-separated
ANN_GPU_TOPOLOGY = "gpupact.io/gpu-topology"  # "nvlink": the GPUs must share one NVLink group


class SharingMode(IntEnum):
    NONE = 0
    EXCLUSIVE = 1
    FRACTIONAL = 2
    TIME_SLICED = 3
    MIG = 4


_SHARING_NAMES = {
    "exclusive": SharingMode.EXCLUSIVE,
    "none": SharingMode.EXCLUSIVE,
    "fractional": SharingMode.FRACTIONAL,
    "gpu-milli": SharingMode.FRACTIONAL,
    "time-slicing": SharingMode.TIME_SLICED,
    "time-sliced": SharingMode.TIME_SLICED,
}


def sharing_mode(name: str) -> SharingMode:
    try:
        return _SHARING_NAMES[name]
    except KeyError:
        choices = ", ".join(sorted(_SHARING_NAMES))
        raise FieldError((), f"unknown GPU sharing mode {name!r} (one of {choices})") from None


# --- MIG profiles -----------------------------------------------------------------------------
#
# A MIG device is a GPU instance of `g` compute slices (of 7) and some memory slices (of 8); its
# name is `<g>g.<memory>gb` (NVIDIA MIG User Guide, "MIG Device Names"; `<c>c.` in front for a
# compute instance smaller than its GPU instance). The same name means different geometry on
# different GPUs (1g.10gb is 1/8 of the memory on A100-80GB, 2/8 on A100-40GB), so a node's
# geometry is read from the node first: GPU feature discovery's mixed-strategy labels
# `nvidia.com/mig-<profile>.slices.gi` (compute slices of the GPU instance) and `.memory` (MiB)
# against the whole GPU's `nvidia.com/gpu.memory` (MiB); then from the built-in tables below
# (for nodes without those labels); then from the name itself (`<g>g`, and `<n>gb` against
# `nvidia.com/gpu.memory`). A profile none of these explains is spread over the node's MIG GPUs
# without a geometry check and reported (`NodeGpuSpec.mig_notes`), never an input error: the
# scheduler itself only counts the advertised slices.
#
# Built-in tables, from the MIG User Guide's "Supported MIG Profiles": A100-SXM4-40GB 1g.5gb,
# 1g.10gb, 2g.10gb, 3g.20gb, 4g.20gb, 7g.40gb; A100-80GB and H100-80GB 1g.10gb, 1g.20gb, 2g.20gb,
# 3g.40gb, 4g.40gb, 7g.80gb; H200-141GB 1g.18gb, 1g.35gb, 2g.35gb, 3g.71gb, 4g.71gb, 7g.141gb;
# each with compute/memory slices 1/1, 1/2, 2/2, 3/4, 4/4, 7/8 and at most 7, 4, 3, 2, 1, 1
# instances. The +me (media extension) variants are left out.

MIG_COMPUTE_SLICES = 7
MIG_MEMORY_SLICES = 8
LABEL_GPU_MEMORY = "nvidia.com/gpu.memory"  # MiB of one whole GPU (mixed strategy)
LABEL_MIG_STRATEGY = "nvidia.com/mig.strategy"
LABEL_MIG_CONFIG = "nvidia.com/mig.config"  # mig-manager: the mig-parted config applied
LABEL_MIG_CONFIG_STATE = "nvidia.com/mig.config.state"  # success | pending | failed
_MIG_NAME = re.compile(r"^(?:[1-8]c\.)?([1-8])g\.(\d+)gb(?:[+.-][a-z0-9.]+)?$")


@dataclass(frozen=True, slots=True)
class MigProfile:
    name: str
    compute_slices: int
    memory_slices: int
    max_instances: int


def mig_profile_from_slices(name: str, compute: int, memory: int) -> MigProfile:
    """A profile's instance limit follows from its slices: as many as fit in 7 compute and 8
    memory slices (the guide's 7, 4, 3, 2, 1, 1)."""
    limit = min(MIG_COMPUTE_SLICES // compute, MIG_MEMORY_SLICES // memory)
    return MigProfile(name, compute, memory, max(1, limit))


def _table(names: Sequence[str]) -> tuple[MigProfile, ...]:
    shape = ((1, 1), (1, 2), (2, 2), (3, 4), (4, 4), (7, 8))
    return tuple(mig_profile_from_slices(n, c, m) for n, (c, m) in zip(names, shape, strict=True))


MIG_TABLES: Mapping[str, tuple[MigProfile, ...]] = {
    "A100-40GB": _table(("1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb")),
    "A100-80GB": _table(("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb")),
    "H100-80GB": _table(("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb")),
    "H200-141GB": _table(("1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb")),
}


# by name alone (a node without a product label or GFD labels): the 80GB-class geometry where
# names collide (1g.10gb), A100-40GB's own names otherwise
MIG_PROFILES: Mapping[str, MigProfile] = {
    p.name: p
    for key in ("A100-80GB", "H100-80GB", "H200-141GB", "A100-40GB")
    for p in MIG_TABLES[key]
    if key != "A100-40GB" or p.name != "1g.10gb"
}


def is_mig_profile_name(name: str) -> bool:
    return _MIG_NAME.match(name) is not None


def mig_profile(name: str, profiles: Mapping[str, MigProfile] | None = None) -> MigProfile:
    try:
        return (MIG_PROFILES if profiles is None else profiles)[name]
    except KeyError:
        raise FieldError((), f"unknown MIG profile {name!r}") from None


def _table_for_product(product: str) -> tuple[MigProfile, ...] | None:
    """The built-in table whose GPU the product label names (NVIDIA-A100-SXM4-40GB ->
    A100-40GB)."""
    upper = product.upper()
    for key, table in MIG_TABLES.items():
        model, memory = key.split("-")
        if model in upper and memory in upper:
            return table
    return None


def _label_int(labels: Mapping[str, str], key: str) -> int | None:
    text = labels.get(key, "")
    return int(text) if text.isdigit() and int(text) > 0 else None


def node_mig_profiles(
    labels: Mapping[str, str], names: Sequence[str]
) -> tuple[dict[str, MigProfile], dict[str, str]]:
    """Geometry of the MIG profiles `names` on a node with `labels`, and where each came from
    ("labels" | "table" | "name"); a profile none explains is left out."""
    gpu_mib = _label_int(labels, LABEL_GPU_MEMORY)
    table = _table_for_product(labels.get(LABEL_GPU_PRODUCT, "") or labels.get(LABEL_GPU_MODEL, ""))
    by_table = {p.name: p for p in table} if table is not None else MIG_PROFILES
    found: dict[str, MigProfile] = {}
    source: dict[str, str] = {}
    for name in names:
        match = _MIG_NAME.match(name)
        gi = _label_int(labels, f"{MIG_RESOURCE_PREFIX}{name}.slices.gi")
        mib = _label_int(labels, f"{MIG_RESOURCE_PREFIX}{name}.memory")
        if gi is not None and mib is not None and gpu_mib is not None and gi <= 7:
            found[name] = mig_profile_from_slices(name, gi, _memory_slices(mib, gpu_mib))
            source[name] = "labels"
        elif name in by_table:
            found[name], source[name] = by_table[name], "table"
        elif match is not None and gpu_mib is not None and int(match.group(1)) <= 7:
            # the name's gb is the slice's memory rounded to whole GB
            memory = _memory_slices(int(match.group(2)) * 1000, gpu_mib)
            found[name] = mig_profile_from_slices(name, int(match.group(1)), memory)
            source[name] = "name"
    return found, source


def _memory_slices(slice_mib: int, gpu_mib: int) -> int:
    """Memory slices (of 8) a MIG device of `slice_mib` takes on a GPU of `gpu_mib`: NVML
    reports a little less than the exact share (4864 MiB for 1/8 of 40 GiB), so round."""
    return min(MIG_MEMORY_SLICES, max(1, round(MIG_MEMORY_SLICES * slice_mib / gpu_mib)))


def validate_mig_layout(
    layout: Mapping[str, int], profiles: Mapping[str, MigProfile] | None = None
) -> None:
    """One device's slices must fit its 7 compute and 8 memory slices and the per-profile
    instance limits. (NVIDIA's placement geometry is finer; these sums reject what can never
    fit and accept the layouts the gpu-operator ships.)"""
    compute = memory = 0
    for name, count in layout.items():
        profile = mig_profile(name, profiles)
        if count < 0 or count > profile.max_instances:
            raise FieldError(
                (name,), f"{count} x {name}: at most {profile.max_instances} on one GPU"
            )
        compute += profile.compute_slices * count
        memory += profile.memory_slices * count
    if compute > MIG_COMPUTE_SLICES or memory > MIG_MEMORY_SLICES:
        raise FieldError(
            (),
            f"MIG layout {dict(layout)} needs {compute}/7 compute and {memory}/8 memory slices",
        )


def pack_mig_layout(
    counts: Mapping[str, int], devices: int, profiles: Mapping[str, MigProfile] | None = None
) -> tuple[dict[str, int], ...]:
    """Spread advertised MIG slice counts over `devices` GPUs (largest profiles first, first
    device with room), as a mixed-strategy node's layout when none is given explicitly."""
    layout: list[dict[str, int]] = [{} for _ in range(devices)]
    used = [[0, 0] for _ in range(devices)]
    order = sorted(counts, key=lambda n: (-mig_profile(n, profiles).compute_slices, n))
    for name in order:
        profile = mig_profile(name, profiles)
        for _ in range(counts[name]):
            for d in range(devices):
                c, m = used[d]
                if (
                    c + profile.compute_slices <= MIG_COMPUTE_SLICES
                    and m + profile.memory_slices <= MIG_MEMORY_SLICES
                    and layout[d].get(name, 0) < profile.max_instances
                ):
                    layout[d][name] = layout[d].get(name, 0) + 1
                    used[d] = [c + profile.compute_slices, m + profile.memory_slices]
                    break
            else:
                raise FieldError(
                    ("status", "allocatable", MIG_RESOURCE_PREFIX + name),
                    f"{counts[name]} x {name} do not fit on {devices} GPU(s)",
                )
    return tuple(layout)


def spread_mig_slices(layout: list[dict[str, int]], name: str, count: int) -> None:
    """Deal `count` slices of a profile of unknown geometry over the layout's devices, one at
    a time (no geometry check: only the count is known)."""
    for i in range(count):
        device = layout[i % len(layout)]
        device[name] = device.get(name, 0) + 1


# --- a pod's GPU request ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GpuRequest:
    """`count` whole devices (milli == 1000), or one device share (count == 1, milli < 1000,
    Alibaba trace semantics), or `count` MIG slices of `mig_profile`. `models`: acceptable
    GPU models (None: any). `nvlink`: the devices must lie in one NVLink group."""

    count: int
    milli: int = MILLI_PER_GPU
    models: frozenset[str] | None = None
    mig_profile: str | None = None
    nvlink: bool = False

    def __post_init__(self) -> None:
        if self.count < 1:
            raise FieldError(("count",), f"a GPU request needs count >= 1, got {self.count}")
        if not 0 < self.milli <= MILLI_PER_GPU:
            raise FieldError(("milli",), f"GPU-milli must be in 1..1000, got {self.milli}")
        if self.milli < MILLI_PER_GPU and self.count != 1:
            raise FieldError(("milli",), "a GPU share (milli < 1000) is for one GPU only")
        if self.mig_profile is not None:
            if not is_mig_profile_name(self.mig_profile):
                raise FieldError(("migProfile",), f"not a MIG profile name: {self.mig_profile!r}")
            if self.milli != MILLI_PER_GPU or self.nvlink:
                raise FieldError(("migProfile",), "a MIG request takes whole slices, no NVLink")

    @property
    def fractional(self) -> bool:
        return self.milli < MILLI_PER_GPU

    @property
    def total_milli(self) -> int:
        return self.count * self.milli


def _annotation_int(annotations: Mapping[str, str], key: str, low: int, high: int) -> int | None:
    text = annotations.get(key)
    if text is None:
        return None
    path = ("metadata", "annotations", key)
    try:
        value = int(text.strip())
    except ValueError:
        raise FieldError(path, f"expected an integer, got {text!r}") from None
    if not low <= value <= high:
        raise FieldError(path, f"must be in {low}..{high}, got {value}")
    return value


def _kai_fraction_milli(annotations: Mapping[str, str]) -> int | None:
    text = annotations.get(ANN_KAI_GPU_FRACTION)
    if text is None:
        return None
    path = ("metadata", "annotations", ANN_KAI_GPU_FRACTION)
    try:
        fraction = float(text)
    except ValueError:
        raise FieldError(path, f"expected a number in (0, 1], got {text!r}") from None
    if not 0 < fraction <= 1:
        raise FieldError(path, f"expected a number in (0, 1], got {text!r}")
    return max(1, round(fraction * MILLI_PER_GPU))


def gpu_request_from(
    requests: Mapping[str, int],
    annotations: Mapping[str, str],
    node_selector: Mapping[str, str],
) -> GpuRequest | None:
    """The GPU part of a pod: `nvidia.com/gpu: N` -> N whole devices; annotation
    `gpupact.io/gpu-milli` (or KAI's `gpu-fraction`) -> one device share; a
    `nvidia.com/mig-<profile>` request -> MIG slices. Models come from annotation
    `gpupact.io/gpu-models` or a nodeSelector on gpu.model / nvidia.com/gpu.product."""
    count = requests.get(GPU_RESOURCE, 0)
    # a `nvidia.com/mig-<x>` whose <x> is no profile name is another extended resource: the
    # kubelet and NodeResourcesFit count it like any other
    mig = sorted(
        (name[len(MIG_RESOURCE_PREFIX) :], amount)
        for name, amount in requests.items()
        if name.startswith(MIG_RESOURCE_PREFIX)
        and amount > 0
        and is_mig_profile_name(name[len(MIG_RESOURCE_PREFIX) :])
    )
    milli = _annotation_int(annotations, ANN_GPU_MILLI, 1, MILLI_PER_GPU)
    if milli is None:
        milli = _kai_fraction_milli(annotations)
    models = _requested_models(annotations, node_selector)
    topology = annotations.get(ANN_GPU_TOPOLOGY)
    if topology not in (None, "", "nvlink"):
        raise FieldError(
            ("metadata", "annotations", ANN_GPU_TOPOLOGY), f'expected "nvlink", got {topology!r}'
        )
    nvlink = topology == "nvlink"
    if mig:
        if len(mig) > 1 or count or milli is not None:
            raise FieldError(
                ("spec", "containers"),
                "a pod asking for MIG slices of several profiles, or for MIG slices and whole "
                "or shared GPUs together, is not modelled",
            )
        name, amount = mig[0]
        return GpuRequest(amount, models=models, mig_profile=name)
    if milli is not None and milli < MILLI_PER_GPU:
        if count > 1:
            raise FieldError(
                ("metadata", "annotations", ANN_GPU_MILLI),
                f"a GPU share is for one GPU, but the pod asks for {GPU_RESOURCE}: {count}",
            )
        return GpuRequest(1, milli, models, nvlink=nvlink)
    if milli is not None and count == 0:
        count = 1  # gpu-milli 1000 without a resource request: one whole GPU
    if count <= 0:
        return None
    return GpuRequest(count, models=models, nvlink=nvlink)


def _requested_models(
    annotations: Mapping[str, str], node_selector: Mapping[str, str]
) -> frozenset[str] | None:
    text = annotations.get(ANN_GPU_MODELS)
    if text is not None:
        models = frozenset(m.strip() for m in text.split(",") if m.strip())
        if not models:
            raise FieldError(("metadata", "annotations", ANN_GPU_MODELS), "no model named")
        return models
    for key in (LABEL_GPU_MODEL, LABEL_GPU_PRODUCT):
        if key in node_selector:
            return frozenset((node_selector[key],))
    return None


# --- a node's GPUs ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NodeGpuSpec:
    """The GPU hardware and sharing setup of one node. `mig_layout` has one entry per device
    (a `(profile, slots)` tuple; empty for a device without MIG). `mig_notes`: what could not
    be read as hardware geometry (an unknown profile, slices that overflow the labelled GPU
    count) and how it was modelled instead: findings on this node, not input errors."""

    mode: SharingMode = SharingMode.NONE
    devices: int = 0
    model: str | None = None
    replicas: int = 1
    nvlink_group: int = 1
    mig_layout: tuple[tuple[tuple[str, int], ...], ...] = ()
    mig_notes: tuple[str, ...] = ()

    def device_capacity_milli(self) -> list[int]:
        """Milli each device offers to whole/fractional/time-sliced pods (0: a MIG device)."""
        out = []
        for d in range(self.devices):
            if self.mig_layout and self.mig_layout[d]:
                out.append(0)
            else:
                out.append(self.replicas * MILLI_PER_GPU)
        return out

    def mig_slots(self) -> list[dict[str, int]]:
        if not self.mig_layout:
            return [{} for _ in range(self.devices)]
        return [dict(device) for device in self.mig_layout]


# Per-node device arrays are sized by the largest node, so an absurd count (a typo such as an
# allocatable of 100000000 GPUs) would exhaust memory; real nodes carry at most a few dozen.
MAX_GPUS_PER_NODE = 1024
MAX_GPU_REPLICAS = 1024  # time-slicing replicas per GPU


def _bounded(value: int, limit: int, path: tuple[str, ...], what: str) -> int:
    if value > limit:
        raise FieldError(path, f"{value} {what} on one node is more than the {limit} supported")
    return value


def _allocatable_path(node: Any, resource: str) -> tuple[str, ...]:
    """Where `node.allocatable[resource]` came from (capacity stands in for a missing
    allocatable)."""
    status = node.raw.get("status") if isinstance(node.raw, Mapping) else None
    has_allocatable = isinstance(status, Mapping) and status.get("allocatable") is not None
    return ("status", "allocatable" if has_allocatable else "capacity", resource)


def _int_text(text: str, path: tuple[str, ...]) -> int:
    try:
        value = int(text)
    except ValueError:
        raise FieldError(path, f"expected an integer, got {text!r}") from None
    if value < 0:
        raise FieldError(path, f"must not be negative, got {value}")
    return value


def _setting(node: Any, key: str) -> tuple[str | None, tuple[str, ...]]:
    if key in node.annotations:
        return node.annotations[key], ("metadata", "annotations", key)
    if key in node.labels:
        return node.labels[key], ("metadata", "labels", key)
    return None, ()


def nvlink_group_size(topology: str | None, devices: int) -> int:
    """`nvlink-<k>` -> k; `nvlink` -> all devices in one group; anything else -> 1."""
    if not topology or not topology.startswith("nvlink"):
        return 1
    rest = topology[len("nvlink") :]
    if not rest:
        return max(devices, 1)
    if rest.startswith("-") and rest[1:].isdigit() and int(rest[1:]) > 0:
        return int(rest[1:])
    raise FieldError(
        ("metadata", "labels", LABEL_GPU_TOPOLOGY),
        f'expected "nvlink" or "nvlink-<k>", got {topology!r}',
    )


def node_gpu_spec(node: Any) -> NodeGpuSpec:
    """Read a Node's GPUs: allocatable `nvidia.com/gpu` and `nvidia.com/mig-*`, GPU feature
    discovery labels (product, count, replicas, sharing strategy) and the project's
    `gpupact.io/gpu-sharing`, `gpupact.io/mig-layout`, `gpu.model`, `gpu.topology`."""
    labels = node.labels
    alloc = node.allocatable
    model = labels.get(LABEL_GPU_MODEL) or labels.get(LABEL_GPU_PRODUCT) or None
    advertised = alloc.get(GPU_RESOURCE, 0)
    mig_counts = {
        name[len(MIG_RESOURCE_PREFIX) :]: amount
        for name, amount in alloc.items()
        if name.startswith(MIG_RESOURCE_PREFIX)
        and amount > 0
        and is_mig_profile_name(name[len(MIG_RESOURCE_PREFIX) :])
    }
    physical = None
    count_path = ("metadata", "labels", LABEL_GPU_COUNT)
    if LABEL_GPU_COUNT in labels:
        physical = _int_text(labels[LABEL_GPU_COUNT], count_path)
    topology = labels.get(LABEL_GPU_TOPOLOGY)

    sharing_text, sharing_path = _setting(node, KEY_GPU_SHARING)
    if sharing_text is None and labels.get(LABEL_SHARING_STRATEGY) == "time-slicing":
        sharing_text, sharing_path = "time-slicing", ("metadata", "labels", LABEL_SHARING_STRATEGY)
    replicas = 1
    if LABEL_GPU_REPLICAS in labels:
        replicas = _int_text(labels[LABEL_GPU_REPLICAS], ("metadata", "labels", LABEL_GPU_REPLICAS))
        if replicas > 1 and sharing_text is None:
            sharing_text, sharing_path = "time-slicing", ("metadata", "labels", LABEL_GPU_REPLICAS)

    layout_text, layout_path = _setting(node, KEY_MIG_LAYOUT)
    if mig_counts or layout_text is not None:
        for name, amount in mig_counts.items():
            path = _allocatable_path(node, MIG_RESOURCE_PREFIX + name)
            _bounded(amount, MAX_GPUS_PER_NODE * MIG_COMPUTE_SLICES, path, "MIG devices")
        _bounded(advertised, MAX_GPUS_PER_NODE, _allocatable_path(node, GPU_RESOURCE), "GPUs")
        if physical is not None:
            _bounded(physical, MAX_GPUS_PER_NODE, count_path, "GPUs")
        layout, notes = _mig_layout(
            layout_text, layout_path, mig_counts, physical, advertised, labels
        )
        devices = len(layout)
        path = layout_path if layout_text is not None else _allocatable_path(node, GPU_RESOURCE)
        _bounded(devices, MAX_GPUS_PER_NODE, path, "GPUs")
        return NodeGpuSpec(
            SharingMode.MIG,
            devices,
            model,
            1,
            nvlink_group_size(topology, devices),
            tuple(tuple(sorted(d.items())) for d in layout),
            tuple(notes),
        )

    mode = SharingMode.EXCLUSIVE
    if sharing_text is not None:
        try:
            mode = sharing_mode(sharing_text)
        except FieldError as err:
            raise FieldError(sharing_path, err.message) from None
    advertised_path = _allocatable_path(node, GPU_RESOURCE)
    if mode is SharingMode.TIME_SLICED:
        replicas_path = ("metadata", "labels", LABEL_GPU_REPLICAS)
        if replicas <= 1 and physical:
            replicas, replicas_path = max(1, advertised // physical), advertised_path
        _bounded(replicas, MAX_GPU_REPLICAS, replicas_path, "time-slicing replicas per GPU")
        if physical is not None:
            devices = _bounded(physical, MAX_GPUS_PER_NODE, count_path, "GPUs")
        else:
            devices = _bounded(
                advertised // max(replicas, 1), MAX_GPUS_PER_NODE, advertised_path, "GPUs"
            )
    else:
        replicas = 1
        devices = _bounded(advertised, MAX_GPUS_PER_NODE, advertised_path, "GPUs")
    if devices <= 0:
        return NodeGpuSpec(model=model)
    return NodeGpuSpec(mode, devices, model, replicas, nvlink_group_size(topology, devices))


def _mig_layout(
    text: str | None,
    path: tuple[str, ...],
    counts: Mapping[str, int],
    physical: int | None,
    whole: int,
    labels: Mapping[str, str],
) -> tuple[list[dict[str, int]], list[str]]:
    """One {profile: slots} per device (MIG devices first, then `whole` plain GPUs) and the
    notes on what had to be modelled without known geometry."""
    if text is not None:
        return _annotated_layout(text, path, labels)
    profiles, _ = node_mig_profiles(labels, sorted(counts))
    known = {n: c for n, c in counts.items() if n in profiles}
    unknown = {n: c for n, c in counts.items() if n not in profiles}
    notes: list[str] = []
    labelled = (physical - whole) if physical is not None else 0
    needed = sum(profiles[n].compute_slices * c for n, c in known.items())
    fewest = max(1, -(-needed // MIG_COMPUTE_SLICES))
    devices = labelled if labelled > 0 else fewest
    packed: tuple[dict[str, int], ...] | None = None
    while packed is None:
        try:
            packed = pack_mig_layout(known, devices, profiles)
        except FieldError:
            # more slices than the labelled GPUs hold: model as many GPUs as they need
            devices = max(devices * 2, fewest)
            if devices > sum(known.values()):
                devices = max(1, sum(known.values()))
                packed = pack_mig_layout(known, devices, profiles)
    if labelled > 0 and devices != labelled:
        notes.append(
            f"the MIG slices advertised ({_counts_text(known)}) do not fit the {labelled} MIG "
            f"GPU(s) of {LABEL_GPU_COUNT}: modelled on {devices}"
        )
    layout = [dict(d) for d in packed]
    for name, count in sorted(unknown.items()):
        spread_mig_slices(layout, name, count)
        notes.append(
            f"MIG profile {name}: geometry unknown (no {MIG_RESOURCE_PREFIX}{name}.slices.gi / "
            f".memory and {LABEL_GPU_MEMORY} labels, not in the built-in tables): its {count} "
            f"slice(s) are counted over {len(layout)} GPU(s) without a fit check"
        )
    return layout + [{} for _ in range(whole)], notes


def _annotated_layout(
    text: str, path: tuple[str, ...], labels: Mapping[str, str]
) -> tuple[list[dict[str, int]], list[str]]:
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as err:
        raise FieldError(path, f"not JSON: {err.msg}") from None
    except RecursionError:
        raise FieldError(path, "JSON nested too deeply") from None
    if not isinstance(raw, list) or not all(isinstance(d, dict) for d in raw):
        raise FieldError(path, "expected a JSON list with one {profile: count} per GPU")
    names = sorted({str(n) for device in raw for n in device})
    profiles, _ = node_mig_profiles(labels, names)
    notes = [
        f"MIG profile {n}: geometry unknown (not in the node's labels or the built-in tables): "
        "its slices in the layout are taken as given"
        for n in names
        if n not in profiles
    ]
    layout: list[dict[str, int]] = []
    for i, device in enumerate(raw):
        entry: dict[str, int] = {}
        for name, count in device.items():
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                raise FieldError((*path, i, name), f"expected a count >= 0, got {count!r}")
            if count:
                entry[str(name)] = count
        try:
            validate_mig_layout({n: c for n, c in entry.items() if n in profiles}, profiles)
        except FieldError as err:
            raise err.prefixed((*path, i)) from None
        layout.append(entry)
    return layout, notes


def _counts_text(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{c} x {n}" for n, c in sorted(counts.items()))


# --- one node's devices: fit and choice (shared by the scalar chain and the engine) ----------

PLUGIN_NAME = "GPUDevices"
# static (the node can never take the pod; preemption cannot help)
REASON_NO_GPU = "node(s) had no GPU"
REASON_MODEL = "node(s) didn't have the requested GPU model"
REASON_NO_SHARING = "node(s) didn't allow GPU sharing"
REASON_NO_MIG_PROFILE = "node(s) didn't offer the requested MIG profile"
REASON_TOO_FEW_GPUS = "node(s) had fewer GPUs than requested"
REASON_NVLINK_GROUP_TOO_SMALL = "node(s) had no NVLink group large enough"
# dynamic (pods would have to leave)
REASON_FREE_GPUS = "node(s) didn't have enough free GPUs"
REASON_FREE_MILLI = "node(s) didn't have a GPU with enough free GPU-milli"
REASON_FREE_MIG = "node(s) didn't have enough free MIG slices"
REASON_FREE_NVLINK = "node(s) didn't have enough free GPUs in one NVLink group"


def model_matches(request: GpuRequest, model: str | None) -> bool:
    return request.models is None or (model is not None and model in request.models)


def static_gpu_failure(spec: NodeGpuSpec, request: GpuRequest) -> str | None:
    """Why the node can never take the request (None: it could, when free)."""
    if spec.mode is SharingMode.NONE or spec.devices == 0:
        return REASON_NO_GPU
    if not model_matches(request, spec.model):
        return REASON_MODEL
    if request.mig_profile is not None:
        total = sum(dict(d).get(request.mig_profile, 0) for d in spec.mig_layout)
        if total == 0:
            return REASON_NO_MIG_PROFILE
        if total < request.count:
            return REASON_TOO_FEW_GPUS
        return None
    if request.fractional and spec.mode not in (SharingMode.FRACTIONAL, SharingMode.TIME_SLICED):
        return REASON_NO_SHARING
    units = sum(c // MILLI_PER_GPU for c in spec.device_capacity_milli())
    if units < request.count:
        return REASON_TOO_FEW_GPUS
    if request.nvlink and _max_group_units(spec.device_capacity_milli(), spec) < request.count:
        return REASON_NVLINK_GROUP_TOO_SMALL
    return None


def _groups(devices: int, group_size: int) -> list[range]:
    size = max(group_size, 1)
    return [range(start, min(start + size, devices)) for start in range(0, devices, size)]


def _max_group_units(free: Sequence[int], spec: NodeGpuSpec) -> int:
    return max(
        (
            sum(free[d] // MILLI_PER_GPU for d in g)
            for g in _groups(spec.devices, spec.nvlink_group)
        ),
        default=0,
    )


def dynamic_gpu_failure(
    spec: NodeGpuSpec,
    free_milli: Sequence[int],
    mig_free: Sequence[Mapping[str, int]],
    request: GpuRequest,
) -> str | None:
    """Why the node cannot take the request now (run after `static_gpu_failure` passed)."""
    if request.mig_profile is not None:
        free = sum(d.get(request.mig_profile, 0) for d in mig_free)
        return None if free >= request.count else REASON_FREE_MIG
    if request.fractional and spec.mode is SharingMode.FRACTIONAL:
        capacity = spec.device_capacity_milli()
        ok = any(
            capacity[d] == MILLI_PER_GPU and free_milli[d] >= request.milli
            for d in range(spec.devices)
        )
        return None if ok else REASON_FREE_MILLI
    units = sum(f // MILLI_PER_GPU for f in free_milli)
    if units < request.count:
        return REASON_FREE_GPUS
    if request.nvlink and _max_group_units(free_milli, spec) < request.count:
        return REASON_FREE_NVLINK
    return None


def choose_devices(
    spec: NodeGpuSpec,
    free_milli: Sequence[int],
    mig_free: Sequence[Mapping[str, int]],
    request: GpuRequest,
) -> tuple[int, ...]:
    """Devices the request takes on this node (the request must fit). Whole GPUs: the lowest
    free devices (inside the NVLink group with the fewest free devices that holds them, when
    NVLink is required); a share: the device whose free milli fits most tightly (best fit,
    lowest index on ties); MIG: lowest devices with a free slice; time-sliced: replicas of the
    devices with the most free replicas. A time-sliced device can appear more than once."""
    if request.mig_profile is not None:
        out: list[int] = []
        for d, slots in enumerate(mig_free):
            take = min(slots.get(request.mig_profile, 0), request.count - len(out))
            out.extend([d] * take)
            if len(out) == request.count:
                return tuple(out)
        raise ValueError("MIG request does not fit")
    if request.fractional and spec.mode is SharingMode.FRACTIONAL:
        capacity = spec.device_capacity_milli()
        best = -1
        for d in range(spec.devices):
            fits = capacity[d] == MILLI_PER_GPU and free_milli[d] >= request.milli
            if fits and (best < 0 or free_milli[d] < free_milli[best]):
                best = d
        if best < 0:
            raise ValueError("GPU share does not fit")
        return (best,)
    if spec.mode is SharingMode.TIME_SLICED:
        units = [f // MILLI_PER_GPU for f in free_milli]
        candidates = range(spec.devices)
        if request.nvlink:
            candidates = _best_group(units, spec, request.count)
        picked: list[int] = []
        for _ in range(request.count):
            d = max(candidates, key=lambda i: (units[i], -i))
            if units[d] <= 0:
                raise ValueError("time-sliced request does not fit")
            units[d] -= 1
            picked.append(d)
        return tuple(sorted(picked))
    free_devices = [d for d in range(spec.devices) if free_milli[d] >= MILLI_PER_GPU]
    if request.nvlink:
        units = [f // MILLI_PER_GPU for f in free_milli]
        group = _best_group(units, spec, request.count)
        free_devices = [d for d in group if free_milli[d] >= MILLI_PER_GPU]
    if len(free_devices) < request.count:
        raise ValueError("whole-GPU request does not fit")
    return tuple(free_devices[: request.count])


def _best_group(units: Sequence[int], spec: NodeGpuSpec, count: int) -> range:
    best: range | None = None
    best_free = 0
    for g in _groups(spec.devices, spec.nvlink_group):
        free = sum(units[d] for d in g)
        if free >= count and (best is None or free < best_free):
            best, best_free = g, free
    if best is None:
        raise ValueError("no NVLink group holds the request")
    return best


def device_usage(
    spec: NodeGpuSpec, request: GpuRequest, devices: Sequence[int]
) -> tuple[tuple[int, int], ...]:
    """(device, milli) the request adds on its devices (MIG slices use no milli)."""
    if request.mig_profile is not None:
        return ()
    per = request.milli if request.fractional and spec.mode is SharingMode.FRACTIONAL else 1000
    return tuple((d, per) for d in devices)


@dataclass
class NodeDevices:
    """One node's devices with their usage: the scalar chain's view (the engine keeps the same
    numbers as numpy columns in ClusterState)."""

    spec: NodeGpuSpec
    used_milli: list[int] = field(default_factory=list)
    mig_used: list[dict[str, int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.used_milli:
            self.used_milli = [0] * self.spec.devices
        if not self.mig_used:
            self.mig_used = [{} for _ in range(self.spec.devices)]

    @property
    def free_milli(self) -> list[int]:
        capacity = self.spec.device_capacity_milli()
        return [capacity[d] - self.used_milli[d] for d in range(self.spec.devices)]

    @property
    def mig_free(self) -> list[dict[str, int]]:
        slots = self.spec.mig_slots()
        return [
            {p: n - self.mig_used[d].get(p, 0) for p, n in slots[d].items()}
            for d in range(self.spec.devices)
        ]

    def failure(self, request: GpuRequest) -> tuple[str, bool] | None:
        """(reason, unresolvable) or None when the request fits now."""
        reason = static_gpu_failure(self.spec, request)
        if reason is not None:
            return reason, True
        reason = dynamic_gpu_failure(self.spec, self.free_milli, self.mig_free, request)
        return None if reason is None else (reason, False)

    def choose(self, request: GpuRequest) -> tuple[int, ...]:
        return choose_devices(self.spec, self.free_milli, self.mig_free, request)

    def allocate(self, request: GpuRequest, devices: Sequence[int]) -> None:
        if request.mig_profile is not None:
            for d in devices:
                slots = self.mig_used[d]
                slots[request.mig_profile] = slots.get(request.mig_profile, 0) + 1
            return
        for d, milli in device_usage(self.spec, request, devices):
            self.used_milli[d] += milli

    def release(self, request: GpuRequest, devices: Sequence[int]) -> None:
        if request.mig_profile is not None:
            for d in devices:
                self.mig_used[d][request.mig_profile] -= 1
            return
        for d, milli in device_usage(self.spec, request, devices):
            self.used_milli[d] -= milli
