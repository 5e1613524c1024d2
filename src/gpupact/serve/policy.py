"""The decision policy from the contract: context limits and smaller models per model, the
tenants' quotas (with their active raises), and budgets from the tokens file."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from datetime import UTC, datetime

from gpupact.contract import Contract
from gpupact.serve.decisions import Policy


def policy_from_contract(
    contract: Contract | None,
    budgets: Mapping[str, float],
    now: float,
    *,
    queue_limit: float = 5,
    kv_limit: float = 0.8,
) -> Policy:
    if contract is None:
        return Policy(queue_limit, kv_limit, budgets=dict(budgets))
    limits: dict[str, int] = {}
    params: dict[str, int] = {}
    for service in contract.services:
        if service.model is None:
            continue
        name = service.model.name
        params[name] = service.model.params
        if service.context_length is not None:
            # several services of one model: the longest context any of them accepts
            limits[name] = max(limits.get(name, 0), service.context_length)
    # each model degrades to the largest served model with fewer parameters
    ordered = sorted(params.items(), key=lambda kv: (kv[1], kv[0]))
    smaller = {
        name: max(lower, key=lambda kv: (kv[1], kv[0]))[0]
        for name, size in ordered
        if (lower := [kv for kv in ordered if kv[1] < size])
    }
    moment = datetime.fromtimestamp(now, UTC)
    quotas: dict[tuple[str, str], float] = defaultdict(float)
    for tenant in contract.tenants:
        for quota in tenant.quotas:
            quotas[(tenant.name, quota.pool)] += quota.gpus
        for r in tenant.raises:
            if r.active(moment):
                quotas[(tenant.name, r.pool)] += r.gpus
    return Policy(queue_limit, kv_limit, limits, smaller, dict(budgets), dict(quotas))
