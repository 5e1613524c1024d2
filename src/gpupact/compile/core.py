"""Core Kubernetes objects: namespaces, PriorityClasses, node-pool patches, the services'
workloads (Deployment, or LeaderWorkerSet when a replica spans pods) with Service, HPA and
PDB, and the Kueue-admitted batch Jobs / CronJobs.

Choices, each for a reason the chapter gives:
- A replica whose tensor-parallel group spans several pods is a LeaderWorkerSet group, not a
  slice of a StatefulSet: the group is the unit that scales (HPA counts groups), restarts
  (one dead worker breaks the NCCL ring, so the whole group is recreated) and is placed
  (`exclusive-topology` keeps an NVLink group on one node). A StatefulSet can express none of
  the three: its HPA step is one pod, and ordinals carry no group label to co-locate by.
- Pod anti-affinity across hostnames is *preferred*: required anti-affinity caps replicas at
  the node count (cs-agent may scale to 8 on a pool of at most 6 nodes) and leaves a scale-up
  Pending while GPUs are free on nodes that already hold a replica - the exact "pending with
  GPUs to spare" the chapter opens with. Zone spread is `ScheduleAnyway` for the same reason.
- GPU requests equal limits (43.2: whole-device exclusivity).
- Online classes roll with maxSurge 1 / maxUnavailable 0 (the class headroom pays for the
  surge; capacity never dips), offline ones with maxSurge 0 (no extra GPUs needed).
- An HPA owns `replicas`: the workload leaves it unset so `kubectl apply` never resets a
  scaled-out service to its minimum.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from gpupact.compile.gpu_operator import device_labels
from gpupact.compile.model import Obj
from gpupact.compile.model_cache import add_model_cache
from gpupact.compile.names import (
    HOSTNAME_KEY,
    KARPENTER_DO_NOT_DISRUPT,
    KUEUE_PRIORITY_LABEL,
    KUEUE_QUEUE_LABEL,
    VOLCANO_GROUP_ANNOTATION,
    VOLCANO_SCHEDULER,
    ZONE_KEY,
    ceil_div,
    common_labels,
    device_resource,
    is_gang_job,
    is_gang_service,
    namespace_of,
    owner_annotations,
    platform_labels,
    priority_class_name,
    priority_value,
    seconds,
    service_priority_class,
    tenant_labels,
    tenant_of,
    utc_text,
)
from gpupact.contract.headroom import service_headroom
from gpupact.contract.keys import ANNOTATION_EXPIRES, ANNOTATION_MODEL, LABEL_APP
from gpupact.contract.schema import (
    Contract,
    GangScope,
    Job,
    Pool,
    Resources,
    Service,
    WorkloadClass,
    is_gpu_resource,
)
from gpupact.errors import FieldError

LWS_API = "leaderworkerset.x-k8s.io/v1"
LWS_GROUP_INDEX = "leaderworkerset.sigs.k8s.io/group-index"
LWS_WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"
LWS_EXCLUSIVE_TOPOLOGY = "leaderworkerset.sigs.k8s.io/exclusive-topology"
# LWS's Volcano integration (LWS >= v0.7.0 with `gangSchedulingManagement.schedulerProvider:
# volcano`) creates one PodGroup per group and takes its queue from this annotation
LWS_VOLCANO_QUEUE = "scheduling.volcano.sh/queue-name"

# The contract names no image; a placeholder under the reserved `.invalid` domain can never
# pull someone else's image. kustomization.yaml lists them under `images:` to be set.
IMAGE_REGISTRY = "registry.invalid/gpupact"
IMAGE_TAG = "unset"
SERVING_PORT = 8000  # vLLM / TGI / SGLang default

# HPA metrics served by a custom-metrics adapter (prometheus-adapter): requests in flight per
# pod when the contract gives concurrency, else GPU utilisation from the DCGM exporter.
CONCURRENCY_METRIC = "num_requests_running"
GPU_UTIL_METRIC = "DCGM_FI_DEV_GPU_UTIL"
MIN_SCALE_DOWN_WINDOW = 300  # the HPA default
MAX_SCALE_DOWN_WINDOW = 3600  # the HPA maximum

PRIORITY_CLASS_MAX = 1_000_000_000  # user PriorityClasses stop here


def image_for(name: str) -> str:
    return f"{IMAGE_REGISTRY}/{name}:{IMAGE_TAG}"


# --- cluster-level objects ------------------------------------------------------------------


def namespaces(contract: Contract) -> list[Obj]:
    out = []
    for tenant in contract.tenants:
        out.append(
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {
                    "name": namespace_of(contract, tenant.name),
                    "labels": tenant_labels(contract, tenant),
                    "annotations": owner_annotations(contract, tenant.owner),
                },
            }
        )
    if any(s.tenant is None for s in contract.services):
        shared = namespace_of(contract, None)
        if shared not in {t.name for t in contract.tenants}:
            out.append(
                {
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {
                        "name": shared,
                        "labels": platform_labels(contract),
                        "annotations": owner_annotations(contract, None),
                    },
                }
            )
    return out


def priority_classes(contract: Contract) -> list[Obj]:
    """One PriorityClass per class, and one per (class, business priority) a service uses
    (the chapter's `online-infer-high`). Preemptible classes never preempt: they queue."""
    wanted: dict[str, tuple[WorkloadClass, Any]] = {}
    for klass in contract.classes:
        wanted[priority_class_name(klass)] = (klass, None)
    for i, service in enumerate(contract.services):
        klass = contract.workload_class(service.workload_class)
        if service.priority is not None:
            name = priority_class_name(klass, service.priority)
            have = wanted.setdefault(name, (klass, service.priority))
            if have != (klass, service.priority):
                raise FieldError(
                    ("services", i, "priority"),
                    f"PriorityClass {name} (class {klass.name}, priority "
                    f"{service.priority.value}) would clash with class {have[0].name}; rename "
                    f"that class",
                )
    _check_priority_order(contract)
    out = []
    for name, (klass, business) in wanted.items():
        what = f"{klass.name} workloads" + (
            f", business priority {business.value}" if business else ""
        )
        out.append(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {
                    "name": name,
                    "labels": platform_labels(contract, klass=klass.name),
                },
                "value": priority_value(klass, business),
                "globalDefault": False,
                "preemptionPolicy": "Never" if klass.preemptible else "PreemptLowerPriority",
                "description": f"gpupact contract {contract.metadata.name}: {what}"
                + (" (preemptible; queues instead of preempting)" if klass.preemptible else ""),
            }
        )
    return out


def _check_priority_order(contract: Contract) -> None:
    """A business-priority lift must not carry a service past a higher class."""
    for i, service in enumerate(contract.services):
        if service.priority is None:
            continue
        klass = contract.workload_class(service.workload_class)
        value = priority_value(klass, service.priority)
        if value > PRIORITY_CLASS_MAX:
            raise FieldError(
                ("services", i, "priority"),
                f"class {klass.name} priority {klass.priority} plus the {service.priority.value} "
                f"lift exceeds {PRIORITY_CLASS_MAX}, the largest PriorityClass value",
            )
        for other in contract.classes:
            if klass.priority < other.priority <= value:
                raise FieldError(
                    ("services", i, "priority"),
                    f"priority {service.priority.value} lifts {service.name} to {value}, at or "
                    f"above class {other.name} ({other.priority}); keep class priorities more "
                    f"than {value - klass.priority} apart",
                )


def node_patches(contract: Contract) -> dict[str, Obj]:
    """Per pool, the labels (Table 43-2) and taint its fixed nodes carry, as a merge patch for
    `kubectl patch node NODE --type merge --patch-file ...`. Karpenter-made nodes get the same
    from their NodePool; a taint list in a patch replaces the node's taints."""
    out = {}
    for pool in contract.pools:
        patch: Obj = {"metadata": {"labels": {**pool.node_labels(), **device_labels(pool)}}}
        if pool.taint:
            patch["spec"] = {"taints": [taint_of(pool)]}
        out[pool.name] = patch
    return out


def taint_of(pool: Pool) -> dict[str, str]:
    key, value, effect = pool.taint  # type: ignore[misc]
    return {"key": key, "value": value, "effect": effect}


def toleration_of(pool: Pool) -> dict[str, str]:
    key, value, effect = pool.taint  # type: ignore[misc]
    return {"key": key, "operator": "Equal", "value": value, "effect": effect}


# --- pod templates --------------------------------------------------------------------------


def container_resources(pool: Pool, gpus: int, declared: Resources | None) -> Obj:
    """The contract's own requests/limits, with the pool's device resource at `gpus` in both
    (requests == limits). A declared GPU entry is replaced by the pool's resource name."""
    requests: dict[str, str] = {}
    limits: dict[str, str] = {}
    if declared is not None:
        requests = {k: v for k, v in declared.requests.items() if not is_gpu_resource(k)}
        limits = {k: v for k, v in declared.limits.items() if not is_gpu_resource(k)}
    resource = device_resource(pool)
    requests[resource] = str(gpus)
    limits[resource] = str(gpus)
    return {"requests": dict(sorted(requests.items())), "limits": dict(sorted(limits.items()))}


def requested_resources(resources: Obj) -> dict[str, str]:
    """What the scheduler and Kueue count: requests, defaulted from limits."""
    return {**resources["limits"], **resources["requests"]}


def node_affinity(pool: Pool, gpu_model: str | None, nvlink: bool) -> Obj:
    expressions = [{"key": "nodepool", "operator": "In", "values": [pool.name]}]
    if gpu_model:
        expressions.append({"key": "gpu.model", "operator": "In", "values": [gpu_model]})
    if nvlink and pool.gpu.topology:
        expressions.append({"key": "gpu.topology", "operator": "In", "values": [pool.gpu.topology]})
    return {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": expressions}]
        }
    }


def pod_spec(
    *,
    pool: Pool,
    container: Obj,
    priority_class: str,
    gang: bool,
    gpu_model: str | None = None,
    nvlink: bool = False,
    anti_affinity: Obj | None = None,
    spread: Obj | None = None,
    restart_policy: str | None = None,
) -> Obj:
    spec: Obj = {}
    if gang:
        spec["schedulerName"] = VOLCANO_SCHEDULER
    spec["priorityClassName"] = priority_class
    affinity: Obj = {"nodeAffinity": node_affinity(pool, gpu_model, nvlink)}
    if anti_affinity:
        affinity["podAntiAffinity"] = anti_affinity
    spec["affinity"] = affinity
    if pool.taint:
        spec["tolerations"] = [toleration_of(pool)]
    if spread and pool.zones:
        spec["topologySpreadConstraints"] = [spread]
    spec["containers"] = [container]
    if restart_policy:
        spec["restartPolicy"] = restart_policy
    return spec


# --- services -------------------------------------------------------------------------------


def service_objects(contract: Contract, service: Service) -> tuple[list[Obj], list[Obj]]:
    """(core objects, LeaderWorkerSet objects) of one service."""
    where = ("services", contract.services.index(service))
    klass = contract.workload_class(service.workload_class)
    pool = contract.pool(service.pool)  # type: ignore[arg-type]
    tenant = tenant_of(contract, service.tenant)
    namespace = namespace_of(contract, service.tenant)
    multi_pod = service.pods_per_replica > 1
    gang = is_gang_service(service)
    selector = {LABEL_APP: service.name}
    labels = {
        LABEL_APP: service.name,
        **common_labels(
            contract,
            tenant=tenant,
            klass=klass.name,
            owner=service.owner,
            cost_center=service.cost_center,
            pool=pool.name,
        ),
    }
    annotations = owner_annotations(contract, service.owner)
    if service.model is not None:
        annotations[ANNOTATION_MODEL] = service.model.name
    if service.expires is not None:
        annotations[ANNOTATION_EXPIRES] = utc_text(service.expires)
    meta = {"name": service.name, "namespace": namespace, "labels": labels}

    container = {
        "name": "server",
        "image": image_for(service.name),
        "env": _service_env(service, pool),
        "ports": [{"name": "http", "containerPort": SERVING_PORT}],
        "resources": container_resources(pool, service.gpus_per_pod or 1, service.resources),
    }
    exclusive = multi_pod and service.gpu.nvlink
    anti = None if exclusive else _preferred_anti_affinity(selector, multi_pod)
    spread: Obj = {
        "maxSkew": 1,
        "topologyKey": ZONE_KEY,
        "whenUnsatisfiable": "ScheduleAnyway",
        "labelSelector": {"matchLabels": selector},
    }
    if not multi_pod:
        spread["matchLabelKeys"] = ["pod-template-hash"]  # count only the current rollout
    template_meta: Obj = {"labels": labels}
    if gang and multi_pod and service.gang is GangScope.service:
        raise FieldError(
            (*where, "gang"),
            f"a replica of {service.name} is {service.pods_per_replica} pods, a LeaderWorkerSet "
            f"group, and LWS gang-schedules each group as its own PodGroup: gang: service "
            f"(all replicas at once) cannot be expressed; use gang: replica",
        )
    if gang and not multi_pod:
        # one Deployment-wide PodGroup (volcano.py); LWS groups get theirs from LWS itself
        template_meta["annotations"] = {VOLCANO_GROUP_ANNOTATION: service.name}
    template = {
        "metadata": template_meta,
        "spec": pod_spec(
            pool=pool,
            container=container,
            priority_class=service_priority_class(contract, service),
            gang=gang,
            gpu_model=service.gpu.model,
            nvlink=service.gpu.nvlink,
            anti_affinity=anti,
            spread=spread,
        ),
    }
    add_model_cache(pool, template)
    autoscaled = service.replicas.upper > max(service.replicas.min, 1)
    core: list[Obj] = []
    lws: list[Obj] = []
    if multi_pod:
        lws_notes = dict(annotations)
        if exclusive:
            lws_notes[LWS_EXCLUSIVE_TOPOLOGY] = HOSTNAME_KEY
        if gang:
            # one PodGroup per replica, minMember = size (startupPolicy LeaderCreated): a
            # shared group would let replica 2 start with part of its workers
            lws_notes[LWS_VOLCANO_QUEUE] = pool.name
        spec: Obj = {} if autoscaled else {"replicas": service.replicas.min}
        spec["startupPolicy"] = "LeaderCreated"
        spec["leaderWorkerTemplate"] = {
            "size": service.pods_per_replica,
            "restartPolicy": "RecreateGroupOnPodRestart",
            "workerTemplate": template,
        }
        lws.append(
            {
                "apiVersion": LWS_API,
                "kind": "LeaderWorkerSet",
                "metadata": {**meta, "annotations": lws_notes},
                "spec": spec,
            }
        )
        target = {"apiVersion": LWS_API, "kind": "LeaderWorkerSet", "name": service.name}
    else:
        spec = {} if autoscaled else {"replicas": service.replicas.min}
        spec["selector"] = {"matchLabels": selector}
        spec["strategy"] = _rollout(klass)
        spec["template"] = template
        core.append(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {**meta, "annotations": annotations},
                "spec": spec,
            }
        )
        target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": service.name}

    serving_selector = dict(selector)
    if multi_pod:
        serving_selector[LWS_WORKER_INDEX] = "0"  # leaders serve; workers join their ring
    core.append(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": dict(meta),
            "spec": {
                "type": "ClusterIP",
                "selector": serving_selector,
                "ports": [{"name": "http", "port": SERVING_PORT, "targetPort": "http"}],
            },
        }
    )
    if autoscaled:
        core.append(_hpa(contract, service, pool, klass, meta, target))
    if service.replicas.upper > 0:
        core.append(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": dict(meta),
                # one pod at a time: a drain never takes down more than one replica (in a
                # multi-pod replica any evicted worker already breaks its group)
                "spec": {"maxUnavailable": 1, "selector": {"matchLabels": selector}},
            }
        )
    return core, lws


# vLLM's default gpu_memory_utilization (the engine's budget as a share of the device's total
# memory; plan.engine_flags.VLLM_UTILIZATION). k engines time-sliced on one GPU share its
# memory at once, and an engine whose budget exceeds the free memory refuses to start, so each
# gets this / k (plan.memory.time_sliced, which the twin and plan size with; a test holds the
# two equal).
ENGINE_MEMORY_SHARE = Fraction(9, 10)


def _service_env(service: Service, pool: Pool) -> list[Obj]:
    env = []
    if service.model is not None:
        env.append({"name": "MODEL_NAME", "value": service.model.name})
    env.append({"name": "TENSOR_PARALLEL_SIZE", "value": str(service.tensor_parallel)})
    if service.context_length is not None:
        env.append({"name": "MAX_MODEL_LEN", "value": str(service.context_length)})
    if pool.sharing.mode == "timeslice" and pool.sharing.replicas > 1:
        share = ENGINE_MEMORY_SHARE / pool.sharing.replicas
        # for the image's `--gpu-memory-utilization`: without it the second co-tenant fails
        env.append({"name": "GPU_MEMORY_UTILIZATION", "value": f"{float(share):.4g}"})
    return env


def _preferred_anti_affinity(selector: dict[str, str], multi_pod: bool) -> Obj:
    term: Obj = {"labelSelector": {"matchLabels": selector}, "topologyKey": HOSTNAME_KEY}
    if multi_pod:
        # repel the other groups only: a pod's own group may share its node
        term["mismatchLabelKeys"] = [LWS_GROUP_INDEX]
    return {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 100, "podAffinityTerm": term}
        ]
    }


def _rollout(klass: WorkloadClass) -> Obj:
    if klass.online:
        return {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    return {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}


def _hpa(
    contract: Contract,
    service: Service,
    pool: Pool,
    klass: WorkloadClass,
    meta: Obj,
    target: Obj,
) -> Obj:
    minimum = max(service.replicas.min, 1)  # 0 needs the HPAScaleToZero gate
    if service.concurrency is not None:
        metric = {
            "type": "Pods",
            "pods": {
                "metric": {"name": CONCURRENCY_METRIC},
                # the expected concurrency spread over the minimum replicas: scale out
                # past the load the contract was sized for
                "target": {
                    "type": "AverageValue",
                    "averageValue": str(ceil_div(service.concurrency, minimum)),
                },
            },
        }
    else:
        headroom = service_headroom(service, klass)
        metric = {
            "type": "Pods",
            "pods": {
                "metric": {"name": GPU_UTIL_METRIC},
                "target": {"type": "AverageValue", "averageValue": str(100 - headroom)},
            },
        }
    cold = seconds(service.cold_start) if service.cold_start else seconds(pool.cold_start.total)
    # never give back a replica faster than one takes to come back (43.4)
    window = min(max(cold, MIN_SCALE_DOWN_WINDOW), MAX_SCALE_DOWN_WINDOW)
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": dict(meta),
        "spec": {
            "scaleTargetRef": target,
            "minReplicas": minimum,
            "maxReplicas": service.replicas.upper,
            "metrics": [metric],
            "behavior": {
                "scaleDown": {
                    "stabilizationWindowSeconds": window,
                    "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}],
                }
            },
        },
    }


# --- jobs -----------------------------------------------------------------------------------


def job_pod_template(contract: Contract, job: Job, *, gang: bool) -> Obj:
    """The pod template of a job's workers; shared with Volcano Jobs (volcano.py)."""
    klass = contract.workload_class(job.workload_class)
    pool = contract.pool(job.pool)  # type: ignore[arg-type]
    labels = {LABEL_APP: job.name, **job_labels(contract, job)}
    container = {
        "name": "worker",
        "image": image_for(job.name),
        "resources": container_resources(pool, job.gpus_per_pod or 1, job.resources),
    }
    return {
        "metadata": {
            "labels": labels,
            # a running GPU job loses its progress when its node is consolidated away
            "annotations": {KARPENTER_DO_NOT_DISRUPT: "true"},
        },
        "spec": pod_spec(
            pool=pool,
            container=container,
            priority_class=priority_class_name(klass),
            gang=gang,
            # a failed pod fails (no in-place restart): Job backoff, or a Volcano policy that
            # restarts the whole gang, decides what happens next
            restart_policy="Never",
        ),
    }


def job_labels(contract: Contract, job: Job) -> dict[str, str]:
    return common_labels(
        contract,
        tenant=contract.tenant(job.tenant),
        klass=job.workload_class,
        owner=job.owner,
        cost_center=job.cost_center,
        pool=job.pool,
    )


def job_objects(contract: Contract, job: Job) -> list[Obj]:
    """A batch/v1 Job admitted by Kueue (created suspended; Kueue unsuspends it when the
    tenant's ClusterQueue has quota), or a CronJob of such Jobs when the job has a schedule.
    Gang jobs are Volcano Jobs instead (volcano.py)."""
    if is_gang_job(job):
        return []
    namespace = namespace_of(contract, job.tenant)
    labels = {
        LABEL_APP: job.name,
        **job_labels(contract, job),
        KUEUE_QUEUE_LABEL: job.queue or "",
        KUEUE_PRIORITY_LABEL: job.workload_class,
    }
    annotations = owner_annotations(contract, job.owner)
    job_spec = {
        "suspend": True,
        "parallelism": job.pods,
        "completions": job.pods,
        "completionMode": "Indexed",  # each pod knows its shard (JOB_COMPLETION_INDEX)
        "template": job_pod_template(contract, job, gang=False),
    }
    meta = {"name": job.name, "namespace": namespace, "labels": labels, "annotations": annotations}
    if job.schedule is None:
        return [{"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": job_spec}]
    return [
        {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": meta,
            "spec": {
                "schedule": job.schedule,
                "timeZone": contract.time_zone,
                # a run still queued or running holds quota; the next one waits for it
                "concurrencyPolicy": "Forbid",
                "jobTemplate": {"metadata": {"labels": labels}, "spec": job_spec},
            },
        }
    ]


def compile_core(contract: Contract) -> dict[str, list[Obj]]:
    core = priority_classes(contract)
    lws: list[Obj] = []
    for service in contract.services:
        objs, groups = service_objects(contract, service)
        core.extend(objs)
        lws.extend(groups)
    for job in contract.jobs:
        core.extend(job_objects(contract, job))
    return {"namespaces": namespaces(contract), "core": core, "leaderworkerset": lws}
