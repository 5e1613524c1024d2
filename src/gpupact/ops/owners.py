"""Who owns a pod, named the way kubectl names it, so an action can be pasted as it is.

The owner is the top controller found in the snapshot (a ReplicaSet's Deployment); without
it, the pod's controlling ownerReference, where a ReplicaSet named `<deployment>-<hash>` whose
pod carries `pod-template-hash: <hash>` is read as that Deployment (the Deployment
controller's naming); a pod without owners is its own owner.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from gpupact.kube.objects import Pod
from gpupact.ops.model import Controller

VOLCANO_JOB_GROUP = "batch.volcano.sh"
TEMPLATE_HASH_LABEL = "pod-template-hash"
# kubectl resource names; Volcano's Job is fully qualified (`job` alone is batch/v1)
_RESOURCE = {
    "Pod": "pod",
    "Deployment": "deployment",
    "StatefulSet": "statefulset",
    "ReplicaSet": "replicaset",
    "DaemonSet": "daemonset",
    "Job": "job",
    "CronJob": "cronjob",
    "LeaderWorkerSet": "leaderworkerset",
}
# owners whose pod template `kubectl set resources` / `kubectl patch` may change (a Job's and
# a bare pod's are immutable)
SET_RESOURCES_KINDS = frozenset({"Deployment", "StatefulSet", "ReplicaSet", "DaemonSet"})


class OwnerIndex(Protocol):
    """What owner_of reads of an Analysis: its caches and the snapshot's controllers (named
    here, not imported, because the Analysis itself asks owner_of)."""

    memo: dict[Any, Any]

    def controller_of(self, pod: Pod) -> Controller | None: ...


@dataclass(frozen=True, slots=True)
class Owner:
    kind: str
    namespace: str
    name: str
    api_group: str = ""

    @property
    def resource(self) -> str:
        if self.kind == "Job" and self.api_group == VOLCANO_JOB_GROUP:
            return "jobs.batch.volcano.sh"
        return _RESOURCE.get(self.kind, self.kind.lower())

    @property
    def ref(self) -> str:
        """`deployment/cs-agent`, as kubectl takes it."""
        return f"{self.resource}/{self.name}"

    def kubectl(self, verb: str, extra: str = "") -> str:
        return f"kubectl -n {self.namespace} {verb} {self.ref}" + (f" {extra}" if extra else "")

    def __str__(self) -> str:
        if self.kind == "Pod":
            return f"pod {self.namespace}/{self.name}"
        return f"{self.kind} {self.namespace}/{self.name}"


def owner_of(a: OwnerIndex, pod: Pod) -> Owner:
    """Memoised per controlling reference: the replicas of one controller share an owner."""
    meta = pod.raw.get("metadata") if pod.raw else None
    refs = meta.get("ownerReferences") if isinstance(meta, dict) else None
    if not isinstance(refs, list) or not refs:
        return Owner("Pod", pod.namespace, pod.name)
    first = refs[0] if isinstance(refs[0], dict) else {}
    key = ("owner", pod.namespace, str(first.get("uid", "")), str(first.get("name", "")))
    key += (pod.labels.get(TEMPLATE_HASH_LABEL, ""), len(refs))
    found = a.memo.get(key)
    if found is None:
        found = a.memo[key] = _owner_of(a, pod)
    return found


def _owner_of(a: OwnerIndex, pod: Pod) -> Owner:
    ctrl = a.controller_of(pod)
    if ctrl is not None:
        return Owner(ctrl.kind, ctrl.meta.namespace, ctrl.meta.name, ctrl.api_group)
    meta = pod.raw.get("metadata") if pod.raw else None
    refs = meta.get("ownerReferences") if isinstance(meta, dict) else None
    refs = [r for r in refs if isinstance(r, dict)] if isinstance(refs, list) else []
    if not refs:
        return Owner("Pod", pod.namespace, pod.name)
    ref = next((r for r in refs if r.get("controller") is True), refs[0])
    kind, name = str(ref.get("kind", "")), str(ref.get("name", ""))
    api = str(ref.get("apiVersion", ""))
    group = api.rsplit("/", 1)[0] if "/" in api else ""
    digest = pod.labels.get(TEMPLATE_HASH_LABEL, "")
    if kind == "ReplicaSet" and digest and name.endswith("-" + digest):
        return Owner("Deployment", pod.namespace, name[: -len(digest) - 1], "apps")
    return Owner(kind, pod.namespace, name, group)
