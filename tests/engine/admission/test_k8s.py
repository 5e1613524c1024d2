"""Reading Kueue objects from Kubernetes JSON, and rejecting bad input with a clear FieldError."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gpupact.engine.admission.k8s import (
    load_state,
    parse_cluster_queue,
    parse_cohort,
    parse_resource_flavor,
    parse_workload,
)
from gpupact.errors import FieldError

V2 = "kueue.x-k8s.io/v1beta2"
V1 = "kueue.x-k8s.io/v1beta1"


def flavor(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": V2, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": spec}


def cluster_queue(
    name: str,
    cohort: str | None = None,
    *,
    borrowing=None,
    nominal="4",
    api=V2,
    flavor_name="default",
    **spec: Any,
) -> dict[str, Any]:
    quota: dict[str, Any] = {"name": "cpu", "nominalQuota": nominal}
    if borrowing is not None:
        quota["borrowingLimit"] = borrowing
    body: dict[str, Any] = {
        "resourceGroups": [
            {
                "coveredResources": ["cpu"],
                "flavors": [{"name": flavor_name, "resources": [quota]}],
            }
        ],
        **spec,
    }
    if cohort:
        body["cohort" if api == V1 else "cohortName"] = cohort
    return {"apiVersion": api, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": body}


def local_queue(name: str, namespace: str, cq: str) -> dict[str, Any]:
    return {
        "apiVersion": V2,
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterQueue": cq},
    }


def workload(name: str, queue: str, cpu: str = "1", count: int = 1, **extra: Any) -> dict:
    obj = {
        "apiVersion": V2,
        "kind": "Workload",
        "metadata": {
            "name": name,
            "namespace": "team",
            "uid": f"uid-{name}",
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": {
            "queueName": queue,
            "podSets": [
                {
                    "name": "main",
                    "count": count,
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "c",
                                    "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}},
                                }
                            ]
                        }
                    },
                }
            ],
        },
    }
    obj.update(extra)
    return obj


def test_cluster_queue_v1beta2_with_api_defaults() -> None:
    cq = parse_cluster_queue(cluster_queue("cq", "co", borrowing="2"))
    assert cq.cohort == "co"
    assert cq.queueing_strategy == "BestEffortFIFO"
    assert cq.preemption.within_cluster_queue == "Never"
    assert cq.preemption.reclaim_within_cohort == "Never"
    assert cq.flavor_fungibility.when_can_borrow == "MayStopSearch"
    assert cq.flavor_fungibility.when_can_preempt == "TryNextFlavor"
    quota = cq.resource_groups[0].flavors[0].resources["cpu"]
    assert (quota.nominal, quota.borrowing_limit, quota.lending_limit) == (4000, 2000, None)


def test_cluster_queue_v1beta1_spellings() -> None:
    cq = parse_cluster_queue(
        cluster_queue(
            "cq",
            "co",
            api=V1,
            flavorFungibility={"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"},
            stopPolicy="Hold",
        )
    )
    assert cq.cohort == "co"
    assert cq.flavor_fungibility.when_can_borrow == "MayStopSearch"
    assert cq.flavor_fungibility.when_can_preempt == "MayStopSearch"
    assert not cq.active


def test_cohort_and_flavor() -> None:
    co = parse_cohort(
        {
            "apiVersion": V2,
            "kind": "Cohort",
            "metadata": {"name": "child"},
            "spec": {"parentName": "root", "fairSharing": {"weight": "500m"}},
        }
    )
    assert (co.parent, co.fair_weight) == ("root", 0.5)
    rf = parse_resource_flavor(
        flavor(
            "spot",
            nodeLabels={"pool": "spot"},
            nodeTaints=[{"key": "spot", "value": "true", "effect": "NoSchedule"}],
        )
    )
    assert rf.node_labels == {"pool": "spot"} and rf.node_taints[0].key == "spot"


def test_workload_pod_set_requests_are_per_pod() -> None:
    parsed = parse_workload(workload("w", "lq", cpu="500m", count=4))
    (ps,) = parsed.workload.pod_sets
    assert ps.count == 4
    assert ps.requests["cpu"] == 500 and ps.requests["memory"] == 2**30
    assert parsed.workload.key == "team/w" and parsed.admission is None


def test_load_state_admits_and_restores() -> None:
    admitted = workload(
        "old",
        "lq",
        cpu="3",
        status={
            "conditions": [
                {
                    "type": "QuotaReserved",
                    "status": "True",
                    "lastTransitionTime": "2026-01-01T00:00:01Z",
                }
            ],
            "admission": {
                "clusterQueue": "cq",
                "podSetAssignments": [
                    {
                        "name": "main",
                        "flavors": {"cpu": "default"},
                        "resourceUsage": {"cpu": "3"},
                        "count": 1,
                    }
                ],
            },
        },
    )
    state = load_state(
        [
            flavor("default"),
            cluster_queue("cq"),
            local_queue("lq", "team", "cq"),
            admitted,
            workload("new", "lq", cpu="2"),
            {"kind": "Pod", "metadata": {"name": "ignored"}},
        ]
    )
    assert state.usage("cq") == {("default", "cpu"): 3000}
    result = state.schedule_cycle(0)
    assert result.admitted == []
    assert result.left_pending[0].key == "team/new"


# --- bad input -----------------------------------------------------------------------------------


def test_quota_referencing_an_unknown_flavor_names_object_and_field() -> None:
    with pytest.raises(FieldError) as err:
        load_state([flavor("default"), cluster_queue("cq", flavor_name="gpu-h100")])
    assert err.value.path == ("spec", "resourceGroups", 0, "flavors", 0, "name")
    assert "ClusterQueue 'cq'" in str(err.value) and "gpu-h100" in str(err.value)


def test_borrowing_limit_without_cohort() -> None:
    with pytest.raises(FieldError) as err:
        parse_cluster_queue(cluster_queue("cq", borrowing="2"))
    assert err.value.path[-1] == "borrowingLimit"
    assert "borrowingLimit must be nil when cohort is empty" in str(err.value)


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (
            lambda o: o["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0].update(
                nominalQuota="-1"
            ),
            "nominalQuota",
        ),
        (
            lambda o: o["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0].update(
                nominalQuota="lots"
            ),
            "nominalQuota",
        ),
        (
            lambda o: o["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0].update(
                lendingLimit="5"
            ),
            "lendingLimit",
        ),
        (
            lambda o: o["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0].update(
                name="memory"
            ),
            "name",
        ),
        (lambda o: o["spec"].update(queueingStrategy="LIFO"), "queueingStrategy"),
        (
            lambda o: o["spec"].update(preemption={"withinClusterQueue": "Any"}),
            "withinClusterQueue",
        ),
        (
            lambda o: o["spec"].update(
                preemption={
                    "reclaimWithinCohort": "Never",
                    "borrowWithinCohort": {"policy": "LowerPriority"},
                }
            ),
            "borrowWithinCohort",
        ),
        (
            lambda o: o["spec"].update(flavorFungibility={"preference": "PreemptionOverBorrowing"}),
            "preference",
        ),
        (lambda o: o.update(kind="Cohort"), "kind"),
        (lambda o: o.update(apiVersion="kueue.x-k8s.io/v1alpha1"), "apiVersion"),
        (lambda o: o["metadata"].pop("name"), "name"),
    ],
)
def test_bad_cluster_queue_fields(mutate, field) -> None:
    obj = cluster_queue("cq", "co")
    mutate(obj)
    with pytest.raises(FieldError) as err:
        parse_cluster_queue(obj)
    assert err.value.path[-1] == field, err.value


def test_bad_workload_fields() -> None:
    obj = workload("w", "lq")
    obj["spec"]["podSets"][0]["minCount"] = 5
    with pytest.raises(FieldError) as err:
        parse_workload(obj)
    assert err.value.path == ("spec", "podSets", 0, "minCount")
    assert "Workload 'w'" in str(err.value)
    obj = workload("w", "lq", cpu="-2")
    with pytest.raises(FieldError):
        parse_workload(obj)


def test_nothing_is_applied_when_one_object_is_bad() -> None:
    objects = [
        flavor("default"),
        cluster_queue("cq"),
        local_queue("lq", "team", "cq"),
        workload("w", "missing-lq"),
    ]
    snapshot = copy.deepcopy(objects)
    with pytest.raises(FieldError) as err:
        load_state(objects)
    assert err.value.path == ("spec", "queueName")
    assert objects == snapshot  # input untouched, and no state was returned


@pytest.mark.parametrize(
    ("stamp", "millis"),
    [
        ("2026-01-01T00:00:00Z", 1_767_225_600_000),
        ("2026-01-01T09:00:00.001+09:00", 1_767_225_600_001),
        ("2023-11-14T22:13:20.123456789Z", 1_700_000_000_123),
    ],
)
def test_creation_time_is_exact_milliseconds(stamp: str, millis: int) -> None:
    obj = workload("w", "lq")
    obj["metadata"]["creationTimestamp"] = stamp
    assert parse_workload(obj).workload.creation_time == millis


def test_a_creation_time_without_zone_is_refused_not_read_as_local_time() -> None:
    # a zone-less time used to be read in the machine's local zone: orders differed by TZ
    obj = workload("w", "lq")
    obj["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00"
    with pytest.raises(FieldError) as err:
        parse_workload(obj)
    assert err.value.path == ("metadata", "creationTimestamp")
    assert "RFC 3339" in str(err.value)
