"""The placement engine's filters inside a batch scheduler's session (Volcano's and KAI's
`predicates` plugins).

Upstream Volcano's `predicates` plugin runs kube-scheduler's filter plugins against the
session's own node snapshot: PreFilter once per task (PrePredicate), Filter per node, and an
event handler adds / removes the pod on the snapshot's node on every tentative allocate,
pipeline, evict or undo. So a gang's own members count for InterPodAffinity,
PodTopologySpread and NodePorts as soon as the session places them, before anything is
bound. Free resources are the session's own books (idle, future idle), so NodeResourcesFit
and GPUDevices are not run here.

`SessionFilters` keeps a ClusterState mirror of the pods on the session's nodes (bound at
open, then `add` / `remove` from the session's events) and answers for a pod with the
placement engine's own entry points:
- `codes(pod)`: every node at once (`Scheduler.session_filters`), the fast path;
- `status(pod, node)`: one node with the scalar framework functions, the explaining
  reference the fast path must agree with.

PreFilter state: `codes` is itself a snapshot (InterPodAffinity's and PodTopologySpread's
Filter read only PreFilter counts and node labels; NodePorts reads the node's used ports
now, hence `with_ports(live_ports(pod))`); `prepare` gives the scalar path's snapshot.
Volcano keeps the snapshot taken at a task's PrePredicate for its Filter calls (so in
preempt a victim evicted after PrePredicate still counts for the preemptor's anti-affinity,
while the host port it held is free again, as upstream).

Statuses combine as Volcano's `Predicate` does: a failing static filter (cordon, nodeName,
taints, node affinity) ends the check; otherwise NodePorts, InterPodAffinity and
PodTopologySpread are collected in that order, stopping at an UnschedulableAndUnresolvable
one; the node's status is unresolvable when any collected one is.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from gpupact.cluster.state import Binding, ClusterState, pod_usage
from gpupact.engine.placement.framework import ClusterView, affinity_prefilter, filter_node_static
from gpupact.engine.placement.plugins import inter_pod_affinity as ipa
from gpupact.engine.placement.plugins import node_filters as nf
from gpupact.engine.placement.plugins import pod_topology_spread as ptsv
from gpupact.engine.placement.scheduler import Scheduler
from gpupact.kube import host_ports as hp
from gpupact.kube import topology_spread as pts
from gpupact.kube.objects import Node, Pod
from gpupact.kube.status import SUCCESS, Code, Status

UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


@dataclass(frozen=True, slots=True)
class Enabled:
    """Which dynamic filters run (Volcano's predicate.*Enable arguments)."""

    node_ports: bool = True
    pod_affinity: bool = True
    topology_spread: bool = True


def combine(failures: Sequence[Status]) -> Status:
    """One status for a node's collected failures, in order: unresolvable if any is."""
    if not failures:
        return SUCCESS
    if len(failures) == 1:
        return failures[0]
    code = UNRESOLVABLE if any(f.code is UNRESOLVABLE for f in failures) else Code.UNSCHEDULABLE
    reasons = tuple(r for f in failures for r in f.reasons)
    return Status(code, reasons, failures[0].plugin)


def dynamic_failures(
    ports: Status | None, affinity: Status | None, spread: Status | None
) -> list[Status]:
    """NodePorts, InterPodAffinity, PodTopologySpread failures, stopping at the first
    unresolvable one (Volcano's ShouldAbort)."""
    out: list[Status] = []
    for status in (ports, affinity, spread):
        if status is None or status.ok:
            continue
        out.append(status)
        if status.code is UNRESOLVABLE:
            break
    return out


class FilterCodes:
    """A pod's answer on every node: `ok` per node and, on demand, the node's Status."""

    __slots__ = ("_raw", "affinity", "ok", "ports", "spread", "static")

    def __init__(
        self,
        static: np.ndarray,
        ports: np.ndarray,
        affinity: np.ndarray,
        spread: np.ndarray,
    ) -> None:
        self._raw = (affinity, spread)
        # a static failure ends the check; an unresolvable affinity failure stops before spread
        dynamic = static == nf.PASS
        self.static = static
        self.ports = np.where(dynamic, ports, 0)
        self.affinity = np.where(dynamic, affinity, 0)
        self.spread = np.where(dynamic & (self.affinity != 1), spread, 0)
        self.ok = dynamic & (self.ports == 0) & (self.affinity == 0) & (self.spread == 0)

    def with_ports(self, ports: np.ndarray) -> FilterCodes:
        """The same PreFilter answers with NodePorts as the nodes are now (its Filter reads
        the node's used ports, not PreFilter state)."""
        return FilterCodes(self.static, ports, *self._raw)

    def status(self, row: int) -> Status:
        static = int(self.static[row])
        if static:
            return nf.STATUSES[static]  # type: ignore[return-value]
        ports = hp.STATUS if self.ports[row] else None
        affinity = ipa.FILTER_STATUSES[int(self.affinity[row])]
        spread = ptsv.FILTER_STATUSES[int(self.spread[row])]
        return combine(dynamic_failures(ports, affinity, spread))


class SessionFilters:
    """The mirror of the session's nodes and the pods on them, and the filter answers."""

    def __init__(
        self,
        nodes: Sequence[Node],
        placed: Iterable[tuple[Pod, str]] = (),
        enabled: Enabled | None = None,
    ) -> None:
        self.enabled = enabled or Enabled()
        self.state = _node_state(nodes)
        self.scheduler = Scheduler(self.state)
        self._bound: dict[tuple[str, str], Binding] = {}
        self._scalar: tuple[str, int, tuple] | None = None
        self._codes: tuple[str, int, FilterCodes] | None = None
        for pod, node_name in placed:
            self.add(pod, node_name)

    # --- the session's events ------------------------------------------------------------

    def add(self, pod: Pod, node_name: str) -> None:
        """A pod now on `node_name` (allocated, pipelined, or an eviction undone). A pod
        may sit on two nodes at once (releasing on one, pipelined to another): the second
        copy is bound under a name of its own."""
        key = (pod.key, node_name)
        if key in self._bound:
            return
        copy = pod
        if self.state.binding_of(pod.key) is not None:
            copy = replace(pod, name=f"{pod.name}@{node_name}")
        row = self.state.node_index[node_name]
        # the filters here never read devices: bind without GPU device bookkeeping
        usage = replace(pod_usage(copy), gpu=None)
        self._bound[key] = self.state.bind(copy, row, usage=usage)

    def remove(self, pod: Pod, node_name: str) -> None:
        """A pod gone from `node_name` (evicted, or an allocation undone)."""
        binding = self._bound.pop((pod.key, node_name), None)
        if binding is not None:
            self.state.unbind(binding)

    # --- every node at once ----------------------------------------------------------------

    def fits(self, pod: Pod, row: int) -> bool:
        """`codes(pod).ok[row]`, the codes computed once per pod and mirror version."""
        version = self.state.version
        if self._codes is None or self._codes[:2] != (pod.key, version):
            self._codes = (pod.key, version, self.codes(pod))
        return bool(self._codes[2].ok[row])

    def codes(self, pod: Pod) -> FilterCodes:
        checks, spread, affinity, taken = self.scheduler.session_filters(pod)
        n = self.state.num_nodes
        zero = np.zeros(n, dtype=np.int8)
        ports = self._ports(taken, n)
        return FilterCodes(
            checks.codes,
            ports,
            affinity if self.enabled.pod_affinity else zero,
            spread if self.enabled.topology_spread else zero,
        )

    def _ports(self, taken: np.ndarray | None, n: int) -> np.ndarray:
        if taken is None or not self.enabled.node_ports:
            return np.zeros(n, dtype=np.int8)
        return taken.astype(np.int8)

    def live_ports(self, pod: Pod) -> np.ndarray:
        """int8[N]: NodePorts now (1: a host port the pod asks for is taken on the node)."""
        if not pod.host_ports:
            return np.zeros(self.state.num_nodes, dtype=np.int8)
        return self._ports(self.scheduler.session_filters(pod)[3], self.state.num_nodes)

    # --- one node (the explaining reference) -----------------------------------------------

    def prepare(self, pod: Pod) -> tuple:
        """PreFilter state for `pod` over the mirror as it is now (cached per version), for
        `status`; a session keeps it from its PrePredicate until the next one."""
        version = self.state.version
        if self._scalar is not None and self._scalar[:2] == (pod.key, version):
            return self._scalar[2]
        cluster = ClusterView.from_state(self.state)
        spread = None
        if pod.topology_spread_constraints:
            spread = pts.prefilter(pod, cluster.nodes, cluster.bound_pods)
        prepared = (spread, affinity_prefilter(pod, cluster))
        self._scalar = (pod.key, version, prepared)
        return prepared

    def status(self, pod: Pod, node: Node, prepared: tuple | None = None) -> Status:
        """The node's status; `prepared` (from `prepare`) fixes the PreFilter state, else it
        is taken from the mirror as it is now."""
        verdict = filter_node_static(pod, node)
        if not verdict.fits:
            return verdict.status
        spread_state, affinity_state = prepared or self.prepare(pod)
        ports = None
        if pod.host_ports and self.enabled.node_ports:
            # NodePorts reads the node's used ports as they are now
            used = self.state.used_ports.get(self.state.node_index[node.name])
            ports = hp.filter_ports(pod.host_ports, used)
        affinity = affinity_state.filter(node.labels) if self.enabled.pod_affinity else None
        spread = None
        if spread_state is not None and self.enabled.topology_spread:
            spread = pts.filter_node(spread_state, node)
        return combine(dynamic_failures(ports, affinity, spread))


# The last node list's ClusterState without pods: sessions on the same Node objects (the
# twin opens one per scheduling step) start from a copy instead of rebuilding the columns.
_BASE: list[tuple[tuple[Node, ...], ClusterState]] = []


def _node_state(nodes: Sequence[Node]) -> ClusterState:
    if _BASE:
        known, state = _BASE[0]
        if len(known) == len(nodes) and all(a is b for a, b in zip(known, nodes, strict=True)):
            return state.copy()
    state = ClusterState.from_nodes(nodes)
    _BASE[:] = [(tuple(nodes), state)]
    return state.copy()


def forget_node_states() -> None:
    """Drop the kept node columns (benchmarks time a cold session open with it)."""
    _BASE.clear()
