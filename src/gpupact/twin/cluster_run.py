"""The twin run forward from a real cluster (initial_state.py) instead of empty template nodes.

What differs from a Simulation:
- t = 0 is the cluster as read, the contract's objects applied to it; the pool minimums the
  cluster lacks are ordered at the first autoscaler scan, with their cold start;
- carried pods hold their nodes until their estimated end (pod_end.py), then leave; one
  preempted or evicted is replaced by its controller (a pending copy that, once placed, runs
  its estimated remainder again: the work it lost is not counted back) or, a bare pod, is
  gone;
- an admitted Workload releases its quota when the last of its pods ends;
- a contract job the cluster already runs (its Job exists) is not created again at t = 0;
- a contract service's replica created at t = 0 cold-starts (image pull, model load): only
  the replicas adopted from the cluster were serving before the run.
"""

from __future__ import annotations

import copy
import functools
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from gpupact.compile.core import LWS_VOLCANO_QUEUE  # the pod annotation naming a queue
from gpupact.engine.gang import PodGroup
from gpupact.kube.objects import Node, Pod, parse_pod
from gpupact.twin.control import PodRecord
from gpupact.twin.initial_state import OUTSIDE, CarriedPod, ClusterView, starting_state
from gpupact.twin.metrics import Usage
from gpupact.twin.pod_end import rule_of
from gpupact.twin.scenario import LoadedScenario
from gpupact.twin.simulation import Replica, ServiceRun, Simulation
from gpupact.twin.world import GROUP_ANNOTATION, VOLCANO

CARRIED = "carried"  # the shape tag of a carried pod's record
NOT_BEFORE_THE_RUN = float("nan")  # a creation time equal to no instant (see _started)


class ClusterSimulation(Simulation):
    """A Simulation whose t = 0 is `view` with the contract applied (initial_state.py)."""

    def __init__(
        self, loaded: LoadedScenario, view: ClusterView, *, seed: int | None = None
    ) -> None:
        self.view = view
        self.carried: dict[str, CarriedPod] = {}  # by the key of the pod holding the place now
        self.adopted: set[str] = set()  # replica names taken over from the cluster
        self._copies = 0
        self._gpu_bindings: tuple[int, dict[int, tuple[Any, ...]]] = (-1, {})
        super().__init__(loaded, seed=seed)

    # --- t = 0 ------------------------------------------------------------------------------

    def _initial_cluster(
        self, template_nodes: list[Node]
    ) -> tuple[list[Node], list[Pod], dict[str, str]]:
        """The cluster read, not the pools' template nodes (their numbering is reset)."""
        start = starting_state(self.view, self.world)
        self.start_state = start
        self.world.admission = start.admission
        self.world.volcano_queues = start.volcano_queues
        names = {n.name for n in start.nodes}
        for name, pool in self.autoscaler.pools.items():
            # the pool's new nodes are named <pool>-<n>: past any real node named that way
            taken = [
                int(m.group(1))
                for n in names
                if (m := re.fullmatch(rf"{re.escape(name)}-(\d+)", n)) is not None
            ]
            pool.next_index = max(taken, default=-1) + 1
        return start.nodes, [c.pod for c in start.pods], dict(start.pool_of_node)

    def _schedule_sources(self) -> None:
        self._carry_pods()
        super()._schedule_sources()

    def _carry_pods(self) -> None:
        adopted: dict[tuple[str, str], list[CarriedPod]] = {}
        for c in self.start_state.pods:
            if c.service is not None:
                adopted.setdefault((c.service, c.replica), []).append(c)
                continue
            pod = c.pod
            self.control.bound[pod.key] = self._record(c, pod, bound=True)
            self.carried[pod.key] = c
            if c.end.remaining is not None:
                self._at(c.end.remaining, "carried_done", pod.key)
        for (service, name), members in adopted.items():
            self._adopt_replica(self.services[service], name, members)
        # the twin names replicas <service>-<n> and job runs <job>-<n> (pods <run>-<i>), as
        # LeaderWorkerSet and indexed Jobs name theirs: number past the names in use
        taken = [c.pod.name for c in self.start_state.pods]
        for name, run in self.services.items():
            run.counter = max(run.counter, _last_index(name, taken))
        for name in self.world.jobs:
            self.job_counter[name] = max(self.job_counter[name], _last_index(name, taken))
        admission = self.world.admission
        for key, pods in self.start_state.workload_pods.items():
            if not pods:  # its pods are not running (left out with the pending ones)
                admission.finish(key)

    def _adopt_replica(self, run: ServiceRun, name: str, members: list[CarriedPod]) -> None:
        """A replica running before t = 0 (all its pods bound), serving from the start."""
        template = run.template
        size = template.pods_per_replica
        group = template.group
        if size > 1:  # each LeaderWorkerSet group is a gang of its own (as _create_replica)
            group = self._replica_group(template, name)
            self.control.groups[group.key] = group
        for c in members:
            self.control.bound[c.pod.key] = PodRecord(
                c.pod,
                name,
                template.workload_class,
                template.tenant,
                c.gpus,
                0.0,
                scheduler=c.pod.scheduler_name,
                group=group,
                shape=("service", template.service.name, name if size > 1 else ""),
                bound_at=0.0,
                node=c.pod.node_name,
                gang=group.key if group else "",
                gang_min=group.min_member if group else 1,
            )
        replica = Replica(name, [c.pod.key for c in members], 0.0, ready_at=0.0)
        run.replicas.append(replica)
        self.replica_of[name] = (run, replica)
        self.adopted.add(name)

    def _record(self, c: CarriedPod, pod: Pod, *, bound: bool) -> PodRecord:
        group = c.group
        if group is None and pod.scheduler_name == VOLCANO and not bound:
            # a recreated pod Volcano schedules with no PodGroup known: Volcano's PodGroup
            # controller gives a pod without one a group of its own (minMember 1)
            group = PodGroup(
                name=pod.annotations.get(GROUP_ANNOTATION, f"podgroup-{pod.name}"),
                namespace=pod.namespace,
                queue=pod.annotations.get(LWS_VOLCANO_QUEUE, "default"),
                min_member=1,
            )
        if group is not None:
            self.control.groups[group.key] = group
        return PodRecord(
            pod,
            f"{CARRIED}/{c.end.owner}",
            c.workload_class,
            c.tenant,
            c.gpus,
            self.now,
            scheduler=pod.scheduler_name,
            group=group,
            shape=(CARRIED, pod.key),
            bound_at=self.now if bound else None,
            node=pod.node_name if bound else None,
            gang=group.key if group else "",
            gang_min=group.min_member if group else 1,
        )

    def _on_job(self, data: Any) -> None:
        """A contract Job without a schedule is created at t = 0, unless the cluster runs it
        already: applying a Job that exists creates nothing (and the twin carries its pods)."""
        if isinstance(data, str) and self.now == 0.0 and data in self._running_jobs:
            self.metrics.event(0.0, "job-running", data, "already in the cluster: not created")
            return
        super()._on_job(data)

    @functools.cached_property
    def _running_jobs(self) -> frozenset[str]:
        """Contract jobs whose batch/v1 Job exists in the cluster (its namespace and name)."""
        return frozenset(
            name
            for name, job in self.world.jobs.items()
            if f"{job.pod.namespace}/{name}" in self.view.jobs
        )

    # --- carried pods come and go -----------------------------------------------------------

    def _on_carried_done(self, key: str) -> None:
        c = self.carried.get(key)
        rec = self.control.bound.get(key)
        if c is None or rec is None:
            return  # evicted and replaced since
        del self.carried[key]
        self.control.remove(key, self.now)
        self._close_usage(rec)
        self._pod_gone(c, key)
        self.metrics.event(
            self.now, "carried-done", key, f"{c.end.owner} ended ({c.end.basis}), GPUs free"
        )
        self._dirty = True

    def _pod_gone(self, c: CarriedPod, key: str) -> None:
        """A Workload's pod has ended: the last one releases its quota."""
        pods = self.start_state.workload_pods.get(c.workload or "")
        if pods is None or key not in pods:
            return
        pods.discard(key)
        if not pods:
            self.world.admission.finish(c.workload)  # type: ignore[arg-type]
            self.metrics.event(self.now, "workload-done", c.workload or "", "quota released")

    def _lose_pod(self, rec: PodRecord, why: str) -> None:
        c = self.carried.pop(rec.key, None)
        if c is None:
            super()._lose_pod(rec, why)
            return
        self.control.remove(rec.key, self.now)
        if rec.key not in self.control.terminating:
            self._close_usage(rec)
        self.metrics.lose(rec, self.now)
        if not c.end.recreated:
            self._pod_gone(c, rec.key)
            self.metrics.event(self.now, "carried-gone", rec.key, f"bare pod {why}")
            return
        self._copies += 1
        pod = _pending_copy(c.pod, f"{c.pod.name}-r{self._copies}")
        self.carried[pod.key] = replace(c, pod=pod)
        pods = self.start_state.workload_pods.get(c.workload or "")
        if pods is not None and rec.key in pods:
            pods.discard(rec.key)
            pods.add(pod.key)
        self.control.submit(self._record(c, pod, bound=False))
        self.metrics.event(self.now, "restart", rec.key, f"{c.end.owner} recreates it ({why})")

    def _started(self, rec: PodRecord) -> None:
        c = self.carried.get(rec.key)
        if c is not None:  # a replacement placed: it runs its estimated remainder
            if rec.key in self.control.bound and c.end.remaining is not None:
                self._at(self.now + c.end.remaining, "carried_done", rec.key)
            return
        owner = self.replica_of.get(rec.owner)
        replica = owner[1] if owner is not None else None
        if replica is None or replica.name in self.adopted or replica.created != 0.0:
            super()._started(rec)
            return
        # Simulation takes a replica created and placed at t = 0 for one serving before the
        # run; here only the adopted ones were, the contract's new ones start (pull, load).
        # Its creation time is hidden from that rule while the start is computed.
        replica.created = NOT_BEFORE_THE_RUN
        try:
            super()._started(rec)
        finally:
            replica.created = 0.0

    def _pool_bindings(self, row: int) -> tuple[Any, ...]:
        """Only the bindings holding GPUs: the pool sample sums GPUs, and a real cluster
        carries tens of pods per node without any (daemons, system pods) that the sample
        would otherwise walk at every step. Cached until the bindings change."""
        version = self.state.version
        if self._gpu_bindings[0] != version:
            self._gpu_bindings = (version, {})
        rows = self._gpu_bindings[1]
        found = rows.get(row)
        if found is None:
            found = rows[row] = tuple(b for b in self.state.pods_on(row) if b.usage.gpu is not None)
        return found

    def _usage(self, rec: PodRecord, end: float | None) -> Usage:
        usage = super()._usage(rec, end)
        if rec.shape[:1] == (CARRIED,) and not rec.tenant:
            return replace(usage, tenant=OUTSIDE)
        return usage

    # --- results ----------------------------------------------------------------------------

    def result(self) -> dict[str, Any]:
        out = super().result()
        out["startingState"] = self.starting_report()
        out["startingPods"] = [
            {
                "pod": c.pod.key,
                "node": c.pod.node_name,
                "owner": c.end.owner,
                "kind": c.end.kind,
                "class": c.workload_class,
                "gpus": round(c.gpus, 4),
                "endsAt": None if c.end.remaining is None else round(c.end.remaining, 3),
                "basis": c.end.basis,
            }
            for c in self.start_state.pods
            if c.service is None and c.gpus > 0
        ]
        return out

    def starting_report(self) -> dict[str, Any]:
        start = self.start_state
        view = start.view
        estimates: dict[str, dict[str, Any]] = {}
        for c in start.pods:
            if c.service is not None or c.gpus <= 0:
                continue
            kind = c.end.kind
            row = estimates.setdefault(
                kind,
                {
                    "rule": rule_of(kind),
                    "pods": 0,
                    "gpus": 0.0,
                    "endsInRun": 0,
                    "heldThroughRun": 0,
                    "bases": Counter(),
                },
            )
            row["pods"] += 1
            row["gpus"] = round(row["gpus"] + c.gpus, 4)
            ends = c.end.remaining is not None and c.end.remaining < self.duration
            row["endsInRun" if ends else "heldThroughRun"] += 1
            row["bases"][c.end.basis] += 1
        for row in estimates.values():
            row["bases"] = dict(sorted(row["bases"].items()))
        adopted = Counter(s for s, _ in {(c.service, c.replica) for c in start.pods if c.service})
        observed = view.observed
        return {
            "source": view.source,
            "observedAt": None
            if observed is None
            else datetime.fromtimestamp(observed, tz=UTC).isoformat(),
            "nodes": {
                "total": len(start.nodes),
                "byPool": dict(sorted(Counter(start.pool_of_node.values()).items())),
                "outsidePools": len(start.nodes) - len(start.pool_of_node),
            },
            "pods": {
                "carried": len(start.pods),
                "withGpus": sum(1 for c in start.pods if c.gpus > 0),
                "adoptedReplicas": dict(sorted(adopted.items())),  # type: ignore[arg-type]
                "pendingLeftOut": start.pending_left_out,
                "onUnknownNodes": start.on_unknown_nodes,
            },
            "estimates": dict(sorted(estimates.items())),
            "kueue": start.kueue,
        }


def _last_index(prefix: str, names: list[str]) -> int:
    """The highest n of the names `<prefix>-<n>` or `<prefix>-<n>-...` (0: none)."""
    pattern = re.compile(rf"{re.escape(prefix)}-(\d+)(?:-|$)")
    return max((int(m.group(1)) for n in names if (m := pattern.match(n))), default=0)


def _pending_copy(pod: Pod, name: str) -> Pod:
    """The pod its controller creates in place of an evicted one: same spec (and priority),
    no node, Pending."""
    raw = copy.deepcopy(dict(pod.raw))
    meta = dict(raw.get("metadata") or {})
    meta["name"] = name
    meta.pop("deletionTimestamp", None)
    meta["uid"] = f"{meta.get('uid', '')}-{name}"
    spec = dict(raw.get("spec") or {})
    if spec.get("schedulerName") == VOLCANO:
        # Volcano's PodGroup controller names a group of its own for a pod without one
        # `podgroup-<uid of its controller, else of the pod>` and annotates the pod with it
        refs = [r for r in meta.get("ownerReferences") or [] if isinstance(r, dict)]
        owner = next((r for r in refs if r.get("controller") is True), None)
        uid = (owner or {}).get("uid") or meta["uid"]
        meta["annotations"] = {
            GROUP_ANNOTATION: f"podgroup-{uid}",
            **(meta.get("annotations") or {}),
        }
    spec.pop("nodeName", None)
    spec["priority"] = pod.priority
    raw.update(metadata=meta, spec=spec, status={"phase": "Pending"})
    return parse_pod(raw)


def simulate_from(
    loaded: LoadedScenario,
    view: ClusterView,
    *,
    seed: int | None = None,
    progress: Callable[[float], None] | None = None,
) -> dict[str, Any]:
    return ClusterSimulation(loaded, view, seed=seed).run(progress)
