"""Elastic capacity (runbook step 5): is a scale-up under way, how long will it take, is the
pool at its maximum.

Signals: the Cluster Autoscaler's pod events (TriggeredScaleUp, NotTriggerScaleUp), Karpenter's
(Nominated) and its NodeClaims (launched but not yet Ready/Initialized) and NodePools (limits
against what the pool holds); the contract's pool `nodes.max` when a contract is given.

Expected time comes from the cold-start phases (43.4: provision, driver, device plugin, image
pull, model load): the NodePool annotation `gpupact.io/cold-start` — a Go duration ("13m30s")
or a JSON object of phases ({"provision": "4m", "driver": "2m", ...}) — else the contract's
pool `coldStart`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpupact.cluster.devices import GPU_RESOURCE
from gpupact.kube.objects import Pod
from gpupact.ops.cold_start import COLD_START_ANNOTATION as COLD_START_ANNOTATION
from gpupact.ops.cold_start import PHASES as PHASES
from gpupact.ops.cold_start import ColdStart as ColdStart
from gpupact.ops.cold_start import parse_cold_start as parse_cold_start
from gpupact.ops.cold_start import parse_duration as parse_duration
from gpupact.ops.model import Event, NodeClaim

KARPENTER_POOL_LABEL = "karpenter.sh/nodepool"
MAX_NODE_GROUP_SIZE = "max node group size reached"


@dataclass
class ScaleSignals:
    """What the autoscalers said about a set of pods."""

    triggered: list[Event] = field(default_factory=list)
    not_triggered: list[Event] = field(default_factory=list)
    nominated: list[Event] = field(default_factory=list)

    @property
    def any(self) -> bool:
        return bool(self.triggered or self.not_triggered or self.nominated)


def scale_signals(events: list[Event]) -> ScaleSignals:
    signals = ScaleSignals()
    for event in events:
        if event.reason == "TriggeredScaleUp":
            signals.triggered.append(event)
        elif event.reason == "NotTriggerScaleUp":
            signals.not_triggered.append(event)
        elif event.reason == "Nominated" and "nodeclaim" in event.message.lower():
            signals.nominated.append(event)
    return signals


def claim_matches(claim: NodeClaim, pod: Pod) -> bool:
    labels = dict(claim.meta.labels)
    return pod.required_node_affinity.matches(claim.node_name or claim.meta.name, labels)


def claim_phase(claim: NodeClaim) -> str:
    """How far the node got: launched (provider made it), registered (kubelet joined),
    initialized (drivers and device plugin up)."""
    for cond, label in (("Initialized", "initialized"), ("Registered", "registered")):
        if claim.is_true(cond):
            return label
    if claim.is_true("Launched"):
        return "launched"
    return "requested"


def gpu_limit_reached(limits: dict[str, int], used: dict[str, int], per_node: int) -> bool:
    limit = limits.get(GPU_RESOURCE)
    return limit is not None and used.get(GPU_RESOURCE, 0) + max(per_node, 1) > limit
