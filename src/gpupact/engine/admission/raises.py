"""Temporary quota raises: extra nominalQuota for a ClusterQueue until an expiry time.

A raise is applied on top of the ClusterQueue spec (several raises on the same flavor and
resource add up). It is active while `now < expires_at` on the injected clock: a raise whose
expiry is already past when it is added is never applied, and every `schedule_cycle(now)`
first removes the raises with `expires_at <= now`, so no admission ever sees an expired one.

What expiry does to admitted workloads follows Kueue: a lower nominalQuota never evicts
anything. Usage is kept; the ClusterQueue is over its nominal quota, borrowing the excess from
its cohort where the cohort has room (other ClusterQueues may then reclaim it by preemption),
else simply over quota, and new admissions wait until usage drops. The `ExpiryReport` makes
this explicit: per flavor-resource the usage against the new nominal, and the workloads
running on the lost quota, latest admitted first. The `evict-newest` policy (not Kueue's)
evicts the ones above quota, i.e. above nominal + what the cohort can still lend, with reason
QuotaRaiseExpired; like preemption victims they hold their quota until `complete_eviction`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from gpupact.engine.admission.cycle import CycleResult
from gpupact.engine.admission.model import (
    EVICT_NEWEST,
    KEEP,
    ON_EXPIRY_POLICIES,
    QUOTA_RAISE_EXPIRED,
    ClusterQueue,
    FlavorQuotas,
    FlavorResource,
    QuotaRaise,
    ResourceGroup,
)
from gpupact.engine.admission.resource_tree import (
    QuotaNode,
    add_usage,
    add_usages,
    available,
    remove_usage,
    remove_usages,
)
from gpupact.engine.admission.views import RaiseView
from gpupact.engine.admission.workload_info import WorkloadInfo
from gpupact.errors import FieldError

__all__ = [
    "EVICT_NEWEST",
    "KEEP",
    "QUOTA_RAISE_EXPIRED",
    "CycleResultWithExpiry",
    "ExpiryReport",
    "QuotaAfterExpiry",
    "QuotaRaise",
    "RaisedWorkload",
]


@dataclass(frozen=True, slots=True)
class QuotaAfterExpiry:
    """One flavor-resource of a ClusterQueue whose raise expired, right after the expiry."""

    cluster_queue: str
    flavor: str
    resource: str
    usage: int  # charged usage, incl. workloads already evicted but not yet stopped
    evicting: int  # part of `usage` held by such evicted workloads (about to be released)
    nominal: int  # nominalQuota now (raises still active included)
    previous_nominal: int
    borrowable: int  # what the cohort can lend beyond nominal now (0 without a cohort)
    over_quota: int  # usage - evicting above nominal + borrowable: nothing else lends it

    @property
    def over_nominal(self) -> int:
        return max(0, self.usage - self.evicting - self.nominal)


@dataclass(frozen=True, slots=True)
class RaisedWorkload:
    """An admitted workload running on quota that a raise provided."""

    key: str
    cluster_queue: str
    admitted_at: int
    usage: Mapping[FlavorResource, int]  # what it holds of the flavor-resources that lost quota
    above_quota: bool  # beyond nominal + borrowable: the ones to stop to get within quota
    evicted: bool  # evicted by this expiry (evict-newest)
    reason: str = ""  # QuotaRaiseExpired when evicted


@dataclass(frozen=True, slots=True)
class ExpiryReport:
    now: int
    policy: str
    expired: tuple[QuotaRaise, ...] = ()
    quotas: tuple[QuotaAfterExpiry, ...] = ()
    # per ClusterQueue (by name), latest admitted first: the usage above the new nominal
    workloads: tuple[RaisedWorkload, ...] = ()

    @property
    def above_quota(self) -> tuple[RaisedWorkload, ...]:
        """The workloads to stop first if the operator reclaims (evicted under evict-newest)."""
        return tuple(w for w in self.workloads if w.above_quota)

    @property
    def evicted(self) -> tuple[str, ...]:
        return tuple(w.key for w in self.workloads if w.evicted)


@dataclass(slots=True)
class CycleResultWithExpiry(CycleResult):
    """`schedule_cycle`'s result: the cycle, and what the raise expiry before it did."""

    expiry: ExpiryReport | None = None


def with_expiry(result: CycleResult, report: ExpiryReport) -> CycleResultWithExpiry:
    fields = {f.name: getattr(result, f.name) for f in dataclasses.fields(CycleResult)}
    return CycleResultWithExpiry(**fields, expiry=report if report.expired else None)


# --- validation and application ------------------------------------------------------------


def check_policy(policy: str) -> str:
    if policy not in ON_EXPIRY_POLICIES:
        raise FieldError(
            ("on_expiry",), f"unknown policy {policy!r}, want one of {list(ON_EXPIRY_POLICIES)}"
        )
    return policy


def validate_raise(state: RaiseView, raised: QuotaRaise) -> None:
    if not isinstance(raised, QuotaRaise):
        raise FieldError((), f"want a QuotaRaise, got {type(raised).__name__}")
    for name in ("cluster_queue", "flavor", "resource", "reason"):
        if not isinstance(getattr(raised, name), str):
            raise FieldError((name,), "must be a string")
    for name in ("amount", "expires_at"):
        value = getattr(raised, name)
        if not isinstance(value, int) or isinstance(value, bool):
            raise FieldError((name,), f"must be an integer, got {value!r}")
    if raised.amount <= 0:
        raise FieldError(("amount",), f"must be positive, got {raised.amount}")
    spec = state.cluster_queue_specs.get(raised.cluster_queue)
    if spec is None:
        raise FieldError(("cluster_queue",), f"ClusterQueue {raised.cluster_queue!r} not found")
    flavors = [f for g in spec.resource_groups for f in g.flavors if f.name == raised.flavor]
    if not flavors:
        raise FieldError(
            ("flavor",),
            f"flavor {raised.flavor!r} is not in ClusterQueue {raised.cluster_queue!r}",
        )
    if not any(raised.resource in f.resources for f in flavors):
        raise FieldError(
            ("resource",),
            f"flavor {raised.flavor!r} of ClusterQueue {raised.cluster_queue!r} has no quota "
            f"for {raised.resource!r}",
        )


def apply_raises(
    specs: Mapping[str, ClusterQueue], raises: Iterable[QuotaRaise]
) -> Mapping[str, ClusterQueue]:
    """The ClusterQueue specs with every raise added to its nominalQuota."""
    extra: dict[str, dict[FlavorResource, int]] = {}
    for r in raises:
        per_cq = extra.setdefault(r.cluster_queue, {})
        per_cq[(r.flavor, r.resource)] = per_cq.get((r.flavor, r.resource), 0) + r.amount
    if not extra:
        return specs
    out = dict(specs)
    for name, amounts in extra.items():
        spec = specs.get(name)
        if spec is not None:
            out[name] = dataclasses.replace(
                spec, resource_groups=tuple(_raised_group(g, amounts) for g in spec.resource_groups)
            )
    return out


def _raised_group(group: ResourceGroup, amounts: Mapping[FlavorResource, int]) -> ResourceGroup:
    flavors = []
    for flavor in group.flavors:
        resources = {
            resource: dataclasses.replace(
                quota, nominal=quota.nominal + amounts.get((flavor.name, resource), 0)
            )
            for resource, quota in flavor.resources.items()
        }
        flavors.append(FlavorQuotas(flavor.name, resources))
    return ResourceGroup(group.covered_resources, tuple(flavors))


def add_raise(state: RaiseView, raised: QuotaRaise, now: int | None) -> bool:
    validate_raise(state, raised)
    if now is None:
        now = state.clock
    elif not isinstance(now, int) or isinstance(now, bool):
        raise FieldError(("now",), f"must be an integer, got {now!r}")
    if now is not None and raised.expires_at <= now:
        return False  # already expired: never applied
    state.raises.append(raised)
    state.quota_changed(raised.cluster_queue)
    return True


# --- expiry ------------------------------------------------------------------------------------


def expire_raises(state: RaiseView, now: int) -> ExpiryReport:
    state.clock = now
    policy = state.on_expiry
    expired = tuple(r for r in state.raises if r.expires_at <= now)
    if not expired:
        return ExpiryReport(now, policy)
    touched: dict[str, list[FlavorResource]] = {}
    for r in expired:
        frs = touched.setdefault(r.cluster_queue, [])
        if (r.flavor, r.resource) not in frs:
            frs.append((r.flavor, r.resource))
    previous = {
        (cq, fr): _nominal(state.cluster_queue_runtimes[cq].node, fr)
        for cq, frs in touched.items()
        for fr in frs
    }
    state.raises = [r for r in state.raises if r.expires_at > now]
    state.quota_changed(*sorted(touched))

    # Workloads already evicted are on their way out: judge quota as if they were gone, and
    # likewise drop the ones chosen for earlier ClusterQueues before judging the next one.
    gone = [
        info
        for runtime in state.cluster_queue_runtimes.values()
        for info in runtime.workloads.values()
        if info.evicted
    ]
    evicting: dict[tuple[str, FlavorResource], int] = {}
    for info in gone:
        for fr, value in info.usage.items():
            k = (info.cluster_queue, fr)
            evicting[k] = evicting.get(k, 0) + value
    _hide(state, gone)
    quotas: list[QuotaAfterExpiry] = []
    workloads: list[RaisedWorkload] = []
    try:
        for cq in sorted(touched):
            node = state.cluster_queue_runtimes[cq].node
            over_nominal: dict[FlavorResource, int] = {}
            over_quota: dict[FlavorResource, int] = {}
            for fr in sorted(touched[cq]):
                nominal = _nominal(node, fr)
                live = node.usage.get(fr, 0)
                allowed = max(nominal, _capacity(node, fr))
                over_nominal[fr] = max(0, live - nominal)
                over_quota[fr] = max(0, live - allowed)
                leaving = evicting.get((cq, fr), 0)
                quotas.append(
                    QuotaAfterExpiry(
                        cq,
                        fr[0],
                        fr[1],
                        live + leaving,
                        leaving,
                        nominal,
                        previous[(cq, fr)],
                        allowed - nominal,
                        over_quota[fr],
                    )
                )
            ordered = _newest_first(state.cluster_queue_runtimes[cq].workloads.values())
            on_raise = _covering(ordered, over_nominal)
            above = {info.key for info in _covering(ordered, over_quota)}
            stop = [info for info in on_raise if info.key in above]
            _hide(state, stop)
            gone.extend(stop)
            evict = policy == EVICT_NEWEST
            for info in on_raise:
                chosen = info.key in above
                workloads.append(
                    RaisedWorkload(
                        info.key,
                        cq,
                        info.quota_reserved_at or 0,
                        {fr: info.usage[fr] for fr in over_nominal if info.usage.get(fr, 0)},
                        above_quota=chosen,
                        evicted=evict and chosen,
                        reason=QUOTA_RAISE_EXPIRED if evict and chosen else "",
                    )
                )
    finally:
        for info in reversed(gone):
            add_usages(state.cluster_queue_runtimes[info.cluster_queue].node, info.usage)
    if policy == EVICT_NEWEST:
        for w in workloads:
            if w.evicted:
                state.workloads[w.key].evicted = True
    return ExpiryReport(now, policy, expired, tuple(quotas), tuple(workloads))


def _nominal(node: QuotaNode, fr: FlavorResource) -> int:
    quota = node.quotas.get(fr)
    return quota.nominal if quota is not None else 0


def _capacity(node: QuotaNode, fr: FlavorResource) -> int:
    """The most of `fr` this ClusterQueue could hold given everyone else's usage: its quota
    plus what the cohort can lend it (borrowingLimit and other queues' usage applied)."""
    used = node.usage.get(fr, 0)
    remove_usage(node, fr, used)
    try:
        return available(node, fr)
    finally:
        add_usage(node, fr, used)


def _hide(state: RaiseView, infos: Iterable[WorkloadInfo]) -> None:
    for info in infos:
        remove_usages(state.cluster_queue_runtimes[info.cluster_queue].node, info.usage)


def _newest_first(infos: Iterable[WorkloadInfo]) -> list[WorkloadInfo]:
    live = [i for i in infos if not i.evicted]
    return sorted(
        live,
        key=lambda i: (-(i.quota_reserved_at or 0), -i.workload.creation_time, i.key),
    )


def _covering(
    ordered: list[WorkloadInfo], excess: Mapping[FlavorResource, int]
) -> list[WorkloadInfo]:
    """The first workloads in `ordered` that together hold at least `excess` of every
    flavor-resource; a workload is taken only if it holds some of what is still missing."""
    left = {fr: v for fr, v in excess.items() if v > 0}
    out = []
    for info in ordered:
        if not left:
            break
        held = [fr for fr in left if info.usage.get(fr, 0) > 0]
        if not held:
            continue
        out.append(info)
        for fr in held:
            left[fr] -= info.usage[fr]
            if left[fr] <= 0:
                del left[fr]
    return out
