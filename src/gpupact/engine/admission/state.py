"""AdmissionState: everything Kueue's admission knows, advanced by events and cycles.

The twin drives it with events over time (`submit`, `finish`, `complete_eviction`, quota
changes via `set_cluster_queue` / `set_cohort`, temporary raises via `add_raise`, see
raises.py) and calls `schedule_cycle(now)` repeatedly;
`diagnose` and `plan` read the same state (`pending_workloads`, `explain`, `usage`).
Time is always a parameter. `copy()` is cheap (quota/usage dicts and queue indexes are copied,
immutable specs are shared), for what-if simulations.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from gpupact.engine.admission import queues as q
from gpupact.engine.admission import raises, reasons
from gpupact.engine.admission.cycle import run_cycle
from gpupact.engine.admission.fair_sharing import FairSharingConfig, FairSharingPreemption
from gpupact.engine.admission.features import FeatureGates
from gpupact.engine.admission.flavor_assigner import (
    Assignment,
    FlavorAssigner,
    PlacementCheck,
    PreemptionOracle,
)
from gpupact.engine.admission.model import (
    STRICT_FIFO,
    Admission,
    ClusterQueue,
    Cohort,
    FlavorResource,
    LocalQueue,
    QuotaRaise,
    ResourceFlavor,
    Workload,
)
from gpupact.engine.admission.preemption import Preemptor, Target
from gpupact.engine.admission.queues import ClusterQueueQueue
from gpupact.engine.admission.resource_tree import (
    QuotaTree,
    add_usages,
    available,
    potential_available,
    remove_usages,
)
from gpupact.engine.admission.runtime import ClusterQueueRuntime
from gpupact.engine.admission.workload_info import WorkloadInfo
from gpupact.kube.selectors import label_selector_matches

UNQUEUED = "unqueued"


@dataclass(frozen=True, slots=True)
class PendingWorkload:
    key: str
    cluster_queue: str
    local_queue: str
    state: str  # "active" | "inadmissible"


class AdmissionState:
    def __init__(
        self,
        *,
        resource_flavors: Iterable[ResourceFlavor] = (),
        cluster_queues: Iterable[ClusterQueue] = (),
        cohorts: Iterable[Cohort] = (),
        local_queues: Iterable[LocalQueue] = (),
        fair_sharing: FairSharingConfig | None = None,
        features: FeatureGates | None = None,
        placement: PlacementCheck | None = None,
        on_expiry: str = raises.KEEP,
        namespaces: Mapping[str, Mapping[str, str]] | None = None,
    ) -> None:
        self.resource_flavors: dict[str, ResourceFlavor] = {f.name: f for f in resource_flavors}
        self.cluster_queue_specs: dict[str, ClusterQueue] = {c.name: c for c in cluster_queues}
        self.cohort_specs: dict[str, Cohort] = {c.name: c for c in cohorts}
        self.local_queues: dict[str, LocalQueue] = {lq.key: lq for lq in local_queues}
        self.fair_sharing = fair_sharing
        self.features = features or FeatureGates()
        # Namespace labels by name, for ClusterQueue namespaceSelectors; None when unknown
        # (a snapshot without Namespaces): then no workload is refused for its namespace
        self.namespaces: dict[str, Mapping[str, str]] | None = (
            dict(namespaces) if namespaces is not None else None
        )
        # optional extension point: can a flavor's nodes host a PodSet (placement engine)
        self.placement = placement
        self.cycle_number = 0
        self.workloads: dict[str, WorkloadInfo] = {}
        self.queues: dict[str, ClusterQueueQueue] = {}
        self.cluster_queue_runtimes: dict[str, ClusterQueueRuntime] = {}
        self.tree = QuotaTree((), ())
        # last QuotaReserved=False reason per pending workload: (code, message)
        self.pending_status: dict[str, tuple[str, str]] = {}
        # pending workloads whose LocalQueue points to a ClusterQueue that does not exist (yet)
        self.unqueued: dict[str, WorkloadInfo] = {}
        # temporary quota raises (raises.py): applied on top of cluster_queue_specs
        self.raises: list[QuotaRaise] = []
        self.on_expiry = raises.check_policy(on_expiry)
        # the latest time seen by schedule_cycle / expire_raises (None before the first)
        self.clock: int | None = None
        self._rebuild()

    # --- configuration --------------------------------------------------------------------

    def _rebuild(self) -> None:
        """Rebuild the quota tree after a configuration change, keeping admitted usage."""
        specs = raises.apply_raises(self.cluster_queue_specs, self.raises)
        tree = QuotaTree(specs.values(), self.cohort_specs.values())
        old = self.cluster_queue_runtimes
        runtimes = {}
        for name, spec in specs.items():
            runtime = ClusterQueueRuntime(spec, tree.cluster_queues[name])
            # like Kueue: a ClusterQueue naming a ResourceFlavor that does not exist is inactive
            runtime.active = spec.active and all(
                flavor in self.resource_flavors
                for group in spec.resource_groups
                for flavor in group.flavor_names
            )
            previous = old.get(name)
            if previous is not None:
                runtime.workloads = previous.workloads
                runtime.generation = previous.generation + 1
            runtimes[name] = runtime
            queue = self.queues.get(name)
            if queue is None:
                self.queues[name] = self._new_queue(name, spec.queueing_strategy)
            elif queue.strategy != spec.queueing_strategy:
                queue.strategy = spec.queueing_strategy
        for name in list(self.queues):
            if name not in runtimes and not self.queues[name]:
                del self.queues[name]
        usage: dict[str, dict[FlavorResource, int]] = {}
        for name, runtime in runtimes.items():
            totals: dict[FlavorResource, int] = {}
            for info in runtime.workloads.values():
                for fr, value in info.usage.items():
                    totals[fr] = totals.get(fr, 0) + value
            usage[name] = totals
        tree.reset_usage(usage)
        self.tree = tree
        self.cluster_queue_runtimes = runtimes

    def add_resource_flavor(self, flavor: ResourceFlavor) -> None:
        self.resource_flavors[flavor.name] = flavor
        self._rebuild()
        self._requeue_users_of(flavor.name)

    def set_cluster_queue(self, spec: ClusterQueue) -> None:
        """Add or update a ClusterQueue (quota changes take effect at the next cycle)."""
        self.cluster_queue_specs[spec.name] = spec
        self._rebuild()
        self.requeue_inadmissible_around(spec.name)
        for key, info in list(self.unqueued.items()):
            if info.cluster_queue == spec.name:
                del self.unqueued[key]
                self._queue(spec.name).add(info)

    def set_cohort(self, spec: Cohort) -> None:
        self.cohort_specs[spec.name] = spec
        self._rebuild()
        for cq in self.tree.cohorts[spec.name].root().subtree_cluster_queues():
            self._queue(cq.name).requeue_inadmissible(self._namespace_gate())

    def set_namespace(self, name: str, labels: Mapping[str, str] | None) -> None:
        """A Namespace was created or relabelled (None: deleted). Like Kueue's namespace
        handler, the inadmissible workloads of every ClusterQueue are retried."""
        if self.namespaces is None:
            self.namespaces = {}
        if labels is None:
            self.namespaces.pop(name, None)
        else:
            self.namespaces[name] = dict(labels)
        for queue in self.queues.values():
            queue.requeue_inadmissible(self._namespace_gate())

    def namespace_problem(self, info: WorkloadInfo) -> tuple[str, str] | None:
        """Kueue's ValidateAdmissibility namespace part: (requeue reason, message) when the
        workload's namespace does not exist or its ClusterQueue's selector excludes it."""
        if self.namespaces is None:
            return None
        labels = self.namespaces.get(info.workload.namespace)
        if labels is None:
            return q.GENERIC, reasons.namespace_missing(info.workload.namespace)
        spec = self.cluster_queue_specs.get(info.cluster_queue)
        if spec is not None and not label_selector_matches(spec.namespace_selector, labels):
            return q.NAMESPACE_MISMATCH, reasons.NAMESPACE_MISMATCH
        return None

    def _stays_inadmissible(self, info: WorkloadInfo) -> bool:
        # Kueue moves a parked workload back only if its namespace exists and is selected
        return self.namespace_problem(info) is not None

    def _namespace_gate(self) -> Callable[[WorkloadInfo], bool] | None:
        """What keeps a parked workload parked on a requeue; nothing while the namespaces
        are unknown (no per-workload call on the hot path)."""
        return self._stays_inadmissible if self.namespaces is not None else None

    def quota_changed(self, *cluster_queues: str) -> None:
        """Quotas of these ClusterQueues changed (a raise added or expired): rebuild, and like
        any ClusterQueue spec update in Kueue, retry the inadmissible workloads around them."""
        self._rebuild()
        for name in cluster_queues:
            self.requeue_inadmissible_around(name)

    def add_raise(self, raised: QuotaRaise, now: int | None = None) -> bool:
        """Add a temporary quota raise (FieldError if its ClusterQueue, flavor or resource is
        unknown). Returns False, changing nothing, if it has already expired at `now` (default:
        the latest time seen by `schedule_cycle` / `expire_raises`)."""
        return raises.add_raise(self, raised, now)

    def expire_raises(self, now: int) -> raises.ExpiryReport:
        """Remove the raises with `expires_at <= now` and report what that leaves over quota
        (and, under the evict-newest policy, evict)."""
        return raises.expire_raises(self, now)

    def _requeue_users_of(self, flavor: str) -> None:
        for name, spec in self.cluster_queue_specs.items():
            if any(flavor in g.flavor_names for g in spec.resource_groups):
                self.requeue_inadmissible_around(name)

    def requeue_inadmissible_around(self, cluster_queue: str) -> None:
        """A cluster event in a ClusterQueue: every inadmissible workload of its cohort tree
        (or of the queue alone without a cohort) goes back to its heap."""
        runtime = self.cluster_queue_runtimes.get(cluster_queue)
        if runtime is None:
            return
        for node in runtime.node.root().subtree_cluster_queues():
            self._queue(node.name).requeue_inadmissible(self._namespace_gate())

    def _queue(self, cluster_queue: str) -> ClusterQueueQueue:
        queue = self.queues.get(cluster_queue)
        if queue is None:
            spec = self.cluster_queue_specs.get(cluster_queue)
            strategy = spec.queueing_strategy if spec is not None else STRICT_FIFO
            queue = self.queues[cluster_queue] = self._new_queue(cluster_queue, strategy)
        return queue

    def _new_queue(self, name: str, strategy: str) -> ClusterQueueQueue:
        return ClusterQueueQueue(
            name, strategy, equivalence_hashing=self.features.scheduling_equivalence_hashing
        )

    # --- workload events ------------------------------------------------------------------

    def cluster_queue_of(self, workload: Workload) -> str:
        lq = self.local_queues.get(f"{workload.namespace}/{workload.queue_name}")
        if lq is None:
            raise ValueError(
                f"workload {workload.key!r}: LocalQueue {workload.queue_name!r} does not exist "
                f"in namespace {workload.namespace!r}"
            )
        return lq.cluster_queue

    def submit(self, workload: Workload) -> str:
        """A new pending workload; returns where it was queued: "active", "inadmissible", or
        "unqueued" while its LocalQueue's ClusterQueue does not exist."""
        if workload.key in self.workloads:
            raise ValueError(f"workload {workload.key!r} already exists")
        info = WorkloadInfo(workload, self.cluster_queue_of(workload))
        self.workloads[workload.key] = info
        if info.cluster_queue not in self.cluster_queue_specs:
            self.unqueued[info.key] = info
            return UNQUEUED
        return self._queue(info.cluster_queue).add(info)

    def restore_admitted(self, workload: Workload, admission: Admission, reserved_at: int) -> None:
        """A workload that already holds quota (e.g. read from a cluster snapshot)."""
        if workload.key in self.workloads:
            raise ValueError(f"workload {workload.key!r} already exists")
        runtime = self.cluster_queue_runtimes.get(admission.cluster_queue)
        if runtime is None:
            raise ValueError(
                f"workload {workload.key!r}: ClusterQueue {admission.cluster_queue!r} not found"
            )
        info = WorkloadInfo(workload, admission.cluster_queue)
        info.set_admission(admission, reserved_at)
        self.workloads[workload.key] = info
        runtime.workloads[info.key] = info
        add_usages(runtime.node, info.usage)

    def finish(self, key: str, *, requeue_inadmissible: bool = True) -> None:
        """The workload completed (or was deleted): its quota is released.

        Kueue releases the quota at once but retries the inadmissible workloads of the cohort
        tree through a requeuer that batches notifications (`requeueBatchPeriod`, 1 s). A
        caller with a clock passes `requeue_inadmissible=False` and calls
        `requeue_inadmissible_around` itself when the batch is due."""
        info = self.workloads.pop(key, None)
        if info is None:
            raise KeyError(f"unknown workload {key!r}")
        self.pending_status.pop(key, None)
        if info.admission is not None:
            self._release(info)
        elif self.unqueued.pop(key, None) is None:
            self._queue(info.cluster_queue).remove(key)
        if requeue_inadmissible:
            self.requeue_inadmissible_around(info.cluster_queue)

    delete = finish

    def complete_eviction(self, key: str, *, requeue_inadmissible: bool = True) -> str:
        """A preempted (evicted) workload has stopped: its quota is released and it is pending
        again in its queue. Returns where it was queued. `requeue_inadmissible` as in
        `finish` (the workload itself is queued either way, as Kueue does)."""
        info = self.workloads.get(key)
        if info is None or info.admission is None:
            raise KeyError(f"workload {key!r} is not admitted")
        self._release(info)
        info.admission = None
        info.evicted = False
        info.usage = {}
        info.quota_reserved_at = None
        fresh = WorkloadInfo(info.workload, self.cluster_queue_of(info.workload))
        self.workloads[key] = fresh
        if requeue_inadmissible:
            self.requeue_inadmissible_around(info.cluster_queue)
        return self._queue(fresh.cluster_queue).add(fresh)

    def _release(self, info: WorkloadInfo) -> None:
        runtime = self.cluster_queue_runtimes.get(info.cluster_queue)
        if runtime is None:
            return
        if runtime.workloads.pop(info.key, None) is not None:
            remove_usages(runtime.node, info.usage)
        runtime.generation += 1

    # --- the cycle and its hooks ----------------------------------------------------------

    def schedule_cycle(self, now: int) -> raises.CycleResultWithExpiry:
        """Expire the raises due at `now`, then run one scheduling cycle."""
        expiry = self.expire_raises(now)
        self.cycle_number += 1
        return raises.with_expiry(run_cycle(self, now), expiry)

    def pop_heads(self) -> list[WorkloadInfo]:
        heads = []
        for name in sorted(self.queues):
            runtime = self.cluster_queue_runtimes.get(name)
            if runtime is None or not runtime.active:
                continue
            info = self.queues[name].pop()
            if info is not None:
                heads.append(info)
        return heads

    def requeue(self, info: WorkloadInfo, reason: str) -> str:
        return self._queue(info.cluster_queue).requeue(info, reason)

    def record_admission(self, info: WorkloadInfo, admission: Admission, now: int) -> None:
        """An admission of the cycle (its usage is already charged)."""
        runtime = self.cluster_queue_runtimes[admission.cluster_queue]
        info.set_admission(admission, now)
        info.last_assignment = None
        runtime.workloads[info.key] = info
        # upstream re-adds the workload on its status update, which bumps the generation
        runtime.generation += 1
        queue = self._queue(info.cluster_queue)
        if queue.sticky == info.key:
            queue.sticky = None
        self.pending_status.pop(info.key, None)

    def note_pending(self, key: str, code: str, message: str) -> None:
        self.pending_status[key] = (code, message)

    # --- queries ------------------------------------------------------------------------------

    def admitted(self) -> dict[str, WorkloadInfo]:
        return {k: i for k, i in self.workloads.items() if i.admission is not None}

    def usage(self, cluster_queue: str) -> dict[FlavorResource, int]:
        return dict(self.cluster_queue_runtimes[cluster_queue].node.usage)

    def pending_workloads(self) -> list[PendingWorkload]:
        """Every pending workload, per ClusterQueue in queue order (active heap first)."""
        out = []
        for name in sorted(self.queues):
            queue = self.queues[name]
            for info in queue.active_in_order():
                out.append(self._pending(info, q.ACTIVE))
            for key in sorted(queue.inadmissible):
                out.append(self._pending(queue.inadmissible[key], q.INADMISSIBLE))
        return out

    @staticmethod
    def _pending(info: WorkloadInfo, where: str) -> PendingWorkload:
        w = info.workload
        return PendingWorkload(info.key, info.cluster_queue, f"{w.namespace}/{w.queue_name}", where)

    def preemptor(self, now: int) -> Preemptor:
        fair = FairSharingPreemption(self.fair_sharing) if self.fair_sharing is not None else None
        return Preemptor(self.cluster_queue_runtimes, now, fair)

    def assign_flavors(
        self, key: str, now: int, oracle: PreemptionOracle | None = None
    ) -> Assignment:
        """The flavor assignment a pending workload would get now (no side effects). `oracle`
        replaces the preemption simulation (what-if: "assume preemption would succeed")."""
        info = self._pending_info(key)
        assigner = FlavorAssigner(
            info,
            self.cluster_queue_runtimes[info.cluster_queue],
            self.resource_flavors,
            oracle if oracle is not None else self.preemptor(now),
            fair_sharing=self.fair_sharing is not None,
            cycle=self.cycle_number,
            placement=self.placement,
        )
        return assigner.assign()

    def preemption_targets(self, key: str, assignment: Assignment, now: int) -> list[Target]:
        """The workloads Kueue would preempt to admit a pending workload with `assignment`."""
        return self.preemptor(now).get_targets(self._pending_info(key), assignment)

    def _pending_info(self, key: str) -> WorkloadInfo:
        info = self.workloads.get(key)
        if info is None or info.admission is not None:
            raise KeyError(f"workload {key!r} is not pending")
        return info

    def explain(self, key: str) -> reasons.PendingReason:
        return _explain(self, key)

    def copy(self) -> AdmissionState:
        """An independent copy for what-if runs: specs and workload objects are shared, usage,
        queues and per-workload state are copied."""
        new = AdmissionState.__new__(AdmissionState)
        new.resource_flavors = dict(self.resource_flavors)
        new.cluster_queue_specs = dict(self.cluster_queue_specs)
        new.cohort_specs = dict(self.cohort_specs)
        new.local_queues = dict(self.local_queues)
        new.fair_sharing = self.fair_sharing
        new.features = self.features
        new.namespaces = dict(self.namespaces) if self.namespaces is not None else None
        new.placement = self.placement
        new.raises = list(self.raises)
        new.on_expiry = self.on_expiry
        new.clock = self.clock
        new.cycle_number = self.cycle_number
        infos = {key: info.clone() for key, info in self.workloads.items()}
        new.workloads = infos
        new.tree = self.tree.clone()
        new.cluster_queue_runtimes = {
            name: runtime.clone(new.tree.cluster_queues[name], infos)
            for name, runtime in self.cluster_queue_runtimes.items()
        }
        new.queues = {name: queue.copy(infos) for name, queue in self.queues.items()}
        new.pending_status = dict(self.pending_status)
        new.unqueued = {key: infos[key] for key in self.unqueued}
        return new


def _explain(state: AdmissionState, key: str) -> reasons.PendingReason:
    info = state.workloads.get(key)
    if info is None:
        raise KeyError(f"unknown workload {key!r}")
    if info.admission is not None:
        raise ValueError(f"workload {key!r} is admitted")
    if key in state.unqueued:
        return reasons.PendingReason(
            reasons.INACTIVE_CLUSTER_QUEUE,
            f"ClusterQueue {info.cluster_queue} does not exist",
            subject=key,
            cluster_queue=info.cluster_queue,
            state=UNQUEUED,
        )
    queue = state.queues[info.cluster_queue]
    where = q.ACTIVE if queue.in_active(key) else q.INADMISSIBLE
    ordered = queue.active_in_order() + [queue.inadmissible[k] for k in sorted(queue.inadmissible)]
    position = next(i for i, other in enumerate(ordered) if other.key == key)
    lq = (info.workload.namespace, info.workload.queue_name)
    in_lq = [o for o in ordered if (o.workload.namespace, o.workload.queue_name) == lq]
    lq_position = next(i for i, other in enumerate(in_lq) if other.key == key)
    details = _quota_details(state, info)
    runtime = state.cluster_queue_runtimes.get(info.cluster_queue)
    common = dict(
        subject=key,
        cluster_queue=info.cluster_queue,
        state=where,
        position_in_cluster_queue=position,
        position_in_local_queue=lq_position,
        quota=details,
    )
    if runtime is None or not runtime.active:
        return reasons.PendingReason(
            reasons.INACTIVE_CLUSTER_QUEUE,
            f"ClusterQueue {info.cluster_queue} is inactive",
            **common,
        )
    if queue.strategy == STRICT_FIFO and where == q.ACTIVE and position > 0:
        head = ordered[0]
        return reasons.PendingReason(
            reasons.BLOCKED_BY_STRICT_FIFO_HEAD,
            f"behind {head.key} at the head of StrictFIFO ClusterQueue {info.cluster_queue}",
            blocked_by=head.key,
            **common,
        )
    status = state.pending_status.get(key)
    if status is None:
        return reasons.PendingReason(
            reasons.NOT_YET_ATTEMPTED,
            f"waiting for its turn in ClusterQueue {info.cluster_queue}",
            **common,
        )
    code, message = status
    return reasons.PendingReason(code, message, **common)


def _quota_details(state: AdmissionState, info: WorkloadInfo) -> tuple[reasons.QuotaDetail, ...]:
    runtime = state.cluster_queue_runtimes.get(info.cluster_queue)
    if runtime is None:
        return ()
    node = runtime.node
    requested: dict[str, int] = {}
    for ps in info.total_requests:
        for resource, value in ps.requests.items():
            requested[resource] = requested.get(resource, 0) + value
    out = []
    for resource in sorted(requested):
        group = runtime.rg_by_resource.get(resource)
        if group is None:
            continue
        for flavor in group.flavor_names:
            fr = (flavor, resource)
            quota = node.quotas.get(fr)
            nominal = quota.nominal if quota is not None else 0
            usage = node.usage.get(fr, 0)
            borrowable = max(0, potential_available(node, fr) - max(nominal, usage))
            out.append(
                reasons.QuotaDetail(
                    flavor,
                    resource,
                    requested[resource],
                    usage,
                    nominal,
                    available(node, fr),
                    borrowable if node.parent is not None else 0,
                )
            )
    return tuple(out)
