"""AdmissionState over several cycles: queueing strategies, events, preemption life cycle,
explanations, copies and the extension points."""

from __future__ import annotations

import pytest

from gpupact.engine.admission import (
    AdmissionState,
    ClusterQueue,
    FeatureGates,
    FlavorFungibility,
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

CPU = 1000  # millicores per core


def group(*flavors: tuple[str, int, int | None]) -> ResourceGroup:
    return ResourceGroup(
        ("cpu",),
        tuple(
            FlavorQuotas(f, {"cpu": ResourceQuota(n * CPU, b if b is None else b * CPU)})
            for f, n, b in flavors
        ),
    )


def make_state(*queues: ClusterQueue, flavors=("default",), **kw) -> AdmissionState:
    return AdmissionState(
        resource_flavors=[ResourceFlavor(f) for f in flavors],
        cluster_queues=queues,
        local_queues=[LocalQueue("ns", f"lq-{q.name}", q.name) for q in queues],
        **kw,
    )


def wl(name: str, queue: str, cores: int, priority: int = 0, t: int = 0, **kw) -> Workload:
    return Workload(
        name,
        (PodSet("main", 1, {"cpu": cores * CPU}, **kw),),
        namespace="ns",
        queue_name=f"lq-{queue}",
        priority=priority,
        creation_time=t,
    )


def admitted_keys(result) -> list[str]:
    return sorted(a.key for a in result.admitted)


def states(state: AdmissionState) -> dict[str, str]:
    return {p.key: p.state for p in state.pending_workloads()}


def test_strict_fifo_head_blocks_the_queue() -> None:
    state = make_state(
        ClusterQueue("cq", (group(("default", 5, None)),), queueing_strategy="StrictFIFO")
    )
    for w in (wl("wl1", "cq", 2, 100, 0), wl("wl2", "cq", 5, 10, 1), wl("wl3", "cq", 1, 1, 2)):
        state.submit(w)
    assert admitted_keys(state.schedule_cycle(0)) == ["ns/wl1"]
    for t in range(1, 5):
        assert state.schedule_cycle(t).admitted == []
    assert states(state) == {"ns/wl2": "active", "ns/wl3": "active"}
    why = state.explain("ns/wl3")
    assert why.code == reasons.BLOCKED_BY_STRICT_FIFO_HEAD
    assert why.blocked_by == "ns/wl2"
    assert (why.position_in_cluster_queue, why.position_in_local_queue) == (1, 1)
    # the head finishing frees its quota: wl2 gets in, and then wl3 would have to wait
    state.finish("ns/wl1")
    assert admitted_keys(state.schedule_cycle(10)) == ["ns/wl2"]


def test_best_effort_fifo_parks_no_fit_heads_and_their_equivalents() -> None:
    state = make_state(ClusterQueue("cq", (group(("default", 2, None)),)))
    for i in range(3):
        state.submit(wl(f"nofit-{i}", "cq", 10, t=i))
    state.submit(wl("fits", "cq", 1, t=9))
    first = state.schedule_cycle(0)
    assert first.admitted == []
    assert first.left_pending[0].reason == reasons.EXCEEDS_MAX_QUOTA
    assert states(state) == {f"ns/nofit-{i}": "inadmissible" for i in range(3)} | {
        "ns/fits": "active"
    }
    assert admitted_keys(state.schedule_cycle(1)) == ["ns/fits"]
    # a new workload of the same shape goes straight to the inadmissible set
    assert state.submit(wl("nofit-3", "cq", 10, t=10)) == "inadmissible"
    # a finished workload is a cluster event: the parked ones are retried
    state.finish("ns/fits")
    assert all(s == "active" for s in states(state).values())


def test_deferred_requeue_releases_quota_but_keeps_parked_workloads_parked() -> None:
    """Kueue's requeuer batches inadmissible retries (1 s): the quota of a finished or evicted
    workload is free at once, the parked workloads wait for the caller's requeue."""
    cq = ClusterQueue(
        "cq",
        (group(("default", 4, None)),),
        preemption=PreemptionConfig(within_cluster_queue="LowerPriority"),
    )
    state = make_state(cq)
    state.submit(wl("running", "cq", 4))
    state.schedule_cycle(0)
    state.submit(wl("parked", "cq", 4, t=1))
    state.schedule_cycle(1)
    assert states(state) == {"ns/parked": "inadmissible"}
    state.finish("ns/running", requeue_inadmissible=False)
    assert state.usage("cq") == {("default", "cpu"): 0}
    assert states(state) == {"ns/parked": "inadmissible"}
    assert state.schedule_cycle(2).admitted == []
    state.requeue_inadmissible_around("cq")
    assert admitted_keys(state.schedule_cycle(3)) == ["ns/parked"]
    # an evicted workload is queued again at once (here parked: its shape was bulk-moved)
    state.submit(wl("other", "cq", 4, t=4))
    state.schedule_cycle(4)
    state.submit(wl("high", "cq", 4, priority=10, t=5))
    assert [p.key for p in state.schedule_cycle(5).preempted] == ["ns/parked"]
    assert state.complete_eviction("ns/parked", requeue_inadmissible=False) == "inadmissible"
    assert states(state) == {
        "ns/other": "inadmissible",
        "ns/parked": "inadmissible",
        "ns/high": "active",
    }
    assert admitted_keys(state.schedule_cycle(6)) == ["ns/high"]


def test_preemption_waits_for_the_victim_to_release_its_quota() -> None:
    cq = ClusterQueue(
        "cq",
        (group(("default", 4, None)),),
        preemption=PreemptionConfig(within_cluster_queue="LowerPriority"),
    )
    state = make_state(cq)
    state.submit(wl("low", "cq", 4, priority=0))
    state.schedule_cycle(0)
    state.submit(wl("high", "cq", 3, priority=10, t=1))
    result = state.schedule_cycle(1)
    assert [(p.key, p.reason, p.preemptor) for p in result.preempted] == [
        ("ns/low", "InClusterQueue", "ns/high")
    ]
    assert result.left_pending[0].reason == reasons.WAITING_FOR_PREEMPTED_WORKLOADS
    assert state.workloads["ns/low"].evicted
    # while the victim still holds its quota, nothing new is preempted or admitted
    again = state.schedule_cycle(2)
    assert again.preempted == [] and again.admitted == []
    assert state.complete_eviction("ns/low") == "active"
    result = state.schedule_cycle(3)
    assert admitted_keys(result) == ["ns/high"]
    assert states(state) == {"ns/low": "active"}  # not a head in that cycle
    state.schedule_cycle(4)
    assert states(state) == {"ns/low": "inadmissible"}  # nothing it may preempt


def test_copy_is_independent() -> None:
    state = make_state(ClusterQueue("cq", (group(("default", 4, None)),)))
    state.submit(wl("a", "cq", 2))
    twin = state.copy()
    twin.schedule_cycle(0)
    assert sorted(twin.admitted()) == ["ns/a"]
    assert state.admitted() == {}
    assert state.usage("cq") == {}
    assert twin.usage("cq") == {("default", "cpu"): 2 * CPU}


def test_quota_raise_requeues_and_admits() -> None:
    state = make_state(ClusterQueue("cq", (group(("default", 2, None)),)))
    state.submit(wl("big", "cq", 3))
    state.schedule_cycle(0)
    assert states(state) == {"ns/big": "inadmissible"}
    state.set_cluster_queue(ClusterQueue("cq", (group(("default", 4, None)),)))
    assert admitted_keys(state.schedule_cycle(1)) == ["ns/big"]


def test_explain_reports_quota_usage_and_borrowable() -> None:
    cqs = (
        ClusterQueue("a", (group(("default", 2, 1)),), cohort="co"),
        ClusterQueue("b", (group(("default", 3, None)),), cohort="co"),
    )
    state = make_state(*cqs)
    state.submit(wl("ok", "a", 2))
    state.schedule_cycle(0)
    state.submit(wl("more", "a", 2, t=1))
    state.schedule_cycle(1)
    why = state.explain("ns/more")
    assert why.code == reasons.WAITING_FOR_QUOTA or why.code == reasons.EXCEEDS_MAX_QUOTA
    (detail,) = why.quota
    assert (detail.usage, detail.nominal, detail.available, detail.borrowable) == (
        2 * CPU,
        2 * CPU,
        1 * CPU,
        1 * CPU,
    )
    assert "insufficient" in why.message


def test_inactive_cluster_queue_until_its_flavor_exists() -> None:
    cq = ClusterQueue("cq", (group(("gpu-a100", 4, None)),))
    state = make_state(cq, flavors=())
    state.submit(wl("w", "cq", 1))
    assert state.schedule_cycle(0).admitted == []
    assert state.explain("ns/w").code == reasons.INACTIVE_CLUSTER_QUEUE
    state.add_resource_flavor(ResourceFlavor("gpu-a100"))
    assert admitted_keys(state.schedule_cycle(1)) == ["ns/w"]


def test_local_queue_of_a_missing_cluster_queue_holds_workloads_until_it_appears() -> None:
    state = AdmissionState(
        resource_flavors=[ResourceFlavor("default")],
        local_queues=[LocalQueue("ns", "lq-cq", "cq")],
    )
    assert state.submit(wl("w", "cq", 1)) == "unqueued"
    assert state.pending_workloads() == []
    state.set_cluster_queue(ClusterQueue("cq", (group(("default", 4, None)),)))
    assert admitted_keys(state.schedule_cycle(0)) == ["ns/w"]


def test_placement_hook_refuses_a_flavor() -> None:
    def placement(flavor: ResourceFlavor, pod_set: PodSet) -> str | None:
        return "no node of flavor spot is big enough" if flavor.name == "spot" else None

    cq = ClusterQueue("cq", (group(("spot", 4, None), ("on-demand", 4, None)),))
    state = make_state(cq, flavors=("spot", "on-demand"), placement=placement)
    state.submit(wl("w", "cq", 1))
    (admitted,) = state.schedule_cycle(0).admitted
    assert admitted.flavors == {"main": {"cpu": "on-demand"}}


def test_flavor_scan_resumes_where_the_previous_cycle_stopped() -> None:
    # a: borrows on flavor one (MayStopSearch) but b, processed first without borrowing,
    # takes the cohort capacity; a is skipped and keeps its scan position, so the next cycle
    # starts at flavor two even though one has room again
    fungibility = FlavorFungibility(when_can_borrow="MayStopSearch")
    cqs = (
        ClusterQueue(
            "a",
            (group(("one", 0, None), ("two", 2, None)),),
            cohort="co",
            flavor_fungibility=fungibility,
        ),
        ClusterQueue("b", (group(("one", 2, None), ("two", 0, None)),), cohort="co"),
    )
    state = make_state(*cqs, flavors=("one", "two"))
    state.submit(wl("a1", "a", 2))
    state.submit(wl("b1", "b", 2))
    first = state.schedule_cycle(0)
    assert admitted_keys(first) == ["ns/b1"]
    assert first.left_pending[0].message == reasons.NO_LONGER_FITS
    state.finish("ns/b1")
    (second,) = state.schedule_cycle(1).admitted
    assert second.flavors == {"main": {"cpu": "two"}}


def test_a_copy_evolves_exactly_like_the_original() -> None:
    cqs = [
        ClusterQueue(
            f"cq{i}",
            (group(("a", 8, None), ("b", 4, None)),),
            cohort=f"co{i % 2}",
            preemption=PreemptionConfig("LowerPriority", "Any"),
        )
        for i in range(4)
    ]
    state = make_state(*cqs, flavors=("a", "b"))
    for j in range(40):
        state.submit(wl(f"w{j}", f"cq{j % 4}", 1 + j % 5, priority=j % 3, t=j))

    def advance(s: AdmissionState, start: int, cycles: int) -> list:
        trace = []
        for t in range(start, start + cycles):
            result = s.schedule_cycle(t)
            for p in result.preempted:
                s.complete_eviction(p.key)
            if t % 3 == 0 and s.admitted():
                s.finish(sorted(s.admitted())[0])
            trace.append((admitted_keys(result), sorted(p.key for p in result.preempted)))
        return trace

    advance(state, 0, 5)
    twin = state.copy()
    assert advance(state, 5, 20) == advance(twin, 5, 20)
    assert states(state) == states(twin)


def test_without_equivalence_hashing_only_the_head_is_parked() -> None:
    state = make_state(
        ClusterQueue("cq", (group(("default", 2, None)),)),
        features=FeatureGates(scheduling_equivalence_hashing=False),
    )
    for i in range(3):
        state.submit(wl(f"nofit-{i}", "cq", 10, t=i))
    state.schedule_cycle(0)
    assert states(state) == {
        "ns/nofit-0": "inadmissible",
        "ns/nofit-1": "active",
        "ns/nofit-2": "active",
    }


def test_without_scan_progress_the_next_cycle_starts_at_the_first_flavor() -> None:
    fungibility = FlavorFungibility(when_can_borrow="MayStopSearch")
    cqs = (
        ClusterQueue(
            "a",
            (group(("one", 0, None), ("two", 2, None)),),
            cohort="co",
            flavor_fungibility=fungibility,
        ),
        ClusterQueue("b", (group(("one", 2, None), ("two", 0, None)),), cohort="co"),
    )
    state = make_state(
        *cqs,
        flavors=("one", "two"),
        features=FeatureGates(flavor_fungibility_preserve_scan_progress=False),
    )
    state.submit(wl("a1", "a", 2))
    state.submit(wl("b1", "b", 2))
    state.schedule_cycle(0)
    state.finish("ns/b1")
    (second,) = state.schedule_cycle(1).admitted
    assert second.flavors == {"main": {"cpu": "one"}}


def test_bad_events_are_rejected() -> None:
    state = make_state(ClusterQueue("cq", (group(("default", 2, None)),)))
    with pytest.raises(ValueError, match="LocalQueue"):
        state.submit(Workload("w", (PodSet("main", 1, {"cpu": 1}),), queue_name="nope"))
    state.submit(wl("w", "cq", 1))
    with pytest.raises(ValueError, match="already exists"):
        state.submit(wl("w", "cq", 1))
    with pytest.raises(KeyError):
        state.finish("ns/unknown")
    with pytest.raises(KeyError):
        state.complete_eviction("ns/w")  # pending, not admitted
