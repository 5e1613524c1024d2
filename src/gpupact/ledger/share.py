"""How many device equivalents a pod holds: the unit GPU-hours are counted in.

A whole-GPU pod holds its count; a GPU-milli share (openb, KAI `gpu-fraction`) its milli/1000;
a pod on a time-sliced node holds count/replicas (each replica is 1/replicas of a device); a
MIG slice holds its compute slices out of the device's 7 (NVIDIA's MIG profiles: 1g = 1/7 of
the SMs, 7g = the whole device), so seven 1g slices add up to one GPU-hour per hour.
"""

from __future__ import annotations

from gpupact.cluster.devices import (
    MIG_COMPUTE_SLICES,
    MILLI_PER_GPU,
    GpuRequest,
    NodeGpuSpec,
    SharingMode,
    mig_profile,
)


def gpu_share(request: GpuRequest | None, node: NodeGpuSpec | None = None) -> float:
    """Device equivalents held by a pod with `request` on a node with `node` (None: unknown
    node, counted as exclusive)."""
    if request is None:
        return 0.0
    if request.mig_profile is not None:
        return request.count * mig_profile(request.mig_profile).compute_slices / MIG_COMPUTE_SLICES
    if request.fractional:
        return request.milli / MILLI_PER_GPU
    if node is not None and node.mode is SharingMode.TIME_SLICED and node.replicas > 1:
        return request.count / node.replicas
    return float(request.count)
