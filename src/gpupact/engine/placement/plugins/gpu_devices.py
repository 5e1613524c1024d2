"""GPUDevices: the device-level half of resource fit, for all nodes at once.

NodeResourcesFit checks `nvidia.com/gpu` and `nvidia.com/mig-*` as extended resources, as
upstream does; this filter (after it in the chain, where upstream runs DynamicResources) checks
the devices themselves: the GPU model, whether the node shares GPUs, enough fully free devices
(or replicas), one device with enough free GPU-milli, a free MIG slice, an NVLink group holding
all requested GPUs. Its static part (hardware) is cached per pod shape; the dynamic part reads
the per-node aggregates ClusterState keeps in step with device usage. The scalar rules are
gpupact.cluster.devices.static_gpu_failure / dynamic_gpu_failure.
"""

from __future__ import annotations

import numpy as np

from gpupact.cluster import devices as dev
from gpupact.cluster.devices import GpuRequest, SharingMode
from gpupact.cluster.state import ClusterState
from gpupact.kube.status import SUCCESS, Code, Status

PLUGIN_NAME = dev.PLUGIN_NAME
STATIC_REASONS = (
    "",
    dev.REASON_NO_GPU,
    dev.REASON_MODEL,
    dev.REASON_NO_MIG_PROFILE,
    dev.REASON_TOO_FEW_GPUS,
    dev.REASON_NO_SHARING,
    dev.REASON_NVLINK_GROUP_TOO_SMALL,
)
DYNAMIC_REASONS = (
    "",
    dev.REASON_FREE_GPUS,
    dev.REASON_FREE_MILLI,
    dev.REASON_FREE_MIG,
    dev.REASON_FREE_NVLINK,
)


def reason_status(reason: str, unresolvable: bool) -> Status:
    code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else Code.UNSCHEDULABLE
    return Status(code, (reason,), PLUGIN_NAME)


STATIC_STATUSES = (SUCCESS, *(reason_status(r, True) for r in STATIC_REASONS[1:]))
DYNAMIC_STATUSES = (SUCCESS, *(reason_status(r, False) for r in DYNAMIC_REASONS[1:]))


def _set(out: np.ndarray, where: np.ndarray, code: int) -> None:
    out[(out == 0) & where] = code


def static_codes(state: ClusterState, request: GpuRequest | None) -> np.ndarray:
    """Per node: index into STATIC_REASONS (0: the hardware can take the request)."""
    n = state.num_nodes
    out = np.zeros(n, dtype=np.int8)
    if request is None:
        return out
    mode = state.gpu_mode
    _set(out, (mode == SharingMode.NONE) | (state.gpu_count == 0), 1)
    if request.models is not None:
        codes = [i for i, m in enumerate(state.gpu_models) if m in request.models]
        _set(out, ~np.isin(state.gpu_model, np.array(codes, dtype=np.int16)), 2)
    if request.mig_profile is not None:
        if request.mig_profile in state.mig_profiles:
            p = state.mig_profiles.index(request.mig_profile)
            total = state.mig_capacity[:, :, p].sum(axis=1, dtype=np.int64)
        else:
            total = np.zeros(n, dtype=np.int64)
        _set(out, total == 0, 3)
        _set(out, total < request.count, 4)
        return out
    if request.fractional:
        shares = (mode == SharingMode.FRACTIONAL) | (mode == SharingMode.TIME_SLICED)
        _set(out, ~shares, 5)
    _set(out, state.gpu_capacity_units < request.count, 4)
    if request.nvlink:
        _set(out, state.gpu_group_capacity_units < request.count, 6)
    return out


def dynamic_codes(
    state: ClusterState, request: GpuRequest | None, rows: np.ndarray | slice = slice(None)
) -> np.ndarray:
    """Per node of `rows`: index into DYNAMIC_REASONS (0: fits now); meaningful where the
    static check passed."""
    units = state.gpu_free_units[rows]
    out = np.zeros(units.shape[0], dtype=np.int8)
    if request is None:
        return out
    if request.mig_profile is not None:
        if request.mig_profile in state.mig_profiles:
            free = state.mig_free[rows, state.mig_profiles.index(request.mig_profile)]
        else:
            free = np.zeros(units.shape[0], dtype=np.int32)
        _set(out, free < request.count, 3)
        return out
    if request.fractional:
        share_mode = state.gpu_mode[rows] == SharingMode.FRACTIONAL
        _set(out, share_mode & (state.gpu_share_free[rows] < request.milli), 2)
        _set(out, ~share_mode & (units < request.count), 1)
        if request.nvlink:
            group = state.gpu_group_free_units[rows]
            _set(out, ~share_mode & (group < request.count), 4)
        return out
    _set(out, units < request.count, 1)
    if request.nvlink:
        _set(out, state.gpu_group_free_units[rows] < request.count, 4)
    return out


def dynamic_code_row(state: ClusterState, request: GpuRequest | None, row: int) -> int:
    """`dynamic_codes` for one node (the incremental path)."""
    if request is None:
        return 0
    if request.mig_profile is not None:
        if request.mig_profile not in state.mig_profiles:
            return 3
        free = int(state.mig_free[row, state.mig_profiles.index(request.mig_profile)])
        return 3 if free < request.count else 0
    if request.fractional and state.gpu_mode[row] == SharingMode.FRACTIONAL:
        return 2 if state.gpu_share_free[row] < request.milli else 0
    if state.gpu_free_units[row] < request.count:
        return 1
    if request.nvlink and state.gpu_group_free_units[row] < request.count:
        return 4
    return 0
