"""GPU fragmentation of a node measured against a target workload (FGD paper, section 4).

The target workload is the "typical pod" distribution: the most frequent request shapes
that together cover a popularity threshold (95% in the artefact) of the workload's pods.
For one typical pod, a node's idle GPU milli counts as fragment when the pod cannot run
there at all (too little CPU, no fitting devices, wrong GPU model, or no GPU asked for);
when it can run, only the devices too small for it are fragment. A node's fragmentation is
the frequency-weighted sum over typical pods.

Frequencies are kept as integer pod counts, so the measure is exact: `node_frag` returns
sum(count_k * fragment_milli_k); divide by `total_weight` for the expected fragment milli.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from gpupact.engine.placement.strategies.base import MILLI, NodeView, Request

DEFAULT_POPULARITY_PCT = 95


def _models_key(models: frozenset[str] | None) -> str:
    return "" if models is None else "|".join(sorted(models))


@dataclass(frozen=True)
class TargetWorkload:
    """Typical pods: request shapes with their integer weights (pod counts)."""

    cpu_milli: np.ndarray  # int64[K]
    gpu_count: np.ndarray  # int64[K]
    gpu_milli: np.ndarray  # int64[K] per device, 0 for CPU-only shapes
    weight: np.ndarray  # int64[K]
    models: tuple[frozenset[str] | None, ...]

    @property
    def size(self) -> int:
        return int(self.weight.shape[0])

    @property
    def total_weight(self) -> int:
        return int(self.weight.sum())

    @classmethod
    def from_requests(
        cls, requests: Iterable[Request], popularity_pct: int = DEFAULT_POPULARITY_PCT
    ) -> TargetWorkload:
        """The most frequent shapes, taken in decreasing count until they cover
        `popularity_pct`% of the requests (ties: larger CPU, then GPU milli, count, models
        first, the artefact's order). Memory is not part of a shape."""
        if not 0 < popularity_pct <= 100:
            raise ValueError(f"popularity_pct must be in 1..100, got {popularity_pct}")
        counts = Counter(
            (r.cpu_milli, r.gpu_milli, r.gpu_count, _models_key(r.gpu_models), r.gpu_models)
            for r in requests
        )
        if not counts:
            raise ValueError("a target workload needs at least one request")
        total = sum(counts.values())
        ranked = sorted(counts.items(), key=lambda kv: (kv[1], kv[0][:4]), reverse=True)
        chosen: list[tuple[tuple, int]] = []
        covered = 0
        for shape, count in ranked:
            if covered * 100 >= popularity_pct * total:
                break
            chosen.append((shape, count))
            covered += count
        return cls(
            cpu_milli=np.array([s[0] for s, _ in chosen], dtype=np.int64),
            gpu_milli=np.array([s[1] for s, _ in chosen], dtype=np.int64),
            gpu_count=np.array([s[2] for s, _ in chosen], dtype=np.int64),
            weight=np.array([c for _, c in chosen], dtype=np.int64),
            models=tuple(s[4] for s, _ in chosen),
        )

    @cached_property
    def distinct_milli(self) -> tuple[np.ndarray, np.ndarray]:
        """The distinct per-device milli of the typical pods and, per pod, its index there."""
        values, of_pod = np.unique(self.gpu_milli, return_inverse=True)
        return values, of_pod.reshape(-1)

    @cached_property
    def uses_gpu(self) -> np.ndarray:
        return self.gpu_milli > 0

    def access(self, gpu_models: tuple[str, ...]) -> np.ndarray:
        """bool[len(gpu_models) + 1, K]: row m says which typical pods may use model code m;
        the last row is for nodes without a GPU model (code -1 indexes it)."""
        rows = np.ones((len(gpu_models) + 1, self.size), dtype=bool)
        for k, allowed in enumerate(self.models):
            if allowed is not None:
                rows[:-1, k] = [name in allowed for name in gpu_models]
                rows[-1, k] = False
        return rows


def _fragment_per_pod(
    workload: TargetWorkload, cpu_free: np.ndarray, dev_free: np.ndarray, access: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """int64[M, K] fragment milli of each state for each typical pod, and int64[M] idle."""
    milli, of_pod = workload.distinct_milli
    idle = dev_free.sum(axis=1)
    devices = dev_free[:, None, :]
    # device tests once per distinct per-device milli (a dozen on openb), not per pod
    small = devices < milli[None, :, None]  # [M, U, G]
    too_small = (devices * small).sum(axis=2)[:, of_pod]  # [M, K]
    holding = (dev_free.shape[1] - small.sum(axis=2))[:, of_pod]
    runnable = (
        (holding >= workload.gpu_count[None, :])
        & (cpu_free[:, None] >= workload.cpu_milli[None, :])
        & access
        & workload.uses_gpu[None, :]
    )
    return np.where(runnable, too_small, idle[:, None]), idle


def _stranded_per_pod(
    workload: TargetWorkload, cpu_free: np.ndarray, idle: np.ndarray, access: np.ndarray
) -> np.ndarray:
    gpu = workload.gpu_count * workload.gpu_milli  # [K]
    reach = cpu_free[:, None] * gpu[None, :] // np.maximum(workload.cpu_milli, 1)[None, :]
    stranded = np.maximum(idle[:, None] - reach, 0)
    return np.where(access & workload.uses_gpu[None, :], stranded, 0)


def node_frag(
    workload: TargetWorkload, cpu_free: np.ndarray, dev_free: np.ndarray, access: np.ndarray
) -> np.ndarray:
    """int64[M]: weighted fragment milli of M node states.

    cpu_free int64[M], dev_free int64[M, G], access bool[M, K] (typical pod k may use the
    node's GPU model)."""
    per_pod, _ = _fragment_per_pod(workload, cpu_free, dev_free, access)
    return per_pod @ workload.weight


def cpu_stranded_frag(
    workload: TargetWorkload, cpu_free: np.ndarray, dev_free: np.ndarray, access: np.ndarray
) -> np.ndarray:
    """int64[M]: weighted idle GPU milli that the node's free CPU cannot feed.

    For a typical GPU pod k that may use the node, the free CPU feeds at most
    cpu_free * gpu_k // cpu_k GPU milli at k's CPU:GPU ratio; idle GPU beyond that is
    stranded for k however the devices are shaped. Pods without GPUs or of another model
    strand nothing here (FGD's measure already counts all idle GPU as fragment for them)."""
    idle = dev_free.sum(axis=1)
    return _stranded_per_pod(workload, cpu_free, idle, access) @ workload.weight


def node_frag_with_cpu_reach(
    workload: TargetWorkload, cpu_free: np.ndarray, dev_free: np.ndarray, access: np.ndarray
) -> np.ndarray:
    """node_frag + cpu_stranded_frag in one pass (FGD-Reach's measure)."""
    per_pod, idle = _fragment_per_pod(workload, cpu_free, dev_free, access)
    return (per_pod + _stranded_per_pod(workload, cpu_free, idle, access)) @ workload.weight


def view_frag(workload: TargetWorkload, view: NodeView) -> np.ndarray:
    """int64[N]: weighted fragment milli of every node of a view."""
    access = workload.access(view.gpu_models)[view.gpu_model]
    return node_frag(workload, view.cpu_free, view.dev_free, access)


def cluster_frag_milli(workload: TargetWorkload, view: NodeView) -> float:
    """Expected fragment GPU milli of the whole cluster (the paper's fragmentation amount)."""
    return float(view_frag(workload, view).sum()) / workload.total_weight


def frag_delta_score(delta_weighted_milli: np.ndarray, total_weight: int) -> np.ndarray:
    """FGD's node score: floor(100 * sigmoid(fragment decrease in GPUs)).

    The artefact truncates to an integer score, so near-equal decreases tie and the
    tie-break decides; we keep that to reproduce its numbers."""
    # beyond +/-50 GPUs the score is 0 or 100 anyway; clipping keeps exp() finite
    gpus = np.clip(delta_weighted_milli / (total_weight * MILLI), -50.0, 50.0)
    return np.floor((1.0 / (1.0 + np.exp(-gpus))) * 100.0).astype(np.int64)
