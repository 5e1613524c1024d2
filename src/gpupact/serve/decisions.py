"""The gateway's decision (43.6, "与第45章网关联动"): read the backends' replicas, queue and
health, then weigh the tenant's budget and quota, the request's risk and its context length
to admit, queue, degrade, reject or reroute.

In order:
1. no backend serves the model: reject `unknown-model`;
2. the context is longer than every backend of the model accepts: reject `context-too-long`;
3. the tenant's GPU-hour budget for the month is spent: reject `budget-exhausted` (a
   high-priority request still passes: online user traffic is protected first);
4. the tenant already holds more GPUs than its quota (it is borrowing) and the request is
   low priority: queue until capacity frees;
5. the tenant's own backend (else any) is not saturated: admit; another backend of the same
   model is not saturated: reroute to it;
6. a smaller model has an unsaturated backend and the request's risk allows a smaller model
   (not `high`): degrade to it;
7. capacity is on the way (Pending replicas, a cold start) or the request is not low
   priority: queue with the expected wait; otherwise reject `saturated`.

A backend is saturated when it is unhealthy, has no ready replica, its queue is longer than
`queue_limit` (5) or its KV cache is fuller than `kv_limit` (0.8).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from gpupact.serve.snapshot import Backend, Snapshot

Outcome = Literal["admit", "queue", "degrade", "reject", "reroute"]
Priority = Literal["high", "normal", "low"]
Risk = Literal["low", "medium", "high"]

DEFAULT_RETRY_SECONDS = 5.0  # a full queue with no scale-up under way drains in seconds


@dataclass(frozen=True)
class Policy:
    queue_limit: float = 5
    kv_limit: float = 0.8
    context_limits: Mapping[str, int] = field(default_factory=dict)  # model -> tokens
    smaller: Mapping[str, str] = field(default_factory=dict)  # model -> its degrade model
    budgets: Mapping[str, float] = field(default_factory=dict)  # tenant -> GPU-hours / month
    quotas: Mapping[tuple[str, str], float] = field(default_factory=dict)  # (tenant, pool)


@dataclass(frozen=True)
class Request:
    tenant: str
    model: str
    context_tokens: int
    priority: Priority = "normal"
    risk: Risk = "medium"


@dataclass(frozen=True)
class Decision:
    outcome: Outcome
    model: str  # the model that serves the request (the smaller one after a degrade)
    backend: str | None = None
    retry_after_seconds: float | None = None
    reason: str | None = None


def saturated(b: Backend, policy: Policy) -> bool:
    if not b.healthy or b.ready <= 0:
        return True
    if b.queue_length is not None and b.queue_length > policy.queue_limit:
        return True
    return b.kv_cache_use is not None and b.kv_cache_use > policy.kv_limit


def _load(b: Backend) -> tuple[float, float, str]:
    return (b.queue_length or 0.0, b.kv_cache_use or 0.0, b.service)


def _free(backends: tuple[Backend, ...], policy: Policy) -> list[Backend]:
    return sorted((b for b in backends if not saturated(b, policy)), key=_load)


def _borrowing(req: Request, snap: Snapshot, policy: Policy) -> bool:
    pools = {b.pool for b in snap.by_model.get(req.model, ()) if b.pool}
    for pool in pools:
        quota = policy.quotas.get((req.tenant, pool))
        if quota is not None and snap.tenant_gpus.get((req.tenant, pool), 0.0) > quota:
            return True
    return False


def _expected_wait(backends: tuple[Backend, ...]) -> float | None:
    """Seconds until new capacity: the shortest cold start of a backend scaling up."""
    waits = [b.cold_start_seconds or DEFAULT_RETRY_SECONDS for b in backends if b.pending > 0]
    return min(waits) if waits else None


def decide(req: Request, snap: Snapshot, policy: Policy) -> Decision:
    backends = snap.by_model.get(req.model, ())
    if not backends:
        return Decision("reject", req.model, reason="unknown-model")
    limit = policy.context_limits.get(req.model)
    if limit is not None and req.context_tokens > limit:
        return Decision("reject", req.model, reason=f"context-too-long: limit {limit} tokens")
    budget = policy.budgets.get(req.tenant)
    used = snap.tenant_month_hours.get(req.tenant, 0.0)
    if budget is not None and used >= budget and req.priority != "high":
        return Decision("reject", req.model, reason="budget-exhausted")
    coming = _expected_wait(backends)
    if req.priority == "low" and _borrowing(req, snap, policy):
        return Decision(
            "queue",
            req.model,
            retry_after_seconds=coming or DEFAULT_RETRY_SECONDS,
            reason="over-quota",
        )
    free = _free(backends, policy)
    own = [b for b in free if b.tenant == req.tenant]
    if own or free:
        mine = [b for b in backends if b.tenant == req.tenant]
        pick = (own or free)[0]
        if own or not mine:
            return Decision("admit", req.model, pick.service)
        return Decision("reroute", req.model, pick.service, reason="own backend saturated")
    smaller = policy.smaller.get(req.model)
    if smaller and req.risk != "high":
        fallback = _free(snap.by_model.get(smaller, ()), policy)
        if (
            fallback
            and (policy.context_limits.get(smaller) or req.context_tokens) >= req.context_tokens
        ):
            return Decision("degrade", smaller, fallback[0].service, reason="saturated")
    if coming is not None or req.priority != "low":
        return Decision(
            "queue",
            req.model,
            retry_after_seconds=coming or DEFAULT_RETRY_SECONDS,
            reason="saturated",
        )
    return Decision("reject", req.model, reason="saturated")
