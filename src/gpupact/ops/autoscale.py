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

import json
import re
from dataclasses import dataclass, field

from gpupact.cluster.devices import GPU_RESOURCE
from gpupact.errors import FieldError
from gpupact.kube.fields import MAX_DURATION_MS, MAX_DURATION_TEXT
from gpupact.kube.objects import Pod
from gpupact.ops.model import Event, NodeClaim

COLD_START_ANNOTATION = "gpupact.io/cold-start"
KARPENTER_POOL_LABEL = "karpenter.sh/nodepool"
PHASES = ("provision", "driver", "devicePlugin", "imagePull", "modelLoad")
_DURATION_RE = re.compile(r"(\d+)(h|m|s)")
_UNIT = {"h": 3600, "m": 60, "s": 1}
MAX_NODE_GROUP_SIZE = "max node group size reached"


def parse_duration(text: str, path: tuple = ()) -> int:
    """A Go duration of hours, minutes and seconds ("1h30m", "45s") -> seconds."""
    text = text.strip()
    if not text:
        raise FieldError(path, "empty duration")
    pos, total = 0, 0
    for match in _DURATION_RE.finditer(text):
        if match.start() != pos:
            break
        total += int(match.group(1)) * _UNIT[match.group(2)]
        pos = match.end()
    if pos != len(text):
        raise FieldError(path, f'expected a duration such as "13m30s", got {text!r}')
    if total * 1000 > MAX_DURATION_MS:
        raise FieldError(
            path, f"{text!r} is longer than a Go duration can be ({MAX_DURATION_TEXT})"
        )
    return total


@dataclass(frozen=True)
class ColdStart:
    total: int  # seconds
    phases: tuple[tuple[str, int], ...]
    source: str

    def describe(self) -> str:
        from gpupact.ops.findings import format_duration

        parts = ", ".join(f"{name} {format_duration(s)}" for name, s in self.phases if s)
        return f"{format_duration(self.total)}" + (f" ({parts})" if parts else "")


def parse_cold_start(text: str, source: str) -> ColdStart:
    path = ("metadata", "annotations", COLD_START_ANNOTATION)
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            raw = json.loads(stripped)
        except json.JSONDecodeError as err:
            raise FieldError(path, f"not JSON: {err.msg}") from None
        except RecursionError:
            raise FieldError(path, "JSON nested too deeply") from None
        phases = []
        for name, value in raw.items():
            if name not in PHASES:
                raise FieldError((*path, name), f"unknown phase (one of {', '.join(PHASES)})")
            if not isinstance(value, str):
                raise FieldError((*path, name), "expected a duration string")
            phases.append((name, parse_duration(value, (*path, name))))
        return ColdStart(sum(s for _, s in phases), tuple(phases), source)
    return ColdStart(parse_duration(stripped, path), (), source)


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
