"""GpuClustering: keep pods of one GPU shape together (the artefact's affinity bands).

A pod's shape is "share", "1-gpu", "2-gpu", ... (`shape_tag` below); a node's shapes are those
of its bound GPU pods, a bitmask. Bands, each adding up to 25 points for a fuller node
(25 * (8000 - free GPU milli) // 8000):
- only this shape on the node: 75+; this shape among others: 50+;
- no GPU pods yet: 25+; only other shapes: 0+.
Pods without GPUs score 0 everywhere.

Unlike the other strategies it needs to know which pods a node holds, so it scores the
`ClusterState` itself and keeps per-node shape counts in step with the state's change log.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpupact.engine.placement.strategies.base import (
    MAX_NODE_SCORE,
    MAX_SPEC_GPU_MILLI,
    MILLI,
    first_free_devices,
    tightest_device,
)

_QUARTER = MAX_NODE_SCORE // 4
MAX_TAG = 62  # shapes beyond 62 whole GPUs share the last bit


def shape_tag(count: int, milli: int) -> int:
    """0 for a GPU share, n for n whole GPUs, -1 without GPUs."""
    if count <= 0:
        return -1
    return 0 if count == 1 and milli < MILLI else min(count, MAX_TAG)


def _popcount(masks: np.ndarray) -> np.ndarray:
    counts = np.zeros(masks.shape, dtype=np.int64)
    bits = masks.astype(np.int64)
    while bits.any():
        counts += bits & 1
        bits = bits >> 1
    return counts


def gpu_clustering_scores(
    tags: np.ndarray, dev_free: np.ndarray, tag: int, candidates: np.ndarray
) -> np.ndarray:
    """Scores for `candidates`: tags int64[N] bitmasks of bound GPU shapes, dev_free [N, G]."""
    if tag < 0:
        return np.zeros(candidates.shape[0], dtype=np.int64)
    masks = tags[candidates].astype(np.int64)
    free = dev_free[candidates].sum(axis=1, dtype=np.int64)
    fullness = _QUARTER * (MAX_SPEC_GPU_MILLI - free) // MAX_SPEC_GPU_MILLI
    same = (masks >> tag) & 1 == 1
    shapes = _popcount(masks)
    band = np.where(same, np.where(shapes == 1, 3, 2), np.where(shapes == 0, 1, 0))
    return fullness + band * _QUARTER


class _ShapeCounts:
    """Per node and GPU shape, the number of bound pods, replayed from the change log; the
    bitmask of present shapes is kept in step for the nodes that changed."""

    def __init__(self) -> None:
        self.uid: int | None = None
        self.version = 0
        self.counts = np.zeros((0, MAX_TAG + 1), dtype=np.int64)
        self.masks = np.zeros(0, dtype=np.int64)

    @staticmethod
    def _tag_of(usage: Any) -> int:
        gpu = getattr(usage, "gpu", None)
        if gpu is None or getattr(gpu, "mig_profile", None) is not None:
            return -1
        return shape_tag(gpu.count, gpu.milli)

    def current(self, state: Any) -> np.ndarray:
        changes = None
        if self.uid == state.uid and self.counts.shape[0] == len(state.node_names):
            changes = state.changes_since(self.version)
        if changes is None:
            self.counts = np.zeros((len(state.node_names), MAX_TAG + 1), dtype=np.int64)
            self.masks = np.zeros(len(state.node_names), dtype=np.int64)
            changes = [(b.node, 1, b) for b in state.bindings()]
        touched = set()
        for node, delta, binding in changes:
            tag = self._tag_of(binding.usage)
            if tag >= 0:
                self.counts[node, tag] += delta
                touched.add(node)
        for node in touched:
            present = np.flatnonzero(self.counts[node] > 0)
            self.masks[node] = int(sum(1 << int(t) for t in present))
        self.uid, self.version = state.uid, state.version
        return self.masks


class GpuClustering:
    name = "GpuClustering"

    def __init__(self) -> None:
        self._shapes = _ShapeCounts()

    def score(self, state: Any, pod: Any, gpu_request: Any, candidates: np.ndarray) -> np.ndarray:
        if gpu_request is None or gpu_request.mig_profile is not None:
            return np.zeros(candidates.shape[0], dtype=np.int64)
        tag = shape_tag(gpu_request.count, gpu_request.milli)
        return gpu_clustering_scores(
            self._shapes.current(state), state.dev_free_milli, tag, candidates
        )

    def choose_devices(self, state: Any, node: int, gpu_request: Any) -> tuple[int, ...]:
        """Tightest device for a share, first idle devices otherwise (the artefact's rule)."""
        row = np.asarray(state.dev_free_milli[node], dtype=np.int64)
        if gpu_request.count == 1 and gpu_request.milli < MILLI:
            return (tightest_device(row, gpu_request.milli),)
        return first_free_devices(row, gpu_request.count)
