"""The discrete-event twin: the contract's cluster run forward in simulated time.

An event heap drives everything with an injected clock (seconds since the scenario's start;
nothing reads the wall clock). At each instant the due events are applied — job arrivals, pods
finishing, nodes joining, faults, the periodic controllers (HPA sync, autoscaler scan, the
serving tick) — and then the cluster reconciles, as its controllers would:

1. Kueue admission cycles (the engine's AdmissionState) admit queued jobs; an admitted job's
   pods are created with the flavor's node labels (Kueue's podSet injection);
2. the control plane places pending pods (kube-scheduler semantics, DefaultPreemption with
   the contract's protection rules, Volcano sessions for gangs);
3. pods that got a node are bound `bindLatency` later and start: a service replica serves
   after its image pull (skipped when the node has the image: kubelet's IfNotPresent) and model
   load (`cachedModelLoad` when the pool caches weights on the node and the node loaded the
   model before), a job pod runs for its duration;
4. node provisioning follows the compiled provisioner's timing (Karpenter's batch window,
   cluster-autoscaler's scan), and pre-warm windows run as their compiled placeholder pods.

The same seed gives the same run.
"""

from __future__ import annotations

import copy
import heapq
import math
import random
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from gpupact.cluster.state import ClusterState
from gpupact.compile.core import LWS_VOLCANO_QUEUE
from gpupact.engine.admission import reasons as kueue_reasons
from gpupact.engine.admission.cycle import CycleResult
from gpupact.engine.gang import PodGroup
from gpupact.engine.placement.scheduler import Profile, Scheduler
from gpupact.kube.objects import Pod
from gpupact.kube.resources_fit import DEFAULT_RESOURCES, ResourceSpec
from gpupact.plan.serving import replica_serving
from gpupact.twin.autoscaler import (
    EXPENDABLE_PRIORITY_CUTOFF,
    Autoscaler,
    Batcher,
    node_pool_settings,
)
from gpupact.twin.control import ControlPlane, PodRecord, Preemption
from gpupact.twin.cron import fire_times, zone_of
from gpupact.twin.hpa import HpaController, metric_total
from gpupact.twin.load_curve import mean_rate
from gpupact.twin.metric_delay import MetricPipeline, QueueSample, queue_counts
from gpupact.twin.metrics import PendingSample, Recorder, Usage, finite, summarize
from gpupact.twin.prewarm import PLACEHOLDER_CLASS, PrewarmRun, prewarm_jobs, prewarm_runs
from gpupact.twin.scenario import FaultKind, LoadedScenario, Provisioner
from gpupact.twin.serving import EngineQueue
from gpupact.twin.world import (
    GROUP_ANNOTATION,
    LWS_GROUP_KEY,
    JobTemplate,
    ServiceTemplate,
    build_world,
    cluster_queues_at,
    lws_affinity,
    raise_expiries,
    rfc3339,
)

GPU = "nvidia.com/gpu"
# Kueue's QuotaReserved=False reasons that mean "not enough quota" (not misconfiguration)
QUOTA_REASONS = frozenset({kueue_reasons.WAITING_FOR_QUOTA, kueue_reasons.EXCEEDS_MAX_QUOTA})
MAX_ADMISSION_CYCLES = 64  # per instant; Kueue runs cycles back to back while heads admit
DRIVER_LABEL = "nvidia.com/cuda.driver.major"
DEFAULT_TTFT_SLO = 2.0
# Karpenter's pod controller re-triggers the provisioner for a pod still provisionable every
# 10 s (kubernetes-sigs/karpenter pkg/controllers/provisioning/controller.go, PodController:
# RequeueAfter 10s "until the pod is no longer provisionable")
KARPENTER_POD_REQUEUE_S = 10.0


@dataclass(frozen=True)
class StartPhases:
    """A service pod's start after binding: image pull, then model load (from the node's
    cache when the pool has one and the node holds the model)."""

    image_pull_s: float
    model_load_s: float
    cached_load_s: float | None  # None: no node cache


@dataclass(eq=False)
class Replica:
    name: str
    pods: list[str]
    created: float
    ready_at: float | None = None
    counted: bool = False  # its time-to-serving samples are recorded


@dataclass(eq=False)
class ServiceRun:
    template: ServiceTemplate
    hpa: HpaController | None
    queue: EngineQueue
    slo: float | None
    metrics: MetricPipeline = field(default_factory=MetricPipeline)  # what the HPA sees
    replicas: list[Replica] = field(default_factory=list)
    desired: int = 0
    counter: int = 0

    def ready(self, now: float) -> list[Replica]:
        return [r for r in self.replicas if r.ready_at is not None and r.ready_at <= now]


@dataclass(eq=False)
class JobRun:
    name: str
    template: JobTemplate
    submitted: float
    pods: list[str] = field(default_factory=list)
    started: float | None = None
    generation: int = 0
    done: bool = False
    workload_key: str | None = None
    node_selector: dict[str, str] = field(default_factory=dict)
    restarts: int = 0
    waiting_since: float = 0.0  # submitted, or last restarted / evicted
    duration: float = 0.0  # how long its pods run once started


class Simulation:
    def __init__(self, loaded: LoadedScenario, *, seed: int | None = None) -> None:
        self.loaded = loaded
        scenario = loaded.scenario
        self.scenario = scenario
        self.seed = scenario.seed if seed is None else seed
        self.rng = random.Random(self.seed)
        self.world = build_world(loaded)
        self.start = scenario.start
        self.t0 = scenario.start.timestamp()
        self.duration = scenario.duration.total_seconds()
        self.step = scenario.step.total_seconds()
        self.now = 0.0
        self.metrics = Recorder()
        self._events: list[tuple[float, int, str, Any]] = []
        self._seq = 0
        self.autoscaler = Autoscaler(
            list(self.world.pools.values()), enabled=scenario.autoscaler.enabled
        )
        settings = scenario.autoscaler
        self.provisioner = settings.provisioner
        self.batcher = Batcher(
            settings.batch_idle_duration.total_seconds(),
            settings.batch_max_duration.total_seconds(),
        )
        self.unneeded_s = self._provisioner_bounds()
        self.bind_latency = scenario.bind_latency.total_seconds()
        pcs = {o["metadata"]["name"]: o for o in self.world.bundle.of_kind("PriorityClass")}
        self.prewarm = prewarm_runs(prewarm_jobs(self.world.bundle, pcs), self.start, self.duration)
        nodes = []
        for name, pool in self.autoscaler.pools.items():
            # a window already open at t = 0 has held its nodes since it fired
            held = sum(r.job.pods for r in self.prewarm if r.job.pool == name and r.begin <= 0)
            count = min(self.autoscaler.minimum_nodes(name) + held, pool.maximum)
            for _ in range(count):
                nodes.append(pool.template.node(pool.next_index))
                pool.next_index += 1
        nodes, bound, pool_of_node = self._initial_cluster(nodes)
        state = ClusterState.from_nodes(nodes, bound)
        for row, node in enumerate(nodes):
            if node.name in pool_of_node:
                self.autoscaler.pools[pool_of_node[node.name]].rows.append(row)
        self.state = state
        self.control = ControlPlane(
            state,
            Scheduler(state, scheduler_profile(scenario.scoring), seed=self.seed),
            self.world.protection,
            self.world.volcano_queues,
            self.world.priorities,
            gang_scheduling=scenario.gang_scheduling,
            t0=self.t0,
            bind_latency=self.bind_latency,
        )
        if self.world.volcano_actions is not None:
            self.control.volcano_actions = self.world.volcano_actions
        self.pool_of_node = pool_of_node
        self.services: dict[str, ServiceRun] = {}
        for name, template in self.world.services.items():
            self.services[name] = self._service_run(template)
        self.jobs: dict[str, JobRun] = {}
        self.job_of_workload: dict[str, JobRun] = {}
        self.replica_of: dict[str, tuple[ServiceRun, Replica]] = {}  # replica name -> owner
        self.job_counter: dict[str, int] = defaultdict(int)
        self.rates = {
            load.service: [(p.at.total_seconds(), float(p.value)) for p in load.rps]
            for load in scenario.load
        }
        self.phases = {name: self._start_phases(t) for name, t in self.world.services.items()}
        # what each node holds: image -> when it is there; model -> when it is cached
        self.node_images: dict[str, dict[str, float]] = defaultdict(dict)
        self.node_models: dict[str, dict[str, float]] = defaultdict(dict)
        self.pod_ready: dict[str, float] = {}  # service pod -> when it is Ready
        self.placeholders: dict[str, list[str]] = {}  # open pre-warm Job -> its pod keys
        self._prewarm_by_name = {r.name: r for r in self.prewarm}
        self.placeholder_owners: set[str] = set()  # every pre-warm Job of the run
        self._placeholder_counter = 0
        self._seen_unschedulable: set[str] = set()  # pods that triggered Karpenter's batcher
        self._retrigger = False
        self._degraded: set[int] = set()  # rows whose device plugin is down
        self._fault_rows: dict[int, list[int]] = {}  # fault index -> the rows it struck
        self._dirty = True
        self._schedule_sources()
        self.control.bind_latency = 0.0  # the starting replicas were bound before t = 0
        self._reconcile()  # the services' minimum replicas run from t = 0
        self.control.bind_latency = self.bind_latency

    # --- setup --------------------------------------------------------------------------

    def _initial_cluster(self, template_nodes: list[Any]) -> tuple[list[Any], list[Any], dict]:
        """The Nodes at t = 0, the Pods already bound to them, and each pool node's pool: the
        pools' template nodes, nothing running (a ClusterSimulation starts from a cluster)."""
        return template_nodes, [], {n.name: n.labels["nodepool"] for n in template_nodes}

    def _service_run(self, template: ServiceTemplate) -> ServiceRun:
        contract = self.world.contract
        pool = self.world.pools[template.pool].pool
        timeslice = pool.sharing.replicas if pool.sharing.mode == "timeslice" else 1
        serving = replica_serving(contract, template.service, timeslice=int(timeslice))
        hpa = None
        if template.hpa is not None:
            hpa = HpaController(
                template.hpa,
                tolerance=self.scenario.hpa.tolerance,
                default_up_window=self.scenario.hpa.scale_up_stabilization.total_seconds(),
                default_down_window=self.scenario.hpa.scale_down_stabilization.total_seconds(),
            )
        run = ServiceRun(
            template,
            hpa,
            EngineQueue(serving.curve),
            ttft_slo(template),
            MetricPipeline(
                self.scenario.hpa.metric_scrape_interval.total_seconds(),
                self.scenario.hpa.metric_adapter_delay.total_seconds(),
            ),
        )
        run.desired = template.min_replicas
        return run

    def _schedule_sources(self) -> None:
        scenario = self.scenario
        for t in _range(0.0, self.duration, self.step):
            self._at(t, "tick")
        sync = scenario.hpa.sync_period.total_seconds()
        for t in _range(sync, self.duration, sync):
            self._at(t, "hpa")
        scan = scenario.autoscaler.scan_interval.total_seconds()
        for t in _range(0.0, self.duration, scan):
            self._at(t, "autoscale")
        end = self.start + timedelta(seconds=self.duration)
        for arrivals in scenario.jobs:
            if arrivals.contract:
                for job in self.world.contract.jobs:
                    template = self.world.jobs[job.name]
                    if job.schedule is None:
                        self._at(0.0, "job", template.name)
                        continue
                    zone = zone_of(template.time_zone)  # the compiled CronJob's
                    for moment in fire_times(job.schedule, self.start, end, zone):
                        self._at((moment - self.start).total_seconds(), "job", template.name)
        for arrivals, name in self.world.generated:
            if not arrivals.per_hour:
                continue
            t = arrivals.start.total_seconds()
            stop = min(
                self.duration, arrivals.end.total_seconds() if arrivals.end else self.duration
            )
            rate = arrivals.per_hour / 3600
            while True:
                t += self.rng.expovariate(rate)
                if t >= stop:
                    break
                jitter = arrivals.duration_jitter
                factor = 1 + self.rng.uniform(-jitter, jitter) if jitter else 1.0
                self._at(t, "job", (name, arrivals.duration.total_seconds() * factor))
        for t, name, duration in self.world.traced:
            self._at(t, "job", (name, duration))
        for moment in raise_expiries(self.world.contract, self.start, end):
            self._at((moment - self.start).total_seconds(), "raise_expired", moment)
        for i, fault in enumerate(scenario.faults):
            self._at(fault.at.total_seconds(), "fault", i)
            if fault.recover_after is not None:
                self._at((fault.at + fault.recover_after).total_seconds(), "recover", i)
        for run in self.prewarm:
            self._at(max(run.begin, 0.0), "prewarm_start", run)
            if run.end < self.duration:
                self._at(run.end, "prewarm_end", run)
        for run in self.services.values():
            self._scale_service(run, run.desired, 0.0)

    def _provisioner_bounds(self) -> dict[str, float]:
        """Per pool, how long a node stays empty before it goes, and (Karpenter) how far it
        grows: the compiled NodePool's consolidateAfter and `nodes.min` + limits.nodes (a
        pool without a NodePool has no elastic nodes); cluster-autoscaler: its
        scale-down-unneeded-time, the node group bounds being the contract's."""
        settings = self.scenario.autoscaler
        if settings.provisioner is Provisioner.cluster_autoscaler:
            unneeded = settings.scale_down_unneeded.total_seconds()
            return {name: unneeded for name in self.world.pools}
        compiled = node_pool_settings(self.world.bundle.of_kind("NodePool"))
        out = {}
        for name, pool in self.autoscaler.pools.items():
            node_pool = compiled.get(name)
            if node_pool is None:
                pool.maximum = pool.minimum
                out[name] = math.inf
                continue
            if node_pool.limit_nodes is not None:
                pool.maximum = pool.minimum + node_pool.limit_nodes
            out[name] = node_pool.consolidate_after_s
        return out

    def _start_phases(self, template: ServiceTemplate) -> StartPhases:
        """The pull / load split of a replica's start. A service's own `coldStart` is its
        whole start: the pool's image pull (at most that long) and the rest model load."""
        pool = self.world.pools[template.pool]
        pull = min(pool.image_pull_s, template.pod_start_s)
        load = template.pod_start_s - pull
        cold = pool.pool.cold_start
        cached = None
        if cold.cached_model_load is not None:
            cached = min(cold.cached_model_load.total_seconds(), load)
        return StartPhases(pull, load, cached)

    def _at(self, t: float, kind: str, data: Any = None) -> None:
        self._seq += 1
        heapq.heappush(self._events, (t, self._seq, kind, data))

    # --- running --------------------------------------------------------------------------

    def run_until(self, t: float, progress: Callable[[float], None] | None = None) -> None:
        t = min(t, self.duration)
        while self._events and self._events[0][0] <= t:
            now = self._events[0][0]
            self.now = now
            while self._events and self._events[0][0] == now:
                _, _, kind, data = heapq.heappop(self._events)
                getattr(self, f"_on_{kind}")(data)
            self._reconcile()
            if progress is not None:
                progress(now)
        self.now = max(self.now, t)

    def run(self, progress: Callable[[float], None] | None = None) -> dict[str, Any]:
        self.run_until(self.duration, progress)
        return self.result()

    # --- events ---------------------------------------------------------------------------

    def _on_tick(self, _: Any) -> None:
        now = self.now
        dt = self.step
        for name, run in self.services.items():
            rps = mean_rate(self.rates.get(name, ()), now, now + dt)  # the tick's arrivals
            ready = len(run.ready(now))
            latency = run.queue.step(rps, ready, dt)
            running, waiting = queue_counts(run.queue)
            util_total = run.queue.utilisation(ready) * 100 * ready
            run.metrics.record(QueueSample(now, running, waiting, util_total))
            self.metrics.sample_service(
                name,
                t=now,
                rps=round(rps, 3),
                desired=run.desired,
                ready=ready,
                pending=sum(1 for r in run.replicas if r.ready_at is None),
                queue=round(run.queue.queue_length, 2),
                ttftP50=finite(latency.ttft_p50_s),
                ttftP99=finite(latency.ttft_p99_s),
                tpotP50=finite(latency.tpot_p50_s),
                tpotP99=finite(latency.tpot_p99_s),
                utilisation=round(run.queue.utilisation(ready), 4),
            )
        self._sample_pools(now)
        self._integrate_gangs(dt)
        self.metrics.times.append(now)

    def _sample_pools(self, now: float) -> None:
        busy_by_pod: dict[str, float] = {}
        for run in self.services.values():
            ready = run.ready(now)
            util = run.queue.utilisation(len(ready))
            for replica in run.replicas:
                for key in replica.pods:
                    busy_by_pod[key] = util if replica in ready else 0.0
        for name, pool in self.autoscaler.pools.items():
            per_node = pool.template.pool.gpu.per_node
            allocated = busy = held = 0.0
            for row in pool.rows:
                for b in self._pool_bindings(row):
                    rec = self.control.bound.get(b.key)
                    if rec is None:
                        continue
                    if self._placeholder(rec):
                        held += rec.gpus
                        continue
                    allocated += rec.gpus
                    busy += rec.gpus * busy_by_pod.get(b.key, 1.0)
            self.metrics.sample_pool(
                name,
                t=now,
                nodes=len(pool.rows),
                provisioning=pool.provisioning,
                gpus=len(pool.rows) * per_node,
                unavailable=sum(per_node for r in pool.rows if r in self._degraded),
                allocated=round(allocated, 3),
                busy=round(busy, 3),
                placeholder=round(held, 3),
            )

    def _pool_bindings(self, row: int) -> tuple[Any, ...]:
        """The bindings on a node that _sample_pools sums (all of them here)."""
        return self.state.pods_on(row)

    def _integrate_gangs(self, dt: float) -> None:
        """GPU-seconds held by gangs with fewer than minMember pods bound (43.3's waste: the
        started half holds GPUs while the rest waits)."""
        bound_by_gang: dict[str, list[PodRecord]] = defaultdict(list)
        for rec in self.control.bound.values():
            if rec.gang_min > 1:
                bound_by_gang[rec.gang].append(rec)
        for recs in bound_by_gang.values():
            if len(recs) < recs[0].gang_min:
                self.metrics.incomplete_gang_gpu_s += sum(r.gpus for r in recs) * dt

    def _on_hpa(self, _: Any) -> None:
        now = self.now
        for name, run in self.services.items():
            if run.hpa is None:
                continue
            ready = run.ready(now)
            not_ready = len(run.replicas) - len(ready)
            sample = run.metrics.visible(now)  # the scrape the adapter serves now
            if sample is None:
                continue
            total = metric_total(run.hpa.spec, sample)
            desired = run.hpa.decide(now, run.desired, len(ready), not_ready, total)
            if desired != run.desired:
                self.metrics.event(now, "scale", name, f"HPA {run.desired} -> {desired} replicas")
                self._scale_service(run, desired, now)

    def _unschedulable(self) -> list[PodRecord]:
        """Pods the scheduler found no node for, not waiting for a preemption (nominated)."""
        generation = self.control.generation
        return [
            r
            for r in self.control.pending.values()
            if r.blocked_at == generation and not r.pod.nominated_node_name
        ]

    def _provision(self, pods: list[Pod], why: str) -> None:
        for name, count in self.autoscaler.wanted(pods).items():
            self._order_nodes(name, count, why)

    def _on_autoscale(self, _: Any) -> None:
        """The periodic pass: cluster-autoscaler's scan (scale-up and scale-down), or for
        Karpenter the disruption check (scale-up runs on its batch windows)."""
        now = self.now
        scaler = self.autoscaler
        if self.provisioner is Provisioner.cluster_autoscaler:
            delay = self.scenario.autoscaler.new_pod_scale_up_delay.total_seconds()
            pods = [
                r.pod
                for r in self._unschedulable()
                if now - r.created >= delay and r.pod.priority >= EXPENDABLE_PRIORITY_CUTOFF
            ]
            self._provision(pods, "unschedulable pods, cluster-autoscaler scan")
        for name, pool in scaler.pools.items():
            minimum = scaler.minimum_nodes(name)
            short = minimum - len(pool.rows) - pool.provisioning
            if short > 0:
                self._order_nodes(name, short, "pool minimum")
            busy = {row for row in pool.rows if self.state.pods_on(row)}
            for row in scaler.to_remove(name, now, self.unneeded_s[name], minimum, busy):
                self._remove_node(row, "scale-down: empty")

    def _watch_unschedulable(self, blocked: list[PodRecord], *, again: bool = False) -> None:
        """Karpenter's pod watch: a pod newly found unschedulable (or, `again`, any still
        unschedulable after a node left) opens or extends the batch window."""
        if self.provisioner is not Provisioner.karpenter or not self.autoscaler.enabled:
            return
        if again:
            fresh = self._unschedulable()
        else:  # only what this pass found: cheap when thousands of pods wait
            generation = self.control.generation
            fresh = [
                r
                for r in blocked
                if r.key not in self._seen_unschedulable
                and r.blocked_at == generation
                and r.key in self.control.pending
                and not r.pod.nominated_node_name
            ]
        if not fresh:
            return
        self._seen_unschedulable.update(r.key for r in fresh)
        self._at(self.batcher.trigger(self.now), "batch_closed")

    def _on_batch_closed(self, _: Any) -> None:
        if not self.batcher.due(self.now):
            return  # the window was extended: a later event closes it
        self.batcher.close()
        pods = [r.pod for r in self._unschedulable()]
        self._provision(pods, "unschedulable pods, Karpenter batch")
        if pods:  # Karpenter's pod controller requeues a provisionable pod
            self._at(self.now + KARPENTER_POD_REQUEUE_S, "karpenter_requeue")

    def _on_karpenter_requeue(self, _: Any) -> None:
        if self.batcher.opened is None:
            self._watch_unschedulable([], again=True)

    def _order_nodes(self, pool_name: str, count: int, why: str) -> None:
        pool = self.autoscaler.pools[pool_name]
        pool.provisioning += count
        ready_in = pool.template.node_ready_s
        self.metrics.event(
            self.now,
            "scale-up",
            pool_name,
            f"{count} node(s) ordered ({why}); Ready in {ready_in:.0f}s",
        )
        for _ in range(count):
            self._at(self.now + ready_in, "node_ready", pool_name)

    def _on_node_ready(self, pool_name: str) -> None:
        pool = self.autoscaler.pools[pool_name]
        pool.provisioning -= 1
        node = pool.template.node(pool.next_index)
        pool.next_index += 1
        row = self.state.add_node(node)
        pool.rows.append(row)
        self.pool_of_node[node.name] = pool_name
        self.control.capacity_changed()
        self._dirty = True
        self.metrics.event(self.now, "node-ready", node.name, f"joined pool {pool_name}")

    def _remove_node(self, row: int, why: str) -> None:
        name = self.state.node_names[row]
        pool = self.autoscaler.pools[self.pool_of_node[name]]
        for rec in self.control.on_node(name):
            self._lose_pod(rec, f"node {name} gone")
        for key in [k for k, r in self.control.terminating.items() if r.node == name]:
            self._on_terminated(key)  # its grace period ends with the node
        self.state.remove_node(row)
        pool.rows.remove(row)
        pool.empty_since.pop(row, None)
        self._degraded.discard(row)
        self.node_images.pop(name, None)  # the node's disk goes with it
        self.node_models.pop(name, None)
        self.control.capacity_changed()
        self._dirty = True
        self._retrigger = True  # Karpenter re-evaluates pending pods when a node goes
        self.metrics.event(self.now, "node-removed", name, why)

    def _on_fault(self, index: int) -> None:
        fault = self.scenario.faults[index]
        pool = self.autoscaler.pools[fault.pool]
        rows = [r for r in pool.rows if r not in self._degraded][: fault.nodes]
        for row in rows:
            name = self.state.node_names[row]
            if fault.kind is FaultKind.device_plugin_lost:
                self.state.set_allocatable(row, pool.template.pool.sharing.resource_name, 0)
                self._degraded.add(row)
                self.metrics.event(
                    self.now, "fault", name, "device plugin lost: Ready, GPU allocatable 0"
                )
            elif fault.kind is FaultKind.node_down:
                self._remove_node(row, "fault: node down")
            else:
                node = self.state.nodes[row]
                labels = {**node.labels, DRIVER_LABEL: "drifted"}
                self.state.replace_node(row, replace(node, labels=labels))
                self.metrics.event(
                    self.now, "fault", name, "driver drift: driver label differs from the pool"
                )
        self._fault_rows[index] = rows
        self.control.capacity_changed()
        self._dirty = True

    def _on_recover(self, index: int) -> None:
        fault = self.scenario.faults[index]
        pool = self.autoscaler.pools[fault.pool]
        for row in self._fault_rows.get(index, []):
            if (
                fault.kind is FaultKind.device_plugin_lost
                and row in self._degraded
                and row in pool.rows
            ):
                self.state.set_allocatable(
                    row,
                    pool.template.pool.sharing.resource_name,
                    pool.template.pool.devices_per_node,
                )
                self._degraded.discard(row)
                self.metrics.event(
                    self.now, "recovered", self.state.node_names[row], "device plugin back"
                )
        self.control.capacity_changed()
        self._dirty = True

    def _on_job(self, data: Any) -> None:
        if isinstance(data, tuple):
            name, duration = data
        else:
            name, duration = data, None
        template = self.world.jobs[name]
        self.job_counter[name] += 1
        run_name = f"{name}-{self.job_counter[name]}"
        run = JobRun(
            run_name,
            template,
            self.now,
            waiting_since=self.now,
            duration=duration if duration is not None else template.duration_s,
        )
        self.jobs[run_name] = run
        if template.kueue_queue:
            workload = self.world.workload(template, run_name, int(self.now * 1000))
            self.world.admission.submit(workload)
            run.workload_key = workload.key
            self.job_of_workload[workload.key] = run
        else:
            self._start_job_pods(run)
        self._dirty = True

    def _on_raise_expired(self, moment: datetime) -> None:
        """A temporary raise ends: the ClusterQueues drop to what compile writes after it.
        Kueue evicts nothing for a lower nominalQuota; admitted workloads keep their usage
        (the excess counts as borrowing from the cohort, which cohort mates may reclaim by
        preemption per their policies), and new workloads are admitted against the lower
        quota."""
        admission = self.world.admission
        for spec in cluster_queues_at(self.world.contract, moment):
            if admission.cluster_queue_specs.get(spec.name) != spec:
                admission.set_cluster_queue(spec)
                self.metrics.event(
                    self.now, "quota-raise-expired", spec.name, "quota raise expired"
                )
        self._dirty = True

    def _on_prewarm_start(self, run: PrewarmRun) -> None:
        """A pre-warm CronJob fired (or had fired before t = 0): its Job's placeholders."""
        self.placeholder_owners.add(run.name)
        self.placeholders[run.name] = []
        for _ in range(run.job.pods):
            self._create_placeholder(run.name)
        self.metrics.event(
            self.now,
            "prewarm",
            run.name,
            f"{run.job.pods} placeholder pod(s) hold pool {run.job.pool} "
            f"until t={run.end:.0f}s (activeDeadlineSeconds)",
        )
        self._dirty = True

    def _on_prewarm_end(self, run: PrewarmRun) -> None:
        """The Job's activeDeadlineSeconds passed: the Job controller deletes its pods (grace
        period 0: their nodes are free at once, empty ones scale down)."""
        for key in self.placeholders.pop(run.name, []):
            self.control.remove(key, self.now)
        self.metrics.event(self.now, "prewarm-end", run.name, "pre-warm window over")
        self._dirty = True

    def _create_placeholder(self, owner: str) -> None:
        run = self._prewarm_by_name[owner]
        self._placeholder_counter += 1
        pod = run.job.pod.make(
            f"{owner}-{self._placeholder_counter}", created=rfc3339(self.start, self.now)
        )
        rec = PodRecord(
            pod,
            owner,
            PLACEHOLDER_CLASS,
            "",
            float(self.world.pools[run.job.pool].pool.gpu.per_node),
            self.now,
            scheduler=pod.scheduler_name,
            shape=("placeholder", run.job.name),
        )
        self.control.submit(rec)
        self.placeholders[owner].append(pod.key)
        self._dirty = True

    def _on_pod_done(self, data: tuple[str, str, int]) -> None:
        run_name, key, generation = data
        run = self.jobs.get(run_name)
        if run is None or run.generation != generation or run.done or key not in run.pods:
            return  # a later run, or a pod lost and replaced since
        rec = self.control.remove(key, self.now)
        if rec is not None:
            self._close_usage(rec)
        run.pods.remove(key)
        if not run.pods:
            self._finish_job(run)
        self._dirty = True

    def _on_gang_done(self, data: tuple[str, int]) -> None:
        run_name, generation = data
        run = self.jobs.get(run_name)
        if run is None or run.generation != generation or run.done:
            return
        for key in list(run.pods):
            rec = self.control.remove(key, self.now)
            if rec is not None:
                self._close_usage(rec)
                self._finish_pending_sample(rec)  # members beyond minMember still waited
        run.pods = []
        self._finish_job(run)
        self._dirty = True

    def _finish_job(self, run: JobRun) -> None:
        run.done = True
        if run.workload_key is not None:
            self.world.admission.finish(run.workload_key)
        self.metrics.event(
            self.now, "job-done", run.name, f"finished after {self.now - run.submitted:.0f}s"
        )

    # --- pods -----------------------------------------------------------------------------

    def _scale_service(self, run: ServiceRun, desired: int, now: float) -> None:
        template = run.template
        while len(run.replicas) < desired:
            run.counter += 1
            self._create_replica(run, f"{template.service.name}-{run.counter}")
        if len(run.replicas) > desired:
            # ReplicaSet scale-down order: unscheduled first, then not ready, then the newest
            order = sorted(
                run.replicas,
                key=lambda r: (
                    all(k in self.control.pending for k in r.pods),
                    r.ready_at is None,
                    r.created,
                ),
                reverse=True,
            )
            for replica in order[: len(run.replicas) - desired]:
                self._delete_replica(run, replica)
        run.desired = desired
        self._dirty = True

    def _delete_replica(
        self, run: ServiceRun, replica: Replica, gone: PodRecord | None = None
    ) -> None:
        """Delete a replica's pods (`gone`: one already removed, lost or preempted). A replica
        that never served counts its pods as still waiting to serve (censored)."""
        for key in replica.pods:
            rec = self.control.remove(key, self.now)
            if rec is not None:
                self._finish_pending_sample(rec)
                self._close_usage(rec)
            elif gone is not None and gone.key == key:
                rec = gone
            if rec is not None and not replica.counted:
                self.metrics.serving.append(
                    PendingSample(
                        rec.workload_class, self.now - rec.wait_start, rec.owner, censored=True
                    )
                )
            self.pod_ready.pop(key, None)
        run.replicas.remove(replica)
        del self.replica_of[replica.name]

    def _create_replica(self, run: ServiceRun, name: str) -> None:
        template = run.template
        size = template.pods_per_replica
        group = template.group  # `gang: service`: the service's one PodGroup, else none
        labels: dict[str, str] = {}
        annotations: dict[str, str] = {}
        patch: dict[str, Any] = {}
        if size > 1:
            labels[LWS_GROUP_KEY] = name
            annotations[GROUP_ANNOTATION] = name
            group = self._replica_group(template, name)
            if template.exclusive_topology:
                affinity = dict(template.pod.template["spec"].get("affinity", {}))
                affinity.update(lws_affinity(name, template.exclusive_topology))
                patch["affinity"] = affinity
        keys = []
        for i in range(size):
            pod = template.pod.make(
                f"{name}-{i}" if size > 1 else name,
                created=rfc3339(self.start, self.now),
                labels=labels,
                annotations=annotations,
                spec_patch=patch,
            )
            rec = PodRecord(
                pod,
                name,
                template.workload_class,
                template.tenant,
                template.gpus_per_pod,
                self.now,
                scheduler=pod.scheduler_name,
                group=group,
                shape=("service", template.service.name, name if size > 1 else ""),
                gang=group.key if group else "",
                gang_min=group.min_member if group else 1,
            )
            self.control.submit(rec)
            keys.append(pod.key)
        replica = Replica(name, keys, self.now)
        run.replicas.append(replica)
        self.replica_of[name] = (run, replica)

    def _replica_group(self, template: ServiceTemplate, name: str) -> PodGroup:
        """A multi-pod replica's own gang (a LeaderWorkerSet group: one PodGroup of `size`)."""
        return PodGroup(
            name=name,
            namespace=template.pod.namespace,
            queue=self._service_queue(template),
            min_member=template.pods_per_replica,
            priority_class_name=template.pod.template["spec"].get("priorityClassName", ""),
        )

    def _service_queue(self, template: ServiceTemplate) -> str:
        """The Volcano queue of a gang replica: LWS creates each replica's PodGroup in the
        queue its LeaderWorkerSet names (compile writes no PodGroup for those)."""
        name, namespace = template.service.name, template.pod.namespace
        lws = self.world.bundle.find("LeaderWorkerSet", name, namespace)
        if lws is not None:
            return lws["metadata"].get("annotations", {}).get(LWS_VOLCANO_QUEUE, "default")
        group = self.world.bundle.find("PodGroup", name, namespace)
        return group["spec"].get("queue", "default") if group is not None else "default"

    def _start_job_pods(self, run: JobRun, indices: list[int] | None = None) -> None:
        """Create the run's pods: all of them, or replacements for the given indices (whose
        wait starts now; the run's own wait start stays)."""
        template = run.template
        group = None
        annotations: dict[str, str] = {}
        if template.min_member > 1:
            annotations[GROUP_ANNOTATION] = run.name
            group = PodGroup(
                name=run.name,
                namespace=template.pod.namespace,
                queue=template.volcano_queue or "default",
                min_member=template.min_member,
                priority_class_name=template.pod.template["spec"].get("priorityClassName", ""),
            )
        replacement = indices is not None
        if indices is None:
            run.pods = []
            run.started = None
            indices = list(range(template.pods))
        for i in indices:
            pod = template.pod.make(
                f"{run.name}-{i}-r{run.restarts}" if run.restarts else f"{run.name}-{i}",
                created=rfc3339(self.start, self.now),
                annotations=annotations,
                node_selector=run.node_selector,
            )
            record = PodRecord(
                pod,
                run.name,
                template.workload_class,
                template.tenant,
                template.gpus_per_pod,
                self.now,
                scheduler=pod.scheduler_name,
                group=group,
                shape=("job", template.name, tuple(sorted(run.node_selector.items()))),
                gang=group.key if group else "",
                gang_min=template.min_member,
                # time to GPU counts from submission (a replacement: from now)
                waiting_since=self.now if replacement else run.waiting_since,
                restarts=run.restarts,
            )
            self.control.submit(record)
            run.pods.append(pod.key)

    def _lose_pod(self, rec: PodRecord, why: str) -> None:
        """A bound pod is gone (preempted, its node lost): its owner reacts as upstream's
        controllers do — a Deployment or LWS group recreates, a Job replaces the pod, a
        Volcano gang restarts whole (policy PodEvicted: RestartJob)."""
        self.control.remove(rec.key, self.now)
        owner = rec.owner
        if owner in self.placeholder_owners:
            keys = self.placeholders.get(owner)
            if keys is not None and rec.key in keys:
                # the Job controller replaces it (podFailurePolicy ignores a disruption)
                keys.remove(rec.key)
                self._create_placeholder(owner)
            return
        if rec.key not in self.control.terminating:  # else its GPUs are used until release
            self._close_usage(rec)
        self.metrics.lose(rec, self.now)
        if owner in self.replica_of:
            run, replica = self.replica_of[owner]
            self._delete_replica(run, replica, gone=rec)
            run.counter += 1
            self._create_replica(run, f"{run.template.service.name}-{run.counter}")
            return
        job = self.jobs.get(owner)
        if job is None or job.done:
            return
        job.restarts += 1
        if job.template.min_member <= 1:
            # the Job controller replaces the failed pod; the others run on
            job.pods.remove(rec.key)
            index = int(rec.pod.name[len(job.name) + 1 :].split("-", 1)[0])
            self._start_job_pods(job, [index])
            self.metrics.event(self.now, "restart", rec.key, f"replaced: {why}")
            return
        job.generation += 1
        job.waiting_since = self.now
        for key in list(job.pods):
            other = self.control.remove(key, self.now)
            if other is not None:
                self._close_usage(other)
                self.metrics.lose(other, self.now)
                self._finish_pending_sample(other)
        self._start_job_pods(job)
        self.metrics.event(self.now, "restart", job.name, f"restarted: {why}")

    # --- reconcile ------------------------------------------------------------------------

    def _reconcile(self) -> None:
        if not self._dirty:
            return
        self._dirty = False
        self._admit()
        placed, preempted = self.control.schedule(self.now)
        blocked = list(self.control.blocked)
        for p in preempted:
            self._preempted(p)
        if preempted:
            more, again = self.control.schedule(self.now)
            placed.extend(more)
            blocked.extend(self.control.blocked)
            for p in again:
                self._preempted(p)
        for rec in placed:
            self._started(rec)
        self._watch_unschedulable(blocked, again=self._retrigger)
        self._retrigger = False

    def _admit(self) -> None:
        admission = self.world.admission
        for _ in range(MAX_ADMISSION_CYCLES):
            result: CycleResult = admission.schedule_cycle(int(self.now * 1000))
            for head in result.left_pending:
                if head.reason in QUOTA_REASONS:
                    self.metrics.quota_blocked.add(head.key)
            for victim in result.preempted:
                self._evict_workload(victim.key, victim.reason)
            for admitted in result.admitted:
                self._admitted(admitted)
            if not result.admitted and not result.preempted:
                break

    def _admitted(self, admitted: Any) -> None:
        run = self.job_of_workload.get(admitted.key)
        if run is None:
            return
        labels: dict[str, str] = {}
        for flavors in admitted.flavors.values():
            for flavor in flavors.values():
                labels.update(self.world.flavor_labels.get(flavor, {}))
        run.node_selector = labels
        self.metrics.event(
            self.now, "admitted", run.name, f"Kueue admitted into {admitted.cluster_queue}"
        )
        self._start_job_pods(run)

    def _evict_workload(self, key: str, reason: str) -> None:
        run = self.job_of_workload.get(key)
        if run is None:
            return
        for k in list(run.pods):
            # Kueue suspends the Job; its pods are deleted gracefully and hold their GPUs
            # for their grace period (quota is released at once: the workload is evicted)
            rec = self.control.bound.get(k) or self.control.pending.get(k)
            if rec is None:
                continue
            until = self.control.terminate(k, self.now, "EvictionByKueue")
            if k in self.control.terminating:
                self._at(until, "terminated", k)
            else:
                self._close_usage(rec)
            self.metrics.lose(rec, self.now)
            self._finish_pending_sample(rec)
            self.metrics.preemptions[rec.workload_class] += 1
        run.pods = []
        run.generation += 1
        run.started = None
        run.waiting_since = self.now
        self.world.admission.complete_eviction(key)
        self.metrics.event(
            self.now, "preempted", run.name, f"Kueue evicted the workload ({reason})"
        )

    def _preempted(self, p: Preemption) -> None:
        if self._placeholder(p.victim):  # what a placeholder is for: no workload lost
            if p.victim.key in self.control.terminating:  # a grace period other than 0
                self._at(p.until, "terminated", p.victim.key)
            self.metrics.placeholders_preempted += 1
            self.metrics.event(
                self.now,
                "placeholder-preempted",
                p.victim.key,
                f"pre-warm placeholder on {p.node} made room for {p.preemptor.key}",
            )
            self._lose_pod(p.victim, "preempted")
            return
        self.metrics.preemptions[p.victim.workload_class] += 1
        self.metrics.preemptions_by_preemptor[p.preemptor.workload_class] += 1
        self.metrics.event(
            self.now,
            "preempted",
            p.victim.key,
            f"evicted on {p.node} for {p.preemptor.key} ({p.preemptor.workload_class})",
        )
        if p.victim.key in self.control.terminating:
            self._at(p.until, "terminated", p.victim.key)
        self._lose_pod(p.victim, "preempted")

    def _on_terminated(self, key: str) -> None:
        """A deleted pod's grace period is over: its GPUs are free (a nominated preemptor
        binds on the next pass)."""
        rec = self.control.release(key)
        if rec is None:
            return
        self._close_usage(rec)
        self._dirty = True

    def _started(self, rec: PodRecord) -> None:
        """A pod was placed: it is bound `bindLatency` later (rec.bound_at), then starts."""
        if rec.key not in self.control.bound or self._placeholder(rec):
            return  # evicted again within the same instant; placeholders are not measured
        bound_at: float = rec.bound_at  # type: ignore[assignment]
        self.metrics.pending.append(
            PendingSample(rec.workload_class, bound_at - rec.wait_start, rec.owner)
        )
        if rec.owner in self.replica_of:
            run, replica = self.replica_of[rec.owner]
            # replicas placed at t = 0 were serving before the scenario began
            warm = replica.created == 0.0 and self.now == 0.0
            self.pod_ready[rec.key] = self._pod_ready_at(rec, run, warm=warm)
            # the last of the replica's pods to start makes it Ready (a gang binds its pods
            # in one pass, but each starts here in turn)
            if all(k in self.control.bound and k in self.pod_ready for k in replica.pods):
                replica.ready_at = max(self.pod_ready[k] for k in replica.pods)
                self._at(replica.ready_at, "replica_ready", (replica.name, replica.ready_at))
            return
        job = self.jobs.get(rec.owner)
        if job is None:
            return
        # a job pod runs from its binding (its image pull is not modelled): Ready = bound
        self.metrics.serving.append(
            PendingSample(rec.workload_class, bound_at - rec.wait_start, rec.owner)
        )
        template = job.template
        duration = job.duration
        if template.min_member > 1:
            bound = [self.control.bound[k] for k in job.pods if k in self.control.bound]
            if job.started is None and len(bound) >= template.min_member:
                job.started = max(r.bound_at for r in bound)  # type: ignore[type-var]
                self._at(job.started + duration, "gang_done", (job.name, job.generation))
        else:
            self._at(bound_at + duration, "pod_done", (job.name, rec.key, job.generation))

    def _pod_ready_at(self, rec: PodRecord, run: ServiceRun, *, warm: bool) -> float:
        """When a service pod is Ready: bound, image pulled unless the node has it (kubelet
        with imagePullPolicy IfNotPresent; a pull still under way for another pod is waited
        for, as kubelet serialises pulls), model loaded (from the node's cache when the pool
        has one and the node loaded the model before)."""
        node = rec.node or ""
        service = run.template.service
        model = service.model.name if service.model else service.name
        phases = self.phases[service.name]
        images, models = self.node_images[node], self.node_models[node]
        image = container_image(rec.pod)
        if warm:
            images.setdefault(image, 0.0)
            if phases.cached_load_s is not None:
                models.setdefault(model, 0.0)
            return 0.0
        t: float = rec.bound_at  # type: ignore[assignment]
        if image in images and pull_policy(rec.pod) != "Always":
            t = max(t, images[image])
        else:
            t += phases.image_pull_s
            images[image] = min(images.get(image, math.inf), t)
        if phases.cached_load_s is not None and model in models:
            t = max(t, models[model]) + phases.cached_load_s
        else:
            t += phases.model_load_s
            if phases.cached_load_s is not None:
                models[model] = min(models.get(model, math.inf), t)
        return t

    def _on_replica_ready(self, data: tuple[str, float]) -> None:
        """A replica serves: its pods' time to serving (from their creation) is recorded."""
        name, ready_at = data
        entry = self.replica_of.get(name)
        if entry is None:
            return
        _, replica = entry
        if replica.ready_at != ready_at or replica.counted:
            return
        replica.counted = True
        for key in replica.pods:
            rec = self.control.bound.get(key)
            if rec is not None:
                self.metrics.serving.append(
                    PendingSample(rec.workload_class, ready_at - rec.wait_start, rec.owner)
                )

    def _finish_pending_sample(self, rec: PodRecord) -> None:
        """A pod removed before it got a node still waited: count it (censored)."""
        if rec.bound_at is None and not self._placeholder(rec):
            sample = PendingSample(
                rec.workload_class, self.now - rec.wait_start, rec.owner, censored=True
            )
            self.metrics.pending.append(sample)
            if rec.owner not in self.replica_of:  # a replica's are counted with the replica
                self.metrics.serving.append(sample)

    def _placeholder(self, rec: PodRecord) -> bool:
        return rec.owner in self.placeholder_owners

    def _close_usage(self, rec: PodRecord) -> None:
        if rec.bound_at is None or self._placeholder(rec):
            return
        self.metrics.usage.append(self._usage(rec, self.t0 + self.now))

    def _usage(self, rec: PodRecord, end: float | None) -> Usage:
        contract = self.world.contract
        pool_name = self.pool_of_node.get(rec.node or "", "")
        pool = self.world.pools[pool_name].pool if pool_name else None
        service = self.world.services.get(rec.shape[1]) if rec.shape[:1] == ("service",) else None
        job = self.jobs.get(rec.owner)
        tenant = contract.tenant(rec.tenant) if rec.tenant else None
        model = service.service.model.name if service and service.service.model else None
        return Usage(
            rec.pod.name,
            rec.pod.namespace,
            rec.tenant,
            service.service.name if service else None,
            job.template.name if job else None,
            model,
            rec.workload_class,
            (service.service.owner if service else None) or (tenant.owner if tenant else None),
            (service.service.cost_center if service else None)
            or (tenant.cost_center if tenant else None),
            pool_name,
            pool.gpu.model if pool else "",
            rec.gpus,
            self.t0 + rec.bound_at,  # type: ignore[operator]
            end,
            rec.restarts,
        )

    # --- results --------------------------------------------------------------------------

    def usage_records(self) -> list[dict[str, Any]]:
        running = [
            self._usage(r, None) for r in self.control.bound.values() if not self._placeholder(r)
        ]
        return [u.as_dict() for u in [*self.metrics.usage, *running]]

    def pending_durations(self) -> list[tuple[str, float]]:
        return [(s.workload_class, s.seconds) for s in self.metrics.pending if not s.censored]

    def blocked(self) -> dict[str, int]:
        """What waits right now: PodGroups with members Pending (gangs not placed whole) and
        Kueue Workloads not admitted (held for quota or flavors)."""
        gangs = {r.owner for r in self.control.pending.values() if r.gang_min > 1}
        return {
            "podGroups": len(gangs),
            "workloads": len(self.world.admission.pending_workloads()),
        }

    def backends(self) -> list[dict[str, Any]]:
        out = []
        now = self.now
        for name, run in self.services.items():
            template = run.template
            pending = [k for r in run.replicas for k in r.pods if k in self.control.pending]
            reason = self.control.reason_of(self.control.pending[pending[0]]) if pending else ""
            series = self.metrics.services.get(name, {})
            p99 = series.get("ttftP99", [None])[-1] if series else None
            pool = self.world.pools[template.pool]
            out.append(
                {
                    "service": name,
                    "model": template.service.model.name if template.service.model else None,
                    "tenant": template.tenant,
                    "pool": template.pool,
                    "desired": run.desired,
                    "ready": len(run.ready(now)),
                    "pending": len(pending),
                    "pendingReason": reason or None,
                    "queueLength": round(run.queue.queue_length, 2),
                    "kvCacheUse": round(run.queue.utilisation(len(run.ready(now))), 4),
                    "healthy": bool(run.ready(now)),
                    "coldStartSeconds": pool.node_ready_s + template.pod_start_s
                    if pending
                    else template.pod_start_s,
                    "ttftP99Seconds": p99,
                }
            )
        return out

    def result(self) -> dict[str, Any]:
        """The run so far (calling it does not change the run: the samples of what is still
        waiting or running are added to copies)."""
        metrics = copy.copy(self.metrics)
        metrics.pending = list(self.metrics.pending)
        metrics.serving = list(self.metrics.serving)
        metrics.usage = list(self.metrics.usage)
        waiting: list[PendingSample] = []  # neither bound nor serving yet
        for run in self.jobs.values():
            if not run.done and not run.pods:  # still queued in Kueue: no pods yet
                sample = PendingSample(
                    run.template.workload_class,
                    self.now - run.waiting_since,
                    run.name,
                    censored=True,
                )
                waiting.extend([sample] * run.template.pods)
        for rec in self.control.pending.values():
            if not self._placeholder(rec):
                waiting.append(
                    PendingSample(
                        rec.workload_class, self.now - rec.wait_start, rec.owner, censored=True
                    )
                )
        metrics.pending.extend(waiting)
        metrics.serving.extend(waiting)
        for service in self.services.values():  # bound, not serving yet
            for replica in service.replicas:
                if replica.counted:
                    continue
                for key in replica.pods:
                    rec = self.control.bound.get(key)
                    if rec is not None:
                        metrics.serving.append(
                            PendingSample(
                                rec.workload_class,
                                self.now - rec.wait_start,
                                rec.owner,
                                censored=True,
                            )
                        )
        end = self.t0 + self.now
        metrics.usage.extend(
            self._usage(rec, end)
            for rec in self.control.bound.values()
            if not self._placeholder(rec)
        )
        contract = self.world.contract
        promises = {
            k.name: (k.max_queue_wait.total_seconds(), k.max_queue_wait_until.value)
            for k in contract.classes
            if k.max_queue_wait is not None
        }
        slos = {name: run.slo for name, run in self.services.items() if run.slo is not None}
        summary = summarize(metrics, duration=self.duration, slos=slos, promises=promises)
        return {
            "scenario": self.loaded.name,
            "contract": contract.metadata.name,
            "seed": self.seed,
            "start": self.start.isoformat(),
            "summary": summary,
            "series": {
                "t": self.metrics.times,
                "services": {k: dict(v) for k, v in self.metrics.services.items()},
                "pools": {k: dict(v) for k, v in self.metrics.pools.items()},
            },
            "timeToGpu": [
                {"class": s.workload_class, "seconds": round(s.seconds, 3), "censored": s.censored}
                for s in metrics.pending
            ],
            "timeToServing": [
                {"class": s.workload_class, "seconds": round(s.seconds, 3), "censored": s.censored}
                for s in metrics.serving
            ],
            "events": self.metrics.events,
        }


def scheduler_profile(scoring: str) -> Profile | str:
    """The kube-scheduler profile a scenario asks for; GPUs count in MostAllocated's score so
    bin-packing fills GPU nodes first."""
    if scoring == "LeastAllocated":
        return "default"
    resources = (*DEFAULT_RESOURCES, ResourceSpec(GPU, 1))
    return Profile.scoring(scoring, resources)


def ttft_slo(template: ServiceTemplate) -> float | None:
    """The service's TTFT objective in seconds: its `ttftSlo`, else DEFAULT_TTFT_SLO for a
    class whose latency tier is seconds (Table 43-1: online answers within seconds)."""
    service = template.service
    if service.ttft_slo is not None:
        return service.ttft_slo.total_seconds()
    return DEFAULT_TTFT_SLO if template.latency == "seconds" else None


def container_image(pod: Pod) -> str:
    containers = pod.raw.get("spec", {}).get("containers", []) if isinstance(pod.raw, dict) else []
    return str(containers[0].get("image", "")) if containers else ""


def pull_policy(pod: Pod) -> str:
    """The container's imagePullPolicy, else the API default: Always for a `:latest` or
    untagged image, IfNotPresent otherwise (a digest too)
    (https://kubernetes.io/docs/concepts/containers/images/#imagepullpolicy-defaulting)."""
    containers = pod.raw.get("spec", {}).get("containers", []) if isinstance(pod.raw, dict) else []
    if containers and containers[0].get("imagePullPolicy"):
        return str(containers[0]["imagePullPolicy"])
    image = container_image(pod)
    if "@" in image:
        return "IfNotPresent"
    tag = image.rsplit("/", 1)[-1].partition(":")[2]
    return "Always" if tag in ("", "latest") else "IfNotPresent"


def _range(start: float, stop: float, step: float) -> list[float]:
    n = math.floor((stop - start) / step + 1e-9)
    return [start + i * step for i in range(n + 1) if start + i * step < stop]
