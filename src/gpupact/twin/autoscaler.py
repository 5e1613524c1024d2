"""Node provisioning per pool, as Karpenter / the cluster autoscaler do it:

- Which pods: unschedulable ones not waiting for a preemption (a pod with
  nominatedNodeName is skipped by both: Karpenter's IsProvisionable, cluster-autoscaler's
  "already waiting for a lower priority pod preemption"); cluster-autoscaler also skips pods
  below its expendable cutoff (-10) and pods younger than `newPodScaleUpDelay`.
- When: Karpenter closes a batch window `batchIdleDuration` after the last newly unschedulable
  pod, or `batchMaxDuration` after the window opened (`Batcher`); cluster-autoscaler acts on
  its scan (`scanInterval`).
- How many: the pods are checked against an empty node of each pool (the engine's filter on
  a template node: taints, affinity, GPU model and devices); the first pool in contract order
  that can host a pod gets it. A pool's pods are packed first-fit onto new template nodes to
  count the nodes needed (the binpacking estimator), capped by `nodes.max` minus the nodes it
  has or is provisioning.
- A new node joins Ready after its pool's provision + driver + device-plugin phases.
- Scale-down: a node without pods for the pool's unneeded time (Karpenter: the NodePool's
  compiled `consolidateAfter`; cluster-autoscaler: `scaleDownUnneeded`) is removed, never
  below the pool's `nodes.min` (its fixed nodes). Pre-warm windows hold nodes with
  placeholder pods (twin/prewarm.py), which keep those nodes busy.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from gpupact.cluster.state import ClusterState
from gpupact.engine.placement.scheduler import Placement, Scheduler
from gpupact.kube.objects import Pod
from gpupact.twin.world import PoolTemplate


@dataclass
class PoolNodes:
    template: PoolTemplate
    minimum: int
    maximum: int
    next_index: int = 0
    provisioning: int = 0  # nodes ordered, not Ready yet
    rows: list[int] = field(default_factory=list)  # its nodes in the ClusterState
    empty_since: dict[int, float] = field(default_factory=dict)


class Autoscaler:
    def __init__(self, pools: Sequence[PoolTemplate], *, enabled: bool = True) -> None:
        self.enabled = enabled
        self.pools = {p.name: PoolNodes(p, p.pool.nodes.min, p.pool.nodes.max) for p in pools}
        self.order = [p.name for p in pools]
        # one empty node per pool: where could a pod go if the pool grew?
        self._probe = ClusterState.from_nodes([p.node(0) for p in pools])
        self._probe_scheduler = Scheduler(self._probe, seed=0)

    def pools_for(self, pod: Pod) -> list[str]:
        mask = self._probe_scheduler.feasible_mask(pod)
        return [self.order[i] for i in np.flatnonzero(mask)]

    def wanted(self, pending: Sequence[Pod]) -> dict[str, int]:
        """New nodes each pool should order for these unschedulable pods. Nodes already
        ordered count as upcoming (cluster-autoscaler puts them in its snapshot before it
        estimates): pods they will hold order nothing more."""
        if not self.enabled:
            return {}
        by_pool: dict[str, list[Pod]] = {}
        for pod in pending:
            pools = [
                p for p in self.pools_for(pod) if self._room(p) > 0 or self.pools[p].provisioning
            ]
            if pools:
                by_pool.setdefault(pools[0], []).append(pod)
        out = {}
        for name, pods in by_pool.items():
            p = self.pools[name]
            count = self._estimate(p.template, pods, p.provisioning, self._room(name))
            if count:
                out[name] = count
        return out

    def _room(self, name: str) -> int:
        p = self.pools[name]
        return p.maximum - len(p.rows) - p.provisioning

    def _estimate(
        self, template: PoolTemplate, pods: Sequence[Pod], upcoming: int, limit: int
    ) -> int:
        """New nodes needed beyond the `upcoming` ones: first-fit of the pods onto the upcoming
        nodes, then onto fresh template nodes (the binpacking estimator)."""
        scratch = ClusterState.from_nodes([template.node(i) for i in range(upcoming)])
        scheduler = Scheduler(scratch, seed=0)
        added = 0
        for pod in pods:
            placed = scheduler.schedule_one(pod, explain=False)
            if not isinstance(placed, Placement) and added < limit:
                scratch.add_node(template.node(scratch.num_nodes))
                added += 1
                scheduler.schedule_one(pod, explain=False)  # fits no empty node: never will
        return sum(1 for i in range(upcoming, scratch.num_nodes) if scratch.pods_on(i))

    def minimum_nodes(self, name: str) -> int:
        p = self.pools[name]
        return min(p.minimum, p.maximum)

    def to_remove(
        self, name: str, now: float, unneeded_s: float, minimum: int, busy: set[int]
    ) -> list[int]:
        p = self.pools[name]
        for row in p.rows:
            if row in busy:
                p.empty_since.pop(row, None)
            else:
                p.empty_since.setdefault(row, now)
        spare = len(p.rows) - minimum
        out = []
        for row in sorted(p.rows, reverse=True):  # the newest first
            if spare <= 0:
                break
            since = p.empty_since.get(row)
            if since is not None and now - since >= unneeded_s:
                out.append(row)
                spare -= 1
        return out


# cluster-autoscaler's --expendable-pods-priority-cutoff default: pods below it never trigger a
# scale-up (flags.go; FAQ "How does Cluster Autoscaler work with Pod Priority and Preemption?")
EXPENDABLE_PRIORITY_CUTOFF = -10


@dataclass
class Batcher:
    """Karpenter's provisioning batch window: opened by the first unschedulable pod, extended
    by each new one up to `idle_s` after it, never beyond `max_s` after it opened."""

    idle_s: float
    max_s: float
    opened: float | None = None
    last: float = 0.0

    def trigger(self, now: float) -> float:
        """A new unschedulable pod: when the window now closes."""
        if self.opened is None:
            self.opened = now
        self.last = now
        return self.closes_at()

    def closes_at(self) -> float:
        assert self.opened is not None
        return min(self.last + self.idle_s, self.opened + self.max_s)

    def due(self, now: float) -> bool:
        return self.opened is not None and now >= self.closes_at() - 1e-9

    def close(self) -> None:
        self.opened = None


_GO_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
_GO_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")


def go_seconds(text: str) -> float:
    """A Go duration (`11m30s`, `1h`, `0s`) in seconds; `Never` is infinite."""
    if text == "Never":
        return math.inf
    parts = _GO_DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"not a Go duration: {text!r}")
    return sum(float(n) * _GO_UNITS[u] for n, u in parts)


@dataclass(frozen=True)
class NodePoolSettings:
    """What Karpenter reads from a compiled NodePool (named after its pool)."""

    consolidate_after_s: float  # spec.disruption.consolidateAfter: empty this long, removed
    limit_nodes: int | None  # spec.limits.nodes: the elastic nodes it may launch


def node_pool_settings(node_pools: Sequence[dict]) -> dict[str, NodePoolSettings]:
    out = {}
    for obj in node_pools:
        spec = obj.get("spec", {})
        after = str(spec.get("disruption", {}).get("consolidateAfter", "0s"))
        limit = spec.get("limits", {}).get("nodes")
        out[obj["metadata"]["name"]] = NodePoolSettings(
            go_seconds(after), int(limit) if limit is not None else None
        )
    return out
