"""What every GPU node-choice strategy sees: node columns and one pod's request.

Strategies are pure numpy functions over `NodeView` columns, so the same code scores a
hand-built array in a test, a `ClusterState` in the twin and a snapshot in `diagnose`.
A strategy only ranks nodes that already passed the filters; it never decides feasibility.

Conventions (from the FGD paper's simulator, which the openb benchmark reproduces):
- device free amounts are GPU milli per device slot (1000 = an idle device, 0 for absent slots);
- a GPU-share request is one device with milli < 1000; otherwise `count` whole devices;
- node selection takes the highest score and breaks ties by the lowest node index; the twin
  randomises node order per seed, which is how the artefact's scheduler broke ties too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

MILLI = 1000
# Normalisers the artefact uses for dot-product and best-fit scores: the largest openb node.
MAX_SPEC_CPU_MILLI = 128_000
MAX_SPEC_GPU_MILLI = 8_000
MAX_NODE_SCORE = 100


@dataclass(frozen=True, slots=True)
class Request:
    """A pod as strategies see it. `cpu_milli` is the scheduler's non-zero CPU request
    (100m when the pod requests none), which is what upstream scores use."""

    cpu_milli: int
    memory: int = 0
    gpu_count: int = 0
    gpu_milli: int = 0  # per device; MILLI for whole devices, 0 when gpu_count == 0
    gpu_models: frozenset[str] | None = None

    def __post_init__(self) -> None:
        if self.gpu_count < 0 or self.cpu_milli < 0 or self.memory < 0:
            raise ValueError(f"negative request: {self}")
        if self.gpu_count == 0 and self.gpu_milli != 0:
            raise ValueError(f"gpu_milli {self.gpu_milli} without GPUs")
        if self.gpu_count > 0 and not 0 < self.gpu_milli <= MILLI:
            raise ValueError(f"gpu_milli must be in 1..{MILLI}, got {self.gpu_milli}")
        if self.gpu_count > 1 and self.gpu_milli != MILLI:
            raise ValueError("a GPU-share request takes exactly one device")

    @property
    def is_share(self) -> bool:
        return self.gpu_count == 1 and self.gpu_milli < MILLI

    @property
    def total_gpu_milli(self) -> int:
        return self.gpu_count * self.gpu_milli


@dataclass(slots=True)
class NodeView:
    """Free resources per node as numpy columns (N nodes, G device slots)."""

    cpu_free: np.ndarray  # int64[N] milli-cores
    mem_free: np.ndarray  # int64[N] bytes
    dev_free: np.ndarray  # int64[N, G] GPU milli per device slot
    gpu_count: np.ndarray  # int64[N] physical devices
    gpu_model: np.ndarray  # int64[N] code into gpu_models, -1 for none
    gpu_models: tuple[str, ...] = ()

    @property
    def n_nodes(self) -> int:
        return int(self.cpu_free.shape[0])


class Strategy(Protocol):
    name: str

    def score(self, view: NodeView, req: Request, candidates: np.ndarray) -> np.ndarray:
        """Scores for `candidates` (node indices that passed the filters); higher is better."""
        ...

    def choose_devices(self, view: NodeView, node: int, req: Request) -> tuple[int, ...]:
        """Device slots on `node` for the request (empty for a pod without GPUs)."""
        ...


def select_node(scores: np.ndarray, candidates: np.ndarray) -> int:
    """The highest-scored candidate; ties go to the lowest node index (candidates ascend)."""
    return int(candidates[int(np.argmax(scores))])


def model_allowed(view: NodeView, models: frozenset[str] | None) -> np.ndarray:
    """bool[N]: the node's GPU model satisfies a model constraint (None = any model)."""
    if models is None:
        return np.ones(view.n_nodes, dtype=bool)
    codes = [i for i, name in enumerate(view.gpu_models) if name in models]
    return np.isin(view.gpu_model, codes)


def gpu_fits(dev_free: np.ndarray, req: Request) -> np.ndarray:
    """bool[...]: rows of `dev_free` with `req.gpu_count` devices holding `req.gpu_milli`."""
    if req.gpu_count == 0:
        return np.ones(dev_free.shape[:-1], dtype=bool)
    return (dev_free >= req.gpu_milli).sum(axis=-1) >= req.gpu_count


def feasible(view: NodeView, req: Request) -> np.ndarray:
    """bool[N]: CPU, memory and GPU fit for hand-built views. The engine's own filter
    (taints, affinity, pods count, ...) replaces this for real clusters."""
    mask = (view.cpu_free >= req.cpu_milli) & (view.mem_free >= req.memory)
    if req.gpu_count:
        mask &= model_allowed(view, req.gpu_models) & gpu_fits(view.dev_free, req)
    return mask


def first_free_devices(dev_row: np.ndarray, count: int) -> tuple[int, ...]:
    """The first `count` idle devices in index order (the artefact's exclusive allocation)."""
    idle = np.flatnonzero(dev_row >= MILLI)[:count]
    if idle.shape[0] < count:
        raise ValueError(f"node has {idle.shape[0]} idle devices, {count} requested")
    return tuple(int(i) for i in idle)


def tightest_device(dev_row: np.ndarray, milli: int) -> int:
    """The device with the least free milli that still holds `milli`; lowest index on ties."""
    fits = dev_row >= milli
    if not fits.any():
        raise ValueError(f"no device holds {milli} milli")
    return int(np.argmin(np.where(fits, dev_row, np.iinfo(np.int64).max)))


def share_picked_devices(
    view: NodeView, node: int, req: Request, pick_share: Callable[[np.ndarray, np.ndarray], int]
) -> tuple[int, ...]:
    """Device choice for policies with their own pick for a share request: none for a CPU pod,
    the first idle devices for whole-device requests, else `pick_share(row, fits)` over the
    node's free row and the indices of the devices that hold the request (never empty)."""
    if req.gpu_count == 0:
        return ()
    row = view.dev_free[node]
    if not req.is_share:
        return first_free_devices(row, req.gpu_count)
    fits = np.flatnonzero(row >= req.gpu_milli)
    if fits.shape[0] == 0:
        raise ValueError(f"no device on node {node} holds {req.gpu_milli} milli")
    return (pick_share(row, fits),)


def best_fit_devices(view: NodeView, node: int, req: Request) -> tuple[int, ...]:
    """Device choice shared by the non-FGD policies: tightest device for a share request,
    the first idle devices for whole-device requests."""
    if req.gpu_count == 0:
        return ()
    row = view.dev_free[node]
    if req.is_share:
        return (tightest_device(row, req.gpu_milli),)
    return first_free_devices(row, req.gpu_count)
