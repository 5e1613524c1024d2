"""Volcano: Queues, PodGroups for gang services, Volcano Jobs for gang jobs.

A service-wide gang of single-pod replicas (a Deployment) is one PodGroup emitted here. A
replica of several pods is a LeaderWorkerSet group, and LWS's own Volcano integration creates
one PodGroup per group (`<lws>-<group index>-<revision>`, minMember = size): core.py only
names the queue on the LeaderWorkerSet.

Volcano decides how a group of pods starts; Kueue decides whether a tenant still has quota
(43.3). So the queues are cut where each decision lives:
- a gang *service* goes to the Volcano Queue of its pool (the chapter's `queue: gpu-inference`),
  whose capability is the pool's device count - the capacity boundary, not a second quota;
- a gang *job* cannot pass through Kueue (Kueue has no Volcano Job integration), so its
  queue - named like the tenant's Kueue LocalQueue, `<tenant>-<class>` - carries the tenant's
  quota on the job's pools (nominal + active raises) as capability, so the promise holds on
  both paths. The two engines do not share a ledger: docs/compile.md says what that means.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime

from gpupact.compile.core import (
    container_resources,
    job_labels,
    job_pod_template,
    requested_resources,
)
from gpupact.compile.model import Obj
from gpupact.compile.names import (
    VOLCANO_SCHEDULER,
    common_labels,
    device_resource,
    is_gang_job,
    is_gang_service,
    namespace_of,
    owner_annotations,
    platform_labels,
    priority_class_name,
    service_priority_class,
    tenant_of,
)
from gpupact.compile.quota import active_quota, quota_amount
from gpupact.contract.keys import ANNOTATION_SCHEDULE, ANNOTATION_TIME_ZONE, LABEL_APP
from gpupact.contract.schema import Contract, Job, Pool, Service
from gpupact.kube.quantity import format_resource_amount, resource_amount

SCHEDULING_API = "scheduling.volcano.sh/v1beta1"
BATCH_API = "batch.volcano.sh/v1alpha1"


def pool_queue(contract: Contract, pool: Pool) -> Obj:
    classes = [contract.workload_class(c) for c in pool.classes]
    return {
        "apiVersion": SCHEDULING_API,
        "kind": "Queue",
        "metadata": {
            "name": pool.name,
            "labels": platform_labels(contract, pool=pool.name),
        },
        "spec": {
            "weight": 1,
            # online capacity is never lent away to be reclaimed later (43.5: protect online)
            "reclaimable": bool(classes) and all(c.preemptible for c in classes),
            "capability": {device_resource(pool): pool.max_devices},
        },
    }


def job_queue(contract: Contract, name: str, jobs: list[Job], now: datetime) -> Obj:
    tenant = contract.tenant(jobs[0].tenant)
    used = {j.pool for j in jobs}
    capability: dict[str, int] = defaultdict(int)
    for pool in contract.pools:
        if pool.name in used:
            resource = device_resource(pool)
            total = capability[resource] + active_quota(tenant, pool.name, now).total
            what = f"the {resource} capability of Volcano queue {name}"
            capability[resource] = quota_amount(contract, tenant, pool.name, total, what)
    classes = [contract.workload_class(j.workload_class) for j in jobs]
    return {
        "apiVersion": SCHEDULING_API,
        "kind": "Queue",
        "metadata": {
            "name": name,
            "labels": common_labels(
                contract,
                tenant=tenant,
                klass=jobs[0].workload_class,
                owner=tenant.owner,
                cost_center=tenant.cost_center,
            ),
        },
        "spec": {
            "weight": 1,
            "reclaimable": all(c.preemptible for c in classes),
            "capability": dict(capability),
            "deserved": dict(capability),
        },
    }


def pod_group(contract: Contract, service: Service) -> Obj:
    pool = contract.pool(service.pool)  # type: ignore[arg-type]
    members = service.min_member or 1
    per_pod = requested_resources(
        container_resources(pool, service.gpus_per_pod or 1, service.resources)
    )
    return {
        "apiVersion": SCHEDULING_API,
        "kind": "PodGroup",
        "metadata": {
            "name": service.name,
            "namespace": namespace_of(contract, service.tenant),
            "labels": {
                LABEL_APP: service.name,
                **common_labels(
                    contract,
                    tenant=tenant_of(contract, service.tenant),
                    klass=service.workload_class,
                    owner=service.owner,
                    cost_center=service.cost_center,
                    pool=pool.name,
                ),
            },
        },
        "spec": {
            "minMember": members,
            "queue": pool.name,
            "priorityClassName": service_priority_class(contract, service),
            "minResources": scaled(per_pod, members),
        },
    }


def scaled(per_pod: dict[str, str], pods: int) -> dict[str, str | int]:
    """`pods` times one pod's requests, exactly; device counts (extended resources such as
    nvidia.com/gpu) as integers, cpu and memory as quantities."""
    out: dict[str, str | int] = {}
    for resource, text in sorted(per_pod.items()):
        total = resource_amount(resource, text) * pods
        out[resource] = total if "/" in resource else format_resource_amount(resource, total)
    return out


def volcano_job(contract: Contract, job: Job) -> Obj:
    klass = contract.workload_class(job.workload_class)
    annotations = owner_annotations(contract, job.owner)
    if job.schedule is not None:
        # Volcano Jobs have no schedule; the contract's cron and the wall clock it is read on
        # are kept for the trigger to read (a CronJob would carry them as schedule/timeZone)
        annotations[ANNOTATION_SCHEDULE] = job.schedule
        annotations[ANNOTATION_TIME_ZONE] = contract.time_zone
    return {
        "apiVersion": BATCH_API,
        "kind": "Job",
        "metadata": {
            "name": job.name,
            "namespace": namespace_of(contract, job.tenant),
            "labels": {LABEL_APP: job.name, **job_labels(contract, job)},
            "annotations": annotations,
        },
        "spec": {
            "schedulerName": VOLCANO_SCHEDULER,
            "queue": job.queue,
            "priorityClassName": priority_class_name(klass),
            "minAvailable": job.min_member,
            "maxRetry": 3,
            # one lost worker breaks the collective: restart the gang, not the pod
            "policies": [
                {"event": "PodEvicted", "action": "RestartJob"},
                {"event": "PodFailed", "action": "RestartJob"},
            ],
            "plugins": {"env": [], "svc": []},  # ranks and peer host names for the workers
            "tasks": [
                {
                    "name": "worker",
                    "replicas": job.pods,
                    "template": job_pod_template(contract, job, gang=True),
                }
            ],
        },
    }


def compile_volcano(contract: Contract, now: datetime) -> list[Obj]:
    gang_services = [s for s in contract.services if is_gang_service(s)]
    gang_jobs = [j for j in contract.jobs if is_gang_job(j)]
    out: list[Obj] = []
    pools_used = {s.pool for s in gang_services}
    out.extend(pool_queue(contract, p) for p in contract.pools if p.name in pools_used)
    by_queue: dict[str, list[Job]] = defaultdict(list)
    for job in gang_jobs:
        by_queue[job.queue or ""].append(job)
    out.extend(job_queue(contract, name, jobs, now) for name, jobs in by_queue.items())
    # LeaderWorkerSet groups (several pods per replica) get one PodGroup each from LWS
    out.extend(pod_group(contract, s) for s in gang_services if s.pods_per_replica == 1)
    out.extend(volcano_job(contract, j) for j in gang_jobs)
    return out
