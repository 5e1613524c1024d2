"""What a compile takes (options) and gives (a bundle of Kubernetes objects per target)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

Obj = dict[str, Any]

# Targets in apply order: namespaces first, then the admission and gang layers the workloads
# name, then node provisioning, then the workloads themselves; last the GPU Operator's device
# configuration of shared pools (read by the operator whenever it changes).
TARGETS = (
    "namespaces",
    "kueue",
    "volcano",
    "karpenter",
    "core",
    "leaderworkerset",
    "gpu-operator",
)


@dataclass(frozen=True)
class NodeClassRef:
    """Karpenter's provider-specific node class (AMI, subnets, ...); gpupact only names it."""

    group: str = "karpenter.k8s.aws"
    kind: str = "EC2NodeClass"
    name: str = "default"

    @classmethod
    def parse(cls, text: str) -> NodeClassRef:
        """`GROUP/KIND/NAME`, e.g. `karpenter.k8s.aws/EC2NodeClass/gpu`."""
        parts = text.split("/")
        if len(parts) != 3 or not all(parts):
            raise ValueError(
                f"expected GROUP/KIND/NAME such as karpenter.k8s.aws/EC2NodeClass/gpu, got {text!r}"
            )
        return cls(*parts)

    @property
    def aws(self) -> bool:
        return self.group == "karpenter.k8s.aws"


@dataclass(frozen=True)
class CompileOptions:
    now: datetime  # decides which quota raises are active; nothing else reads it
    node_class: NodeClassRef = NodeClassRef()
    kueue_api: str = "v1beta2"  # "v1beta1" for Kueue before v0.15


@dataclass(frozen=True)
class Emitted:
    target: str  # one of TARGETS
    obj: Obj


@dataclass
class Bundle:
    """Every object of one compile, plus the node patches (not objects to apply: they are
    merged into existing nodes with `kubectl patch`)."""

    contract: str
    objects: list[Emitted] = field(default_factory=list)
    node_patches: dict[str, Obj] = field(default_factory=dict)

    def add(self, target: str, objs: list[Obj]) -> None:
        self.objects.extend(Emitted(target, o) for o in objs)

    def of_kind(self, kind: str) -> list[Obj]:
        return [e.obj for e in self.objects if e.obj["kind"] == kind]

    def find(self, kind: str, name: str, namespace: str | None = None) -> Obj | None:
        for e in self.objects:
            meta = e.obj["metadata"]
            if (
                e.obj["kind"] == kind
                and meta["name"] == name
                and meta.get("namespace") == namespace
            ):
                return e.obj
        return None
