"""Hand-built node views for the strategy tests."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from gpupact.engine.placement.strategies.base import NodeView

GIB = 1 << 30


def build_view(
    devices: Sequence[Sequence[int]],
    cpu: Sequence[int],
    models: Sequence[str] | None = None,
    slots: int = 8,
) -> NodeView:
    """devices: free milli of each node's existing devices; cpu: free milli-cores."""
    n = len(devices)
    dev = np.zeros((n, slots), dtype=np.int64)
    for i, row in enumerate(devices):
        dev[i, : len(row)] = row
    names = tuple(sorted({m for m in models or () if m}))
    codes = [names.index(m) if m else -1 for m in (models or [""] * n)]
    return NodeView(
        cpu_free=np.asarray(cpu, dtype=np.int64),
        mem_free=np.full(n, 512 * GIB, dtype=np.int64),
        dev_free=dev,
        gpu_count=np.array([len(row) for row in devices], dtype=np.int64),
        gpu_model=np.asarray(codes, dtype=np.int64),
        gpu_models=names,
    )


@pytest.fixture
def view_of():
    return build_view
