"""Temporary quota raises: active until their expiry on the injected clock, then gone; what
happens to the workloads admitted on them (Kueue: nothing; evict-newest: evicted)."""

from __future__ import annotations

import pytest

from gpupact.engine.admission import (
    AdmissionState,
    ClusterQueue,
    FlavorQuotas,
    LocalQueue,
    PodSet,
    PreemptionConfig,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
    Workload,
    reasons,
)
from gpupact.engine.admission.raises import (
    EVICT_NEWEST,
    QUOTA_RAISE_EXPIRED,
    CycleResultWithExpiry,
    QuotaRaise,
)
from gpupact.errors import FieldError

CPU = 1000  # millicores per core
FR = ("default", "cpu")


def cq(name: str, cores: int, cohort: str | None = None, **kw) -> ClusterQueue:
    quotas = FlavorQuotas("default", {"cpu": ResourceQuota(cores * CPU)})
    return ClusterQueue(name, (ResourceGroup(("cpu",), (quotas,)),), cohort=cohort, **kw)


def make_state(*queues: ClusterQueue, **kw) -> AdmissionState:
    return AdmissionState(
        resource_flavors=[ResourceFlavor("default")],
        cluster_queues=queues,
        local_queues=[LocalQueue("ns", q.name, q.name) for q in queues],
        **kw,
    )


def wl(name: str, queue: str, cores: int, t: int = 0, priority: int = 0) -> Workload:
    pod_set = PodSet("main", 1, {"cpu": cores * CPU})
    return Workload(
        name, (pod_set,), namespace="ns", queue_name=queue, creation_time=t, priority=priority
    )


def bump(queue: str, cores: int, expires_at: int, reason: str = "launch week") -> QuotaRaise:
    return QuotaRaise(queue, "default", "cpu", cores * CPU, expires_at, reason)


def admit_one_per_cycle(state: AdmissionState, queue: str, sizes: list[int]) -> None:
    """Submit and admit workloads w1, w2, ... at t = 0, 1, ... (one head per cycle)."""
    for t, cores in enumerate(sizes):
        state.submit(wl(f"w{t + 1}", queue, cores, t=t))
        (admitted,) = state.schedule_cycle(t).admitted
        assert admitted.key == f"ns/w{t + 1}"


def test_workloads_admitted_on_a_raise_are_kept_and_reported_after_expiry() -> None:
    state = make_state(cq("cq", 4))
    assert state.add_raise(bump("cq", 4, expires_at=10), now=0)
    admit_one_per_cycle(state, "cq", [3, 3, 1])  # 7 of 4 + 4 cores

    result = state.schedule_cycle(10)
    assert isinstance(result, CycleResultWithExpiry)
    report = result.expiry
    assert report is not None and report.policy == "keep"
    assert report.expired == (bump("cq", 4, expires_at=10),)
    (quota,) = report.quotas
    assert (quota.usage, quota.nominal, quota.previous_nominal) == (7 * CPU, 4 * CPU, 8 * CPU)
    assert (quota.borrowable, quota.over_quota, quota.over_nominal) == (0, 3 * CPU, 3 * CPU)
    # latest admitted first, until the 3 cores above nominal are covered
    assert [(w.key, w.admitted_at, dict(w.usage)) for w in report.workloads] == [
        ("ns/w3", 2, {FR: 1 * CPU}),
        ("ns/w2", 1, {FR: 3 * CPU}),
    ]
    assert [w.key for w in report.above_quota] == ["ns/w3", "ns/w2"]
    assert report.evicted == ()
    # Kueue's behaviour: nothing is evicted, usage stays above the new nominal quota ...
    assert sorted(state.admitted()) == ["ns/w1", "ns/w2", "ns/w3"]
    assert not any(info.evicted for info in state.workloads.values())
    assert state.usage("cq") == {FR: 7 * CPU}
    assert state.cluster_queue_runtimes["cq"].node.quotas[FR].nominal == 4 * CPU
    assert state.raises == []
    # ... and new admissions wait until usage drops below it
    state.submit(wl("w4", "cq", 1, t=11))
    assert state.schedule_cycle(11).admitted == []
    why = state.explain("ns/w4")
    assert why.code == reasons.WAITING_FOR_QUOTA
    assert (why.quota[0].usage, why.quota[0].nominal) == (7 * CPU, 4 * CPU)
    state.finish("ns/w2")
    assert state.schedule_cycle(12).admitted == []  # 4 of 4 cores
    state.finish("ns/w3")
    assert [a.key for a in state.schedule_cycle(13).admitted] == ["ns/w4"]
    # a cycle without expiry carries no report
    assert state.schedule_cycle(14).expiry is None


def test_in_a_cohort_the_excess_is_borrowed_where_the_cohort_has_room() -> None:
    state = make_state(
        cq("a", 2, cohort="co"),
        cq("b", 3, cohort="co", preemption=PreemptionConfig(reclaim_within_cohort="Any")),
    )
    state.add_raise(bump("a", 4, expires_at=10), now=0)
    admit_one_per_cycle(state, "a", [2, 2, 2])  # 6 of 2 + 4, b lends nothing yet

    report = state.expire_raises(10)
    (quota,) = report.quotas
    # 6 used, 2 nominal: 3 borrowed from b's unused quota, 1 above everything
    assert (quota.usage, quota.nominal, quota.borrowable, quota.over_quota) == (
        6 * CPU,
        2 * CPU,
        3 * CPU,
        1 * CPU,
    )
    assert [(w.key, w.above_quota) for w in report.workloads] == [
        ("ns/w3", True),
        ("ns/w2", False),
    ]
    assert sorted(state.admitted()) == ["ns/w1", "ns/w2", "ns/w3"]
    # borrowing as usual: b reclaims its quota by preemption, newest borrower first
    state.submit(wl("b1", "b", 3, t=20))
    result = state.schedule_cycle(20)
    assert result.expiry is None
    assert sorted((p.key, p.reason) for p in result.preempted) == [
        ("ns/w2", "InCohortReclamation"),
        ("ns/w3", "InCohortReclamation"),
    ]


def test_evict_newest_evicts_until_usage_is_within_quota() -> None:
    state = make_state(cq("cq", 4), on_expiry=EVICT_NEWEST)
    state.add_raise(bump("cq", 4, expires_at=10), now=0)
    admit_one_per_cycle(state, "cq", [2, 2, 2, 1])  # 7 of 8

    report = state.schedule_cycle(10).expiry
    assert report is not None and report.policy == EVICT_NEWEST
    assert report.evicted == ("ns/w4", "ns/w3")  # 3 cores above 4: 1 + 2
    assert all(w.reason == QUOTA_RAISE_EXPIRED for w in report.workloads)
    assert state.workloads["ns/w4"].evicted and state.workloads["ns/w3"].evicted
    assert not state.workloads["ns/w2"].evicted
    # like preemption victims they hold their quota until they have stopped
    assert state.usage("cq") == {FR: 7 * CPU}
    for key in report.evicted:
        assert state.complete_eviction(key) == "active"
    assert state.usage("cq") == {FR: 4 * CPU}
    assert sorted(state.admitted()) == ["ns/w1", "ns/w2"]
    assert state.schedule_cycle(11).admitted == []  # back in the queue, no room


def test_evict_newest_in_a_cohort_keeps_what_the_cohort_can_lend() -> None:
    state = make_state(cq("a", 2, cohort="co"), cq("b", 3, cohort="co"), on_expiry=EVICT_NEWEST)
    state.add_raise(bump("a", 4, expires_at=10), now=0)
    admit_one_per_cycle(state, "a", [2, 2, 2])
    report = state.expire_raises(10)
    assert report.evicted == ("ns/w3",)
    assert [w.key for w in report.workloads if not w.evicted] == ["ns/w2"]


def test_workloads_already_being_evicted_are_counted_as_leaving() -> None:
    state = make_state(cq("cq", 4), on_expiry=EVICT_NEWEST)
    state.add_raise(bump("cq", 4, expires_at=10), now=0)
    state.add_raise(bump("cq", 2, expires_at=20), now=0)
    admit_one_per_cycle(state, "cq", [4, 2, 2])  # 8 of 4 + 4 + 2
    first = state.expire_raises(10)
    assert first.evicted == ("ns/w3",)  # 8 used, 6 nominal
    # w3 has not stopped yet when the second raise expires: it is not chosen again
    second = state.expire_raises(20)
    (quota,) = second.quotas
    assert (quota.usage, quota.evicting, quota.nominal, quota.over_quota) == (
        8 * CPU,
        2 * CPU,
        4 * CPU,
        2 * CPU,
    )
    assert second.evicted == ("ns/w2",)


def test_a_raise_that_has_already_expired_is_never_active() -> None:
    state = make_state(cq("cq", 2))
    state.submit(wl("big", "cq", 3))
    assert not state.add_raise(bump("cq", 2, expires_at=10), now=10)
    assert state.raises == []
    assert state.schedule_cycle(10).admitted == []
    # without `now`, the latest time the state has seen decides
    assert not state.add_raise(bump("cq", 2, expires_at=10))
    assert state.schedule_cycle(11).admitted == []
    # added before the state has a clock: dropped by the cycle before anything is admitted
    fresh = make_state(cq("cq", 2))
    fresh.submit(wl("big", "cq", 3))
    assert fresh.add_raise(bump("cq", 2, expires_at=5))
    result = fresh.schedule_cycle(5)
    assert result.admitted == []
    assert result.expiry is not None and result.expiry.workloads == ()
    assert result.expiry.expired == (bump("cq", 2, expires_at=5),)


def test_a_raise_requeues_inadmissible_workloads_and_raises_add_up() -> None:
    state = make_state(cq("cq", 2))
    state.submit(wl("big", "cq", 5))
    state.schedule_cycle(0)
    assert state.pending_workloads()[0].state == "inadmissible"
    state.add_raise(bump("cq", 2, expires_at=50))
    state.add_raise(bump("cq", 1, expires_at=20))
    assert state.pending_workloads()[0].state == "active"
    assert [a.key for a in state.schedule_cycle(1).admitted] == ["ns/big"]
    report = state.schedule_cycle(20).expiry
    assert report is not None
    (quota,) = report.quotas
    assert (quota.previous_nominal, quota.nominal, quota.over_quota) == (5 * CPU, 4 * CPU, CPU)
    assert [r.expires_at for r in state.raises] == [50]
    assert state.expire_raises(49).expired == ()
    assert len(state.expire_raises(50).expired) == 1
    assert state.cluster_queue_runtimes["cq"].node.quotas[FR].nominal == 2 * CPU


def test_a_copy_keeps_its_own_raises() -> None:
    state = make_state(cq("cq", 2))
    state.add_raise(bump("cq", 2, expires_at=10), now=0)
    twin = state.copy()
    twin.expire_raises(10)
    assert twin.raises == [] and len(state.raises) == 1
    assert state.cluster_queue_runtimes["cq"].node.quotas[FR].nominal == 4 * CPU
    assert twin.cluster_queue_runtimes["cq"].node.quotas[FR].nominal == 2 * CPU


def test_a_raise_survives_a_spec_update_of_its_cluster_queue() -> None:
    state = make_state(cq("cq", 2))
    state.add_raise(bump("cq", 2, expires_at=10), now=0)
    state.set_cluster_queue(cq("cq", 3))
    assert state.cluster_queue_runtimes["cq"].node.quotas[FR].nominal == 5 * CPU
    assert state.cluster_queue_specs["cq"].resource_groups[0].flavors[0].resources[
        "cpu"
    ] == ResourceQuota(3 * CPU)


@pytest.mark.parametrize(
    ("raised", "path", "message"),
    [
        (QuotaRaise("nope", "default", "cpu", 1, 10), ("cluster_queue",), "not found"),
        (QuotaRaise("cq", "gpu-a100", "cpu", 1, 10), ("flavor",), "not in ClusterQueue"),
        (QuotaRaise("cq", "default", "nvidia.com/gpu", 1, 10), ("resource",), "no quota"),
        (QuotaRaise("cq", "default", "cpu", 0, 10), ("amount",), "positive"),
        (QuotaRaise("cq", "default", "cpu", 1.5, 10), ("amount",), "integer"),  # type: ignore[arg-type]
        (QuotaRaise("cq", "default", "cpu", True, 10), ("amount",), "integer"),
        (QuotaRaise("cq", "default", "cpu", 1, "soon"), ("expires_at",), "integer"),  # type: ignore[arg-type]
        (QuotaRaise("cq", "default", None, 1, 10), ("resource",), "string"),  # type: ignore[arg-type]
        ({"cluster_queue": "cq"}, (), "QuotaRaise"),
    ],
)
def test_bad_raises_are_field_errors(raised, path, message) -> None:
    state = make_state(cq("cq", 2))
    with pytest.raises(FieldError, match=message) as caught:
        state.add_raise(raised, now=0)
    assert caught.value.path == path
    assert state.raises == []


def test_unknown_policy_is_a_field_error() -> None:
    with pytest.raises(FieldError) as caught:
        make_state(cq("cq", 2), on_expiry="evict-oldest")
    assert caught.value.path == ("on_expiry",)
