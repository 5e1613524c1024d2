"""The twin's control plane: pods wait in the scheduler's queue and are placed by the engine.

- Pods for the default scheduler go through `Scheduler.schedule_one` (kube-scheduler's filter
  and score) in kube-scheduler's queue order (priority, then creation time). A pod found
  unschedulable waits until the cluster changes in a way that can help (a pod leaves, a node
  joins or changes): upstream's unschedulable queue, moved on cluster events.
- An unschedulable pod that may preempt runs DefaultPreemption's PostFilter (with the
  contract's protection rules). Its victims are deleted gracefully: each keeps its node's
  resources for its `terminationGracePeriodSeconds` (API default 30 s), carrying a
  deletionTimestamp and the DisruptionTarget condition, while the preemptor waits with
  status.nominatedNodeName on that node (the scheduler holds the nominated pod's resources
  there against pods of no higher priority: RunFilterPluginsWithNominatedPods).
- Pods for Volcano (gangs) are placed by a Volcano session over the whole cluster: nothing of
  a gang is bound unless minMember of it can be.
Every placement binds into the one ClusterState; the bound Pod carries its node name and start
time (DefaultPreemption orders victims by them).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from gpupact.cluster.state import ClusterState
from gpupact.compile.names import utc_text
from gpupact.engine.gang import PodGroup, PodGroupPhase
from gpupact.engine.placement.scheduler import Placement, Scheduler
from gpupact.engine.preemption.default_preemption import DefaultPreemption
from gpupact.engine.preemption.fit_check import FilterChainFit
from gpupact.engine.preemption.protection import Protection
from gpupact.engine.volcano import PluginOption, Session
from gpupact.engine.volcano.model import Queue
from gpupact.kube.objects import Node, Pod
from gpupact.kube.status import Code
from gpupact.kube.taints import taint_toleration_filter

VOLCANO = "volcano"
NANOS = 1_000_000_000
DEFAULT_GRACE_S = 30.0  # core/v1 defaulting of spec.terminationGracePeriodSeconds

# Volcano's default scheduler configuration (volcano-scheduler.conf): actions and plugin tiers
VOLCANO_ACTIONS = ("enqueue", "allocate", "backfill")
VOLCANO_TIERS = (
    (
        PluginOption("priority", frozenset({"jobOrder", "taskOrder", "preemptable"})),
        PluginOption(
            "gang",
            frozenset({"jobOrder", "jobReady", "jobPipelined", "jobStarving", "preemptable"}),
        ),
        PluginOption("conformance", frozenset({"preemptable", "reclaimable"})),
    ),
    (
        PluginOption("drf", frozenset({"jobOrder", "preemptable"})),
        PluginOption("predicates", frozenset({"predicate"})),
        PluginOption(
            "proportion",
            frozenset({"queueOrder", "reclaimable", "allocatable", "overused", "jobEnqueued"}),
        ),
        PluginOption("nodeorder", frozenset({"nodeOrder"})),
    ),
)


@dataclass(eq=False)
class PodRecord:
    """One pod the twin created, from creation to its end."""

    pod: Pod
    owner: str  # service replica or job run
    workload_class: str
    tenant: str
    gpus: float  # physical GPUs it holds once bound (a time-slice replica counts 1/replicas)
    created: float
    scheduler: str = "default-scheduler"
    group: PodGroup | None = None  # its gang, for pods scheduled by Volcano
    bound_at: float | None = None
    node: str | None = None
    ended_at: float | None = None
    blocked_at: int = -1  # cluster generation at which it was last found unschedulable
    restarts: int = 0
    reason: str = ""  # the last refusal, for reports
    waiting_since: float | None = None  # when its work was submitted (a job queued in Kueue)
    shape: tuple = ()  # pods of one shape (template, selector) fit the same nodes
    gang: str = ""  # its gang (PodGroup key); kept when gang scheduling is off, for metrics
    gang_min: int = 0  # > 1: a gang member (its gang's pods start together, or not at all)

    @property
    def wait_start(self) -> float:
        return self.created if self.waiting_since is None else self.waiting_since

    @property
    def key(self) -> str:
        return self.pod.key


@dataclass
class Preemption:
    victim: PodRecord
    preemptor: PodRecord
    node: str
    until: float = 0.0  # when the victim's termination ends and its resources are free


@dataclass
class ControlPlane:
    state: ClusterState
    scheduler: Scheduler
    protection: Protection
    volcano_queues: Sequence[Queue]
    priorities: dict[str, int]
    gang_scheduling: bool = True
    volcano_actions: Sequence[str] = VOLCANO_ACTIONS  # the compiled volcano-scheduler.conf's
    t0: float = 0.0  # epoch seconds of the twin's t = 0 (pod start times, preemption order)
    # placement -> bound: the node's resources are held from the placement on (the scheduler
    # assumes the pod in its cache), the pod is bound and starts this much later
    bind_latency: float = 0.0
    pending: dict[str, PodRecord] = field(default_factory=dict)
    bound: dict[str, PodRecord] = field(default_factory=dict)
    terminating: dict[str, PodRecord] = field(default_factory=dict)  # deleted, still on a node
    groups: dict[str, PodGroup] = field(default_factory=dict)
    generation: int = 0  # bumps when capacity may have grown (a pod left, a node changed)
    # pods found unschedulable by the last `schedule` pass (the node provisioner's cue)
    blocked: list[PodRecord] = field(default_factory=list)
    _gang_signature: int | None = None
    _lowest: tuple[tuple[int, int], int] | None = None
    _gang_rows_cache: tuple[tuple, list[int]] | None = None

    def __post_init__(self) -> None:
        self.preemption = DefaultPreemption(protection=self.protection)

    # --- pods coming and going ----------------------------------------------------------

    def submit(self, record: PodRecord) -> None:
        if not self.gang_scheduling and record.scheduler == VOLCANO:
            record.scheduler = "default-scheduler"
            record.group = None
        self.pending[record.key] = record
        if record.group is not None:
            self.groups[record.group.key] = record.group

    def remove(self, key: str, now: float) -> PodRecord | None:
        """The pod ends (finished, deleted, evicted): it leaves the queue or its node."""
        record = self.pending.pop(key, None)
        if record is not None:
            self.state.clear_nomination(key)
        else:
            record = self.bound.pop(key, None)
            if record is None:
                return None
            self.state.unbind_pod(key)
            self.capacity_changed()
        record.ended_at = now
        return record

    def terminate(self, key: str, now: float, reason: str = "PreemptionByScheduler") -> float:
        """Graceful deletion of a bound pod: it leaves its owner's view now but keeps its
        node's resources until the returned time (now + terminationGracePeriodSeconds), when
        `release` frees them. A grace of 0 frees them at once. Not bound: nothing to hold."""
        record = self.bound.pop(key, None)
        if record is None:
            self.remove(key, now)
            return now
        grace = termination_grace(record.pod)
        record.ended_at = now
        if grace <= 0:
            self.state.unbind_pod(key)
            self.capacity_changed()
            return now
        binding = self.state.unbind_pod(key)
        record.pod = _deleted(record.pod, self.t0 + now, reason)
        self.state.bind(record.pod, binding.node, binding.devices, usage=binding.usage)
        self.terminating[key] = record
        return now + grace

    def release(self, key: str) -> PodRecord | None:
        """A terminating pod's grace period is over: its resources are free."""
        record = self.terminating.pop(key, None)
        if record is None:
            return None
        self.state.unbind_pod(key)
        self.capacity_changed()
        return record

    def capacity_changed(self) -> None:
        self.generation += 1

    # --- one scheduling pass ------------------------------------------------------------

    def schedule(self, now: float) -> tuple[list[PodRecord], list[Preemption]]:
        """Place what can be placed now; returns the pods bound and the preemptions made."""
        placed: list[PodRecord] = []
        preempted: list[Preemption] = []
        self.blocked = []
        if any(r.scheduler == VOLCANO for r in self.pending.values()):
            placed.extend(self._volcano_session(now, preempted))
        # within one pass, a pod like one that found no node finds none either (placing pods
        # only takes capacity away; a preemption starts a new pass for its shape)
        failed: dict[tuple, str] = {}
        for record in sorted(
            (r for r in self.pending.values() if r.scheduler != VOLCANO),
            key=lambda r: (-r.pod.priority, r.created, r.key),
        ):
            if record.blocked_at == self.generation or record.key not in self.pending:
                continue
            shape = record.shape
            # a nominated pod is not like the others: the room held for it is its own
            if shape in failed and not record.pod.nominated_node_name:
                record.reason = failed[shape]
                record.blocked_at = self.generation
                self.blocked.append(record)
                continue
            # the cheap refusal: why a pod waits is explained on demand (reason_of)
            result = self.scheduler.schedule_one(record.pod, bind=False, explain=False)
            if isinstance(result, Placement):
                self._bind(record, result.node_index, result.devices, now)
                placed.append(record)
                continue
            record.reason = ""
            record.blocked_at = self.generation
            self.blocked.append(record)
            failed[shape] = ""
            victims = self._preempt(record, now)
            if victims:
                failed.clear()
                preempted.extend(victims)
                retry = self.scheduler.schedule_one(record.pod, bind=False, explain=False)
                if isinstance(retry, Placement):
                    self._bind(record, retry.node_index, retry.devices, now)
                    placed.append(record)
        return placed, preempted

    def _bind(self, record: PodRecord, row: int, devices: Sequence[int] | None, now: float) -> None:
        node = self.state.node_names[row]
        at = now + self.bind_latency
        bound = replace(
            record.pod,
            node_name=node,
            phase="Running",
            start_time=utc_text(datetime.fromtimestamp(self.t0 + at, tz=UTC)),
        )
        self.state.bind(bound, row, devices)
        record.pod = bound
        record.node = node
        record.bound_at = at
        record.reason = ""
        del self.pending[record.key]
        self.bound[record.key] = record

    # --- preemption ----------------------------------------------------------------------

    def _preempt(self, record: PodRecord, now: float) -> list[Preemption]:
        pod = record.pod
        if pod.preemption_policy == "Never" or not self.bound:
            return []
        if self._lowest_priority() >= pod.priority:
            return []
        verdicts = self.scheduler.explain(pod).verdicts
        statuses = {v.node: v.status for v in verdicts}
        if not any(s.code is Code.UNSCHEDULABLE for s in statuses.values()):
            return []
        cluster = _StateCluster(self.state)
        outcome = self.preemption.post_filter(
            pod,
            cluster,
            statuses,
            now=int((self.t0 + now) * NANOS),
            fits=FilterChainFit.from_state(self.state),
        )
        if outcome.candidate is None:
            return []
        node = outcome.candidate.node
        out = []
        for victim in outcome.victims:
            victim_record = self.bound.get(victim.key)
            if victim_record is None:
                continue
            until = self.terminate(victim.key, now)
            out.append(Preemption(victim_record, record, node, until))
        # the preemptor waits nominated to the node its victims are leaving
        record.pod = _nominated(record.pod, node)
        self.state.nominate(record.pod, self.state.node_index[node])
        return out

    def _lowest_priority(self) -> int:
        """The lowest priority among bound pods (only a pod above it can preempt), per
        generation of the bound set."""
        key = (self.generation, len(self.bound))
        if self._lowest is None or self._lowest[0] != key:
            self._lowest = (key, min(r.pod.priority for r in self.bound.values()))
        return self._lowest[1]

    # --- Volcano gangs -------------------------------------------------------------------

    def _volcano_session(self, now: float, preempted: list[Preemption]) -> list[PodRecord]:
        """One session with the configured actions; what its preempt / reclaim evict is
        deleted gracefully, like kube-scheduler's victims (appended to `preempted`)."""
        waiting = [r for r in self.pending.values() if r.scheduler == VOLCANO]
        state = self.state
        rows = self._gang_rows(waiting)
        # a session can only decide differently if the reachable nodes or the waiting pods
        # changed since the last one
        signature = hash(
            (
                state.static_version,
                state.requested[rows].tobytes(),
                tuple(sorted(r.key for r in waiting)),
            )
        )
        if signature == self._gang_signature:
            return []
        self._gang_signature = signature
        nodes = [state.nodes[i] for i in rows]
        bound_pods = [b.pod for i in rows for b in state.pods_on(i)]
        live = {r.group.key for r in waiting if r.group} | {
            r.group.key for r in self.bound.values() if r.group
        }
        podgroups = []
        for key in sorted(live):
            group = self.groups[key]
            podgroups.append(replace(group, phase=PodGroupPhase.INQUEUE))
        session = Session(
            nodes=nodes,
            pods=[*bound_pods, *(r.pod for r in waiting)],
            podgroups=podgroups,
            queues=list(self.volcano_queues),
            tiers=VOLCANO_TIERS,
            priority_classes=self.priorities,
        )
        result = session.run(self.volcano_actions)
        for key in result.evicted:
            victim = self.bound.get(key)
            if victim is None:
                continue
            node = victim.node or ""
            # the task pipelined onto the victim's node is the one it makes room for
            by = next((k for k, n in result.pipelined.items() if n == node), None)
            preemptor = self.pending.get(by or "") or victim
            until = self.terminate(key, now)
            preempted.append(Preemption(victim, preemptor, node, until))
        placed = []
        for key, node_name in result.binds.items():
            record = self.pending.get(key)
            if record is None:
                continue
            row = state.node_index[node_name]
            try:
                self._bind(record, row, None, now)
            except ValueError:  # the devices on that node cannot hold it (e.g. NVLink)
                continue
            placed.append(record)
        for record in waiting:
            if record.key in self.pending:
                record.blocked_at = self.generation
                self.blocked.append(record)
                record.reason = "PodGroup: gang cannot be placed whole (minMember not reachable)"
        return placed

    def _gang_rows(self, waiting: list[PodRecord]) -> list[int]:
        """The nodes a waiting gang can reach (node affinity and taints, which neither
        evicting nor allocating changes), cached per node-set version: Volcano's predicates
        reject every other node."""
        state = self.state
        shapes = _by_shape(waiting)
        key = (state.static_version, tuple(sorted(r.shape or (r.key,) for r in shapes)))
        cached = self._gang_rows_cache
        if cached is not None and cached[0] == key:
            return cached[1]
        rows = [
            i
            for i in range(state.num_nodes)
            if state.active[i] and any(_reachable(r.pod, state.nodes[i]) for r in shapes)
        ]
        self._gang_rows_cache = (key, rows)
        return rows

    # --- views ---------------------------------------------------------------------------

    def reason_of(self, record: PodRecord) -> str:
        """Why a pending pod waits: the gang's reason, or kube-scheduler's FitError line."""
        if record.reason:
            return record.reason
        if record.key not in self.pending:
            return ""
        result = self.scheduler.explain(record.pod)
        return result.message or "waiting for the next scheduling pass"

    def records(self) -> Iterator[PodRecord]:
        yield from self.pending.values()
        yield from self.bound.values()

    def on_node(self, node: str) -> list[PodRecord]:
        return [r for r in self.bound.values() if r.node == node]


def _by_shape(records: Iterable[PodRecord]) -> list[PodRecord]:
    """One record per shape."""
    seen: dict[tuple, PodRecord] = {}
    for r in records:
        seen.setdefault(r.shape or (r.key,), r)
    return list(seen.values())


def _reachable(pod: Pod, node: Node) -> bool:
    """Node affinity and taints allow the pod on the node (resources aside)."""
    return (
        pod.required_node_affinity.matches(node.name, node.labels)
        and taint_toleration_filter(node.taints, pod.tolerations).ok
    )


def termination_grace(pod: Pod) -> float:
    """The pod's spec.terminationGracePeriodSeconds (the compiled value), else the default."""
    spec = pod.raw.get("spec") if isinstance(pod.raw, dict) else None
    value = spec.get("terminationGracePeriodSeconds") if isinstance(spec, dict) else None
    return float(value) if isinstance(value, int | float) else DEFAULT_GRACE_S


def _deleted(pod: Pod, at: float, reason: str) -> Pod:
    """The pod as the API server shows it once deleted: a deletionTimestamp, and (set before
    the delete by the scheduler's preemption or Kueue's eviction) the DisruptionTarget
    condition naming why."""
    raw = dict(pod.raw)
    stamp = utc_text(datetime.fromtimestamp(at, tz=UTC))
    raw["metadata"] = {**raw.get("metadata", {}), "deletionTimestamp": stamp}
    status = dict(raw.get("status", {}))
    condition = {"type": "DisruptionTarget", "status": "True", "reason": reason}
    status["conditions"] = [*status.get("conditions", []), condition]
    raw["status"] = status
    return replace(pod, terminating=True, raw=raw)


def _nominated(pod: Pod, node: str) -> Pod:
    raw = dict(pod.raw)
    raw["status"] = {**raw.get("status", {}), "nominatedNodeName": node}
    return replace(pod, nominated_node_name=node, raw=raw)


class _StateCluster:
    """DefaultPreemption's view (PreemptionCluster) of the twin's ClusterState."""

    def __init__(self, state: ClusterState) -> None:
        self.state = state
        self.nodes: Sequence[Node] = [
            state.nodes[i] for i in range(state.num_nodes) if state.active[i]
        ]
        self.pdbs: Sequence[Any] = ()

    def node(self, name: str) -> Node | None:
        row = self.state.node_index.get(name)
        return self.state.nodes[row] if row is not None and self.state.active[row] else None

    def pods_on(self, node_name: str) -> Sequence[Pod]:
        row = self.state.node_index.get(node_name)
        return [b.pod for b in self.state.pods_on(row)] if row is not None else []

    def running_pods(self) -> Iterable[Pod]:
        return (b.pod for b in self.state.bindings())
