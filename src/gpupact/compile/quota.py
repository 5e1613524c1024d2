"""A tenant's quota on a pool at a moment: the nominal quota plus the raises active then.

A raise is compiled into the quota it raises, not into a separate object, because Kueue has
no notion of a temporary quota. Its removal is therefore a recompile: a raise is active while
`now < expires`, so `gpupact compile --now <after expiry>` emits the base quota again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from gpupact.contract.schema import INT64_MAX, Contract, Raise, Tenant
from gpupact.errors import FieldError


@dataclass(frozen=True)
class PoolQuota:
    pool: str
    base: int  # the contract's nominal quota (0 when only a raise gives the pool)
    raises: tuple[Raise, ...]  # active at the compile's `now`, earliest expiry first
    borrowing_limit: int | None = None
    lending_limit: int | None = None

    @property
    def total(self) -> int:
        return self.base + sum(r.gpus for r in self.raises)


def active_quota(tenant: Tenant, pool: str, now: datetime) -> PoolQuota:
    quota = tenant.quota(pool)
    raises = sorted(
        (r for r in tenant.raises if r.pool == pool and r.active(now)),
        key=lambda r: (r.expires, r.gpus, r.reason),
    )
    return PoolQuota(
        pool=pool,
        base=quota.gpus if quota else 0,
        raises=tuple(raises),
        borrowing_limit=quota.borrowing_limit if quota else None,
        lending_limit=quota.lending_limit if quota else None,
    )


def tenant_quotas(contract: Contract, tenant: Tenant, now: datetime) -> list[PoolQuota]:
    """Quotas on every pool the tenant has a quota or an active raise on, in pool order."""
    pools = {q.pool for q in tenant.quotas} | {r.pool for r in tenant.raises if r.active(now)}
    return [active_quota(tenant, p.name, now) for p in contract.pools if p.name in pools]


def require_expiries(contract: Contract) -> None:
    """A raise without an expiry would compile into a permanent quota nobody reviews (43.6:
    every temporary raise must end), so compile refuses it as bad input."""
    for i, tenant in enumerate(contract.tenants):
        for j, raised in enumerate(tenant.raises):
            if raised.expires is None:
                raise FieldError(
                    ("tenants", i, "raises", j, "expires"),
                    f"raise of {raised.gpus} on {raised.pool} for {tenant.name} has no expiry; "
                    f"compile emits temporary quota only with an end date",
                )


def quota_amount(contract: Contract, tenant: Tenant, pool: str, amount: int, what: str) -> int:
    """`amount`, derived from the tenant's quota on `pool`, once it is known to fit the int64
    of a Kubernetes quantity; else bad input at that quota (check's quota-exceeds-capacity
    reports the same contract as an error)."""
    if amount <= INT64_MAX:
        return amount
    i = contract.tenants.index(tenant)
    quota = tenant.quota(pool)
    path: tuple[str | int, ...] = ("tenants", i)
    if quota is not None:
        path = (*path, "quotas", tenant.quotas.index(quota), "gpus")
    raise FieldError(
        path,
        f"{tenant.name}'s quota on {pool} makes {what} {amount}, beyond what a Kubernetes "
        f"quantity can hold (2^63-1): the quota exceeds anything the pool can hold",
    )
