"""GpuPacking: fill partly used GPUs first, then idle GPUs on used nodes, then idle nodes.

Three score bands, as in the artefact:
- the pod fits on partly used devices: 100 - (free milli of those devices in percent) / 10,
  at least 50;
- it needs idle devices on a node already in use: 50 - idle devices taken, at least 33;
- the node is entirely idle: 33 - its idle devices (at least that count).
Pods without GPUs score 0 everywhere. Devices are taken tightest first."""

from __future__ import annotations

import numpy as np

from gpupact.engine.placement.strategies.base import (
    MAX_NODE_SCORE,
    MILLI,
    NodeView,
    Request,
    best_fit_devices,
)


def gpu_packing_scores(view: NodeView, req: Request, candidates: np.ndarray) -> np.ndarray:
    if req.gpu_count == 0:
        return np.zeros(candidates.shape[0], dtype=np.int64)
    dev = np.sort(view.dev_free[candidates].astype(np.int64), axis=1)  # tightest first
    idle = (dev >= MILLI).sum(axis=1)
    all_idle = idle == view.gpu_count[candidates]
    fits = dev >= req.gpu_milli
    taken = fits & (np.cumsum(fits, axis=1) <= req.gpu_count)
    idle_taken = (taken & (dev >= MILLI)).sum(axis=1)
    pct_free = (np.where(taken, dev, 0) * 100 // MILLI).sum(axis=1)
    shared = np.maximum(MAX_NODE_SCORE - pct_free // 10, MAX_NODE_SCORE // 2)
    used_node = np.maximum(MAX_NODE_SCORE // 2 - idle_taken, MAX_NODE_SCORE // 3)
    idle_node = np.maximum(MAX_NODE_SCORE // 3 - idle, idle)
    return np.where(all_idle, idle_node, np.where(idle_taken > 0, used_node, shared))


class GpuPacking:
    name = "GpuPacking"

    def score(self, view: NodeView, req: Request, candidates: np.ndarray) -> np.ndarray:
        return gpu_packing_scores(view, req, candidates)

    def choose_devices(self, view: NodeView, node: int, req: Request) -> tuple[int, ...]:
        return best_fit_devices(view, node, req)
