"""KAI's `proportion` plugin: fair shares in a queue tree, queue order, reclaim rules.

Fair share, per resource and per level of the tree (departments, then their projects):
each queue first gets its quota (capped by what it requests); what is left goes to queues
still asking for more, by over-quota weight, priority level by priority level, in rounds,
each round giving whole units only (fractions left over are handed out one unit at a time
to the largest remainders). A queue's fair share is then divided among its children.

Reclaim: a queue may take back resources while it stays within its fair share, and only
from queues above their fair share (MaintainFairShare) or, while itself within quota, from
queues above their quota (GuaranteeDeservedQuota); non-preemptible work never exceeds
quota.

Exact arithmetic: upstream's float64 amounts are Fractions here; `-1` means unlimited.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from gpupact.engine.kai.model import MEBIBYTES, RESOURCES, UNLIMITED, KaiQueue, Number

Quantities = dict[str, Number]
NO_FAIR_SHARE_DRF_MULTIPLIER = 1000


def zero() -> Quantities:
    return {r: 0 for r in RESOURCES}


def _cmp(quantity: Number, other: Number) -> int:
    """Upstream compareQuantities: unlimited is above everything but itself."""
    if quantity == UNLIMITED:
        return 0 if other == UNLIMITED else 1
    if other == UNLIMITED:
        return -1
    return (quantity > other) - (quantity < other)


def less_equal(left: Mapping[str, Number], right: Mapping[str, Number]) -> bool:
    return all(_cmp(left[r], right[r]) <= 0 for r in RESOURCES)


def less(left: Mapping[str, Number], right: Mapping[str, Number]) -> bool:
    """Every resource strictly below (plain comparison, as upstream)."""
    return all(left[r] < right[r] for r in RESOURCES)


def added(left: Mapping[str, Number], right: Mapping[str, Number]) -> Quantities:
    return {r: left[r] + right[r] for r in RESOURCES}


@dataclass(slots=True)
class ResourceShare:
    deserved: Number = 0
    fair_share: Number = 0
    max_allowed: Number = UNLIMITED
    over_quota_weight: Number = 1
    allocated: Number = 0
    allocated_not_preemptible: Number = 0
    request: Number = 0
    usage: Number = 0  # historical usage; none in a single session

    def requestable(self) -> Number:
        if self.max_allowed == UNLIMITED:
            return self.request
        return min(self.max_allowed, self.request)

    def allocatable(self) -> Number:
        if self.deserved == UNLIMITED:
            return self.max_allowed
        share = max(self.deserved, self.fair_share)
        if self.max_allowed != UNLIMITED:
            share = min(self.max_allowed, share)
        return share


@dataclass(slots=True)
class QueueShare:
    name: str
    parent: str
    priority: int
    creation: int  # position in the input list: earlier is older
    children: list[str] = field(default_factory=list)
    shares: dict[str, ResourceShare] = field(default_factory=dict)

    def _map(self, attr: str) -> Quantities:
        return {r: getattr(self.shares[r], attr) for r in RESOURCES}

    def fair_share(self) -> Quantities:
        return self._map("fair_share")

    def deserved(self) -> Quantities:
        return self._map("deserved")

    def allocated(self) -> Quantities:
        return self._map("allocated")

    def allocated_not_preemptible(self) -> Quantities:
        return self._map("allocated_not_preemptible")

    def allocatable(self) -> Quantities:
        return {r: self.shares[r].allocatable() for r in RESOURCES}

    def dominant_share(self, total: Mapping[str, Number]) -> Fraction:
        best = Fraction(0)
        for r in RESOURCES:
            share = self.shares[r]
            allocatable = share.allocatable()
            if allocatable == UNLIMITED:
                allocatable = total[r]
            if allocatable == 0:
                value = Fraction(share.allocated * NO_FAIR_SHARE_DRF_MULTIPLIER)
            else:
                value = Fraction(share.allocated) / Fraction(allocatable)
            best = max(best, value)
        return best

    def clone(self) -> QueueShare:
        shares = {
            r: ResourceShare(**{f: getattr(s, f) for f in s.__slots__})
            for r, s in self.shares.items()
        }
        return QueueShare(
            self.name, self.parent, self.priority, self.creation, list(self.children), shares
        )


def queue_shares(queues: Sequence[KaiQueue]) -> dict[str, QueueShare]:
    """Quota settings of every queue, linked to its parent (list order = creation order)."""
    out: dict[str, QueueShare] = {}
    for index, queue in enumerate(queues):
        if queue.name in out:
            raise ValueError(f"duplicate queue {queue.name}")
        share = QueueShare(queue.name, queue.parent, queue.priority, index)
        share.shares["cpu"] = ResourceShare(
            queue.cpu.quota, 0, queue.cpu.limit, queue.cpu.over_quota_weight
        )
        share.shares["memory"] = ResourceShare(
            max(UNLIMITED, queue.memory.quota * MEBIBYTES),
            0,
            max(UNLIMITED, queue.memory.limit * MEBIBYTES),
            queue.memory.over_quota_weight,
        )
        share.shares["gpu"] = ResourceShare(
            queue.gpu.quota, 0, queue.gpu.limit, queue.gpu.over_quota_weight
        )
        out[queue.name] = share
    for share in out.values():
        if share.parent:
            if share.parent not in out:
                raise ValueError(f"queue {share.name} has unknown parent {share.parent}")
            out[share.parent].children.append(share.name)
    return out


def ancestry(queues: Mapping[str, QueueShare], name: str) -> Iterable[QueueShare]:
    """The queue, then its parent, up to the top."""
    current = queues.get(name)
    while current is not None:
        yield current
        current = queues.get(current.parent) if current.parent else None


# --- division -----------------------------------------------------------------------------------


def set_fair_shares(
    queues: Mapping[str, QueueShare], total: Mapping[str, Number], k_value: Number = 1
) -> None:
    tops = [q for q in queues.values() if not q.parent]
    _divide_level(queues, tops, total, k_value)


def _divide_level(
    queues: Mapping[str, QueueShare],
    level: list[QueueShare],
    total: Mapping[str, Number],
    k_value: Number,
) -> None:
    if not level:
        return
    for resource in RESOURCES:
        _set_resource_share(total[resource], k_value, resource, level)
    for queue in level:
        _divide_level(queues, [queues[c] for c in queue.children], queue.fair_share(), k_value)


def _set_resource_share(
    total: Number, k_value: Number, resource: str, level: list[QueueShare]
) -> None:
    remaining = total
    for queue in level:  # everyone first gets its quota, as far as it asks for it
        share = queue.shares[resource]
        deserved = total if share.deserved == UNLIMITED else share.deserved
        amount = min(deserved, share.requestable())
        share.fair_share += amount
        remaining -= amount
    if remaining > 0:
        _divide_over_quota(remaining, k_value, resource, level)


def _satisfied(share: ResourceShare) -> bool:
    if share.request <= share.fair_share:
        return True
    return share.max_allowed != UNLIMITED and share.max_allowed <= share.fair_share


def _remaining_requested(share: ResourceShare) -> Number:
    requested = share.requestable()
    return 0 if requested < share.fair_share else requested - share.fair_share


def _divide_over_quota(
    total: Number, k_value: Number, resource: str, level: list[QueueShare]
) -> None:
    priorities = sorted({q.priority for q in level}, reverse=True)
    leftovers: dict[int, dict[str, tuple[QueueShare, Number]]] = {}
    remaining = total
    for priority in priorities:
        group = [q for q in level if q.priority == priority]
        remaining, left = _divide_up_to_fair_share(remaining, k_value, resource, group)
        leftovers.setdefault(priority, {}).update(left)
    for priority in priorities:
        if remaining <= 0:
            break
        if leftovers.get(priority):
            remaining = _divide_remaining(remaining, leftovers[priority], resource)


def _share_weights(level: list[QueueShare], resource: str, k_value: Number) -> dict[str, Number]:
    total_weight = sum(
        q.shares[resource].over_quota_weight
        for q in level
        if _remaining_requested(q.shares[resource]) > 0
    )
    if total_weight == 0:
        return {}
    weights: dict[str, Number] = {}
    for queue in level:
        share = queue.shares[resource]
        if _satisfied(share):
            continue
        normalized = Fraction(share.over_quota_weight) / Fraction(total_weight)
        weights[queue.name] = max(0, normalized + k_value * (normalized - share.usage))
    return weights


def _divide_up_to_fair_share(
    total: Number, k_value: Number, resource: str, group: list[QueueShare]
) -> tuple[Number, dict[str, tuple[QueueShare, Number]]]:
    leftovers: dict[str, tuple[QueueShare, Number]] = {}
    while True:
        another_round = False
        to_give = total
        weights = _share_weights(group, resource, k_value)
        weight_sum = sum(weights.values())
        if weight_sum == 0:
            break
        for queue in group:
            if total == 0:
                break
            share = queue.shares[resource]
            if _satisfied(share) or share.over_quota_weight == 0:
                continue
            requested = _remaining_requested(share)
            fair = Fraction(to_give) * Fraction(weights[queue.name]) / Fraction(weight_sum)
            if requested <= fair:
                give: Number = requested
                leftovers.pop(queue.name, None)
            else:
                # limits are handed out in whole units; the fraction is remembered
                give = max(math.floor(fair), 0)
                if fair - give > 0:
                    leftovers[queue.name] = (queue, fair - give)
            if give == 0:
                continue
            share.fair_share += give
            total -= give
            another_round = another_round or requested < fair
        if not another_round or total == 0:
            break
    return total, leftovers


def _divide_remaining(
    total: Number, leftovers: Mapping[str, tuple[QueueShare, Number]], resource: str
) -> Number:
    ordered = sorted(
        leftovers.values(), key=lambda item: (-item[1], item[0].creation, item[0].name)
    )
    for queue, _ in ordered:
        if total == 0:
            break
        give = min(1, total)
        queue.shares[resource].fair_share += give
        total -= give
    return total


# --- reclaim rules --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Reclaimer:
    queue: str
    preemptible: bool
    required: Quantities


def can_reclaim(queues: Mapping[str, QueueShare], reclaimer: Reclaimer) -> bool:
    """The reclaimer's queue stays within its fair share (and, for non-preemptible work,
    within its quota)."""
    queue = queues[reclaimer.queue]
    if not less_equal(added(queue.allocated(), reclaimer.required), queue.fair_share()):
        return False
    if reclaimer.preemptible:
        return True
    np = added(queue.allocated_not_preemptible(), reclaimer.required)
    return less_equal(np, queue.deserved())


def _maintain_fair_share(reclaimee: QueueShare, remaining: Quantities) -> bool:
    return not less_equal(remaining, reclaimee.allocatable())


def _guarantee_deserved(
    required: Quantities, reclaimer: QueueShare, reclaimee: QueueShare, remaining: Quantities
) -> bool:
    if not less_equal(added(reclaimer.allocated(), required), reclaimer.deserved()):
        return False
    return not less_equal(remaining, reclaimee.deserved())


def _path(queues: Mapping[str, QueueShare], name: str) -> list[QueueShare]:
    return list(reversed(list(ancestry(queues, name))))


def _leveled(
    queues: Mapping[str, QueueShare], reclaimer: str, reclaimee: str
) -> tuple[QueueShare, QueueShare]:
    """The reclaimer's and reclaimee's queues at the first level where their paths part."""
    left, right = _path(queues, reclaimer), _path(queues, reclaimee)
    pair = (left[0], right[0])
    for i in range(min(len(left), len(right))):
        pair = (left[i], right[i])
        if left[i].name != right[i].name:
            break
    return pair


def involved(resources: Iterable[Quantities]) -> set[str]:
    return {r for q in resources for r in RESOURCES if q[r] > 0}


def _saturation(allocated: Number, fair: Number) -> Fraction | float:
    if fair == 0:
        return math.inf if allocated > 0 else Fraction(0)
    if fair == UNLIMITED:
        return Fraction(0)
    return Fraction(allocated) / Fraction(fair)


def reclaimable(
    queues: Mapping[str, QueueShare],
    reclaimer: Reclaimer,
    victims_by_queue: Mapping[str, list[Quantities]],
    saturation_multiplier: Number = 1,
) -> bool:
    """Would taking these victims (per queue, each amount a gang's core or one elastic
    pod) respect the reclaim strategies and keep the reclaimer's queues below their
    siblings' saturation?"""
    remaining: dict[str, Quantities] = {}
    involved_by_queue: dict[str, set[str]] = {}
    for victim_queue in sorted(victims_by_queue, key=lambda n: queues[n].creation):
        amounts = victims_by_queue[victim_queue]
        mine, theirs = _leveled(queues, reclaimer.queue, victim_queue)
        involved_by_queue[victim_queue] = involved(amounts)
        remaining.setdefault(theirs.name, theirs.allocated())
        for amount in amounts:
            left = remaining[theirs.name]
            if not (
                _maintain_fair_share(theirs, left)
                or _guarantee_deserved(reclaimer.required, mine, theirs, left)
            ):
                return False
            for queue in ancestry(queues, victim_queue):
                current = remaining.setdefault(queue.name, queue.allocated())
                for r in RESOURCES:
                    current[r] -= amount[r]
                involved_by_queue.setdefault(queue.name, set()).update(
                    involved_by_queue[victim_queue]
                )
    return _within_boundaries(
        queues, reclaimer, remaining, involved_by_queue, saturation_multiplier
    )


def _within_boundaries(
    queues: Mapping[str, QueueShare],
    reclaimer: Reclaimer,
    remaining: dict[str, Quantities],
    involved_by_queue: Mapping[str, set[str]],
    multiplier: Number,
) -> bool:
    requested_names = involved([reclaimer.required])
    for queue in ancestry(queues, reclaimer.queue):
        mine = remaining.get(queue.name)
        if mine is None:
            mine = queue.allocated()
        for r in RESOURCES:
            mine[r] += reclaimer.required[r]  # upstream mutates the shared entry too
        for sibling_name in list(remaining):
            sibling = queues[sibling_name]
            if sibling.parent != queue.parent or sibling.name == queue.name:
                continue
            names = set(involved_by_queue.get(sibling_name, set())) | requested_names
            if not _saturation_lower(
                names,
                mine,
                queue.fair_share(),
                remaining[sibling_name],
                sibling.fair_share(),
                multiplier,
            ):
                return False
        if reclaimer.preemptible:
            continue
        np = added(queue.allocated_not_preemptible(), reclaimer.required)
        if not less_equal(np, queue.deserved()):
            return False
    return True


def _saturation_lower(
    names: set[str],
    mine: Quantities,
    my_fair: Quantities,
    sibling: Quantities,
    sibling_fair: Quantities,
    multiplier: Number,
) -> bool:
    for r in sorted(names):
        if my_fair[r] == UNLIMITED and sibling_fair[r] == UNLIMITED:
            continue
        ratio_mine = _saturation(mine[r], my_fair[r])
        ratio_sibling = _saturation(sibling[r], sibling_fair[r])
        if ratio_mine > 1 and sibling_fair[r] > 0 and ratio_mine * multiplier >= ratio_sibling:
            return False
    return True


# --- queue order -------------------------------------------------------------------------------


def queue_order(
    lq: QueueShare,
    rq: QueueShare,
    l_job: Quantities,
    r_job: Quantities,
    l_victims: Quantities,
    r_victims: Quantities,
    total: Mapping[str, Number],
) -> int:
    """Upstream GetQueueOrderResult (negative: `lq` first). `l_job` / `r_job`: what the
    queue's next pending job requests; `*_victims`: what its victims so far hold."""
    # under fair share before over
    l_over, r_over = less(lq.fair_share(), lq.allocated()), less(rq.fair_share(), rq.allocated())
    if l_over != r_over:
        return 1 if l_over else -1
    # within quota (with the job) before over quota
    l_starved = less_equal(added(lq.allocated(), l_job), lq.deserved())
    r_starved = less_equal(added(rq.allocated(), r_job), rq.deserved())
    if l_starved != r_starved:
        return -1 if l_starved else 1
    if lq.priority != rq.priority:
        return -1 if lq.priority > rq.priority else 1
    # using resources while having no allocatable share is penalised
    l_bad, r_bad = _zero_share_violation(lq, l_job), _zero_share_violation(rq, r_job)
    if l_bad != r_bad:
        return 1 if l_bad else -1
    l_share = _dominant_with(lq, l_job, l_victims, total)
    r_share = _dominant_with(rq, r_job, r_victims, total)
    if l_share != r_share:
        return -1 if l_share < r_share else 1
    l_plain, r_plain = lq.dominant_share(total), rq.dominant_share(total)
    if l_plain != r_plain:
        return -1 if l_plain < r_plain else 1
    l_alloc, r_alloc = lq.allocatable(), rq.allocatable()
    if not less_equal(r_alloc, l_alloc) and less_equal(l_alloc, r_alloc):
        return -1
    if not less_equal(l_alloc, r_alloc) and less_equal(r_alloc, l_alloc):
        return 1
    return -1 if lq.creation < rq.creation else 1


def _zero_share_violation(queue: QueueShare, job: Quantities) -> bool:
    with_job = added(queue.allocated(), job)
    allocatable = queue.allocatable()
    return any(allocatable[r] == 0 and with_job[r] > 0 for r in RESOURCES)


def _dominant_with(
    queue: QueueShare, job: Quantities, victims: Quantities, total: Mapping[str, Number]
) -> Fraction:
    probe = queue.clone()
    for r in RESOURCES:
        probe.shares[r].allocated += job[r] - victims[r]
    return probe.dominant_share(total)


def over_limit(queues: Mapping[str, QueueShare], queue: str, requested: Quantities) -> bool:
    """Would the request take the queue or an ancestor past its limit?"""
    for share in ancestry(queues, queue):
        for r in RESOURCES:
            res = share.shares[r]
            if res.max_allowed == UNLIMITED or requested[r] == 0:
                continue
            if res.max_allowed < res.allocated + requested[r]:
                return True
    return False


def non_preemptible_over_quota(
    queues: Mapping[str, QueueShare], queue: str, requested: Quantities
) -> bool:
    """Would non-preemptible work in the queue or an ancestor exceed its quota?"""
    for share in ancestry(queues, queue):
        for r in RESOURCES:
            res = share.shares[r]
            if res.deserved == UNLIMITED or requested[r] == 0:
                continue
            if res.deserved < res.allocated_not_preemptible + requested[r]:
                return True
    return False
