"""Runbook step 5, autoscaler: a scale-up under way and its cold start, or a pool already at its
maximum (Cluster Autoscaler / Karpenter).
"""

from __future__ import annotations

from typing import Any

from gpupact.kube.objects import Pod
from gpupact.ops import autoscale
from gpupact.ops.cluster import Analysis
from gpupact.ops.diagnose.case import Case, unique_shapes
from gpupact.ops.findings import Domain, Finding, Severity, format_duration


def check_autoscaler(a: Analysis, case: Case) -> Finding | None:
    pods = case.placeable
    if not pods:
        case.note(Domain.autoscaler, "n/a", "no pod to place yet")
        return None
    blocked = [p for p in unique_shapes(pods, a) if not a.placement(p).fits]
    if not blocked:
        case.note(Domain.autoscaler, "n/a", "fits now: no scale-up needed")
        return None
    pod = blocked[0] if blocked else pods[0]
    events = [e for p in pods[:50] for e in a.events_for("Pod", p.namespace, p.name)]
    signals = autoscale.scale_signals(events)
    pools = a.pools_for(pod)
    claims = [c for c in a.snapshot.node_claims if not c.ready and not c.deleting]
    claims = [c for c in claims if autoscale.claim_matches(c, pod)]
    if claims or signals.triggered or signals.nominated:
        return _scaling(a, case, pod, pools, claims, signals)
    at_max = [v for v in pools if v.at_max]
    ca_max = [e for e in signals.not_triggered if autoscale.MAX_NODE_GROUP_SIZE in e.message]
    if at_max or ca_max:
        evidence = [v.describe() for v in at_max]
        evidence.extend(f"cluster-autoscaler: {e.message}" for e in ca_max[-2:])
        return Finding(
            Domain.autoscaler,
            "pool-at-max",
            Severity.error,
            case.subject,
            "the pool is at its maximum size: no scale-up will come",
            tuple(evidence),
            "raise the pool's max if the budget allows ("
            + (
                ", ".join(
                    f"`kubectl edit nodepool {v.name}` spec.limits"
                    if v.name in a.snapshot.node_pools
                    else f"contract pool {v.name} nodes.max"
                    for v in at_max
                )
                or "the node group's max size in the cluster-autoscaler"
            )
            + "); pre-warm gpu-burst for predictable peaks; otherwise stop low-priority batch "
            "first (`gpupact audit` shortage plan)",
            {"pools": [v.name for v in at_max]},
        )
    if signals.not_triggered:
        return Finding(
            Domain.autoscaler,
            "no-scale-up",
            Severity.warning,
            case.subject,
            "the cluster autoscaler will not add a node for it",
            tuple(f"cluster-autoscaler: {e.message}" for e in signals.not_triggered[-3:]),
            "make a node group able to host the pod (its template must carry the pool's "
            "labels, taints and GPUs), or fix the pod's selector",
        )
    if pools:
        case.note(
            Domain.autoscaler,
            "ok",
            "no scale-up under way; pool(s) " + ", ".join(v.describe() for v in pools[:3]),
        )
    else:
        case.note(Domain.autoscaler, "n/a", "no autoscaler signal for this pod")
    return None


def _scaling(
    a: Analysis,
    case: Case,
    pod: Pod,
    pools: list[Any],
    claims: list[Any],
    signals: autoscale.ScaleSignals,
) -> Finding:
    evidence = []
    started: int | None = None
    pool_name = ""
    for claim in claims[:4]:
        age = a.age(claim.meta.created)
        evidence.append(
            f"NodeClaim {claim.meta.name} (pool {claim.nodepool or '?'}): "
            f"{autoscale.claim_phase(claim)}"
            + (f", created {format_duration(age)} ago" if age is not None else "")
        )
        if claim.meta.created is not None and (started is None or claim.meta.created < started):
            started, pool_name = claim.meta.created, claim.nodepool
    for event in (signals.triggered + signals.nominated)[-2:]:
        evidence.append(f"{event.component or 'autoscaler'}: {event.reason}: {event.message}")
        when = event.first or event.last
        if started is None and when is not None:
            started = when
    view = next((v for v in pools if v.name == pool_name), pools[0] if pools else None)
    cold = view.cold_start if view is not None else None
    severity = Severity.info
    data: dict[str, Any] = {"nodeClaims": [c.meta.name for c in claims]}
    if cold is not None and started is not None:
        eta = started + cold.total - a.now
        data["coldStartSeconds"] = cold.total
        data["remainingSeconds"] = max(0, eta)
        if eta >= 0:
            summary = f"scale-up under way: a node should be ready in ~{format_duration(eta)}"
        else:
            severity = Severity.warning
            summary = f"scale-up overdue by {format_duration(-eta)} against its cold start"
        evidence.append(f"cold start {cold.describe()} (from {cold.source})")
    else:
        summary = "scale-up under way (no cold-start figure: give --contract or annotate the pool)"
    wait = a.max_queue_wait(pod)
    if cold is not None and wait is not None and cold.total > wait:
        severity = Severity.warning
        evidence.append(
            f"cold start {format_duration(cold.total)} exceeds the class's maxQueueWait "
            f"{format_duration(wait)}: the promise cannot be kept by scaling up"
        )
    return Finding(
        Domain.autoscaler,
        "scale-up-in-progress",
        severity,
        case.subject,
        summary,
        tuple(evidence),
        "wait for the node (provision, driver, device plugin, image pull, model load); for "
        "predictable peaks pre-warm gpu-burst instead of relying on scale-up (43.4); if the "
        "NodeClaim stalls, read its events (provider capacity, driver install)",
        data,
    )
