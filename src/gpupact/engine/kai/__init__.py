"""KAI-Scheduler as a session model: hierarchical fair share (departments and projects
with quota, limit and over-quota weight), priorities and preemptibility, gang allocation
with pipelining, preempt / reclaim by scenario simulation, and stale-gang eviction."""

from gpupact.engine.kai.model import (
    KaiPodGroup,
    KaiQueue,
    ResourceQuota,
    UnsupportedError,
    parse_kai_podgroup,
    parse_kai_queue,
)
from gpupact.engine.kai.session import KaiConfig, KaiResult, KaiSession, NotModelledError

__all__ = [
    "KaiConfig",
    "KaiPodGroup",
    "KaiQueue",
    "KaiResult",
    "KaiSession",
    "NotModelledError",
    "ResourceQuota",
    "UnsupportedError",
    "parse_kai_podgroup",
    "parse_kai_queue",
]
