"""Quota and usage of ClusterQueues and (hierarchical) Cohorts, as Kueue's resource nodes.

Every node holds, per (flavor, resource):
- `quotas`: its own nominalQuota / borrowingLimit / lendingLimit,
- `subtree_quota`: its nominal plus what its children lend to it (child subtree quota minus the
  part a child keeps for itself because of its lendingLimit),
- `usage`: for a ClusterQueue its admitted usage; for a Cohort the part of its children's usage
  that exceeds what the children keep locally.

A child with a lendingLimit keeps `subtree_quota - lendingLimit` to itself ("local quota"):
only its own subtree can use it, and usage up to it never reaches the parent. Borrowing is
bounded at each level by the node's borrowingLimit. All arithmetic is on exact integers;
"unlimited" is simply the absence of a limit.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from gpupact.engine.admission.model import (
    ClusterQueue,
    Cohort,
    FlavorResource,
    ResourceGroup,
    ResourceQuota,
)


class QuotaNode:
    """A ClusterQueue or a Cohort in the quota tree. Only `usage` changes between rebuilds."""

    __slots__ = (
        "child_cohorts",
        "child_cqs",
        "fair_weight",
        "height",
        "is_cluster_queue",
        "kept",
        "lendable",
        "name",
        "parent",
        "potential",
        "quotas",
        "subtree_quota",
        "usage",
    )

    def __init__(self, name: str, is_cluster_queue: bool) -> None:
        self.name = name
        self.is_cluster_queue = is_cluster_queue
        self.parent: QuotaNode | None = None
        self.quotas: dict[FlavorResource, ResourceQuota] = {}
        self.subtree_quota: dict[FlavorResource, int] = {}
        # local_quota per flavor-resource with a lendingLimit (quota-only, set with the tree)
        self.kept: dict[FlavorResource, int] = {}
        # potential_available per flavor-resource, filled on demand (quota-only)
        self.potential: dict[FlavorResource, int] = {}
        self.usage: dict[FlavorResource, int] = {}
        self.child_cqs: list[QuotaNode] = []
        self.child_cohorts: list[QuotaNode] = []
        self.fair_weight = 1
        self.height = 0
        # per resource name, what this node could use at most (fair sharing); quota-only, cached
        self.lendable: dict[str, int] | None = None

    def __repr__(self) -> str:
        kind = "ClusterQueue" if self.is_cluster_queue else "Cohort"
        return f"<{kind} {self.name}>"

    def root(self) -> QuotaNode:
        node = self
        while node.parent is not None:
            node = node.parent
        return node

    def ancestors(self) -> list[QuotaNode]:
        """Parent first, root last."""
        out = []
        node = self.parent
        while node is not None:
            out.append(node)
            node = node.parent
        return out

    def subtree_cluster_queues(self) -> list[QuotaNode]:
        if self.is_cluster_queue:
            return [self]
        out = list(self.child_cqs)
        for child in self.child_cohorts:
            out.extend(child.subtree_cluster_queues())
        return out


# --- formulas (Kueue pkg/cache/scheduler/resource_node.go) ------------------------------------


def _compute_local_quota(node: QuotaNode, fr: FlavorResource) -> int:
    quota = node.quotas.get(fr)
    if quota is not None and quota.lending_limit is not None:
        return max(0, node.subtree_quota.get(fr, 0) - quota.lending_limit)
    return 0


def _set_kept(node: QuotaNode) -> None:
    """Precompute local_quota once the node's subtree quota is final (it is read on every
    usage change and availability check)."""
    node.kept = {
        fr: _compute_local_quota(node, fr)
        for fr, quota in node.quotas.items()
        if quota.lending_limit is not None
    }


def local_quota(node: QuotaNode, fr: FlavorResource) -> int:
    """Capacity only this node's subtree may use: subtree quota above the lending limit."""
    return node.kept.get(fr, 0)


def local_available(node: QuotaNode, fr: FlavorResource) -> int:
    room = node.kept.get(fr, 0) - node.usage.get(fr, 0)
    return room if room > 0 else 0


def _available(node: QuotaNode, fr: FlavorResource) -> int:
    parent = node.parent
    used = node.usage.get(fr, 0)
    if parent is None:
        return node.subtree_quota.get(fr, 0) - used
    from_parent = _available(parent, fr)
    kept = node.kept.get(fr, 0)
    quota = node.quotas.get(fr)
    if quota is not None and quota.borrowing_limit is not None:
        stored_in_parent = node.subtree_quota.get(fr, 0) - kept
        used_in_parent = used - kept if used > kept else 0
        limit = stored_in_parent - used_in_parent + quota.borrowing_limit
        if limit < from_parent:
            from_parent = limit
    room = kept - used
    return (room if room > 0 else 0) + from_parent


def available(node: QuotaNode, fr: FlavorResource) -> int:
    """Unused capacity this node can take now, borrowing included (0 when in debt)."""
    return max(0, _available(node, fr))


def potential_available(node: QuotaNode, fr: FlavorResource) -> int:
    """The most this node could ever use with nothing else admitted (borrowing limits apply)."""
    cached = node.potential.get(fr)
    if cached is None:
        cached = node.potential[fr] = _potential_available(node, fr)
    return cached


def _potential_available(node: QuotaNode, fr: FlavorResource) -> int:
    parent = node.parent
    if parent is None:
        return node.subtree_quota.get(fr, 0)
    total = local_quota(node, fr) + potential_available(parent, fr)
    quota = node.quotas.get(fr)
    if quota is not None and quota.borrowing_limit is not None:
        total = min(node.subtree_quota.get(fr, 0) + quota.borrowing_limit, total)
    return total


def add_usage(node: QuotaNode, fr: FlavorResource, value: int) -> None:
    """Charge `value` to the node; what exceeds its local room bubbles up to the parent."""
    while True:
        used = node.usage.get(fr, 0)
        room = node.kept.get(fr, 0) - used
        if room < 0:
            room = 0
        node.usage[fr] = used + value
        parent = node.parent
        if parent is None or value <= room:
            return
        value -= room
        node = parent


def remove_usage(node: QuotaNode, fr: FlavorResource, value: int) -> None:
    """Release `value`; the part that was stored in the parent is released there too."""
    while True:
        used = node.usage.get(fr, 0)
        stored_in_parent = used - node.kept.get(fr, 0)
        node.usage[fr] = used - value
        parent = node.parent
        if stored_in_parent <= 0 or parent is None:
            return
        value = min(value, stored_in_parent)
        node = parent


def add_usages(node: QuotaNode, usage: Mapping[FlavorResource, int]) -> None:
    for fr, value in usage.items():
        add_usage(node, fr, value)


def remove_usages(node: QuotaNode, usage: Mapping[FlavorResource, int]) -> None:
    for fr, value in usage.items():
        remove_usage(node, fr, value)


def borrowing_with(node: QuotaNode, fr: FlavorResource, value: int) -> bool:
    """Would usage + value exceed the node's own (subtree) quota? For a ClusterQueue the subtree
    quota is its nominal quota."""
    return node.subtree_quota.get(fr, 0) < node.usage.get(fr, 0) + value


def is_borrowing(node: QuotaNode, fr: FlavorResource) -> bool:
    return borrowing_with(node, fr, 0)


def within_nominal(node: QuotaNode, frs: Iterable[FlavorResource]) -> bool:
    """Usage is at most the (subtree) quota for every listed flavor-resource."""
    quota = node.subtree_quota
    usage = node.usage
    # a plain loop: this runs for every ClusterQueue of a cohort in every preemption search
    for fr in frs:  # noqa: SIM110
        if quota.get(fr, 0) < usage.get(fr, 0):
            return False
    return True


def quantities_fit_in_quota(
    node: QuotaNode, requests: Mapping[FlavorResource, int]
) -> tuple[bool, dict[FlavorResource, int]]:
    """Do the requests fit this node's quota, and what is left to source from the parent."""
    fits = True
    remaining = {}
    for fr, value in requests.items():
        if node.subtree_quota.get(fr, 0) < node.usage.get(fr, 0) + value:
            fits = False
        remaining[fr] = max(0, value - local_available(node, fr))
    return fits, remaining


def lowest_fitting_subtree_height(
    cq: QuotaNode, fr: FlavorResource, value: int
) -> tuple[int, bool]:
    """The borrowing level of `value` more of `fr`: 0 within the ClusterQueue's nominal quota,
    else the height of the smallest cohort subtree whose quota covers it (the whole tree if
    none does). Also whether that subtree is smaller than the whole tree, i.e. whether quota
    could be reclaimed from outside it."""
    parent = cq.parent
    if parent is None or not borrowing_with(cq, fr, value):
        return 0, parent is not None
    remaining = value - local_available(cq, fr)
    node: QuotaNode | None = parent
    while node is not None:
        if not borrowing_with(node, fr, remaining):
            return node.height, node.parent is not None
        remaining -= local_available(node, fr)
        node = node.parent
    return parent.root().height, False


# --- building ----------------------------------------------------------------------------------


def quotas_of(groups: Iterable[ResourceGroup]) -> dict[FlavorResource, ResourceQuota]:
    out: dict[FlavorResource, ResourceQuota] = {}
    for group in groups:
        for flavor in group.flavors:
            for resource, quota in flavor.resources.items():
                out[(flavor.name, resource)] = quota
    return out


class CohortCycleError(ValueError):
    """The cohort parent chain loops."""


class QuotaTree:
    """All ClusterQueues and Cohorts (explicit, or implicit: only named by a child)."""

    def __init__(self, cluster_queues: Iterable[ClusterQueue], cohorts: Iterable[Cohort]) -> None:
        self.cluster_queues: dict[str, QuotaNode] = {}
        self.cohorts: dict[str, QuotaNode] = {}
        specs = {c.name: c for c in cohorts}

        def cohort_node(name: str) -> QuotaNode:
            node = self.cohorts.get(name)
            if node is None:
                node = QuotaNode(name, is_cluster_queue=False)
                self.cohorts[name] = node
            return node

        for name in sorted(specs):
            spec = specs[name]
            node = cohort_node(name)
            node.quotas = quotas_of(spec.resource_groups)
            node.fair_weight = spec.fair_weight
            if spec.parent:
                node.parent = cohort_node(spec.parent)
        for cq in sorted(cluster_queues, key=lambda c: c.name):
            node = QuotaNode(cq.name, is_cluster_queue=True)
            node.quotas = quotas_of(cq.resource_groups)
            node.fair_weight = cq.fair_weight
            if cq.cohort:
                node.parent = cohort_node(cq.cohort)
            self.cluster_queues[cq.name] = node
        self._check_cycles()
        for node in sorted(self.cohorts.values(), key=lambda n: n.name):
            if node.parent is not None:
                node.parent.child_cohorts.append(node)
        for node in self.cluster_queues.values():
            # a ClusterQueue's subtree quota is its nominal quota
            node.subtree_quota = {fr: q.nominal for fr, q in node.quotas.items()}
            _set_kept(node)
            if node.parent is not None:
                node.parent.child_cqs.append(node)
        for root in self.roots():
            _accumulate_quota(root)

    def _check_cycles(self) -> None:
        for start in self.cohorts.values():
            seen = {start.name}
            node = start.parent
            while node is not None:
                if node.name in seen:
                    raise CohortCycleError(f"cohort {start.name!r} is part of a parent cycle")
                seen.add(node.name)
                node = node.parent

    def roots(self) -> list[QuotaNode]:
        return [n for n in self.cohorts.values() if n.parent is None]

    def clone(self) -> QuotaTree:
        """A copy sharing the (immutable) quotas; usage is copied."""
        out = QuotaTree.__new__(QuotaTree)
        nodes: dict[int, QuotaNode] = {}

        def twin(node: QuotaNode) -> QuotaNode:
            copy = nodes.get(id(node))
            if copy is None:
                copy = QuotaNode(node.name, node.is_cluster_queue)
                copy.quotas = node.quotas
                copy.subtree_quota = node.subtree_quota
                copy.kept = node.kept
                copy.potential = node.potential
                copy.usage = dict(node.usage)
                copy.fair_weight = node.fair_weight
                copy.height = node.height
                copy.lendable = node.lendable
                nodes[id(node)] = copy
            return copy

        out.cohorts = {name: twin(n) for name, n in self.cohorts.items()}
        out.cluster_queues = {name: twin(n) for name, n in self.cluster_queues.items()}
        for node in [*self.cohorts.values(), *self.cluster_queues.values()]:
            copy = twin(node)
            copy.parent = twin(node.parent) if node.parent is not None else None
            copy.child_cqs = [twin(c) for c in node.child_cqs]
            copy.child_cohorts = [twin(c) for c in node.child_cohorts]
        return out

    def reset_usage(self, cq_usage: Mapping[str, Mapping[FlavorResource, int]]) -> None:
        """Set every ClusterQueue's usage and recompute the cohorts' from it."""
        for name, node in self.cluster_queues.items():
            node.usage = dict(cq_usage.get(name, {}))
        for root in self.roots():
            _accumulate_usage(root)


def _accumulate_quota(node: QuotaNode) -> None:
    node.subtree_quota = {fr: q.nominal for fr, q in node.quotas.items()}
    height = 1 if node.child_cqs else 0
    for child in (*node.child_cohorts, *node.child_cqs):
        if not child.is_cluster_queue:
            _accumulate_quota(child)
            height = max(height, child.height + 1)
        for fr, quota in child.subtree_quota.items():
            lent = quota - local_quota(child, fr)
            node.subtree_quota[fr] = node.subtree_quota.get(fr, 0) + lent
    _set_kept(node)
    node.height = height


def _accumulate_usage(node: QuotaNode) -> None:
    node.usage = {}
    for child in (*node.child_cohorts, *node.child_cqs):
        if not child.is_cluster_queue:
            _accumulate_usage(child)
        for fr, used in child.usage.items():
            over = max(0, used - local_quota(child, fr))
            node.usage[fr] = node.usage.get(fr, 0) + over
