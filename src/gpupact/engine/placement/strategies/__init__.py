"""GPU node-choice strategies of the FGD paper (Weng et al., USENIX ATC'23) and ours.

Each strategy ranks the nodes that passed the filters and picks devices on the chosen node;
`gpupact.engine.placement.Scheduler(state, strategy)` runs them inside the one engine. Most
score a `NodeView` (numpy columns, see base.py); GpuClustering scores the ClusterState
because it needs the shapes of bound pods.

Registry: `make_strategy(name, workload=..., rng=...)`; FGD and FGD-Reach need the target
workload (fragmentation.TargetWorkload), Random a seed or numpy Generator.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from gpupact.engine.placement.strategies.base import NodeView, Request, Strategy, select_node
from gpupact.engine.placement.strategies.best_fit import BestFit
from gpupact.engine.placement.strategies.dot_prod import DotProd
from gpupact.engine.placement.strategies.fgd import FGD
from gpupact.engine.placement.strategies.fgd_reach import FGDReach
from gpupact.engine.placement.strategies.fragmentation import TargetWorkload
from gpupact.engine.placement.strategies.gpu_clustering import GpuClustering
from gpupact.engine.placement.strategies.gpu_packing import GpuPacking
from gpupact.engine.placement.strategies.random import RandomStrategy

# the paper's baselines in its order, then ours
PAPER_POLICIES = ("Random", "DotProd", "GpuClustering", "GpuPacking", "BestFit", "FGD")
POLICIES = (*PAPER_POLICIES, "FGD-Reach")

_FACTORIES: dict[str, Callable[[TargetWorkload | None, Any], Any]] = {
    "Random": lambda workload, rng: RandomStrategy(0 if rng is None else rng),
    "DotProd": lambda workload, rng: DotProd(),
    "GpuClustering": lambda workload, rng: GpuClustering(),
    "GpuPacking": lambda workload, rng: GpuPacking(),
    "BestFit": lambda workload, rng: BestFit(),
    "FGD": lambda workload, rng: FGD(_need(workload, "FGD")),
    "FGD-Reach": lambda workload, rng: FGDReach(_need(workload, "FGD-Reach")),
}
NEEDS_WORKLOAD = frozenset({"FGD", "FGD-Reach"})


def _need(workload: TargetWorkload | None, name: str) -> TargetWorkload:
    if workload is None:
        raise ValueError(f"{name} needs a target workload (TargetWorkload.from_requests)")
    return workload


def policy_name(name: str) -> str:
    """The registered spelling of a policy name (case-insensitive)."""
    for known in POLICIES:
        if known.lower() == name.lower():
            return known
    raise ValueError(f"unknown policy {name!r}; known: {', '.join(POLICIES)}")


def make_strategy(
    name: str,
    *,
    workload: TargetWorkload | None = None,
    rng: int | np.random.Generator | None = None,
) -> Any:
    """A fresh strategy object by name (see POLICIES)."""
    return _FACTORIES[policy_name(name)](workload, rng)


__all__ = [
    "FGD",
    "NEEDS_WORKLOAD",
    "PAPER_POLICIES",
    "POLICIES",
    "BestFit",
    "DotProd",
    "FGDReach",
    "GpuClustering",
    "GpuPacking",
    "NodeView",
    "RandomStrategy",
    "Request",
    "Strategy",
    "TargetWorkload",
    "make_strategy",
    "policy_name",
    "select_node",
]
