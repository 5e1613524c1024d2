"""DotProd: Tetris-style alignment (Grandl et al., SIGCOMM'14) as the FGD artefact runs it.

Free (CPU, total GPU milli) of the node and the pod's request, each normalised by the largest
node spec (128 cores, 8 GPUs), are multiplied; a smaller dot product scores higher:
int(100 * (1 - dot / 2)). The artefact computes this in float64 and truncates, so we do
the same operations in the same order (an exact rational would differ at integer
boundaries such as 31.999999999999996)."""

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


def dot_product_scores(view: NodeView, req: Request, candidates: np.ndarray) -> np.ndarray:
    cpu_free = view.cpu_free[candidates].astype(np.float64)
    gpu_free = view.dev_free[candidates].sum(axis=1).astype(np.float64)
    dot = (cpu_free / MAX_SPEC_CPU_MILLI) * (req.cpu_milli / MAX_SPEC_CPU_MILLI)
    dot = dot + (gpu_free / MAX_SPEC_GPU_MILLI) * (req.total_gpu_milli / MAX_SPEC_GPU_MILLI)
    return np.trunc(float(MAX_NODE_SCORE) * (1.0 - dot / 2.0)).astype(np.int64)


class DotProd:
    name = "DotProd"

    def score(self, view: NodeView, req: Request, candidates: np.ndarray) -> np.ndarray:
        return dot_product_scores(view, req, candidates)

    def choose_devices(self, view: NodeView, node: int, req: Request) -> tuple[int, ...]:
        return best_fit_devices(view, node, req)
