"""Random: any feasible node, and for a GPU-share pod any device that holds it.

Seeded, so a replay is reproducible; whole-device pods take the first idle devices as in
the artefact."""

from __future__ import annotations

import numpy as np

from gpupact.engine.placement.strategies.base import NodeView, Request, share_picked_devices


class RandomStrategy:
    name = "Random"

    def __init__(self, seed: int | np.random.Generator = 0) -> None:
        self.rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)

    def score(self, view: NodeView, req: Request, candidates: np.ndarray) -> np.ndarray:
        scores = np.zeros(candidates.shape[0], dtype=np.int64)
        if candidates.shape[0]:
            scores[self.rng.integers(candidates.shape[0])] = 1
        return scores

    def choose_devices(self, view: NodeView, node: int, req: Request) -> tuple[int, ...]:
        return share_picked_devices(view, node, req, self._any_fitting_device)

    def _any_fitting_device(self, row: np.ndarray, fits: np.ndarray) -> int:
        return int(fits[self.rng.integers(fits.shape[0])])
