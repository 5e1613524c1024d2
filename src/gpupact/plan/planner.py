"""Entry points: plan one service of a contract, every service, or a workload from flags."""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpupact.contract.schema import Contract
from gpupact.errors import InputError
from gpupact.plan.capacity import Finding, ServicePlan, plan_workload
from gpupact.plan.from_contract import timeslice_of, workload_for_service
from gpupact.plan.prewarm import PrewarmSchedule, prewarm_schedules
from gpupact.plan.serving import shares_of, timeslice_memory_problem


@dataclass(frozen=True)
class PoolTotal:
    pool: str
    gpus: int  # devices the planned services need
    max_devices: int  # what the pool can grow to

    @property
    def finding(self) -> Finding | None:
        if self.gpus <= self.max_devices:
            return None
        return Finding(
            "pool-capacity",
            f"pool {self.pool}: the services need {self.gpus} GPUs, it grows to "
            f"{self.max_devices} (nodes.max x GPUs per node)",
        )


@dataclass(frozen=True)
class ContractPlan:
    contract: str
    services: tuple[ServicePlan, ...]
    pools: tuple[PoolTotal, ...]
    prewarm: tuple[PrewarmSchedule, ...]

    @property
    def findings(self) -> list[tuple[str, Finding]]:
        """(subject, finding) of every service and pool."""
        out = [(f"service/{p.workload.name}", f) for p in self.services for f in p.findings]
        out += [(f"pool/{t.pool}", t.finding) for t in self.pools if t.finding]
        return out


def plan_service(
    contract: Contract,
    service_name: str,
    *,
    ttft_slo_s: float | None = None,
    rate: float | None = None,
) -> ServicePlan:
    """The plan of one service of a linked contract, checked against `ttft_slo_s` when given,
    else against the service's own `ttftSlo`; at `rate` requests/s when given, else at the
    service's concurrency."""
    service = next((s for s in contract.services if s.name == service_name), None)
    if service is None:
        known = ", ".join(s.name for s in contract.services) or "none"
        raise InputError(f"no service named {service_name!r} (services: {known})")
    pool = contract.pool(service.pool) if service.pool else None
    # planned as if every co-tenant of a time-sliced GPU is busy; its memory budget is 1/k of
    # an engine's (workload_for_service), as the twin's replica (serving.replica_serving)
    timeslice = timeslice_of(pool) if pool else 1
    workload = workload_for_service(contract, service, float(timeslice), timeslice=timeslice)
    if timeslice > 1:
        workload = workload.assuming(
            f"time-sliced GPU ({pool.sharing if pool else ''}): compute and bandwidth divided "
            f"by {timeslice}"
        )
    if ttft_slo_s is None and service.ttft_slo is not None:
        ttft_slo_s = service.ttft_slo.total_seconds()
    shares = shares_of(contract, service, timeslice)
    if rate is not None:
        workload = replace(workload, rate=rate, concurrency=None)
    plan = plan_workload(replace(workload, ttft_slo_s=ttft_slo_s), shares=shares)
    problem = timeslice_memory_problem(contract, service)
    if problem is not None:
        plan = replace(plan, findings=(*plan.findings, Finding("timeslice-memory", problem)))
    return plan


def plan_contract(
    contract: Contract, *, service: str | None = None, ttft_slo_s: float | None = None
) -> ContractPlan:
    names = [service] if service else [s.name for s in contract.services]
    plans = tuple(plan_service(contract, n, ttft_slo_s=ttft_slo_s) for n in names)
    by_pool: dict[str, int] = {}
    for plan, name in zip(plans, names, strict=True):
        pool = next(s.pool for s in contract.services if s.name == name)
        if pool and plan.gpus is not None:
            by_pool[pool] = by_pool.get(pool, 0) + plan.gpus
    totals = tuple(
        PoolTotal(name, gpus, contract.pool(name).max_devices) for name, gpus in by_pool.items()
    )
    schedules = tuple(prewarm_schedules(contract, plans))
    return ContractPlan(contract.metadata.name, plans, totals, schedules)
