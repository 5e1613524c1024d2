"""Quota formulas: available / potential available with borrowing and lending limits, usage
bubbling through hierarchical cohorts, borrowing levels."""

from __future__ import annotations

import random

import pytest

from gpupact.engine.admission.model import (
    ClusterQueue,
    Cohort,
    FlavorQuotas,
    ResourceGroup,
    ResourceQuota,
)
from gpupact.engine.admission.resource_tree import (
    CohortCycleError,
    QuotaTree,
    add_usage,
    available,
    local_quota,
    lowest_fitting_subtree_height,
    potential_available,
    remove_usage,
)

FR = ("default", "cpu")


def cq(name, cohort=None, nominal=0, borrowing=None, lending=None) -> ClusterQueue:
    quota = ResourceQuota(nominal, borrowing, lending)
    group = ResourceGroup(("cpu",), (FlavorQuotas("default", {"cpu": quota}),))
    return ClusterQueue(name, (group,), cohort)


def cohort(name, parent=None, nominal=None) -> Cohort:
    groups = ()
    if nominal is not None:
        quota = ResourceQuota(nominal)
        groups = (ResourceGroup(("cpu",), (FlavorQuotas("default", {"cpu": quota}),)),)
    return Cohort(name, parent, groups)


def test_cluster_queue_without_cohort_ignores_borrowing_limit() -> None:
    tree = QuotaTree([cq("a", nominal=10, borrowing=5)], [])
    node = tree.cluster_queues["a"]
    add_usage(node, FR, 4)
    assert available(node, FR) == 6
    assert potential_available(node, FR) == 10


def test_borrowing_limit_caps_what_the_cohort_lends() -> None:
    tree = QuotaTree([cq("a", "co", 5, borrowing=2), cq("b", "co", 10)], [])
    a = tree.cluster_queues["a"]
    assert potential_available(a, FR) == 7  # nominal 5 + borrowingLimit 2, cohort has 15
    add_usage(tree.cluster_queues["b"], FR, 9)
    assert available(a, FR) == 6  # cohort 15 - 9 = 6 < 7
    add_usage(a, FR, 6)
    assert available(a, FR) == 0
    assert tree.cohorts["co"].usage[FR] == 15


def test_lending_limit_keeps_quota_local() -> None:
    # kueue "workload exceeds lending limit when borrow in cohort": lend-a 3 (lends 2),
    # lend-b 2 (lends 2) uses 2; lend-b can get 2 more, not 3
    tree = QuotaTree([cq("lend-a", "lend", 3, lending=2), cq("lend-b", "lend", 2, lending=2)], [])
    lend_a, lend_b = tree.cluster_queues["lend-a"], tree.cluster_queues["lend-b"]
    assert local_quota(lend_a, FR) == 1
    assert tree.cohorts["lend"].subtree_quota[FR] == 4
    add_usage(lend_b, FR, 2)
    assert tree.cohorts["lend"].usage[FR] == 2
    assert available(lend_b, FR) == 2
    assert potential_available(lend_b, FR) == 4
    # lend-a still has its local unit on top of what the cohort offers
    assert available(lend_a, FR) == 1 + 2


def test_hierarchical_cohort_lending_limit() -> None:
    # lender (10, lends 3) and borrower (5, borrowingLimit 10) in child, under root
    tree = QuotaTree(
        [cq("lender", "child", 10, lending=3), cq("borrower", "child", 5, borrowing=10)],
        [cohort("root"), cohort("child", "root")],
    )
    borrower = tree.cluster_queues["borrower"]
    add_usage(borrower, FR, 5)
    assert available(borrower, FR) == 3
    assert potential_available(borrower, FR) == 8


def test_usage_bubbles_consistently_in_any_order() -> None:
    cqs = [
        cq("a", "left", 4, lending=1),
        cq("b", "left", 2, borrowing=3),
        cq("c", "right", 5, lending=5),
        cq("d", "root", 0),
    ]
    cohorts = [cohort("root", nominal=2), cohort("left", "root", 3), cohort("right", "root")]
    tree = QuotaTree(cqs, cohorts)
    rng = random.Random(7)
    held: dict[str, list[int]] = {n: [] for n in tree.cluster_queues}
    for _ in range(300):
        name = rng.choice(sorted(held))
        node = tree.cluster_queues[name]
        if held[name] and rng.random() < 0.45:
            remove_usage(node, FR, held[name].pop(rng.randrange(len(held[name]))))
        else:
            value = rng.randint(1, 4)
            add_usage(node, FR, value)
            held[name].append(value)
        incremental = {n: dict(c.usage) for n, c in tree.cohorts.items()}
        fresh = QuotaTree(cqs, cohorts)
        fresh.reset_usage({n: {FR: sum(v)} for n, v in held.items()})
        for name_, node_ in fresh.cohorts.items():
            assert node_.usage.get(FR, 0) == incremental[name_].get(FR, 0), name_


def test_borrowing_level_is_the_height_of_the_smallest_subtree_that_fits() -> None:
    # kueue "in a hierarchical cohort, workload borrowing less is scheduled first"
    tree = QuotaTree(
        [cq("guaranteed", "guaranteed", 0), cq("best-effort", "root", 0)],
        [cohort("root"), cohort("guaranteed", "root", 4)],
    )
    assert lowest_fitting_subtree_height(tree.cluster_queues["guaranteed"], FR, 4) == (1, True)
    assert lowest_fitting_subtree_height(tree.cluster_queues["best-effort"], FR, 4) == (2, False)
    assert lowest_fitting_subtree_height(tree.cluster_queues["best-effort"], FR, 5) == (2, False)
    alone = QuotaTree([cq("x", nominal=3)], [])
    assert lowest_fitting_subtree_height(alone.cluster_queues["x"], FR, 2) == (0, False)


def test_cohort_parent_cycle_is_rejected() -> None:
    with pytest.raises(CohortCycleError):
        QuotaTree([cq("a", "x")], [cohort("x", "y"), cohort("y", "x")])
