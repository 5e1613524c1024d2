"""The objects besides Nodes and Pods that kube-scheduler's default plugins read.

- Services, ReplicationControllers, ReplicaSets and StatefulSets: PodTopologySpread's system
  default constraints spread a pod without constraints of its own by the selector
  helper.DefaultSelector builds from them.
- PersistentVolumeClaims and PersistentVolumes: VolumeBinding (a bound PV's node affinity) and
  VolumeZone (a bound PV's zone/region labels).

DefaultSelector (pkg/scheduler/framework/plugins/helper/spread.go): the label sets of the
Services in the pod's namespace whose (non-nil) selector matches the pod are merged; then the
pod's controller owner (ownerReferences with controller: true), when it is a v1
ReplicationController (its selector map merged in), an apps/v1 ReplicaSet or StatefulSet (the
requirements of its label selector added; a nil selector adds nothing) found in the pod's
namespace. An empty result means no default constraint.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gpupact.kube.fields import object_header, optional_mapping, string, string_map
from gpupact.kube.objects import Pod
from gpupact.kube.selectors import (
    LabelSelector,
    NodeSelector,
    parse_label_selector,
    parse_node_selector,
)

ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
KINDS = {
    ("v1", "Service"),
    ("v1", "ReplicationController"),
    ("apps/v1", "ReplicaSet"),
    ("apps/v1", "StatefulSet"),
    ("v1", "PersistentVolumeClaim"),
    ("v1", "PersistentVolume"),
}


@dataclass(frozen=True, slots=True)
class PersistentVolumeClaim:
    namespace: str
    name: str
    volume_name: str  # spec.volumeName: "" while unbound
    terminating: bool = False
    bind_completed: bool = False  # annotation pv.kubernetes.io/bind-completed: fully bound


@dataclass(frozen=True, slots=True)
class PersistentVolume:
    name: str
    labels: Mapping[str, str]
    node_affinity: NodeSelector | None  # spec.nodeAffinity.required


@dataclass
class SchedulingObjects:
    """The objects above, indexed the way the plugins look them up."""

    services: dict[str, list[Mapping[str, str]]] = field(default_factory=dict)  # ns -> selectors
    rc_selectors: dict[tuple[str, str], Mapping[str, str]] = field(default_factory=dict)
    set_selectors: dict[tuple[str, str, str], LabelSelector | None] = field(default_factory=dict)
    claims: dict[tuple[str, str], PersistentVolumeClaim] = field(default_factory=dict)
    volumes: dict[str, PersistentVolume] = field(default_factory=dict)

    @classmethod
    def of(cls, objects: Iterable[Mapping[str, Any]]) -> SchedulingObjects:
        out = cls()
        for obj in objects:
            out.add(obj)
        return out

    def add(self, obj: Mapping[str, Any]) -> bool:
        """Read one object; False when it is of another kind (FieldError on a bad one)."""
        kind, api = obj.get("kind"), obj.get("apiVersion")
        if not isinstance(kind, str) or not isinstance(api, str) or (api, kind) not in KINDS:
            return False  # a list or mapping here is no kind of ours (and is unhashable)
        _, meta, spec, _, name = object_header(obj, str(kind))
        namespace = string(meta.get("namespace"), ("metadata", "namespace")) or "default"
        if kind == "Service":
            if spec.get("selector") is not None:  # a nil selector selects no pod
                selector = string_map(spec.get("selector"), ("spec", "selector"))
                self.services.setdefault(namespace, []).append(selector)
        elif kind == "ReplicationController":
            selector = string_map(spec.get("selector"), ("spec", "selector"))
            self.rc_selectors[(namespace, name)] = selector
        elif kind in ("ReplicaSet", "StatefulSet"):
            selector = parse_label_selector(spec.get("selector"), ("spec", "selector"))
            self.set_selectors[(str(kind), namespace, name)] = selector
        elif kind == "PersistentVolumeClaim":
            volume = string(spec.get("volumeName"), ("spec", "volumeName"))
            terminating = meta.get("deletionTimestamp") is not None
            annotations = string_map(meta.get("annotations"), ("metadata", "annotations"))
            self.claims[(namespace, name)] = PersistentVolumeClaim(
                namespace, name, volume, terminating, ANN_BIND_COMPLETED in annotations
            )
        else:
            labels = string_map(meta.get("labels"), ("metadata", "labels"))
            affinity = optional_mapping(spec.get("nodeAffinity"), ("spec", "nodeAffinity"))
            required = parse_node_selector(
                affinity.get("required"), ("spec", "nodeAffinity", "required")
            )
            self.volumes[name] = PersistentVolume(name, labels, required)
        return True

    def __bool__(self) -> bool:
        return bool(
            self.services or self.rc_selectors or self.set_selectors or self.claims or self.volumes
        )

    def default_selector(self, pod: Pod) -> LabelSelector | None:
        """helper.DefaultSelector for the pod; None when it selects nothing (empty)."""
        merged: dict[str, str] = {}
        for selector in self.services.get(pod.namespace, ()):
            if all(pod.labels.get(k) == v for k, v in selector.items()):
                merged.update(selector)
        expressions: tuple = ()
        extra_labels: tuple[tuple[str, str], ...] = ()
        owner = pod.controller
        if owner is not None:
            if owner.api_version == "v1" and owner.kind == "ReplicationController":
                merged.update(self.rc_selectors.get((pod.namespace, owner.name), {}))
            elif owner.api_version == "apps/v1" and owner.kind in ("ReplicaSet", "StatefulSet"):
                found = self.set_selectors.get((owner.kind, pod.namespace, owner.name))
                if found is not None:
                    extra_labels, expressions = found.match_labels, found.match_expressions
        match_labels = tuple(sorted(merged.items())) + tuple(extra_labels)
        if not match_labels and not expressions:
            return None
        return LabelSelector(match_labels, tuple(expressions))
