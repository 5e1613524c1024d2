"""The chapter's rules, run on a loaded (linked) contract, as findings.

A finding names a stable rule id, a severity, the field path it is about (for file:line), a
subject (`service/cs-agent`), a message and a fix. `check(contract, now)` runs every rule;
`now` is the only clock (expired raises and services). `RULES` lists them for docs and CLIs.

Estimates kept deliberately simple (the planner refines them later):
- model memory: weights only, params x bits-per-param / 8 / tensorParallel, against the
  memory one pod sees on one device (the MIG slice, or the whole GPU);
- pool capacity: nodes.max x GPUs per node x devices per GPU (MIG instances, time-slice
  replicas); a pod of g devices fits floor(devices per node / g) times on one node;
- quota ceiling of a tenant on a pool (Kueue): nominal + active raises + what it may borrow
  (its borrowingLimit, capped by what the rest of its cohort lends).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, NamedTuple

from gpupact.contract.headroom import service_headroom
from gpupact.contract.schema import (
    Contract,
    GangScope,
    Job,
    Pool,
    Resources,
    Service,
    Tenant,
    WorkloadClass,
)
from gpupact.contract.units import format_duration
from gpupact.errors import PathPart, format_path
from gpupact.kube.quantity import parse_quantity


class Severity(StrEnum):
    error = "error"
    warning = "warning"
    info = "info"

    @property
    def rank(self) -> int:
        return {"error": 0, "warning": 1, "info": 2}[self.value]


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: Severity
    path: tuple[PathPart, ...]
    subject: str
    message: str
    fix: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "severity": self.severity.value,
            "subject": self.subject,
            "path": format_path(self.path),
            "message": self.message,
            "fix": self.fix,
        }


class Hit(NamedTuple):
    path: tuple[PathPart, ...]
    subject: str
    message: str
    fix: str
    severity: Severity | None = None  # None: the rule's own


@dataclass(frozen=True)
class Rule:
    id: str
    severity: Severity
    summary: str
    run: Callable[[Context], Iterator[Hit]] = field(repr=False)


@dataclass(frozen=True)
class Context:
    contract: Contract
    now: datetime
    pools: dict[str, Pool]
    classes: dict[str, WorkloadClass]
    tenants: dict[str, Tenant]

    def services(self) -> Iterator[tuple[int, Service, WorkloadClass, Pool]]:
        for i, s in enumerate(self.contract.services):
            if s.pool in self.pools and s.workload_class in self.classes:
                yield i, s, self.classes[s.workload_class], self.pools[s.pool]

    def jobs(self) -> Iterator[tuple[int, Job, WorkloadClass, Pool]]:
        for i, j in enumerate(self.contract.jobs):
            if j.pool in self.pools and j.workload_class in self.classes:
                yield i, j, self.classes[j.workload_class], self.pools[j.pool]


RULES: dict[str, Rule] = {}


def rule(rule_id: str, severity: Severity, summary: str) -> Callable[[Any], Any]:
    def register(func: Callable[[Context], Iterator[Hit]]) -> Callable[[Context], Iterator[Hit]]:
        RULES[rule_id] = Rule(rule_id, severity, summary, func)
        return func

    return register


def check(contract: Contract, now: datetime) -> list[Finding]:
    """Every finding of every rule, in rule order then file order."""
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    ctx = Context(
        contract,
        now,
        {p.name: p for p in contract.pools},
        {c.name: c for c in contract.classes},
        {t.name: t for t in contract.tenants},
    )
    return [
        Finding(r.id, hit.severity or r.severity, hit.path, hit.subject, hit.message, hit.fix)
        for r in RULES.values()
        for hit in r.run(ctx)
    ]


# --- 43.1: classes, pools and the promise -------------------------------------------------


@rule(
    "preemptible-in-online-pool",
    Severity.error,
    "A preemptible or non-online class tolerates the taint of a pool that serves online traffic",
)
def _preemptible_in_online_pool(ctx: Context) -> Iterator[Hit]:
    for i, pool in enumerate(ctx.contract.pools):
        online = [c for c in pool.classes if c in ctx.classes and ctx.classes[c].online]
        if not online:
            continue
        for j, name in enumerate(pool.classes):
            klass = ctx.classes.get(name)
            if klass is None or klass.online:
                continue
            kind = "preemptible" if klass.preemptible else f"{klass.latency.value}-latency"
            yield Hit(
                ("pools", i, "classes", j),
                f"pool/{pool.name}",
                f"{kind} class {name} may enter pool {pool.name}, which serves online class "
                f"{', '.join(online)}: its pods can take GPUs the online traffic is promised",
                f"remove {name} from pools[{i}].classes and give it its own pool "
                f"(Table 43-1: online inference and batch in separate pools)",
            )


@rule("pool-unreachable", Severity.warning, "No class can use the pool")
def _pool_unreachable(ctx: Context) -> Iterator[Hit]:
    used = {name for c in ctx.contract.classes for name in c.pools}
    for i, pool in enumerate(ctx.contract.pools):
        if pool.name not in used:
            yield Hit(
                ("pools", i, "classes"),
                f"pool/{pool.name}",
                f"no class may use pool {pool.name}: its GPUs can never be scheduled",
                "list the classes it serves under classes, or remove the pool",
            )


@rule("class-without-pool", Severity.warning, "A class may use no pool")
def _class_without_pool(ctx: Context) -> Iterator[Hit]:
    for i, klass in enumerate(ctx.contract.classes):
        if not klass.pools:
            yield Hit(
                ("classes", i),
                f"class/{klass.name}",
                f"no pool admits class {klass.name}: its workloads can never get GPUs",
                f"add {klass.name} to the classes of the pool that should serve it",
            )


@rule(
    "priority-inversion",
    Severity.error,
    "A preemptible class has a priority at or above an online class",
)
def _priority_inversion(ctx: Context) -> Iterator[Hit]:
    online = [c for c in ctx.contract.classes if c.online]
    for i, klass in enumerate(ctx.contract.classes):
        if not klass.preemptible:
            continue
        above = [o.name for o in online if klass.priority >= o.priority]
        if above:
            yield Hit(
                ("classes", i, "priority"),
                f"class/{klass.name}",
                f"preemptible class {klass.name} has priority {klass.priority}, not below "
                f"online class {', '.join(above)}: it may preempt online sessions",
                "give preemptible classes a lower priority than every online class "
                "(Table 43-6: mistaken preemption)",
            )


@rule(
    "online-without-headroom",
    Severity.warning,
    "An online class, or an online service overriding it, keeps no headroom",
)
def _online_without_headroom(ctx: Context) -> Iterator[Hit]:
    message = "keeps 0% headroom: tail latency has no reserve for long contexts and KV cache"
    fix = "keep headroom (20% is the chapter's default for online inference)"
    for i, klass in enumerate(ctx.contract.classes):
        if klass.online and klass.headroom == 0:
            yield Hit(
                ("classes", i, "headroom"),
                f"class/{klass.name}",
                f"online class {klass.name} {message}",
                fix,
            )
    for i, service, klass, _pool in ctx.services():
        if klass.online and service.headroom == 0:
            yield Hit(
                ("services", i, "headroom"),
                f"service/{service.name}",
                f"online service {service.name} {message}",
                fix,
            )


@rule(
    "pool-headroom-exhausted",
    Severity.warning,
    "Online services' minimum replicas leave the pool less than its headroom",
)
def _pool_headroom_exhausted(ctx: Context) -> Iterator[Hit]:
    for i, pool in enumerate(ctx.contract.pools):
        demand = 0
        headroom = 0
        for _, service, klass, spool in ctx.services():
            if spool is pool and klass.online:
                demand += service.replicas.min * service.tensor_parallel
                headroom = max(headroom, service_headroom(service, klass))
        if demand == 0 or demand * 100 <= pool.max_devices * (100 - headroom):
            continue
        yield Hit(
            ("pools", i, "nodes", "max"),
            f"pool/{pool.name}",
            f"online services need {demand} devices at their minimum replicas, more than "
            f"{100 - headroom}% of pool {pool.name}'s {pool.max_devices}",
            "raise nodes.max, or lower minimum replicas",
        )


@rule(
    "cold-start-exceeds-queue-wait",
    Severity.warning,
    "A class's queue-wait promise depends on scaling up a pool slower than the promise",
)
def _cold_start_exceeds_wait(ctx: Context) -> Iterator[Hit]:
    for i, pool in enumerate(ctx.contract.pools):
        if pool.nodes.min > 0 or pool.pre_warm:
            continue
        phases = pool.cold_start
        for klass in ctx.contract.classes:
            wait = klass.max_queue_wait
            # a promise to `bound` waits for the node; one to `ready` for the pod's start too
            cold = (
                phases.total
                if klass.max_queue_wait_until.value == "ready"
                else phases.provision + phases.driver + phases.device_plugin
            )
            if pool.name in klass.pools and wait is not None and cold > wait:
                yield Hit(
                    ("pools", i, "coldStart"),
                    f"pool/{pool.name}",
                    f"class {klass.name} promises GPUs within {_dur(wait)}, but pool "
                    f"{pool.name} keeps no warm nodes and cold-starts in {_dur(cold)}",
                    "keep warm nodes (nodes.min) or add preWarm windows for predictable peaks",
                )


@rule(
    "burst-pool-without-prewarm", Severity.info, "A pool for the burst class has no pre-warm window"
)
def _burst_without_prewarm(ctx: Context) -> Iterator[Hit]:
    for i, pool in enumerate(ctx.contract.pools):
        if "burst" in pool.classes and not pool.pre_warm:
            yield Hit(
                ("pools", i),
                f"pool/{pool.name}",
                f"burst pool {pool.name} has no preWarm window: peaks rely on cold starts",
                "pre-warm predictable peaks (promotions, month end) with preWarm windows",
            )


# --- 43.2 / 43.4: services on their pool --------------------------------------------------


@rule(
    "hpa-metric-blind-to-queue",
    Severity.warning,
    "A service promises a TTFT but its HPA's metric cannot see requests waiting for a slot",
)
def _hpa_metric_blind_to_queue(ctx: Context) -> Iterator[Hit]:
    # compile scales on the engine's num_requests_running gauge when `concurrency` is given,
    # else on DCGM GPU utilisation: a replica full at max_num_seqs (or 100 % busy) reports
    # the same value however long its queue grows, so under saturation the HPA multiplies
    # replicas by at most max_num_seqs / target per sync, and not at all once the target
    # reaches what a replica holds; the waiting time, which TTFT is made of, goes unseen
    for i, service, _, _ in ctx.services():
        if service.ttft_slo is None or service.replicas.upper <= max(service.replicas.min, 1):
            continue
        metric = "num_requests_running" if service.concurrency is not None else "GPU utilisation"
        yield Hit(
            ("services", i, "ttftSlo"),
            f"service/{service.name}",
            f"service {service.name} promises TTFT {_dur(service.ttft_slo)} but autoscales on "
            f"{metric}, which stops growing once its replicas are full: requests waiting for "
            "a slot do not scale it out",
            "size replicas.min for the peak (gpupact plan --rate), pre-warm it, or add an HPA "
            "metric on num_requests_waiting next to the compiled one",
        )


@rule(
    "online-shared-gpu-untested",
    Severity.error,
    "An online service shares GPUs (time-slicing, MIG) without load-test evidence",
)
def _online_shared_untested(ctx: Context) -> Iterator[Hit]:
    for i, service, klass, pool in ctx.services():
        if not klass.online or not pool.sharing.shared:
            continue
        evidence = service.load_test
        if evidence and (evidence.sharing is None or evidence.sharing == pool.sharing):
            continue
        tested = f" (tested {evidence.sharing}, not {pool.sharing})" if evidence else ""
        yield Hit(
            ("services", i, "loadTest") if evidence else ("services", i),
            f"service/{service.name}",
            f"online service {service.name} runs on pool {pool.name} with shared GPUs "
            f"({pool.sharing}) and no load test showing its SLO holds{tested}",
            "run a load test on the shared setup and record it under loadTest, or use an "
            "exclusive pool",
            Severity.error if pool.sharing.mode == "timeslice" else Severity.warning,
        )


@rule("gpu-model-mismatch", Severity.error, "A service needs a GPU model its pool does not have")
def _gpu_model_mismatch(ctx: Context) -> Iterator[Hit]:
    for i, service, _klass, pool in ctx.services():
        if service.gpu.model and service.gpu.model != pool.gpu.model:
            yield Hit(
                ("services", i, "gpu", "model"),
                f"service/{service.name}",
                f"service {service.name} needs {service.gpu.model}, pool {pool.name} has "
                f"{pool.gpu.model}",
                "choose a pool with that GPU model, or change gpu.model",
            )


@rule(
    "nvlink-unavailable",
    Severity.error,
    "A service needs NVLink across its replica, its pool's NVLink domain is smaller",
)
def _nvlink_unavailable(ctx: Context) -> Iterator[Hit]:
    for i, service, _klass, pool in ctx.services():
        domain = pool.gpu.nvlink_domain
        if service.gpu.nvlink and domain < service.tensor_parallel:
            have = f"NVLink joins {domain} GPUs" if domain else "has no NVLink"
            yield Hit(
                ("services", i, "gpu", "nvlink"),
                f"service/{service.name}",
                f"service {service.name} needs its {service.tensor_parallel} GPUs on NVLink, "
                f"pool {pool.name} {have} (topology {pool.gpu.topology or 'unset'})",
                "use a pool with a large enough NVLink domain (e.g. nvlink-8)",
            )


@rule(
    "model-exceeds-gpu-memory",
    Severity.error,
    "A service's model weights per GPU exceed the GPU memory",
)
def _model_exceeds_memory(ctx: Context) -> Iterator[Hit]:
    for i, service, _klass, pool in ctx.services():
        if service.model is None:
            continue
        per_gpu = -(-service.model.weight_bytes // service.tensor_parallel)
        if per_gpu > pool.device_memory:
            yield Hit(
                ("services", i, "model"),
                f"service/{service.name}",
                f"{service.model.name} ({service.model.quantization.value}) needs "
                f"{_gib(per_gpu)} of weights per GPU at tensorParallel "
                f"{service.tensor_parallel}, pool {pool.name} offers {_gib(pool.device_memory)}",
                "quantise (fp8/int8/int4), raise tensorParallel, or use larger GPUs "
                "(Table 43-6: GPU OOM)",
            )


@rule(
    "preemptible-class-for-protected-service",
    Severity.error,
    "A service that must not be preempted is in a preemptible class",
)
def _protected_in_preemptible(ctx: Context) -> Iterator[Hit]:
    for i, service, klass, _pool in ctx.services():
        if klass.preemptible and service.preemptible is False:
            yield Hit(
                ("services", i, "preemptible"),
                f"service/{service.name}",
                f"service {service.name} declares preemptible: false but class {klass.name} "
                f"is preemptible",
                "move the service to a non-preemptible class",
            )


@rule(
    "victim-rule-not-enforceable",
    Severity.info,  # a fact about the cluster to come, not a flaw to fix: the twin shows it
    "A non-preemptible class can be preempted by another class: nothing compiled prevents it",
)
def _victim_rule_not_enforceable(ctx: Context) -> Iterator[Hit]:
    """The rule "a non-preemptible class is a victim only of its own class" compiles into no
    object a controller enforces: kube-scheduler's DefaultPreemption lets any pod whose
    PriorityClass says PreemptLowerPriority evict a lower-priority pod on a node it fits,
    whatever its class. Preemptible classes are compiled `preemptionPolicy: Never`, so only another
    non-preemptible class of higher priority sharing a pool can do it."""
    classes = ctx.contract.classes
    for i, klass in enumerate(classes):
        if klass.preemptible:
            continue
        for other in classes:
            shared = sorted(set(klass.pools) & set(other.pools))
            if other.preemptible or other.priority <= klass.priority or not shared:
                continue
            yield Hit(
                ("classes", i),
                f"class/{klass.name}",
                f"non-preemptible class {klass.name} (priority {klass.priority}) shares pool "
                f"{', '.join(shared)} with class {other.name} (priority {other.priority}): "
                f"kube-scheduler lets {other.name} preempt {klass.name} there, the contract's "
                f"rule that it is a victim only of its own class is not enforceable",
                f"give {klass.name} a pool of its own, or accept that {other.name} may "
                f"preempt it (the twin simulates that)",
            )


@rule(
    "onboarding-incomplete",
    Severity.warning,
    "A service lacks part of the onboarding declaration (43.1)",
)
def _onboarding_incomplete(ctx: Context) -> Iterator[Hit]:
    for i, service in enumerate(ctx.contract.services):
        missing = [
            key
            for key, value in (
                ("concurrency", service.concurrency),
                ("contextLength", service.context_length),
                ("coldStart", service.cold_start),
                ("priority", service.priority),
            )
            if value is None
        ]
        if missing:
            yield Hit(
                ("services", i),
                f"service/{service.name}",
                f"service {service.name} does not declare {', '.join(missing)}",
                "declare them: the platform sizes pools, queues and quotas from them",
            )


@rule(
    "multi-pod-replica-without-gang",
    Severity.warning,
    "A replica of several pods is not gang-scheduled",
)
def _multi_pod_without_gang(ctx: Context) -> Iterator[Hit]:
    for i, service, _klass, _pool in ctx.services():
        if service.pods_per_replica > 1 and service.gang is GangScope.none:
            yield Hit(
                ("services", i, "tensorParallel"),
                f"service/{service.name}",
                f"each replica of {service.name} is {service.pods_per_replica} pods without a "
                f"gang: a partial start holds GPUs while the last worker stays Pending",
                "set gang: replica (one PodGroup per replica, minMember = tensorParallel / "
                "gpusPerPod)",
            )


@rule(
    "service-replicas-exceed-pool",
    Severity.error,
    "A service's maximum replicas need more devices than its pool can ever hold",
)
def _service_replicas_exceed_pool(ctx: Context) -> Iterator[Hit]:
    for i, pool in enumerate(ctx.contract.pools):
        on_pool = [(j, s) for j, s, _k, p in ctx.services() if p is pool]
        total = 0
        for j, service in on_pool:
            need = service.replicas.upper * service.tensor_parallel
            total += need
            if need > pool.max_devices:
                yield Hit(
                    ("services", j, "replicas", "max"),
                    f"service/{service.name}",
                    f"{service.name} scales to {service.replicas.upper} replicas x "
                    f"{service.tensor_parallel} devices = {need}, pool {pool.name} holds at most "
                    f"{pool.max_devices}: the HPA's last replicas stay Pending",
                    "lower replicas.max to what the pool holds, or raise the pool's nodes.max",
                )
        if total > pool.max_devices and len(on_pool) > 1:
            yield Hit(
                ("pools", i, "nodes", "max"),
                f"pool/{pool.name}",
                f"services on pool {pool.name} scale to {total} devices together, the pool "
                f"holds at most {pool.max_devices}: they cannot all reach replicas.max at once",
                "raise nodes.max, or lower replicas.max of the services sharing the pool",
                Severity.warning,
            )


@rule(
    "service-replicas-exceed-quota",
    Severity.error,
    "A tenant's services need more devices on a pool than the tenant's quota there",
)
def _service_replicas_exceed_quota(ctx: Context) -> Iterator[Hit]:
    """Services are not admitted through Kueue, so nothing stops them at the quota: devices
    beyond it are the ones promised to the other tenants of the pool. The minimum replicas
    over quota is an error, a scale-out over quota a warning."""
    demand: dict[tuple[str, str], tuple[int, int, list[int]]] = {}
    for j, service, _klass, pool in ctx.services():
        if service.tenant is None or service.tenant not in ctx.tenants:
            continue
        low, high, where = demand.get((service.tenant, pool.name), (0, 0, []))
        per = service.tensor_parallel
        demand[(service.tenant, pool.name)] = (
            low + service.replicas.min * per,
            high + service.replicas.upper * per,
            [*where, j],
        )
    for (tenant_name, pool_name), (low, high, where) in demand.items():
        tenant = ctx.tenants[tenant_name]
        own = _own_quota(ctx, tenant, pool_name)
        if high <= own:
            continue
        names = ", ".join(ctx.contract.services[j].name for j in where)
        at_min = low > own
        yield Hit(
            ("services", where[0], "replicas", "min" if at_min else "max"),
            f"tenant/{tenant_name}",
            f"services of {tenant_name} on pool {pool_name} ({names}) need "
            f"{low if at_min else high} devices at their {'minimum' if at_min else 'maximum'} "
            f"replicas, the tenant's quota there is {own}: the rest comes out of GPUs promised "
            f"to other tenants",
            f"raise {tenant_name}'s quota on {pool_name}, or lower the services' replicas",
            None if at_min else Severity.warning,
        )


# --- 43.3: gangs, quotas, requests --------------------------------------------------------


@rule("pod-exceeds-node", Severity.error, "A pod asks for more devices than one node has")
def _pod_exceeds_node(ctx: Context) -> Iterator[Hit]:
    for section, i, item, pool in _workloads(ctx):
        if (item.gpus_per_pod or 1) > pool.devices_per_node:
            yield Hit(
                (section, i, "gpusPerPod"),
                f"{section[:-1]}/{item.name}",
                f"a pod of {item.name} asks for {item.gpus_per_pod} devices, a node of pool "
                f"{pool.name} has {pool.devices_per_node}",
                "split the pod (fewer gpusPerPod) or use a pool with larger nodes",
            )


@rule(
    "gang-exceeds-pool",
    Severity.error,
    "A gang's minMember can never fit in its pool, even at nodes.max",
)
def _gang_exceeds_pool(ctx: Context) -> Iterator[Hit]:
    for section, i, item, pool in _workloads(ctx):
        per_pod = item.gpus_per_pod or 1
        if per_pod > pool.devices_per_node:
            continue  # pod-exceeds-node says it
        members = item.min_member
        if members is None or members <= 1:
            continue
        room = pool.nodes.max * (pool.devices_per_node // per_pod)
        if members > room:
            if isinstance(item, Service):
                field_ = "replicas" if item.gang is GangScope.service else "tensorParallel"
            else:
                field_ = "minMember"
            yield Hit(
                (section, i, field_),
                f"{section[:-1]}/{item.name}",
                f"gang of {item.name} needs {members} pods x {per_pod} devices together, "
                f"pool {pool.name} holds at most {room} such pods ({pool.nodes.max} nodes)",
                "raise the pool's nodes.max or lower tensorParallel/minMember "
                "(Table 43-6: gang Pending forever)",
            )


@rule(
    "gpu-requests-not-limits",
    Severity.error,
    "Requests of an extended resource (GPU) differ from its limits",
)
def _requests_not_limits(ctx: Context) -> Iterator[Hit]:
    for section, items in (("services", ctx.contract.services), ("jobs", ctx.contract.jobs)):
        for i, item in enumerate(items):
            for key, limit in _unequal_extended(item.resources):
                yield Hit(
                    (section, i, "resources", "requests", key),
                    f"{section[:-1]}/{item.name}",
                    f"{key} request ({item.resources.requests[key]}) differs from its limit "  # type: ignore[union-attr]
                    f"({limit or 'none'}): GPUs cannot be overcommitted",
                    "set requests equal to limits, or give only limits",
                )


@rule(
    "quota-exceeds-capacity",
    Severity.error,
    "Tenant quotas plus active raises on a pool exceed what it can ever hold",
)
def _quota_exceeds_capacity(ctx: Context) -> Iterator[Hit]:
    for i, pool in enumerate(ctx.contract.pools):
        parts = []
        total = 0
        for tenant in ctx.contract.tenants:
            quota = tenant.quota(pool.name)
            raised = sum(r.gpus for r in tenant.raises if r.pool == pool.name and r.active(ctx.now))
            amount = (quota.gpus if quota else 0) + raised
            if amount:
                total += amount
                parts.append(f"{tenant.name} {amount}")
        if total > pool.max_devices:
            yield Hit(
                ("pools", i, "nodes", "max"),
                f"pool/{pool.name}",
                f"quotas on pool {pool.name} add up to {total} devices ({', '.join(parts)}), "
                f"it holds at most {pool.max_devices} ({pool.nodes.max} nodes x "
                f"{pool.devices_per_node})",
                "lower quotas or raises, or raise nodes.max",
            )


@rule(
    "job-exceeds-quota",
    Severity.error,
    "A job needs more devices than its tenant can ever be admitted on the pool",
)
def _job_exceeds_quota(ctx: Context) -> Iterator[Hit]:
    for i, job, _klass, pool in ctx.jobs():
        tenant = ctx.tenants.get(job.tenant)
        if tenant is None:
            continue
        ceiling = _quota_ceiling(ctx, tenant, pool.name)
        if job.gpus > ceiling:
            yield Hit(
                ("jobs", i, "pods"),
                f"job/{job.name}",
                f"job {job.name} needs {job.gpus} devices at once, tenant {tenant.name} can be "
                f"admitted at most {ceiling} on pool {pool.name}: it would queue forever",
                "raise the tenant's quota on the pool or split the job",
            )


def _own_quota(ctx: Context, tenant: Tenant, pool: str) -> int:
    """Nominal quota plus the raises active now."""
    quota = tenant.quota(pool)
    return (quota.gpus if quota else 0) + sum(
        r.gpus for r in tenant.raises if r.pool == pool and r.active(ctx.now)
    )


def _quota_ceiling(ctx: Context, tenant: Tenant, pool: str) -> int:
    quota = tenant.quota(pool)
    own = _own_quota(ctx, tenant, pool)
    if tenant.cohort is None:
        return own
    lendable = 0
    for other in ctx.contract.tenants:
        theirs = (
            other.quota(pool) if other is not tenant and other.cohort == tenant.cohort else None
        )
        if theirs is not None:
            lendable += theirs.gpus if theirs.lending_limit is None else theirs.lending_limit
    limit = quota.borrowing_limit if quota else None
    return own + (lendable if limit is None else min(limit, lendable))


# --- 43.6: governance ---------------------------------------------------------------------


@rule("missing-owner", Severity.error, "The contract, a tenant, service or job has no owner")
def _missing_owner(ctx: Context) -> Iterator[Hit]:
    meta = ctx.contract.metadata
    if meta.owner is None:
        yield Hit(
            ("metadata",),
            f"contract/{meta.name}",
            f"contract {meta.name} names no owner: the pools' queues, flavors, PriorityClasses "
            f"and NodePools it compiles to would belong to nobody",
            "set metadata.owner (the platform team)",
        )
    for section, i, item in _owned(ctx):
        if item.owner is None:
            yield Hit(
                (section, i),
                f"{section[:-1]}/{item.name}",
                f"{section[:-1]} {item.name} has no owner: nobody answers for its GPUs",
                "set owner (directly or on its tenant); resources without an owner do not "
                "scale (43.6)",
            )


@rule(
    "missing-cost-center",
    Severity.warning,
    "The contract, a tenant, service or job has no cost centre",
)
def _missing_cost_center(ctx: Context) -> Iterator[Hit]:
    meta = ctx.contract.metadata
    if meta.cost_center is None:
        yield Hit(
            ("metadata",),
            f"contract/{meta.name}",
            f"contract {meta.name} names no cost centre for the platform's own objects",
            "set metadata.costCenter",
        )
    for section, i, item in _owned(ctx):
        if item.cost_center is None:
            yield Hit(
                (section, i),
                f"{section[:-1]}/{item.name}",
                f"{section[:-1]} {item.name} has no cost centre: its GPU hours cannot be billed",
                "set costCenter (directly or on its tenant)",
            )


@rule("raise-without-expiry", Severity.error, "A temporary quota raise has no expiry")
def _raise_without_expiry(ctx: Context) -> Iterator[Hit]:
    for i, tenant in enumerate(ctx.contract.tenants):
        for j, raised in enumerate(tenant.raises):
            if raised.expires is None:
                yield Hit(
                    ("tenants", i, "raises", j),
                    f"tenant/{tenant.name}",
                    f"raise of {raised.gpus} on {raised.pool} for {tenant.name} "
                    f"({raised.reason}) never expires",
                    "set expires: a temporary raise must end (43.6)",
                )


@rule("raise-expired", Severity.warning, "A temporary quota raise has expired")
def _raise_expired(ctx: Context) -> Iterator[Hit]:
    for i, tenant in enumerate(ctx.contract.tenants):
        for j, raised in enumerate(tenant.raises):
            if raised.expires is not None and raised.expires <= ctx.now:
                yield Hit(
                    ("tenants", i, "raises", j, "expires"),
                    f"tenant/{tenant.name}",
                    f"raise of {raised.gpus} on {raised.pool} for {tenant.name} expired "
                    f"{raised.expires.isoformat()}",
                    "remove the raise, or renew it with a new expiry after review",
                )


@rule("service-expired", Severity.warning, "A service is past its expiry")
def _service_expired(ctx: Context) -> Iterator[Hit]:
    for i, service in enumerate(ctx.contract.services):
        if service.expires is not None and service.expires <= ctx.now:
            yield Hit(
                ("services", i, "expires"),
                f"service/{service.name}",
                f"service {service.name} expired {service.expires.isoformat()} and still "
                f"holds GPUs",
                "review it: retire the service or renew expires",
            )


# --- helpers ------------------------------------------------------------------------------


def _workloads(ctx: Context) -> Iterator[tuple[str, int, Service | Job, Pool]]:
    for i, service, _klass, pool in ctx.services():
        yield "services", i, service, pool
    for i, job, _klass, pool in ctx.jobs():
        yield "jobs", i, job, pool


def _owned(ctx: Context) -> Iterator[tuple[str, int, Tenant | Service | Job]]:
    for section in ("tenants", "services", "jobs"):
        for i, item in enumerate(getattr(ctx.contract, section)):
            yield section, i, item


def _unequal_extended(resources: Resources | None) -> Iterator[tuple[str, str | None]]:
    if resources is None:
        return
    for key, request in resources.requests.items():
        if "/" not in key or key.startswith("kubernetes.io/"):
            continue  # native resources may be overcommitted
        limit = resources.limits.get(key)
        if limit is None or parse_quantity(limit).amount != parse_quantity(request).amount:
            yield key, limit


def _gib(amount: int) -> str:
    return f"{amount / 2**30:.1f} GiB"


def _dur(value: timedelta) -> str:
    return format_duration(value)
