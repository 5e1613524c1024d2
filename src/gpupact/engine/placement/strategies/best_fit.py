"""BestFit: the node left with the least free CPU and GPU after the pod, each normalised by
the largest node spec and weighted one half: int(100 * (1 - leftover)).

Float64 in the artefact's order of operations, truncated as it does (see dot_prod.py). The
artefact then min-max normalises the scores, which keeps their order, so the argmax and
its ties are unchanged and we skip it."""

from __future__ import annotations

import numpy as np

from gpupact.engine.placement.strategies.base import (
    MAX_NODE_SCORE,
    MAX_SPEC_CPU_MILLI,
    MAX_SPEC_GPU_MILLI,
    NodeView,
    Request,
    best_fit_devices,
)


def best_fit_scores(view: NodeView, req: Request, candidates: np.ndarray) -> np.ndarray:
    cpu_left = view.cpu_free[candidates].astype(np.int64) - req.cpu_milli
    gpu_left = view.dev_free[candidates].sum(axis=1, dtype=np.int64) - req.total_gpu_milli
    leftover = cpu_left.astype(np.float64) / MAX_SPEC_CPU_MILLI * 0.5
    leftover = leftover + gpu_left.astype(np.float64) / MAX_SPEC_GPU_MILLI * 0.5
    scores = np.trunc((1.0 - leftover) * float(MAX_NODE_SCORE)).astype(np.int64)
    # a node that cannot hold the request gets the minimum (the artefact reports an error)
    return np.where((cpu_left < 0) | (gpu_left < 0), 0, scores)


class BestFit:
    name = "BestFit"

    def score(self, view: NodeView, req: Request, candidates: np.ndarray) -> np.ndarray:
        return best_fit_scores(view, req, candidates)

    def choose_devices(self, view: NodeView, node: int, req: Request) -> tuple[int, ...]:
        return best_fit_devices(view, node, req)
