"""Build an AdmissionState from a kueue.json scenario and render results in the vector's shape.

Units: the vectors normalise cpu to cores and memory to GiB; both become exact integers in the
engine's base units (millicores, bytes) through gpupact.kube.quantity.resource_amount.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import pytest

from gpupact.engine.admission import (
    Admission,
    AdmissionState,
    BorrowWithinCohort,
    ClusterQueue,
    Cohort,
    FairSharingConfig,
    FeatureGates,
    FlavorFungibility,
    FlavorQuotas,
    LocalQueue,
    PodSet,
    PodSetAdmission,
    PreemptionConfig,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
    Workload,
)
from gpupact.engine.admission.model import UNSET
from gpupact.kube.quantity import parse_quantity, resource_amount
from gpupact.kube.selectors import parse_node_selector
from gpupact.kube.taints import Taint, Toleration

# ms; the scenario's "now". Large, so that creation times given relative to it
# (creation_offset_s, possibly hours back) stay after the zero time of workloads the test
# gave no timestamp (creation_order ranks only: 0, 1, ...).
NOW = 1_000_000_000_000

# feature gates the engine models, with the snapshot's defaults
_GATES = {
    "PartialAdmission": "partial_admission",
    "SchedulingEquivalenceHashing": "scheduling_equivalence_hashing",
    "FlavorFungibilityPreserveScanProgress": "flavor_fungibility_preserve_scan_progress",
    "RecomputeAssignmentUponPreemptionTargetsOverlap": (
        "recompute_assignment_upon_preemption_targets_overlap"
    ),
}
# gates fixed in the engine: scenarios may only restate their default
_FIXED_GATES = {
    "FlavorFungibility": True,
    "PrioritySortingWithinCohort": True,
    "FairSharingPreemptWithinNominal": True,
    "FairSharingPrioritizeNonBorrowing": True,
    "PrioritizePreemptorWorkloads": False,
    "PriorityBoost": False,
    "ConcurrentAdmission": False,
    "UnadmittedWorkloadsObservability": True,
    # topology-aware scheduling is not modelled: only its "off" setting matches
    "TopologyAwareScheduling": False,
    "TASRecomputeAssignmentWithinSchedulingCycle": False,
}


def amount(resource: str, value: Any) -> int:
    text = f"{value}Gi" if resource == "memory" else str(value)
    return resource_amount(resource, text)


def split_name(name: str) -> tuple[str, str]:
    if "/" in name:
        namespace, _, short = name.partition("/")
        return namespace, short
    return "default", name


def vector_name(key: str, plain: bool) -> str:
    return key.partition("/")[2] if plain else key


def _policy(value: str | None) -> str:
    if value is None or value == "Never(unset)":
        return UNSET
    return value


def _groups(flavors: list[dict[str, Any]]) -> tuple[ResourceGroup, ...]:
    by_group: dict[int, list[dict[str, Any]]] = {}
    for flavor in flavors:
        by_group.setdefault(flavor.get("resource_group", 0), []).append(flavor)
    groups = []
    for index in sorted(by_group):
        covered: list[str] = []
        quotas = []
        for flavor in by_group[index]:
            resources = {}
            for resource, q in flavor["resources"].items():
                if resource not in covered:
                    covered.append(resource)
                resources[resource] = ResourceQuota(
                    amount(resource, q["nominal"]),
                    amount(resource, q["borrowingLimit"]) if "borrowingLimit" in q else None,
                    amount(resource, q["lendingLimit"]) if "lendingLimit" in q else None,
                )
            quotas.append(FlavorQuotas(flavor["flavor"], resources))
        groups.append(ResourceGroup(tuple(covered), tuple(quotas)))
    return tuple(groups)


def _weight(obj: dict[str, Any]) -> Fraction:
    weight = (obj.get("fairSharing") or {}).get("weight")
    return Fraction(1) if weight is None else parse_quantity(str(weight)).amount


_STRATEGIES = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")


def fair_sharing(config: dict[str, Any] | None) -> FairSharingConfig | None:
    """config.fairSharing: a dict (preemptionStrategies) or the vector's description text,
    which names the strategies in order."""
    if not config or "fairSharing" not in config:
        return None
    value = config["fairSharing"]
    if isinstance(value, dict):
        strategies = value.get("preemptionStrategies") or list(_STRATEGIES)
    else:
        found = sorted(
            (m.start(), name) for name in _STRATEGIES for m in re.finditer(name, str(value))
        )
        strategies = [name for _, name in found] or list(_STRATEGIES)
    return FairSharingConfig(tuple(strategies))


# the fields this runner understands, per object; anything else is not modelled
_KNOWN = {
    "scenario": {
        "id",
        "name",
        "source_file",
        "source_test_name",
        "test_kind",
        "cluster_queues",
        "cohorts",
        "resource_flavors",
        "admitted_workloads",
        "pending_workloads",
        "expected",
        "notes",
        "feature_gates",
        "config",
        "cluster_queue_usage",
    },
    "cluster_queue": {
        "name",
        "cohort",
        "queueingStrategy",
        "flavors",
        "preemption",
        "flavorFungibility",
        "fairSharing",
    },
    "cohort": {"name", "parent", "flavors", "fairSharing"},
    "resource_flavor": {"name", "nodeLabels", "nodeTaints", "tolerations"},
    "workload": {
        "name",
        "local_queue",
        "queue",
        "priority",
        "creation_order",
        "pod_sets",
        "uid",
        "given_flavor_assignment",
        "flavor_assignment",
        "quota_reserved_at_offset_s",
        "creation_offset_s",
    },
    "pod_set": {
        "name",
        "count",
        "requests",
        "min_count",
        "nodeSelector",
        "requiredNodeAffinityTerms",
        "tolerations",
    },
    "config": {"fairSharing"},
}


NOTE_KEYS = frozenset({"note", "notes"})


def without_notes(value: Any) -> Any:
    """The vector without its `note` / `notes` free text (allowed anywhere, never an
    expectation): a copy with every such key dropped."""
    if isinstance(value, dict):
        return {k: without_notes(v) for k, v in value.items() if k not in NOTE_KEYS}
    if isinstance(value, list):
        return [without_notes(v) for v in value]
    return value


def check_expected(case: dict[str, Any], known: set[str]) -> None:
    """Every expectation of the vector is asserted; one this runner cannot check is a skip."""
    unknown = set(case["expected"]) - known
    if unknown:
        pytest.skip(f"not modelled: expected {sorted(unknown)}")


def check_modelled(case: dict[str, Any]) -> None:
    def check(kind: str, obj: dict[str, Any]) -> None:
        unknown = set(obj) - _KNOWN[kind]
        if unknown:
            pytest.skip(f"not modelled: {kind} field(s) {sorted(unknown)}")

    check("scenario", case)
    check("config", case.get("config") or {})
    for obj in case["cluster_queues"]:
        check("cluster_queue", obj)
    for obj in case.get("cohorts", []):
        check("cohort", obj)
    for obj in case["resource_flavors"]:
        check("resource_flavor", obj)
    for obj in case["pending_workloads"] + case["admitted_workloads"]:
        check("workload", obj)
        for ps in obj["pod_sets"]:
            check("pod_set", ps)


def cluster_queue(obj: dict[str, Any]) -> ClusterQueue:
    preemption = obj.get("preemption") or {}
    bwc = preemption.get("borrowWithinCohort")
    fungibility = obj.get("flavorFungibility") or {}
    return ClusterQueue(
        name=obj["name"],
        resource_groups=_groups(obj.get("flavors", [])),
        cohort=obj.get("cohort") or None,
        queueing_strategy=obj.get("queueingStrategy", "BestEffortFIFO"),
        preemption=PreemptionConfig(
            within_cluster_queue=_policy(preemption.get("withinClusterQueue")),
            reclaim_within_cohort=_policy(preemption.get("reclaimWithinCohort")),
            borrow_within_cohort=(
                BorrowWithinCohort(bwc.get("policy", "Never"), bwc.get("maxPriorityThreshold"))
                if bwc
                else None
            ),
        ),
        flavor_fungibility=FlavorFungibility(
            fungibility.get("whenCanBorrow", "MayStopSearch"),
            fungibility.get("whenCanPreempt", "TryNextFlavor"),
            fungibility.get("preference"),
        ),
        fair_weight=_weight(obj),
    )


def resource_flavor(obj: dict[str, Any]) -> ResourceFlavor:
    return ResourceFlavor(
        obj["name"],
        dict(obj.get("nodeLabels") or {}),
        tuple(
            Taint(t["key"], t.get("value", ""), t.get("effect", ""))
            for t in obj.get("nodeTaints") or ()
        ),
        tuple(_toleration(t) for t in obj.get("tolerations") or ()),
    )


def _toleration(obj: dict[str, Any]) -> Toleration:
    return Toleration(
        obj.get("key", ""), obj.get("operator", ""), obj.get("value", ""), obj.get("effect", "")
    )


def pod_set(obj: dict[str, Any]) -> PodSet:
    terms = obj.get("requiredNodeAffinityTerms")
    return PodSet(
        name=obj["name"],
        count=obj["count"],
        requests={r: amount(r, v) for r, v in obj.get("requests", {}).items()},
        min_count=obj.get("min_count"),
        node_selector=dict(obj.get("nodeSelector") or {}),
        required_affinity=parse_node_selector({"nodeSelectorTerms": terms}) if terms else None,
        tolerations=tuple(_toleration(t) for t in obj.get("tolerations") or ()),
    )


def _local_queue_name(obj: dict[str, Any]) -> str:
    return obj.get("local_queue") or f"{obj['queue']}-lq"


def creation_time(obj: dict[str, Any]) -> int:
    """The workload's creation timestamp: NOW + creation_offset_s where the test set one;
    otherwise the zero time, kept in creation_order (the rank among pending workloads)."""
    if "creation_offset_s" in obj:
        return NOW + round(Fraction(str(obj["creation_offset_s"])) * 1000)
    return obj.get("creation_order", 0)


def workload(obj: dict[str, Any]) -> Workload:
    namespace, name = split_name(obj["name"])
    return Workload(
        name=name,
        namespace=namespace,
        queue_name=_local_queue_name(obj),
        pod_sets=tuple(pod_set(ps) for ps in obj["pod_sets"]),
        priority=obj.get("priority", 0),
        creation_time=creation_time(obj),
        uid=obj.get("uid", ""),
    )


def _admission(obj: dict[str, Any], cq: ClusterQueue) -> Admission:
    assignment = obj["flavor_assignment"]
    pod_sets = []
    for ps in obj["pod_sets"]:
        flavors = (
            {r: assignment for r in ps["requests"]}
            if isinstance(assignment, str)
            else dict(assignment[ps["name"]])
        )
        usage = {r: amount(r, v) * ps["count"] for r, v in ps["requests"].items()}
        covers_pods = any("pods" in g.covered_resources for g in cq.resource_groups)
        if covers_pods and "pods" not in usage:
            usage["pods"] = ps["count"]
            flavors["pods"] = next(iter(flavors.values()))
        pod_sets.append(PodSetAdmission(ps["name"], flavors, ps["count"], usage))
    return Admission(obj["queue"], tuple(pod_sets))


@dataclass
class Scenario:
    case: dict[str, Any]
    state: AdmissionState
    plain_names: bool
    specs: dict[str, ClusterQueue] = field(default_factory=dict)

    def name(self, key: str) -> str:
        return vector_name(key, self.plain_names)

    def key(self, name: str) -> str:
        namespace, short = split_name(name)
        return f"{namespace}/{short}"


def features(case: dict[str, Any]) -> FeatureGates:
    values = {}
    for gate, enabled in (case.get("feature_gates") or {}).items():
        if gate in _GATES:
            values[_GATES[gate]] = bool(enabled)
        elif _FIXED_GATES.get(gate) != bool(enabled):
            pytest.skip(f"not modelled: feature gate {gate}={enabled}")
    return FeatureGates(**values)


def build(case: dict[str, Any], *, submit: bool = True) -> Scenario:
    check_modelled(case)
    specs = {c["name"]: cluster_queue(c) for c in case["cluster_queues"]}
    local_queues = {}
    for obj in case["pending_workloads"]:
        namespace, _ = split_name(obj["name"])
        lq = LocalQueue(namespace, _local_queue_name(obj), obj["queue"])
        local_queues[lq.key] = lq
    state = AdmissionState(
        resource_flavors=[resource_flavor(f) for f in case["resource_flavors"]],
        cluster_queues=specs.values(),
        cohorts=[
            Cohort(
                c["name"],
                c.get("parent") or None,
                _groups(c.get("flavors", [])),
                _weight(c),
            )
            for c in case.get("cohorts", [])
        ],
        local_queues=local_queues.values(),
        fair_sharing=fair_sharing(case.get("config")),
        features=features(case),
    )
    plain = not any(
        "/" in w["name"] for w in case["pending_workloads"] + case["admitted_workloads"]
    )
    scenario = Scenario(case, state, plain, specs)
    for obj in case["admitted_workloads"]:
        offset = obj.get("quota_reserved_at_offset_s", 0)
        state.restore_admitted(
            workload(obj), _admission(obj, specs[obj["queue"]]), NOW + int(offset * 1000)
        )
    for cq_name, per_flavor in (case.get("cluster_queue_usage") or {}).items():
        # usage charged before Assign: held by a stand-in admitted workload
        pod_sets = []
        for flavor, resources in per_flavor.items():
            usage = {r: amount(r, v) for r, v in resources.items()}
            pod_sets.append(
                PodSetAdmission(f"usage-{flavor}", {r: flavor for r in usage}, 1, usage)
            )
        stand_in = Workload(f"usage-of-{cq_name}", (), namespace="kube-system")
        state.restore_admitted(stand_in, Admission(cq_name, tuple(pod_sets)), NOW)
    if submit:
        for obj in sorted(case["pending_workloads"], key=lambda w: w.get("creation_order", 0)):
            state.submit(workload(obj))
    return scenario


def flavor_assignment(flavors: dict[str, dict[str, str]]) -> Any:
    """The vector's format: one flavor name if all resources use it, else per PodSet."""
    used = {f for per_pod_set in flavors.values() for f in per_pod_set.values()}
    if len(used) == 1:
        return next(iter(used))
    return {ps: dict(per) for ps, per in flavors.items()}


def without_pods(flavors: dict[str, dict[str, str]], requested: dict[str, set[str]]) -> dict:
    """Drop resources the PodSet did not request itself (the implicit "pods" resource)."""
    return {
        ps: {r: f for r, f in per.items() if r in requested.get(ps, set())}
        for ps, per in flavors.items()
    }


def requested_resources(case: dict[str, Any]) -> dict[str, dict[str, set[str]]]:
    out = {}
    for obj in case["pending_workloads"]:
        out[obj["name"]] = {ps["name"]: set(ps.get("requests", {})) for ps in obj["pod_sets"]}
    return out


def expected_state(text: str) -> str:
    return text.split()[0]


def check_pending(scenario: Scenario, expected: list[dict[str, Any]]) -> None:
    got = sorted(
        (scenario.name(p.key), p.cluster_queue, p.state) for p in scenario.state.pending_workloads()
    )
    want = sorted((p["name"], p["cluster_queue"], expected_state(p["state"])) for p in expected)
    assert got == want, f"pending workloads: got {got}, expected {want}"
