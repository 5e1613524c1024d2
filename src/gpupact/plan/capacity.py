"""Replicas, GPUs and nodes for a target concurrency, the TTFT under that load, and the
pre-warm lead time of a peak.

Replicas are the most of three needs, each keeping the class's headroom free (the share of
capacity `check` and the compiled HPA keep: load <= capacity x (100 - headroom)%):
- KV cache:  concurrency <= replicas x sequences per replica x (1 - headroom);
- prefill:   requests arriving per second (Little's law: concurrency / mean request time) x
             the mean prompt's prefill time <= replicas x (1 - headroom). Decode is not a
             separate need: a decoding replica streams its weights every step however small
             its batch, so its cost is paid in TPOT (and in the request time above), and the
             KV need already bounds the batch;
- TTFT SLO:  the p95 prompt's prefill plus the p95 wait behind other prompts <= the SLO.
The wait is M/M/1's (Poisson arrivals at each replica's prefill, exponential prefill times):
P(wait > t) = rho x exp(-(mu - lambda) t).

Pre-warm: nodes for a peak must be asked for `lead` before it — the pool's cold-start phases
(provision, driver, device plugin, image pull, model load), with the model load estimated from
the weights when the pool does not give it; a service's own declared cold start counts when it
is longer.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

from gpupact.plan.replica import ReplicaEstimate, choose_tp, estimate_replica, tp_candidates
from gpupact.plan.serving import ReplicaProfile, profile_of
from gpupact.plan.workload import Workload

# Model load when the pool does not say: weights streamed from object storage or a cache at
# this rate per replica, plus the engine's start (CUDA graphs, compilation, warm-up).
MODEL_LOAD_BYTES_PER_S = 1 * 10**9
ENGINE_START_S = 60
MAX_PLANNED_REPLICAS = 100_000  # the search for the TTFT SLO gives up beyond this


@dataclass(frozen=True)
class Finding:
    """Why the service cannot be served as declared (exit 1)."""

    code: str
    message: str


@dataclass(frozen=True)
class Prewarm:
    phases: tuple[tuple[str, float], ...]  # (phase, seconds) in order
    model_load_estimated: bool
    service_cold_start_s: float | None

    @property
    def lead_s(self) -> float:
        total = sum(seconds for _, seconds in self.phases)
        return max(total, self.service_cold_start_s or 0.0)


@dataclass(frozen=True)
class ServicePlan:
    workload: Workload
    replica: ReplicaEstimate  # at the planned tensor-parallel size
    min_tp: int | None  # smallest size that holds the model, None: none within a node
    replicas: int | None  # None without a target concurrency
    replicas_by: dict[str, int]  # the need behind each count: kv, prefill, ttft
    ttft_p50_s: float | None  # under the planned load (None without one)
    ttft_p95_s: float | None
    prewarm: Prewarm
    findings: tuple[Finding, ...]

    @property
    def tp(self) -> int:
        return self.replica.tp

    @property
    def gpus(self) -> int | None:
        return None if self.replicas is None else self.replicas * self.tp

    @property
    def replicas_per_node(self) -> int:
        return max(1, self.workload.gpus_per_node // self.tp)

    @property
    def nodes(self) -> int | None:
        """Nodes the replicas need: a replica never spans nodes."""
        if self.replicas is None:
            return None
        return -(-self.replicas // self.replicas_per_node)

    @property
    def profile(self) -> ReplicaProfile:
        return profile_of(self.replica)

    @property
    def ok(self) -> bool:
        return not self.findings


def _arrival_rate(workload: Workload, replica: ReplicaEstimate) -> float:
    """Requests per second at the target concurrency (Little's law)."""
    profile = profile_of(replica)
    return (workload.concurrency or 0) / profile.service_time_s()


def wait_quantile(arrivals: float, service_rate: float, q: float) -> float:
    """The q-quantile of M/M/1's queueing wait (inf when the queue is unstable)."""
    if arrivals <= 0:
        return 0.0
    if arrivals >= service_rate:
        return math.inf
    rho = arrivals / service_rate
    tail = 1 - q
    return 0.0 if rho <= tail else math.log(rho / tail) / (service_rate - arrivals)


def ttft_quantile(replica: ReplicaEstimate, arrivals_per_replica: float, q: float) -> float:
    prefill = replica.prefill_p95_s if q >= 0.95 else replica.prefill_p50_s
    service_rate = replica.prefill_tokens_per_s / replica.mean_input
    return prefill + wait_quantile(arrivals_per_replica, service_rate, q)


def _replicas_needed(
    workload: Workload, replica: ReplicaEstimate
) -> tuple[dict[str, int], list[Finding]]:
    needs: dict[str, int] = {}
    findings: list[Finding] = []
    concurrency = workload.concurrency or 0
    free = 100 - workload.headroom  # per cent of capacity the load may use
    if free <= 0:
        return {}, [Finding("headroom", "headroom 100% leaves no capacity to plan with")]
    needs["kv"] = -(-concurrency * 100 // (max(1, replica.sequences) * free))
    arrivals = _arrival_rate(workload, replica)
    busy = arrivals * replica.mean_input / replica.prefill_tokens_per_s  # replicas prefilling
    needs["prefill"] = max(1, math.ceil(busy * 100 / free - 1e-9))
    slo = workload.ttft_slo_s
    if slo is not None:
        if replica.prefill_p95_s > slo:
            findings.append(
                Finding(
                    "ttft-slo",
                    f"the p95 prompt ({workload.input.p95} tokens) alone takes "
                    f"{replica.prefill_p95_s:.2f}s to prefill at TP {replica.tp}, over the "
                    f"TTFT SLO of {slo:g}s: raise tensor parallelism, use a faster GPU or "
                    f"shorten prompts",
                )
            )
        else:
            meets = lambda r: ttft_quantile(replica, arrivals / r, 0.95) <= slo  # noqa: E731
            needs["ttft"] = smallest(max(needs.values()), meets)
    return needs, findings


def smallest(start: int, ok: Callable[[int], bool]) -> int:
    """The smallest n >= start with ok(n), for ok monotone in n (doubling, then bisection)."""
    if ok(start):
        return start
    high = start * 2
    while not ok(high) and high < MAX_PLANNED_REPLICAS:
        high *= 2
    low = high // 2  # not ok
    while high - low > 1:
        mid = (low + high) // 2
        if ok(mid):
            high = mid
        else:
            low = mid
    return high


def prewarm_of(workload: Workload, replica: ReplicaEstimate) -> Prewarm:
    cs = workload.cold_start
    load = cs.model_load.total_seconds()
    estimated = load == 0
    if estimated:
        load = replica.memory.weights / MODEL_LOAD_BYTES_PER_S + ENGINE_START_S
    phases = (
        ("provision", cs.provision.total_seconds()),
        ("driver", cs.driver.total_seconds()),
        ("devicePlugin", cs.device_plugin.total_seconds()),
        ("imagePull", cs.image_pull.total_seconds()),
        ("modelLoad", load),
    )
    declared = workload.service_cold_start
    return Prewarm(phases, estimated, declared.total_seconds() if declared else None)


def _fit_findings(
    workload: Workload, replica: ReplicaEstimate, min_tp: int | None
) -> list[Finding]:
    w, m = workload, replica.memory
    out = []
    if replica.tp not in tp_candidates(w):
        out.append(
            Finding(
                "tp-invalid",
                f"tensor parallelism {replica.tp} is not a power of two up to {w.gpus_per_node} "
                f"GPUs per node dividing {w.model.name}'s {w.model.heads} attention heads "
                f"(valid: {', '.join(map(str, tp_candidates(w)))})",
            )
        )
    if min_tp is None:
        out.append(
            Finding(
                "does-not-fit-node",
                f"{w.model.name} ({w.quantization.value}) does not fit on one node of "
                f"{w.gpus_per_node} x {w.gpu_memory / 1e9:.0f} GB with a {w.context}-token "
                f"request at any tensor-parallel size: quantise further, use larger GPUs or "
                f"serve across nodes (pipeline parallelism)",
            )
        )
    elif not replica.fits:
        why = (
            "the weights do not fit"
            if not replica.weights_fit
            else f"only {m.kv_tokens} tokens of KV cache fit, below contextLength {w.context}"
        )
        out.append(
            Finding(
                "tp-too-small",
                f"at tensor parallelism {replica.tp} {why}: needs at least {min_tp}",
            )
        )
    return out


def plan_workload(workload: Workload) -> ServicePlan:
    tp, min_tp = choose_tp(workload)
    replica = estimate_replica(workload, tp)
    findings = _fit_findings(workload, replica, min_tp)
    replicas: int | None = None
    needs: dict[str, int] = {}
    ttft50 = ttft95 = None
    if workload.concurrency is not None and replica.fits:
        needs, more = _replicas_needed(workload, replica)
        findings += more
        if needs:
            replicas = max(1, *needs.values())
            arrivals = _arrival_rate(workload, replica) / replicas
            ttft50 = ttft_quantile(replica, arrivals, 0.5)
            ttft95 = ttft_quantile(replica, arrivals, 0.95)
    plan = ServicePlan(
        workload, replica, min_tp, replicas, needs, ttft50, ttft95,
        prewarm_of(workload, replica), tuple(findings),
    )  # fmt: skip
    return _with_limits(plan)


def _with_limits(plan: ServicePlan) -> ServicePlan:
    w, more = plan.workload, []
    if plan.replicas is not None and w.max_replicas is not None and plan.replicas > w.max_replicas:
        more.append(
            Finding(
                "replicas-max",
                f"needs {plan.replicas} replicas for concurrency {w.concurrency}, the service "
                f"allows at most {w.max_replicas} (replicas.max)",
            )
        )
    if plan.nodes is not None and w.max_nodes is not None and plan.nodes > w.max_nodes:
        more.append(
            Finding(
                "pool-nodes-max",
                f"needs {plan.nodes} nodes, the pool has at most {w.max_nodes} (nodes.max)",
            )
        )
    if not more:
        return plan
    return replace(plan, findings=(*plan.findings, *more))
