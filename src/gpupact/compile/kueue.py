"""Kueue: a tenant's GPU budget as admission rules (43.3).

Emitted at `kueue.x-k8s.io/v1beta2`, the version the shipped CRDs store (v1beta1 is still
served, but converting on every read is the API server's work, not ours). Kueue before v0.15
has no v1beta2: `kueue_api="v1beta1"` (`gpupact compile --kueue-api v1beta1`) writes the same
objects at v1beta1, where a ClusterQueue names its cohort `spec.cohort` (v1beta2:
`spec.cohortName`); the other kinds' fields gpupact writes are spelled alike. Cohort objects are
v1beta1 from Kueue v0.13 on (v1alpha1 before), so a contract with cohorts needs v0.13 or later.
- ResourceFlavor per pool: `nodeLabels` steer admitted pods to the pool, `nodeTaints` make
  admission check that a workload tolerates the pool. No `tolerations`: Kueue would add them to
  every admitted pod and also count them when matching `nodeTaints`, so any job could enter
  any pool - the class gate the taint exists for would be gone.
- Cohort per `tenant.cohort`; ClusterQueue `<tenant>-gpu` per tenant with one resource group
  (flavors that lack a resource carry quota 0 for it, so GPU kinds and MIG profiles share a
  group); LocalQueue per tenant class in the tenant's namespace; WorkloadPriorityClass per
  class.
- Temporary raises are added to `nominalQuota`; the annotation `gpupact.io/quota-raises`
  records base, raise, expiry and reason, `gpupact.io/next-raise-expiry` the first expiry.
  A compile with `--now` after the expiry emits the base quota (quota.py).
"""

from __future__ import annotations

import json
from datetime import datetime

from gpupact.compile.core import container_resources, requested_resources
from gpupact.compile.model import Obj
from gpupact.compile.names import (
    LABEL_TENANT,
    cluster_queue_name,
    device_resource,
    is_gang_job,
    namespace_of,
    platform_labels,
    tenant_classes,
    tenant_labels,
    tenant_queue_name,
    utc_text,
)
from gpupact.compile.quota import PoolQuota, quota_amount, tenant_quotas
from gpupact.contract.keys import ANNOTATION_NEXT_RAISE_EXPIRY, ANNOTATION_QUOTA_RAISES
from gpupact.contract.schema import Contract, Pool, Tenant, WorkloadClass
from gpupact.errors import FieldError
from gpupact.kube.quantity import format_resource_amount

KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_VERSIONS = ("v1beta2", "v1beta1")
KUEUE_API = f"{KUEUE_GROUP}/{KUEUE_VERSIONS[0]}"


def resource_flavor(contract: Contract, pool: Pool) -> Obj:
    spec: Obj = {"nodeLabels": {"nodepool": pool.name}}
    if pool.taint:
        key, value, effect = pool.taint
        spec["nodeTaints"] = [{"key": key, "value": value, "effect": effect}]
    return {
        "apiVersion": KUEUE_API,
        "kind": "ResourceFlavor",
        "metadata": {"name": pool.name, "labels": _labels(contract, pool=pool.name)},
        "spec": spec,
    }


def cohorts(contract: Contract) -> list[Obj]:
    names = list(dict.fromkeys(t.cohort for t in contract.tenants if t.cohort))
    return [
        {
            "apiVersion": KUEUE_API,
            "kind": "Cohort",
            "metadata": {"name": name, "labels": _labels(contract)},
            "spec": {},
        }
        for name in names
    ]


def workload_priority_classes(contract: Contract) -> list[Obj]:
    return [
        {
            "apiVersion": KUEUE_API,
            "kind": "WorkloadPriorityClass",
            "metadata": {"name": klass.name, "labels": _labels(contract, klass=klass.name)},
            "value": klass.priority,
            "description": f"gpupact contract {contract.metadata.name}: {klass.name} workloads",
        }
        for klass in contract.classes
    ]


def cluster_queue(contract: Contract, tenant: Tenant, now: datetime) -> Obj:
    quotas = tenant_quotas(contract, tenant, now)
    classes = tenant_classes(contract, tenant)
    spec: Obj = {"namespaceSelector": {"matchLabels": {LABEL_TENANT: tenant.name}}}
    if tenant.cohort:
        spec["cohortName"] = tenant.cohort
    if quotas:
        spec["resourceGroups"] = [_resource_group(contract, tenant, quotas)]
    spec["queueingStrategy"] = _queueing_strategy(classes)
    spec["preemption"] = _preemption(contract, tenant, classes)
    metadata: Obj = {
        "name": cluster_queue_name(tenant.name),
        "labels": tenant_labels(contract, tenant),
    }
    raised = [q for q in quotas if q.raises]
    if raised:
        first_expiry = min(utc_text(r.expires) for q in raised for r in q.raises)  # type: ignore[arg-type]
        metadata["annotations"] = {
            ANNOTATION_QUOTA_RAISES: json.dumps([_raise_record(contract, q) for q in raised]),
            ANNOTATION_NEXT_RAISE_EXPIRY: first_expiry,
        }
    return {"apiVersion": KUEUE_API, "kind": "ClusterQueue", "metadata": metadata, "spec": spec}


def _raise_record(contract: Contract, quota: PoolQuota) -> dict[str, object]:
    return {
        "flavor": quota.pool,
        "resource": device_resource(contract.pool(quota.pool)),
        "baseQuota": quota.base,
        "nominalQuota": quota.total,
        "raises": [
            {"gpus": r.gpus, "expires": utc_text(r.expires), "reason": r.reason}  # type: ignore[arg-type]
            for r in quota.raises
        ],
    }


def _resource_group(contract: Contract, tenant: Tenant, quotas: list[PoolQuota]) -> Obj:
    devices = list(dict.fromkeys(device_resource(contract.pool(q.pool)) for q in quotas))
    devices.sort(key=lambda r: (r != "nvidia.com/gpu", r))
    needed = _kueue_job_resources(contract, tenant)  # resource -> pools its jobs run on
    covered = devices + [r for r in ("cpu", "memory") if r in needed]
    flavors = []
    for quota in quotas:
        pool = contract.pool(quota.pool)
        resources = []
        for resource in covered:
            if resource == device_resource(pool):
                entry: Obj = {"name": resource, "nominalQuota": quota.total}
                if quota.borrowing_limit is not None:
                    entry["borrowingLimit"] = quota.borrowing_limit
                if quota.lending_limit is not None:
                    entry["lendingLimit"] = quota.lending_limit
            elif resource in ("cpu", "memory"):
                required = pool.name in needed[resource]
                entry = _node_share(contract, tenant, pool, resource, quota, required)
            else:
                entry = {"name": resource, "nominalQuota": 0}
            resources.append(entry)
        flavors.append({"name": pool.name, "resources": resources})
    return {"coveredResources": covered, "flavors": flavors}


def _kueue_job_resources(contract: Contract, tenant: Tenant) -> dict[str, set[str]]:
    """Resources the tenant's Kueue jobs request, with the pools they request them on. Kueue
    refuses a workload that requests a resource its ClusterQueue does not cover, so cpu/memory
    are covered when requested (their quota derives from the node shape); anything else
    cannot be given a quota."""
    names: dict[str, set[str]] = {}
    for i, job in enumerate(contract.jobs):
        if job.tenant == tenant.name and not is_gang_job(job):
            pool = contract.pool(job.pool)  # type: ignore[arg-type]
            wanted = set(requested_resources(container_resources(pool, 1, job.resources)))
            other = sorted(wanted - {device_resource(pool), "cpu", "memory"})
            if other:
                raise FieldError(
                    ("jobs", i, "resources"),
                    f"job {job.name} requests {', '.join(other)}, which the contract gives no "
                    f"quota for; Kueue would never admit it (request GPUs, cpu and memory only)",
                )
            for resource in wanted:
                names.setdefault(resource, set()).add(pool.name)
    return names


def _node_share(
    contract: Contract,
    tenant: Tenant,
    pool: Pool,
    resource: str,
    quota: PoolQuota,
    required: bool,
) -> Obj:
    """cpu/memory quota in proportion to the GPU quota: a tenant holding g of a node's d
    devices gets g/d of its cpu and memory (rounded down). A pool whose node shape is unknown
    gets 0 - refused as bad input where the tenant's jobs do request the resource."""
    per_node = getattr(pool.node, resource) if pool.node else None
    if per_node is None and not required:
        return {"name": resource, "nominalQuota": 0}
    if per_node is None:
        index = contract.pools.index(pool)
        raise FieldError(
            ("pools", index, "node", resource),
            f"jobs on pool {pool.name} request {resource}, so Kueue needs a {resource} quota "
            f"there; give the pool's node.{resource} (it is shared out in proportion to GPUs)",
        )
    devices = pool.devices_per_node

    def share(gpus: int) -> str:
        amount = quota_amount(
            contract, tenant, pool.name, per_node * gpus // devices, f"its {resource} quota"
        )
        return format_resource_amount(resource, amount)

    entry: Obj = {"name": resource, "nominalQuota": share(quota.total)}
    if quota.borrowing_limit is not None:
        entry["borrowingLimit"] = share(quota.borrowing_limit)
    if quota.lending_limit is not None:
        entry["lendingLimit"] = share(quota.lending_limit)
    return entry


def _queueing_strategy(classes: list[WorkloadClass]) -> str:
    """StrictFIFO only for a tenant that runs nothing but gangs: there a big gang must not be
    overtaken forever by smaller ones. Any other mix keeps BestEffortFIFO, so one blocked
    workload does not hold back the rest of the queue."""
    if classes and all(c.gang for c in classes):
        return "StrictFIFO"
    return "BestEffortFIFO"


def _preemption(contract: Contract, tenant: Tenant, classes: list[WorkloadClass]) -> Obj:
    """Only preemptible work is ever a victim:
    - withinClusterQueue: LowerPriority when every class below the tenant's top class is
      preemptible (its own urgent work may displace its own batch), else Never;
    - reclaimWithinCohort: when lending, take the quota back from any borrower if every
      cohort mate's classes are preemptible (Any), else only from lower priority."""
    policy: Obj = {"withinClusterQueue": "Never"}
    top = max((c.priority for c in classes), default=0)
    victims = [c for c in classes if c.priority < top]
    if victims and all(c.preemptible for c in victims):
        policy["withinClusterQueue"] = "LowerPriority"
    if tenant.cohort:
        mates = [t for t in contract.tenants if t.cohort == tenant.cohort and t is not tenant]
        mate_classes = [c for t in mates for c in tenant_classes(contract, t)]
        everyone_preemptible = all(c.preemptible for c in mate_classes)
        policy["reclaimWithinCohort"] = "Any" if everyone_preemptible else "LowerPriority"
    return policy


def local_queues(contract: Contract, tenant: Tenant) -> list[Obj]:
    names = [tenant_queue_name(tenant.name, c.name) for c in tenant_classes(contract, tenant)]
    names += [j.queue for j in contract.jobs if j.tenant == tenant.name and not is_gang_job(j)]
    return [
        {
            "apiVersion": KUEUE_API,
            "kind": "LocalQueue",
            "metadata": {
                "name": name,
                "namespace": namespace_of(contract, tenant.name),
                "labels": tenant_labels(contract, tenant),
            },
            "spec": {"clusterQueue": cluster_queue_name(tenant.name)},
        }
        for name in dict.fromkeys(n for n in names if n)
    ]


def _labels(
    contract: Contract, *, klass: str | None = None, pool: str | None = None
) -> dict[str, str]:
    return platform_labels(contract, klass=klass, pool=pool)


def as_version(obj: Obj, version: str) -> Obj:
    """`obj` (written at v1beta2) as Kueue's `version` spells it."""
    if version == KUEUE_VERSIONS[0]:
        return obj
    if version != "v1beta1":
        raise ValueError(f"unknown Kueue API version {version!r}")
    out = {**obj, "apiVersion": f"{KUEUE_GROUP}/{version}"}
    if obj["kind"] == "ClusterQueue" and "cohortName" in obj["spec"]:
        spec = {("cohort" if k == "cohortName" else k): v for k, v in obj["spec"].items()}
        out["spec"] = spec
    return out


def compile_kueue(contract: Contract, now: datetime, version: str = KUEUE_VERSIONS[0]) -> list[Obj]:
    return [as_version(obj, version) for obj in _kueue_objects(contract, now)]


def _kueue_objects(contract: Contract, now: datetime) -> list[Obj]:
    out = [resource_flavor(contract, p) for p in contract.pools]
    out.extend(cohorts(contract))
    out.extend(workload_priority_classes(contract))
    out.extend(cluster_queue(contract, t, now) for t in contract.tenants)
    for tenant in contract.tenants:
        out.extend(local_queues(contract, tenant))
    return out
