"""VolumeBinding and VolumeZone for a pod's bound PersistentVolumeClaims.

Upstream (pkg/scheduler/framework/plugins/volumebinding, volumezone):
- PreFilter, in plugin order: a claim the pod names that does not exist, or is being deleted,
  rejects the pod on every node (UnschedulableAndUnresolvable, `persistentvolumeclaim "x" not
  found` / `... is being deleted`); a claim with spec.volumeName that is not fully bound
  (annotation pv.kubernetes.io/bind-completed) is an unbound immediate claim: "pod has unbound
  immediate PersistentVolumeClaims". VolumeZone's PreFilter then needs each bound claim's PV:
  `persistentvolume "x" not found`.
- VolumeBinding Filter: every bound PV's spec.nodeAffinity.required must match the node's
  labels (matched as a node with those labels and no name) -> UnschedulableAndUnresolvable
  "node(s) had volume node affinity conflict".
- VolumeZone Filter: a node carrying none of the zone/region labels (GA or beta) passes; else
  for each zone/region label of a bound PV (its value a "__"-separated set), the node's value of
  that label (or of its GA form for a beta key) must be in the set -> UnschedulableAndUnresolvable
  "node(s) had no available volume zone".
Not modelled: claims without spec.volumeName (dynamic provisioning / WaitForFirstConsumer
matching of unbound claims against PVs and StorageClasses): they pass both filters.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from gpupact.kube.objects import Pod
from gpupact.kube.scheduling_objects import PersistentVolume, SchedulingObjects
from gpupact.kube.status import SUCCESS, Code, Status

BINDING = "VolumeBinding"
ZONE = "VolumeZone"
REASON_NODE_CONFLICT = "node(s) had volume node affinity conflict"
REASON_ZONE_CONFLICT = "node(s) had no available volume zone"
REASON_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
STATUS_NODE_CONFLICT = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON_NODE_CONFLICT,), BINDING)
STATUS_ZONE_CONFLICT = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON_ZONE_CONFLICT,), ZONE)
FILTER_STATUSES = (SUCCESS, STATUS_NODE_CONFLICT, STATUS_ZONE_CONFLICT)
GA_LABELS = {
    "failure-domain.beta.kubernetes.io/zone": "topology.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region",
}
TOPOLOGY_LABELS = (*GA_LABELS, *GA_LABELS.values())
ZONE_DELIMITER = "__"


@dataclass(frozen=True, slots=True)
class VolumeState:
    """PreFilter's answer: a rejection of the whole pod, or the bound PVs to check."""

    rejection: Status | None
    volumes: tuple[PersistentVolume, ...] = ()

    @property
    def zone_terms(self) -> tuple[tuple[str, frozenset[str]], ...]:
        out = []
        for pv in self.volumes:
            for key in TOPOLOGY_LABELS:
                value = pv.labels.get(key)
                if value is not None:
                    zones = frozenset(z.strip() for z in value.split(ZONE_DELIMITER) if z.strip())
                    out.append((key, zones))
        return tuple(out)


def _reject(plugin: str, message: str) -> VolumeState:
    return VolumeState(Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (message,), plugin))


def prefilter(pod: Pod, objects: SchedulingObjects | None) -> VolumeState | None:
    """None when the pod has no PersistentVolumeClaim volume (both plugins skip)."""
    if not pod.claims:
        return None
    claims = objects.claims if objects is not None else {}
    bound = []
    unbound_immediate = False
    for name in pod.claims:
        claim = claims.get((pod.namespace, name))
        if claim is None:
            return _reject(BINDING, f'persistentvolumeclaim "{name}" not found')
        if claim.terminating:
            return _reject(BINDING, f'persistentvolumeclaim "{name}" is being deleted')
        if claim.volume_name and not claim.bind_completed:
            unbound_immediate = True  # reported once every claim has been looked up
        elif claim.volume_name:
            bound.append(claim.volume_name)
    if unbound_immediate:
        return _reject(BINDING, REASON_UNBOUND_IMMEDIATE)
    volumes = objects.volumes if objects is not None else {}
    found = []
    for name in bound:
        pv = volumes.get(name)
        if pv is None:
            return _reject(ZONE, f'persistentvolume "{name}" not found')
        found.append(pv)
    return VolumeState(None, tuple(found))


def filter_code(state: VolumeState, labels: Mapping[str, str]) -> int:
    """0 passes, 1 VolumeBinding node conflict, 2 VolumeZone conflict (first failing)."""
    for pv in state.volumes:
        if pv.node_affinity is not None and not pv.node_affinity.matches("", labels):
            return 1
    terms = state.zone_terms
    if terms and any(key in labels for key in TOPOLOGY_LABELS):
        for key, zones in terms:
            value = labels.get(key)
            if value is None:
                value = labels.get(GA_LABELS.get(key, ""))
            if value is None or value not in zones:
                return 2
    return 0


def filter_node(state: VolumeState, labels: Mapping[str, str]) -> Status:
    return FILTER_STATUSES[filter_code(state, labels)]


def filter_codes(state: VolumeState, node_labels: list[Mapping[str, str]]) -> np.ndarray:
    """filter_code for every node (int8); nodes sharing one label set are checked once."""
    out = np.zeros(len(node_labels), dtype=np.int8)
    if not state.volumes:
        return out
    seen: dict[int, int] = {}
    for row, labels in enumerate(node_labels):
        code = seen.get(id(labels))
        if code is None:
            code = seen[id(labels)] = filter_code(state, labels)
        out[row] = code
    return out
