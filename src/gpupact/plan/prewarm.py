"""When to start scaling for each pre-warm window of a contract: the window's start minus the
pool's lead time (the longest pre-warm lead of the services planned on it, else the pool's
declared cold-start phases)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from gpupact.contract.schema import Contract
from gpupact.plan.capacity import ServicePlan


@dataclass(frozen=True)
class PrewarmSchedule:
    pool: str
    window: str  # the window's name, else its position
    lead_s: float
    min_nodes: int
    start: datetime | None  # a fixed window's start
    schedule: str | None  # a recurring window's cron

    @property
    def scale_at(self) -> datetime | None:
        """When scaling must start for a fixed window."""
        return None if self.start is None else self.start - timedelta(seconds=self.lead_s)

    @property
    def scale_schedule(self) -> str | None:
        """A recurring window's cron moved earlier by the lead (whole minutes, rounded up), when
        its minute and hour are single numbers and the move stays within the day; else None."""
        if self.schedule is None:
            return None
        minute, hour, *rest = self.schedule.split()
        if not (minute.isdigit() and hour.isdigit()):
            return None
        at = int(hour) * 60 + int(minute) - math.ceil(self.lead_s / 60)
        if at < 0:
            return None
        return " ".join([str(at % 60), str(at // 60), *rest])


def prewarm_schedules(contract: Contract, plans: Iterable[ServicePlan]) -> list[PrewarmSchedule]:
    leads: dict[str, float] = {}
    for plan in plans:
        service = next(s for s in contract.services if s.name == plan.workload.name)
        if service.pool:
            leads[service.pool] = max(leads.get(service.pool, 0.0), plan.prewarm.lead_s)
    out = []
    for pool in contract.pools:
        lead = leads.get(pool.name, pool.cold_start.total.total_seconds())
        for i, window in enumerate(pool.pre_warm):
            out.append(
                PrewarmSchedule(
                    pool=pool.name,
                    window=window.name or f"preWarm[{i}]",
                    lead_s=lead,
                    min_nodes=window.min_nodes,
                    start=window.start,
                    schedule=window.schedule,
                )
            )
    return out
