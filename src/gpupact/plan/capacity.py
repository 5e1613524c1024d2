"""Replicas, GPUs and nodes for a target concurrency, the TTFT under that load, and the
pre-warm lead time of a peak.

Replicas from the replica's latency curve (`plan.engine_load`: the step-level engine under
Poisson load, the same curve the twin reads): one replica may carry (100 - headroom)% of the
highest rate at which its TTFT P99 meets the SLO (the share of capacity `check` and the
compiled HPA keep free), or of its saturation rate when there is no SLO. KV cache,
`max_num_seqs`, prefill-decode interference and queueing for a batch slot are all inside the
curve. A target concurrency becomes a rate by Little's law at that operating point.

Pre-warm: nodes for a peak must be asked for `lead` before it — the pool's cold-start phases
(provision, driver, device plugin, image pull, model load), with the model load estimated from
the weights when the pool does not give it; a service's own declared cold start counts when it
is longer.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

from gpupact.plan.engine_load import LatencyCurve, LoadPoint
from gpupact.plan.replica import ReplicaEstimate, choose_tp, estimate_replica, tp_candidates
from gpupact.plan.serving import ReplicaServing, serving_of
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
    replica: ReplicaEstimate  # memory at the planned tensor-parallel size
    serving: ReplicaServing  # the replica as an engine, and its latency curve
    min_tp: int | None  # smallest size that holds the model, None: none within a node
    replicas: int | None  # None without a target load
    replicas_by: dict[str, int]  # the need behind the count: ttft or throughput
    rate: float | None  # requests per second of the whole service at the target load
    load: LoadPoint | None  # one replica's latencies at the planned load
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
    def capacity_rate(self) -> float | None:
        """Requests per second one replica serves within the TTFT SLO (before headroom)."""
        curve = self.serving.curve
        return None if curve is None else curve.capacity(self.workload.ttft_slo_s)

    @property
    def ok(self) -> bool:
        return not self.findings


def _replicas_needed(
    workload: Workload, curve: LatencyCurve
) -> tuple[dict[str, int], float, list[Finding]]:
    """(need behind the count, total request rate, findings). The load per replica may use
    (100 - headroom)% of the rate at which it still meets the TTFT SLO (P99), or of its
    saturation rate without an SLO. A target concurrency becomes a rate by Little's law at
    that operating point (in flight = rate x time in the system)."""
    free = (100 - workload.headroom) / 100
    if free <= 0:
        return {}, 0.0, [Finding("headroom", "headroom 100% leaves no capacity to plan with")]
    slo = workload.ttft_slo_s
    limit = curve.capacity(slo)
    if limit <= 0:
        idle = curve.points[0]
        return (
            {},
            0.0,
            [
                Finding(
                    "ttft-slo",
                    f"even a nearly idle replica has a TTFT P99 of {idle.ttft_p99_s:.2f}s, over "
                    f"the TTFT SLO of {slo:g}s: raise tensor parallelism, use a faster GPU or "
                    f"shorten prompts",
                )
            ],
        )
    per_replica = limit * free
    why = "ttft" if slo is not None and limit < curve.top.rate else "throughput"
    rate = workload.rate
    if rate is None:
        in_flight = per_replica * curve.at(per_replica).e2e_mean_s  # Little
        count = math.ceil((workload.concurrency or 0) / in_flight - 1e-9)
        count = max(1, count)
        rate = _rate_for_concurrency(curve, (workload.concurrency or 0) / count) * count
    else:
        count = max(1, math.ceil(rate / per_replica - 1e-9))
    return {why: count}, rate, []


def _rate_for_concurrency(curve: LatencyCurve, in_flight: float) -> float:
    """The per-replica rate at which `in_flight` requests are in the system (bisection on
    rate x e2e, which grows with the rate)."""
    lo, hi = 0.0, curve.top.rate
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if mid * curve.at(mid).e2e_mean_s < in_flight else (lo, mid)
    return lo


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


def plan_workload(workload: Workload, *, shares: tuple[float, float] | None = None) -> ServicePlan:
    """The plan of one workload; `shares` = (compute, bandwidth) share of each device (MIG,
    time-slicing), default 1 / workload.slowdown for both."""
    tp, min_tp = choose_tp(workload)
    replica = estimate_replica(workload, tp)
    findings = _fit_findings(workload, replica, min_tp)
    compute, bandwidth = shares or (None, None)
    serving = serving_of(workload, tp, compute_share=compute, bandwidth_share=bandwidth)
    replicas: int | None = None
    needs: dict[str, int] = {}
    load: LoadPoint | None = None
    rate: float | None = None
    wants_load = workload.concurrency is not None or workload.rate
    if wants_load and replica.fits and serving.curve is not None:
        needs, rate, more = _replicas_needed(workload, serving.curve)
        findings += more
        if needs:
            replicas = max(1, *needs.values())
            load = serving.curve.at(rate / replicas)
    plan = ServicePlan(
        workload, replica, serving, min_tp, replicas, needs, rate, load,
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
