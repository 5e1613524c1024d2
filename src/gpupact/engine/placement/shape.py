"""A pod compiled for placement: everything the plugins read, plus the keys under which pods of
the same shape share cached masks and scores.

Two pods with equal `static_key` (node name, tolerations, node selector and affinity incl.
preferred terms, GPU request) get the same static mask; with equal `dynamic_key` (static key
plus resource requests) they also share the per-node fit and score columns, which are
refreshed only on the nodes that changed since the last use.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpupact.cluster.state import PodUsage, pod_usage_keyed, resources_key
from gpupact.kube.objects import Pod
from gpupact.kube.resources_fit import FitRequest, compute_fit_request
from gpupact.kube.selectors import NodeSelectorTerm, RequiredNodeAffinity

from .plugins.inter_pod_affinity import NO_AFFINITY, PodAffinityInfo, pod_affinity_info

_FIT_MEMO: dict[tuple, FitRequest] = {}
_MEMO_LIMIT = 8192


@dataclass(eq=False, slots=True)
class PodShape:
    pod: Pod
    rkey: tuple
    usage: PodUsage
    fit_request: FitRequest
    required_affinity: RequiredNodeAffinity
    preferred_affinity: tuple[tuple[int, NodeSelectorTerm], ...]
    affinity: PodAffinityInfo
    static_key: tuple | None  # None: not cacheable (an unhashable field)
    dynamic_key: tuple | None

    @property
    def spread(self) -> bool:
        return bool(self.pod.topology_spread_constraints)


def _preferred(pod: Pod) -> tuple[tuple[int, NodeSelectorTerm], ...]:
    affinity = pod.node_affinity
    if affinity is None:
        return ()
    return tuple(
        (t.weight, t.preference)
        for t in affinity.preferred
        if t.weight != 0 and not t.preference.empty and not t.preference.issues
    )


_REQUIRED_BY_ID: dict[tuple[int, int], tuple[object, object, RequiredNodeAffinity]] = {}


def _required_affinity(pod: Pod) -> RequiredNodeAffinity:
    """pod.required_node_affinity, memoised by the identity of its two source fields (pods
    stamped from one template share them)."""
    selector, affinity = pod.node_selector, pod.node_affinity
    key = (id(selector), id(affinity))
    hit = _REQUIRED_BY_ID.get(key)
    if hit is not None and hit[0] is selector and hit[1] is affinity:
        return hit[2]
    required = pod.required_node_affinity
    if len(_REQUIRED_BY_ID) >= _MEMO_LIMIT:
        _REQUIRED_BY_ID.clear()
    _REQUIRED_BY_ID[key] = (selector, affinity, required)
    return required


def compile_pod(pod: Pod) -> PodShape:
    rkey = resources_key(pod)
    usage = pod_usage_keyed(pod, rkey)
    fit = _FIT_MEMO.get(rkey)
    if fit is None:
        fit = compute_fit_request(pod.resources, pod_level_resources=True)
        if len(_FIT_MEMO) >= _MEMO_LIMIT:
            _FIT_MEMO.clear()
        _FIT_MEMO[rkey] = fit
    required = _required_affinity(pod)
    preferred = _preferred(pod)
    affinity = pod_affinity_info(pod) if pod.has_inter_pod_affinity else NO_AFFINITY
    static_key: tuple | None = (
        pod.node_name,
        pod.tolerations,
        required.node_selector,
        required.required,
        preferred,
        usage.gpu,
    )
    dynamic_key: tuple | None = (static_key, rkey)
    return PodShape(pod, rkey, usage, fit, required, preferred, affinity, static_key, dynamic_key)
