"""ClusterQueue namespaceSelector (Kueue's ValidateAdmissibility, pkg/workload/resources.go,
called from the scheduler's nominate) and pod-level resources in Workload requests (Kueue's
totalRequestsFromPodSets uses component-helpers PodRequests, which honours spec.resources)."""

from __future__ import annotations

import copy
from typing import Any

from gpupact.engine.admission import reasons
from gpupact.engine.admission.k8s import load_state, parse_cluster_queue, parse_workload

from .test_k8s import cluster_queue, flavor, local_queue, workload

SELECT_TEAM = {"matchLabels": {"tenant": "team"}}


def namespace(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def in_namespace(obj: dict[str, Any], ns: str) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["metadata"]["namespace"] = ns
    return out


def objects(selector: Any = SELECT_TEAM, strategy: str = "BestEffortFIFO") -> list[dict]:
    """A ClusterQueue of 4 cpu and 64Gi, LocalQueues "lq" in namespaces team and other."""
    spec: dict[str, Any] = {"queueingStrategy": strategy}
    if selector is not None:
        spec["namespaceSelector"] = selector
    cq = cluster_queue("cq", **spec)
    group = cq["spec"]["resourceGroups"][0]
    group["coveredResources"].append("memory")
    group["flavors"][0]["resources"].append({"name": "memory", "nominalQuota": "64Gi"})
    return [
        flavor("default"),
        cq,
        local_queue("lq", "team", "cq"),
        local_queue("lq", "other", "cq"),
    ]


def test_a_namespace_outside_the_selector_is_inadmissible_and_does_not_block():
    wl_other = in_namespace(workload("a", "lq"), "other")
    wl_team = workload("b", "lq")
    wl_team["metadata"]["creationTimestamp"] = "2026-01-01T00:00:01Z"  # after a
    state = load_state(
        [
            *objects(strategy="StrictFIFO"),
            namespace("team", tenant="team"),
            namespace("other", tenant="other"),
            wl_other,
            wl_team,
        ]
    )
    first = state.schedule_cycle(0)
    assert first.admitted == []
    [head] = first.left_pending
    assert (head.key, head.state, head.reason, head.message) == (
        "other/a",
        "inadmissible",
        reasons.MISCONFIGURED,
        "workload namespace doesn't match ClusterQueue selector",
    )
    # even under StrictFIFO a namespace mismatch does not hold the queue
    assert [a.key for a in state.schedule_cycle(1).admitted] == ["team/b"]
    assert state.explain("other/a").code == reasons.MISCONFIGURED


def test_a_missing_selector_admits_no_namespace():
    state = load_state(
        [*objects(selector=None), namespace("team", tenant="team"), workload("a", "lq")]
    )
    result = state.schedule_cycle(0)
    assert result.admitted == [] and result.left_pending[0].reason == reasons.MISCONFIGURED
    assert parse_cluster_queue(cluster_queue("cq")).namespace_selector is None
    # `{}` selects every namespace
    state = load_state([*objects(selector={}), namespace("team"), workload("a", "lq")])
    assert [a.key for a in state.schedule_cycle(0).admitted] == ["team/a"]


def test_without_namespaces_in_the_snapshot_the_selector_is_not_evaluated():
    state = load_state([*objects(selector=None), workload("a", "lq")])
    assert [a.key for a in state.schedule_cycle(0).admitted] == ["team/a"]
    # namespaces given by the caller count like Namespace objects
    state = load_state(
        [*objects(), workload("a", "lq")], namespaces={"team": {"tenant": "somebody-else"}}
    )
    assert state.schedule_cycle(0).admitted == []


def test_a_namespace_that_does_not_exist_holds_a_strict_fifo_queue():
    wl_gone = in_namespace(workload("a", "lq"), "other")  # no Namespace "other"
    wl_team = workload("b", "lq")
    wl_team["metadata"]["creationTimestamp"] = "2026-01-01T00:00:01Z"
    state = load_state(
        [*objects(strategy="StrictFIFO"), namespace("team", tenant="team"), wl_gone, wl_team]
    )
    for now in range(3):
        result = state.schedule_cycle(now)
        assert result.admitted == []
        [head] = result.left_pending
        assert (head.key, head.state) == ("other/a", "active")
    assert head.message == 'workload namespace "other" does not exist: namespaces "other" not found'


def test_relabelling_a_namespace_requeues_its_workloads():
    state = load_state(
        [*objects(), namespace("team", tenant="nobody"), workload("a", "lq")],
    )
    assert state.schedule_cycle(0).admitted == []
    # parked: a cluster event elsewhere does not bring it back while the namespace is excluded
    state.requeue_inadmissible_around("cq")
    assert [p.state for p in state.pending_workloads()] == ["inadmissible"]
    state.set_namespace("team", {"tenant": "team"})
    assert [a.key for a in state.schedule_cycle(1).admitted] == ["team/a"]


def test_copies_keep_their_own_namespaces():
    state = load_state([*objects(), namespace("team", tenant="team"), workload("a", "lq")])
    what_if = state.copy()
    what_if.set_namespace("team", {"tenant": "gone"})
    assert what_if.schedule_cycle(0).admitted == []
    assert [a.key for a in state.schedule_cycle(0).admitted] == ["team/a"]


def test_pod_level_requests_replace_the_containers_sum():
    wl = workload("a", "lq", cpu="1")
    spec = wl["spec"]["podSets"][0]["template"]["spec"]
    spec["containers"].append({"name": "d", "resources": {"requests": {"cpu": "1"}}})
    spec["resources"] = {"requests": {"cpu": "3"}}
    [pod_set] = parse_workload(wl).workload.pod_sets
    # cpu from spec.resources.requests (not 1 + 1); memory, not set at pod level, from the
    # containers
    assert pod_set.requests["cpu"] == 3000
    assert pod_set.requests["memory"] == 2**30
    # and the quota is charged with it: 3 cpus fit the 4-cpu queue, a second such pod does not
    wl2 = copy.deepcopy(wl)
    wl2["metadata"].update(name="b", uid="uid-b", creationTimestamp="2026-01-01T00:00:01Z")
    state = load_state([*objects(selector={}), namespace("team"), wl, wl2])
    assert [a.key for a in state.schedule_cycle(0).admitted] == ["team/a"]
    assert state.usage("cq")[("default", "cpu")] == 3000
    assert state.schedule_cycle(1).admitted == []
