"""Placement: kube-scheduler filter -> score -> select over a cluster's nodes.

`Scheduler(state, profile)` is the vectorised engine; `framework.explain_fit` the scalar,
explaining reference it agrees with node for node.
"""

from gpupact.engine.placement.framework import (
    ClusterView,
    FitResult,
    NodeVerdict,
    explain_fit,
)
from gpupact.engine.placement.scheduler import (
    DEFAULT_SCORE_WEIGHTS,
    Placement,
    Profile,
    Scheduler,
    Strategy,
    Unschedulable,
    choose_devices,
    explain,
    feasible_mask,
)

__all__ = [
    "DEFAULT_SCORE_WEIGHTS",
    "ClusterView",
    "FitResult",
    "NodeVerdict",
    "Placement",
    "Profile",
    "Scheduler",
    "Strategy",
    "Unschedulable",
    "choose_devices",
    "explain",
    "explain_fit",
    "feasible_mask",
]
