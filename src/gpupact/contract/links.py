"""Cross-field validation: names are unique, references resolve, defaults that depend on
other sections are filled in. Everything wrong is bad input (exit 2), reported together.

Resolution (after `link`, these are never None / empty where a value exists):
- class.pools: every pool whose `classes` admit the class, in file order;
- service.pool: the first of its class's pools whose GPU model and NVLink domain match the
  service's `gpu` requirement, else the class's first pool (rules then report the mismatch);
- service/job gpusPerPod: from the declared GPU resource, else 1;
- service.gang: `replica` when the class is gang, else `none`; service.preemptible: the class's;
- service/job owner and costCenter: the tenant's when not given; a service without a tenant
  takes the contract's (`metadata.owner`, the platform team);
- job.minMember: `pods` when the class is gang, else 1; job.queue: `<tenant>-<class>`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpupact.contract.schema import (
    INT32_MAX,
    INT64_MAX,
    Contract,
    GangScope,
    Job,
    Pool,
    Resources,
    Service,
)
from gpupact.errors import FieldError, PathPart
from gpupact.kube.quantity import resource_amount


def link(contract: Contract) -> tuple[Contract, list[FieldError]]:
    """The contract with references resolved, and every cross-field error found."""
    errors: list[FieldError] = []
    _unique_names(contract, errors)
    pools = {p.name: p for p in contract.pools}
    classes = {c.name: c for c in contract.classes}
    tenants = {t.name: t for t in contract.tenants}

    for i, pool in enumerate(contract.pools):
        _refs(pool.classes, classes, ("pools", i, "classes"), "class", errors)
        for j, window in enumerate(pool.pre_warm):
            if window.min_nodes > pool.nodes.max:
                errors.append(
                    FieldError(
                        ("pools", i, "preWarm", j, "minNodes"),
                        f"minNodes ({window.min_nodes}) exceeds nodes.max ({pool.nodes.max})",
                    )
                )

    resolved_classes = []
    for i, klass in enumerate(contract.classes):
        admitting = [p.name for p in contract.pools if klass.name in p.classes]
        for j, name in enumerate(klass.pools):
            path = ("classes", i, "pools", j)
            if name not in pools:
                errors.append(_unknown(path, "pool", name, pools))
            elif name not in admitting:
                errors.append(
                    FieldError(
                        path,
                        f"pool {name} does not admit class {klass.name} (its classes: "
                        f"{_list(pools[name].classes)}); add {klass.name} to that pool's "
                        f"classes or drop it here",
                    )
                )
        pool_names = list(klass.pools) if klass.pools else admitting
        resolved_classes.append(klass.model_copy(update={"pools": pool_names}))
    classes = {c.name: c for c in resolved_classes}

    for i, tenant in enumerate(contract.tenants):
        seen: set[str] = set()
        for j, quota in enumerate(tenant.quotas):
            path = ("tenants", i, "quotas", j)
            if quota.pool not in pools:
                errors.append(_unknown((*path, "pool"), "pool", quota.pool, pools))
            if quota.pool in seen:
                errors.append(FieldError((*path, "pool"), f"second quota for pool {quota.pool}"))
            seen.add(quota.pool)
            for field, value in (
                ("borrowingLimit", quota.borrowing_limit),
                ("lendingLimit", quota.lending_limit),
            ):
                if value is not None and tenant.cohort is None:
                    errors.append(
                        FieldError((*path, field), f"{field} needs the tenant to be in a cohort")
                    )
        for j, raise_ in enumerate(tenant.raises):
            if raise_.pool not in pools:
                errors.append(
                    _unknown(("tenants", i, "raises", j, "pool"), "pool", raise_.pool, pools)
                )

    platform = {"owner": contract.metadata.owner, "cost_center": contract.metadata.cost_center}
    services = [
        _link_service(i, s, pools, classes, tenants, platform, errors)
        for i, s in enumerate(contract.services)
    ]
    jobs = [_link_job(i, j, pools, classes, tenants, errors) for i, j in enumerate(contract.jobs)]
    linked = contract.model_copy(
        update={"classes": resolved_classes, "services": services, "jobs": jobs}
    )
    return linked, errors


def _link_service(
    i: int,
    service: Service,
    pools: dict[str, Pool],
    classes: dict[str, Any],
    tenants: dict[str, Any],
    platform: dict[str, str | None],
    errors: list[FieldError],
) -> Service:
    base = ("services", i)
    update: dict[str, Any] = {}
    gpus_per_pod = _gpus_per_pod(base, service.gpus_per_pod, service.resources, errors)
    update["gpus_per_pod"] = gpus_per_pod
    if service.tensor_parallel % gpus_per_pod:
        errors.append(
            FieldError(
                (*base, "gpusPerPod"),
                f"tensorParallel ({service.tensor_parallel}) must be a multiple of gpusPerPod "
                f"({gpus_per_pod}): a replica is tensorParallel / gpusPerPod pods",
            )
        )
    if service.tenant is None:
        update["owner"] = service.owner or platform["owner"]
        update["cost_center"] = service.cost_center or platform["cost_center"]
    update.update(_tenant_defaults(base, service, tenants, errors))
    klass = classes.get(service.workload_class)
    if klass is None:
        errors.append(_unknown((*base, "class"), "class", service.workload_class, classes))
        return service.model_copy(update=update)
    update["gang"] = service.gang or (GangScope.replica if klass.gang else GangScope.none)
    if update["gang"] is GangScope.service and not service.tensor_parallel % gpus_per_pod:
        pods = max(service.replicas.min, 1) * (service.tensor_parallel // gpus_per_pod)
        _gang_fits(base, service, pods, errors)
    update["preemptible"] = (
        klass.preemptible if service.preemptible is None else service.preemptible
    )
    if service.pool is not None:
        _pool_of_class(base, service.pool, klass, pools, errors)
    elif klass.pools:
        known = [pools[n] for n in klass.pools if n in pools]
        if known:  # a class naming only unknown pools is reported with the class
            update["pool"] = _preferred_pool(service, known)
    else:
        errors.append(FieldError((*base, "class"), f"class {klass.name} may use no pool"))
    return service.model_copy(update=update)


def _gang_fits(
    base: tuple[PathPart, ...], service: Service, pods: int, errors: list[FieldError]
) -> None:
    """A service-wide gang is one PodGroup: minMember (int32) counts every pod of the minimum
    replicas and minResources (int64 quantities) sums their requests."""
    if pods > INT32_MAX:
        errors.append(
            FieldError(
                (*base, "replicas", "min"),
                f"gang: service puts {pods} pods in one PodGroup, more than its minMember "
                f"(an int32) can hold: lower replicas.min or use gang: replica",
            )
        )
        return
    resources = service.resources
    for key, text in {
        **(resources.limits if resources else {}),
        **(resources.requests if resources else {}),
    }.items():
        if resource_amount(key, text) * pods > INT64_MAX:
            errors.append(
                FieldError(
                    (*base, "resources"),
                    f"{key} {text} x {pods} pods of the gang is beyond what a Kubernetes "
                    f"quantity can hold (the PodGroup's minResources)",
                )
            )


def _preferred_pool(service: Service, candidates: list[Pool]) -> str:
    def fits(pool: Pool) -> bool:
        model_ok = service.gpu.model is None or service.gpu.model == pool.gpu.model
        nvlink_ok = not service.gpu.nvlink or pool.gpu.nvlink_domain >= service.tensor_parallel
        return model_ok and nvlink_ok

    return next((p.name for p in candidates if fits(p)), candidates[0].name)


def _link_job(
    i: int,
    job: Job,
    pools: dict[str, Pool],
    classes: dict[str, Any],
    tenants: dict[str, Any],
    errors: list[FieldError],
) -> Job:
    base = ("jobs", i)
    update: dict[str, Any] = {
        "gpus_per_pod": _gpus_per_pod(base, job.gpus_per_pod, job.resources, errors)
    }
    update.update(_tenant_defaults(base, job, tenants, errors))
    klass = classes.get(job.workload_class)
    if klass is None:
        errors.append(_unknown((*base, "class"), "class", job.workload_class, classes))
        return job.model_copy(update=update)
    update["queue"] = job.queue or f"{job.tenant}-{klass.name}"
    update["min_member"] = job.min_member or (job.pods if klass.gang else 1)
    if job.pool is not None:
        _pool_of_class(base, job.pool, klass, pools, errors)
    elif klass.pools:
        update["pool"] = klass.pools[0]
    else:
        errors.append(FieldError((*base, "class"), f"class {klass.name} may use no pool"))
    return job.model_copy(update=update)


def _tenant_defaults(
    base: tuple[PathPart, ...],
    workload: Service | Job,
    tenants: dict[str, Any],
    errors: list[FieldError],
) -> dict[str, Any]:
    """The owner and cost center a workload inherits from its tenant (nothing when the tenant
    is unknown, which `_tenant` reports)."""
    tenant = _tenant(base, workload.tenant, tenants, errors)
    if tenant is None:
        return {}
    return {
        "owner": workload.owner or tenant.owner,
        "cost_center": workload.cost_center or tenant.cost_center,
    }


def _gpus_per_pod(
    base: tuple[PathPart, ...],
    declared: int | None,
    resources: Resources | None,
    errors: list[FieldError],
) -> int:
    amount = resources.gpu_amount() if resources else None
    if amount is None:
        return declared or 1
    resource, text = amount
    if not text.isdigit() or int(text) == 0:
        errors.append(
            FieldError(
                (*base, "resources"), f"{resource} must be a positive whole number, got {text!r}"
            )
        )
        return declared or 1
    if declared is not None and declared != int(text):
        errors.append(
            FieldError(
                (*base, "gpusPerPod"),
                f"gpusPerPod ({declared}) differs from the {resource} resource ({text}); "
                f"give one of them",
            )
        )
    return int(text)


def _tenant(
    base: tuple[PathPart, ...], name: str | None, tenants: dict[str, Any], errors: list[FieldError]
) -> Any:
    if name is None:
        return None
    if name not in tenants:
        errors.append(_unknown((*base, "tenant"), "tenant", name, tenants))
        return None
    return tenants[name]


def _pool_of_class(
    base: tuple[PathPart, ...],
    name: str,
    klass: Any,
    pools: dict[str, Pool],
    errors: list[FieldError],
) -> None:
    if name not in pools:
        errors.append(_unknown((*base, "pool"), "pool", name, pools))
    elif name not in klass.pools:
        errors.append(
            FieldError(
                (*base, "pool"),
                f"class {klass.name} may not use pool {name} (its pools: {_list(klass.pools)})",
            )
        )


def _unique_names(contract: Contract, errors: list[FieldError]) -> None:
    # services and jobs share a namespace: both become pods, PodGroups and workloads
    groups = (("pools",), ("classes",), ("tenants",), ("services", "jobs"))
    for sections in groups:
        first: dict[str, tuple[PathPart, ...]] = {}
        for section in sections:
            for i, item in enumerate(getattr(contract, section)):
                path = (section, i, "name")
                if item.name in first:
                    where = first[item.name]
                    errors.append(
                        FieldError(
                            path, f"name {item.name!r} already used by {where[0]}[{where[1]}]"
                        )
                    )
                else:
                    first[item.name] = path


def _refs(
    names: Sequence[str],
    known: dict[str, Any],
    path: tuple[PathPart, ...],
    what: str,
    errors: list[FieldError],
) -> None:
    seen: set[str] = set()
    for j, name in enumerate(names):
        if name not in known:
            errors.append(_unknown((*path, j), what, name, known))
        elif name in seen:
            errors.append(FieldError((*path, j), f"{what} {name} listed twice"))
        seen.add(name)


def _unknown(path: tuple[PathPart, ...], what: str, name: str, known: dict[str, Any]) -> FieldError:
    return FieldError(path, f"unknown {what} {name!r} (known: {_list(known)})")


def _list(names: Any) -> str:
    names = list(names)
    return ", ".join(names) if names else "none"
