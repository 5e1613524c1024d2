"""Names, labels and small lookups every target agrees on.

One place decides what an object is called, so that a reference written by one target module
(a pod's `priorityClassName`, a PodGroup's `queue`, a LocalQueue's `clusterQueue`) always
names an object another module emits. `validate.check_bundle` proves it for every compile.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from gpupact.contract.keys import (
    ANNOTATION_CONTRACT,
    ANNOTATION_OWNER,
    LABEL_CLASS,
    LABEL_COST_CENTRE,
    LABEL_OWNER,
    LABEL_POOL,
    LABEL_TENANT,
)
from gpupact.contract.schema import (
    BusinessPriority,
    Contract,
    Job,
    Pool,
    Service,
    Tenant,
    WorkloadClass,
)
from gpupact.errors import FieldError

MANAGED_BY = "gpupact"

# gpupact's own label and annotation keys live in gpupact.contract.keys (audit reads them too).
LABEL_PART_OF = "app.kubernetes.io/part-of"
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"

# Upstream keys.
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
KUEUE_PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
VOLCANO_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
VOLCANO_SCHEDULER = "volcano"
KARPENTER_DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
ZONE_KEY = "topology.kubernetes.io/zone"
HOSTNAME_KEY = "kubernetes.io/hostname"

# A business priority lifts a service a little above its class (Table 43-1 keeps classes far
# apart; `validate` refuses a contract where a lift would cross into another class).
PRIORITY_LIFT = {
    BusinessPriority.low: 0,
    BusinessPriority.medium: 1,
    BusinessPriority.high: 2,
    BusinessPriority.critical: 3,
}

_LABEL_UNSAFE_RE = re.compile(r"[^A-Za-z0-9._-]")
_LABEL_EDGE_RE = re.compile(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$")
_MODEL_SUFFIX_RE = re.compile(r"-\d+g$")


def label_safe(text: str | None) -> str | None:
    """`text` as a label value: `@` reads `_at_`, other unsafe characters become `_`, at most
    63 characters, starting and ending alphanumeric. None when nothing usable is left."""
    if not text:
        return None
    value = _LABEL_UNSAFE_RE.sub("_", text.replace("@", "_at_"))[:63]
    value = _LABEL_EDGE_RE.sub("", value)
    return value or None


def namespace_of(contract: Contract, tenant: str | None) -> str:
    """A tenant's workloads live in a namespace named after it; tenantless services share one
    named after the contract."""
    return tenant or contract.metadata.name


def cluster_queue_name(tenant: str) -> str:
    return f"{tenant}-gpu"  # the chapter's `finance-gpu`


def tenant_queue_name(tenant: str, klass: str) -> str:
    """The default queue of a tenant's class (links.py resolves `job.queue` the same way)."""
    return f"{tenant}-{klass}"


def priority_class_name(klass: WorkloadClass, business: BusinessPriority | None = None) -> str:
    return klass.name if business is None else f"{klass.name}-{business.value}"


def priority_value(klass: WorkloadClass, business: BusinessPriority | None = None) -> int:
    return klass.priority + (PRIORITY_LIFT[business] if business is not None else 0)


def service_priority_class(contract: Contract, service: Service) -> str:
    return priority_class_name(contract.workload_class(service.workload_class), service.priority)


def device_resource(pool: Pool) -> str:
    return pool.sharing.resource_name


def gpu_family(pool: Pool) -> str:
    """`a100-80g` -> `a100`: the GPU name without its memory suffix."""
    return _MODEL_SUFFIX_RE.sub("", pool.gpu.model)


def is_gang_service(service: Service) -> bool:
    """Pods that must start together: a PodGroup and the Volcano scheduler. A gang of one
    pod is no gang."""
    return (service.min_member or 0) > 1


def is_gang_job(job: Job) -> bool:
    return (job.min_member or 1) > 1


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def utc_text(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def seconds(value: timedelta) -> int:
    return value.days * 86_400 + value.seconds


def go_duration(value: timedelta) -> str:
    """Hours, minutes and seconds only (`13m30s`), the form Karpenter's fields accept."""
    total = seconds(value)
    if total == 0:
        return "0s"
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return "".join(f"{n}{u}" for n, u in ((hours, "h"), (minutes, "m"), (secs, "s")) if n)


def common_labels(
    contract: Contract,
    *,
    tenant: Tenant | None,
    klass: str | None,
    owner: str | None,
    cost_center: str | None,
    pool: str | None = None,
) -> dict[str, str]:
    """The owner / cost-centre / tenant / class labels of 43.6 (every GPU occupant maps to an
    owner and a cost centre), plus the usual app.kubernetes.io ones."""
    labels = {LABEL_PART_OF: contract.metadata.name, LABEL_MANAGED_BY: MANAGED_BY}
    optional = {
        LABEL_TENANT: tenant.name if tenant else None,
        LABEL_CLASS: klass,
        LABEL_POOL: pool,
        LABEL_OWNER: label_safe(owner),
        LABEL_COST_CENTRE: label_safe(cost_center),
    }
    labels.update({k: v for k, v in optional.items() if v})
    return labels


def platform_labels(
    contract: Contract, *, klass: str | None = None, pool: str | None = None
) -> dict[str, str]:
    """The labels of objects no tenant owns (pools' queues and flavors, classes, NodePools,
    device configuration): the platform team's owner and cost centre (`metadata`)."""
    meta = contract.metadata
    return common_labels(
        contract,
        tenant=None,
        klass=klass,
        owner=meta.owner,
        cost_center=meta.cost_center,
        pool=pool,
    )


def require_owners(contract: Contract) -> None:
    """Every compiled object carries an owner and a cost centre (43.6: nothing holds GPUs
    without someone to answer and pay for it), so compile refuses a contract that leaves one
    out, naming where to add it. A value must also survive as a label value."""
    meta = contract.metadata
    subjects: list[tuple[tuple[str | int, ...], str, str | None, str | None]] = [
        (("metadata",), f"contract {meta.name} (the platform team)", meta.owner, meta.cost_center)
    ]
    for section in ("tenants", "services", "jobs"):
        for i, item in enumerate(getattr(contract, section)):
            subjects.append(
                ((section, i), f"{section[:-1]} {item.name}", item.owner, item.cost_center)
            )
    for path, what, owner, cost_center in subjects:
        for key, value in (("owner", owner), ("costCenter", cost_center)):
            if label_safe(value) is None:
                problem = "has no" if value is None else "has no letter or digit in its"
                raise FieldError(
                    path,
                    f"{what} {problem} {key}: every compiled object is labelled with an owner "
                    f"and a cost centre (gpupact.io/owner, gpupact.io/cost-centre); set {key}",
                )


def tenant_labels(contract: Contract, tenant: Tenant) -> dict[str, str]:
    """The labels of a tenant's own objects (its Namespace, ClusterQueue, LocalQueues)."""
    return common_labels(
        contract, tenant=tenant, klass=None, owner=tenant.owner, cost_center=tenant.cost_center
    )


def owner_annotations(contract: Contract, owner: str | None) -> dict[str, str]:
    notes = {ANNOTATION_CONTRACT: contract.metadata.name}
    if owner:
        notes[ANNOTATION_OWNER] = owner
    return notes


def tenant_of(contract: Contract, name: str | None) -> Tenant | None:
    return contract.tenant(name) if name else None


def tenant_classes(contract: Contract, tenant: Tenant) -> list[WorkloadClass]:
    """Classes a tenant can run through its queue: those allowed on a pool it has quota (or a
    raise) on, and those of its own services and jobs; in contract order."""
    pools = {q.pool for q in tenant.quotas} | {r.pool for r in tenant.raises}
    used = {s.workload_class for s in contract.services if s.tenant == tenant.name}
    used |= {j.workload_class for j in contract.jobs if j.tenant == tenant.name}
    return [c for c in contract.classes if c.name in used or pools.intersection(c.pools)]
