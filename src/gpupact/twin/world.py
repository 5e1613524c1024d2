"""The twin's world, built from the objects `gpupact compile` writes — what you simulate is what
you apply. The contract is compiled once (at the scenario's start, so active quota raises are
in); from the bundle come:

- node templates per pool: the node patch's labels and taint plus what the kubelet and GPU
  feature discovery add (hostname, zone, `nvidia.com/gpu.product|count|replicas`, the GPU
  resource the device plugin advertises: whole GPUs, time-slice replicas or MIG instances);
- PriorityClass values (the admission plugin resolves `priorityClassName` to `spec.priority`);
- per service: the Deployment's (or LeaderWorkerSet's) pod template, its HPA and cold start;
- per job shape: the Job's / CronJob's (Kueue) or Volcano Job's pod template, pod count,
  minMember and queue; generated job shapes are compiled through the same code as contract
  jobs, by adding them to the contract before compiling;
- the Kueue objects (an AdmissionState) and the Volcano Queues;
- the contract's preemption promises as engine protection rules.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import yaml

from gpupact.compile import CompileOptions, compile_contract
from gpupact.compile.core import CONCURRENCY_METRIC, GPU_UTIL_METRIC
from gpupact.compile.model import Bundle
from gpupact.compile.names import utc_text
from gpupact.contract.keys import ANNOTATION_SCHEDULE, ANNOTATION_TIME_ZONE
from gpupact.contract.links import link
from gpupact.contract.schema import Contract, Job, Pool, Service
from gpupact.engine.admission.k8s import load_state, parse_cluster_queue
from gpupact.engine.admission.model import ClusterQueue, PodSet, Workload
from gpupact.engine.admission.state import AdmissionState
from gpupact.engine.gang import PodGroup, parse_podgroup
from gpupact.engine.preemption.protection import (
    GANG,
    NEVER_PREEMPTS,
    Protection,
    ProtectionRule,
)
from gpupact.engine.volcano.model import Queue, parse_queue
from gpupact.errors import FieldError, InputError
from gpupact.kube.objects import Node, Pod, parse_node, parse_pod
from gpupact.twin.scenario import JobArrivals, LoadedScenario
from gpupact.twin.traces.openb import read_pods

CLASS_LABEL = "gpupact.io/class"
TENANT_LABEL = "gpupact.io/tenant"
POOL_LABEL = "nodepool"
APP_LABEL = "app.kubernetes.io/name"
GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
KUEUE_PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
LWS_GROUP_KEY = "leaderworkerset.sigs.k8s.io/group-key"
LWS_EXCLUSIVE = "leaderworkerset.sigs.k8s.io/exclusive-topology"
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
VOLCANO = "volcano"

# a node's CPU and memory when the pool does not say (a typical 8-GPU server per GPU)
DEFAULT_CPU_MILLI_PER_GPU = 12_000
DEFAULT_MEMORY_PER_GPU = 128 * 2**30
DEFAULT_MAX_PODS = 110


# --- nodes ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PoolTemplate:
    """How a pool's nodes look and how long a new one takes (43.4's cold-start phases)."""

    pool: Pool
    labels: Mapping[str, str]
    taints: tuple[Mapping[str, str], ...]
    node_ready_s: float  # provision + driver + device plugin
    image_pull_s: float
    model_load_s: float

    @property
    def name(self) -> str:
        return self.pool.name

    def node(self, index: int, *, gpu_allocatable: int | None = None) -> Node:
        pool = self.pool
        name = f"{pool.name}-{index}"
        labels = {**self.labels, HOSTNAME: name, "karpenter.sh/nodepool": pool.name}
        if pool.zones:
            labels[ZONE] = pool.zones[index % len(pool.zones)]
        labels["nvidia.com/gpu.count"] = str(pool.gpu.per_node)
        sharing = pool.sharing
        alloc: dict[str, str] = {
            "cpu": f"{pool.node.cpu}m"
            if pool.node and pool.node.cpu
            else f"{DEFAULT_CPU_MILLI_PER_GPU * pool.gpu.per_node}m",
            "memory": str(
                pool.node.memory
                if pool.node and pool.node.memory
                else DEFAULT_MEMORY_PER_GPU * pool.gpu.per_node
            ),
            "pods": str(DEFAULT_MAX_PODS),
        }
        devices = pool.devices_per_node if gpu_allocatable is None else gpu_allocatable
        if sharing.mode == "timeslice":
            labels["nvidia.com/gpu.replicas"] = str(sharing.replicas)
            labels["nvidia.com/gpu.sharing-strategy"] = "time-slicing"
        if sharing.mode == "mig":
            alloc[sharing.resource_name] = str(devices)
            alloc["nvidia.com/gpu"] = "0"
            layout = [{sharing.profile: pool.devices_per_gpu}] * pool.gpu.per_node
            annotations = {"gpupact.io/mig-layout": json.dumps(layout)}
        else:
            alloc["nvidia.com/gpu"] = str(devices)
            annotations = {}
        obj = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": labels, "annotations": annotations},
            "spec": {"taints": [dict(t) for t in self.taints]},
            "status": {
                "capacity": alloc,
                "allocatable": alloc,
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
        return parse_node(obj)


def pool_templates(contract: Contract, bundle: Bundle) -> dict[str, PoolTemplate]:
    out = {}
    for pool in contract.pools:
        patch = bundle.node_patches.get(pool.name, {})
        cold = pool.cold_start
        out[pool.name] = PoolTemplate(
            pool,
            dict(patch.get("metadata", {}).get("labels", pool.node_labels())),
            tuple(patch.get("spec", {}).get("taints", ())),
            (cold.provision + cold.driver + cold.device_plugin).total_seconds(),
            cold.image_pull.total_seconds(),
            cold.model_load.total_seconds(),
        )
    return out


# --- pods -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PodTemplate:
    """A pod template from a compiled object; `make` stamps out one pod."""

    namespace: str
    template: Mapping[str, Any]
    priority: int
    preemption_policy: str | None = None  # the PriorityClass's, None: no class (upstream default)

    @classmethod
    def of(
        cls,
        namespace: str,
        template: Mapping[str, Any],
        priority_classes: Mapping[str, Mapping[str, Any]],
    ) -> PodTemplate:
        """The Priority admission plugin's work: `priorityClassName` resolved to the pod's
        priority and to its class's `preemptionPolicy` (a Never pod waits, it never preempts)."""
        pc = priority_classes.get(template["spec"].get("priorityClassName", ""), {})
        return cls(namespace, template, int(pc.get("value", 0)), pc.get("preemptionPolicy"))

    @property
    def scheduler_name(self) -> str:
        return self.template.get("spec", {}).get("schedulerName") or "default-scheduler"

    def make(
        self,
        name: str,
        *,
        created: str,
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
        node_selector: Mapping[str, str] | None = None,
        spec_patch: Mapping[str, Any] | None = None,
        scheduler_name: str | None = None,
    ) -> Pod:
        meta = self.template.get("metadata", {})
        spec = copy.deepcopy(dict(self.template.get("spec", {})))
        spec["priority"] = self.priority
        if self.preemption_policy is not None:
            spec["preemptionPolicy"] = self.preemption_policy
        if node_selector:
            spec["nodeSelector"] = {**spec.get("nodeSelector", {}), **node_selector}
        if spec_patch:
            spec.update(copy.deepcopy(dict(spec_patch)))
        if scheduler_name is not None:
            spec["schedulerName"] = scheduler_name
        obj = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "uid": f"{self.namespace}-{name}",
                "labels": {**meta.get("labels", {}), **(labels or {})},
                "annotations": {**meta.get("annotations", {}), **(annotations or {})},
                "creationTimestamp": created,
            },
            "spec": spec,
            "status": {"phase": "Pending"},
        }
        return parse_pod(obj)


@dataclass(frozen=True)
class HpaSpec:
    min_replicas: int
    max_replicas: int
    target: float  # averageValue of the per-pod metric (requests in flight)
    scale_up_window_s: float | None
    scale_down_window_s: float | None
    scale_up_policies: tuple[tuple[str, int, int], ...]  # (Pods|Percent, value, periodSeconds)
    scale_down_policies: tuple[tuple[str, int, int], ...]
    metric: str = CONCURRENCY_METRIC  # what the per-pod average is of

    @property
    def gpu_utilisation(self) -> bool:
        """The target is a GPU-busy percentage (DCGM), not requests in flight."""
        return self.metric == GPU_UTIL_METRIC


@dataclass(frozen=True)
class ServiceTemplate:
    service: Service
    tenant: str
    workload_class: str
    pool: str
    pod: PodTemplate
    pods_per_replica: int  # > 1: a LeaderWorkerSet group placed as one gang
    exclusive_topology: str | None
    group: PodGroup | None  # `gang: service`: one compiled PodGroup for all its replicas
    hpa: HpaSpec | None
    min_replicas: int
    max_replicas: int
    pod_start_s: float  # image pull + model load, after the pod is bound
    gpus_per_pod: float
    latency: str  # the class's latency tier (Table 43-1)


@dataclass(frozen=True)
class JobTemplate:
    """One job shape: a Kueue-admitted batch Job, or a Volcano Job (a gang)."""

    name: str
    tenant: str
    workload_class: str
    pool: str
    pod: PodTemplate
    pods: int
    min_member: int
    duration_s: float
    kueue_queue: str | None  # LocalQueue name, None when Kueue does not manage it
    kueue_priority: int
    volcano_queue: str | None
    gpus_per_pod: float
    schedule: str | None = None
    time_zone: str = "Etc/UTC"  # the compiled CronJob's timeZone (its schedule's wall clock)


@dataclass
class World:
    contract: Contract
    bundle: Bundle
    pools: dict[str, PoolTemplate]
    priorities: dict[str, int]
    services: dict[str, ServiceTemplate]
    jobs: dict[str, JobTemplate]  # contract jobs and generated shapes, by name
    generated: list[tuple[JobArrivals, str]]  # each arrivals entry -> its job template name
    admission: AdmissionState
    volcano_queues: list[Queue]
    protection: Protection
    flavor_labels: dict[str, dict[str, str]] = field(default_factory=dict)
    traced: list[tuple[float, str, float]] = field(default_factory=list)  # (t, job, duration)
    volcano_actions: tuple[str, ...] | None = None  # None: Volcano's default configuration

    def workload(self, job: JobTemplate, name: str, created: int) -> Workload:
        """The Kueue Workload the job controller creates for one run of `job`."""
        probe = job.pod.make(f"{name}-probe", created="1970-01-01T00:00:00Z")
        pod_set = PodSet(
            "main",
            job.pods,
            probe.requests(),
            node_selector=dict(probe.node_selector),
            required_affinity=probe.node_affinity.required if probe.node_affinity else None,
            tolerations=probe.tolerations,
        )
        namespace = job.pod.namespace
        return Workload(
            name,
            (pod_set,),
            namespace,
            job.kueue_queue or "",
            job.kueue_priority,
            created,
            f"{namespace}-{name}",
        )


def build_world(loaded: LoadedScenario) -> World:
    scenario = loaded.scenario
    contract = loaded.contract.contract
    generated_jobs: list[tuple[JobArrivals, str]] = []
    extra: list[Job] = []
    taken = {j.name for j in contract.jobs} | {s.name for s in contract.services}
    traced: list[tuple[float, str, float]] = []
    for i, arrivals in enumerate(scenario.jobs):
        if arrivals.contract:
            continue
        name = arrivals.name or f"{arrivals.tenant}-{arrivals.workload_class}"
        if name in taken:
            name = f"{name}-{i}"
        taken.add(name)
        if arrivals.trace is not None:
            shapes = trace_arrivals(loaded, i, name, scenario.duration.total_seconds())
            for gpus in sorted({g for _, g, _ in shapes}):
                extra.append(_job_shape(f"{name}-g{gpus}", arrivals, 1, gpus, 3600))
            traced.extend((t, f"{name}-g{g}", d) for t, g, d in shapes)
            continue
        extra.append(
            _job_shape(
                name,
                arrivals,
                arrivals.pods,
                arrivals.gpus_per_pod,
                int(arrivals.duration.total_seconds()),
            )
        )
        generated_jobs.append((arrivals, name))
    if extra:
        augmented = contract.model_copy(update={"jobs": [*contract.jobs, *extra]})
        contract, errors = link(augmented)
        if errors:
            raise InputError(
                f"generated job shape cannot be compiled: {errors[0]}",
                file=str(loaded.document.file),
            )
    try:
        bundle = compile_contract(contract, CompileOptions(now=scenario.start))
    except FieldError as err:  # what compile refuses is the contract's fault: point at it
        raise loaded.contract.document.error(err) from None
    classes = {o["metadata"]["name"]: o for o in bundle.of_kind("PriorityClass")}
    priorities = {name: int(o["value"]) for name, o in classes.items()}
    wpc = {o["metadata"]["name"]: int(o["value"]) for o in bundle.of_kind("WorkloadPriorityClass")}
    pools = pool_templates(contract, bundle)
    services = {
        s.name: _service_template(contract, bundle, s, classes, pools) for s in contract.services
    }
    jobs = {j.name: _job_template(contract, bundle, j, classes, wpc) for j in contract.jobs}
    kueue_objects = [e.obj for e in bundle.objects if e.target == "kueue"]
    admission = load_state(kueue_objects)
    flavor_labels = {
        o["metadata"]["name"]: dict(o.get("spec", {}).get("nodeLabels", {}))
        for o in bundle.of_kind("ResourceFlavor")
    }
    queues = [parse_queue(o) for o in bundle.of_kind("Queue")]
    return World(
        contract,
        bundle,
        pools,
        priorities,
        services,
        jobs,
        generated_jobs,
        admission,
        queues,
        contract_protection(contract),
        flavor_labels,
        sorted(traced),
        volcano_actions(bundle),
    )


def _job_shape(name: str, arrivals: JobArrivals, pods: int, gpus: int, seconds: int) -> Job:
    return Job.model_validate(
        {
            "name": name,
            "tenant": arrivals.tenant,
            "class": arrivals.workload_class,
            "pods": pods,
            "gpusPerPod": gpus,
            "duration": f"{seconds}s",
        }
    )


def trace_arrivals(
    loaded: LoadedScenario, index: int, name: str, horizon: float
) -> list[tuple[float, int, float]]:
    """(arrival, GPUs, run time) of the trace's GPU pods, times since its first creation divided
    by `timeScale`; a pod sharing a GPU (gpu_milli < 1000) takes a whole one here."""
    arrivals = loaded.scenario.jobs[index]
    path = (loaded.directory / arrivals.trace).resolve()  # type: ignore[operator]
    if not path.is_file():
        raise loaded.document.error(
            FieldError(("jobs", index, "trace"), f"trace file {arrivals.trace!r} not found")
        )
    pods = [p for p in read_pods(path) if p.gpu_count and p.creation_time is not None]
    if not pods:
        return []
    origin = min(p.creation_time for p in pods)  # type: ignore[type-var]
    out = []
    for p in pods:
        t = (p.creation_time - origin) / arrivals.time_scale  # type: ignore[operator]
        if t >= horizon:
            continue
        begin = p.scheduled_time if p.scheduled_time is not None else p.creation_time
        end = (
            p.deletion_time
            if p.deletion_time is not None
            else begin + horizon * arrivals.time_scale
        )
        run = max(60.0, (end - begin) / arrivals.time_scale)  # type: ignore[operator]
        out.append((t, p.gpu_count, run))
    return out


def _service_template(
    contract: Contract,
    bundle: Bundle,
    service: Service,
    priority_classes: Mapping[str, Mapping[str, Any]],
    pools: Mapping[str, PoolTemplate],
) -> ServiceTemplate:
    namespace = _namespace_of(bundle, service.name)
    deployment = bundle.find("Deployment", service.name, namespace)
    lws = bundle.find("LeaderWorkerSet", service.name, namespace)
    exclusive = None
    if deployment is not None:
        template = deployment["spec"]["template"]
        per_replica = 1
    elif lws is not None:
        lwt = lws["spec"]["leaderWorkerTemplate"]
        template = lwt["workerTemplate"]
        per_replica = int(lwt.get("size", 1))
        exclusive = lws["metadata"].get("annotations", {}).get(LWS_EXCLUSIVE)
    else:  # pragma: no cover - compile emits one of the two for every service
        raise InputError(f"service {service.name!r}: no Deployment or LeaderWorkerSet compiled")
    hpa_obj = bundle.find("HorizontalPodAutoscaler", service.name, namespace)
    pool = pools[service.pool]  # type: ignore[index]
    cold = service.cold_start.total_seconds() if service.cold_start else None
    start = cold if cold is not None else pool.image_pull_s + pool.model_load_s
    gpus = physical_gpus(pool.pool, service.gpus_per_pod or 1)
    return ServiceTemplate(
        service,
        service.tenant or "",
        service.workload_class,
        service.pool or "",
        PodTemplate.of(namespace, template, priority_classes),
        per_replica,
        exclusive,
        _service_group(bundle, service.name, namespace, per_replica),
        _hpa(hpa_obj) if hpa_obj else None,
        service.replicas.min,
        service.replicas.max or service.replicas.min,
        start,
        gpus,
        contract.workload_class(service.workload_class).latency.value,
    )


def _service_group(bundle: Bundle, name: str, namespace: str, per_replica: int) -> PodGroup | None:
    """The service's own PodGroup (`gang: service`, single-pod replicas); a multi-pod replica
    is a gang of its own, made per replica."""
    obj = bundle.find("PodGroup", name, namespace)
    return parse_podgroup(obj) if obj is not None and per_replica == 1 else None


def _hpa(obj: Mapping[str, Any]) -> HpaSpec:
    spec = obj["spec"]
    target = 1.0
    name = CONCURRENCY_METRIC
    for metric in spec.get("metrics", []):
        pods = metric.get("pods", {})
        t = pods.get("target", {})
        if "averageValue" in t:
            target = float(t["averageValue"])
            name = pods.get("metric", {}).get("name", name)
    behavior = spec.get("behavior", {})

    def rules(name: str) -> tuple[float | None, tuple[tuple[str, int, int], ...]]:
        rule = behavior.get(name)
        if rule is None:
            return None, ()
        window = rule.get("stabilizationWindowSeconds")
        policies = tuple(
            (p["type"], int(p["value"]), int(p["periodSeconds"])) for p in rule.get("policies", [])
        )
        return (float(window) if window is not None else None), policies

    up_window, up = rules("scaleUp")
    down_window, down = rules("scaleDown")
    return HpaSpec(
        int(spec.get("minReplicas", 1)),
        int(spec["maxReplicas"]),
        target,
        up_window,
        down_window,
        up,
        down,
        name,
    )


def _job_template(
    contract: Contract,
    bundle: Bundle,
    job: Job,
    priority_classes: Mapping[str, Mapping[str, Any]],
    wpc: Mapping[str, int],
) -> JobTemplate:
    namespace = _namespace_of(bundle, job.name)
    pool = contract.pool(job.pool)  # type: ignore[arg-type]
    gpus = physical_gpus(pool, job.gpus_per_pod or 1)
    duration = job.duration.total_seconds() if job.duration else 3600.0
    vjob = bundle.find("Job", job.name, namespace)
    if vjob is not None and vjob["apiVersion"].startswith("batch.volcano.sh"):
        task = vjob["spec"]["tasks"][0]
        template = task["template"]
        pod = PodTemplate.of(namespace, template, priority_classes)
        # the trigger's schedule as compiled into the Job's annotations (none: a one-off job)
        annotations = vjob["metadata"].get("annotations") or {}
        return JobTemplate(
            job.name, job.tenant, job.workload_class, job.pool or "", pod,
            int(task["replicas"]), int(vjob["spec"].get("minAvailable", task["replicas"])),
            duration, None, 0, vjob["spec"].get("queue"), gpus,
            annotations.get(ANNOTATION_SCHEDULE), annotations.get(ANNOTATION_TIME_ZONE, "Etc/UTC"),
        )  # fmt: skip
    cron = bundle.find("CronJob", job.name, namespace)
    if cron is not None:
        labels = cron["metadata"]["labels"]
        job_spec = cron["spec"]["jobTemplate"]["spec"]
    elif vjob is not None:
        labels = vjob["metadata"]["labels"]
        job_spec = vjob["spec"]
    else:  # pragma: no cover - compile emits a Job, CronJob or Volcano Job per job
        raise InputError(f"job {job.name!r}: nothing compiled")
    template = job_spec["template"]
    pod = PodTemplate.of(namespace, template, priority_classes)
    return JobTemplate(
        job.name, job.tenant, job.workload_class, job.pool or "", pod,
        int(job_spec.get("parallelism", 1)), 1, duration,
        labels.get(KUEUE_QUEUE_LABEL), wpc.get(labels.get(KUEUE_PRIORITY_LABEL, ""), 0),
        None, gpus, job.schedule,
        cron["spec"].get("timeZone", "Etc/UTC") if cron is not None else contract.time_zone,
    )  # fmt: skip


VOLCANO_CONFIGMAP = ("volcano-system", "volcano-scheduler-configmap", "volcano-scheduler.conf")


def volcano_actions(bundle: Bundle) -> tuple[str, ...] | None:
    """The actions of the compiled volcano-scheduler.conf (its comma-separated `actions`),
    None when the bundle carries none: the scheduler then runs the chart's default."""
    namespace, name, key = VOLCANO_CONFIGMAP
    cm = bundle.find("ConfigMap", name, namespace)
    text = (cm or {}).get("data", {}).get(key)
    if not isinstance(text, str):
        return None
    conf = yaml.safe_load(text) or {}
    actions = conf.get("actions") if isinstance(conf, dict) else None
    if not isinstance(actions, str):
        return None
    return tuple(a.strip() for a in actions.split(",") if a.strip())


def raise_expiries(contract: Contract, start: datetime, end: datetime) -> list[datetime]:
    """The instants inside the run at which a temporary quota raise active at its start
    expires (a raise is active while now < expires)."""
    return sorted(
        {
            r.expires
            for t in contract.tenants
            for r in t.raises
            if r.expires is not None and start < r.expires < end
        }
    )


def cluster_queues_at(contract: Contract, when: datetime) -> list[ClusterQueue]:
    """The ClusterQueues `gpupact compile --now <when>` writes: a raise's removal is a
    recompile (compile/quota.py), and applying it is a ClusterQueue update."""
    bundle = compile_contract(contract, CompileOptions(now=when))
    return [parse_cluster_queue(o) for o in bundle.of_kind("ClusterQueue")]


def physical_gpus(pool: Pool, devices: int) -> float:
    """Physical GPUs behind `devices` of the pool's resource: a time-slice replica or a MIG
    instance is its share of one GPU (the ledger counts GPU-hours in physical GPUs)."""
    return devices / pool.devices_per_gpu


def _namespace_of(bundle: Bundle, app: str) -> str:
    for e in bundle.objects:
        meta = e.obj.get("metadata", {})
        if meta.get("labels", {}).get(APP_LABEL) == app and meta.get("namespace"):
            return meta["namespace"]
    return "default"


def contract_protection(contract: Contract) -> Protection:
    """The contract's "what stops first" as engine rules: a class may preempt only in the
    pools that admit it; gangs are evicted whole. Who may preempt whom is otherwise what the
    compiled objects say and nothing more: PriorityClass values and `preemptionPolicy` (a
    preemptible class is compiled Never), Kueue's ClusterQueue policies. "A non-preemptible
    class is a victim only of its own class" compiles into nothing kube-scheduler enforces,
    so the twin does not enforce it either; `check` reports it (victim-rule-not-enforceable)."""
    rules: list[ProtectionRule] = [ProtectionRule(GANG)]
    for pool in contract.pools:
        if not pool.classes:
            continue
        for klass in contract.classes:
            if klass.name not in pool.classes:
                rules.append(
                    ProtectionRule(NEVER_PREEMPTS, preemptor_class=klass.name, pool=pool.name)
                )
    return Protection(
        tuple(rules), class_label=CLASS_LABEL, pool_label=POOL_LABEL, gang_keys=(GROUP_ANNOTATION,)
    )


def lws_affinity(group_key: str, topology: str) -> dict[str, Any]:
    """What the LeaderWorkerSet webhook adds for `exclusive-topology`: the group's pods share
    one topology domain, and no other group may use it (1:1 group to domain)."""
    return {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {
                        "matchExpressions": [
                            {"key": LWS_GROUP_KEY, "operator": "In", "values": [group_key]}
                        ]
                    },
                    "topologyKey": topology,
                }
            ]
        },
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {
                        "matchExpressions": [
                            {"key": LWS_GROUP_KEY, "operator": "Exists"},
                            {"key": LWS_GROUP_KEY, "operator": "NotIn", "values": [group_key]},
                        ]
                    },
                    "topologyKey": topology,
                }
            ]
        },
    }


def rfc3339(start: datetime, seconds: float) -> str:
    """The instant `seconds` after `start`, as Kubernetes writes timestamps."""
    return utc_text(start + timedelta(seconds=seconds))
