"""Each rule: a contract that breaks it, and one that keeps it."""

from __future__ import annotations

from datetime import datetime

import pytest
from contract_helpers import BASE, DROP, NOW, edit, load

from gpupact.contract import RULES, Severity, check

PREWARM = {"start": "2026-11-10T00:00:00Z", "end": "2026-11-12T00:00:00Z", "minNodes": 1}
BURST_POOL = {
    "name": "gpu-burst",
    "gpu": {"model": "a100-80g"},
    "nodes": {"max": 2},
    "classes": ["burst"],
}

# rule id, edits that break it, further edits that repair it
CASES = [
    pytest.param(
        "preemptible-in-online-pool",
        [("pools.0.classes+", "batch")],
        [("pools.0.classes", ["online-infer"])],
        id="preemptible-in-online-pool",
    ),
    pytest.param(
        "preemptible-in-online-pool",
        [
            ("classes.0.latency", "minutes"),
            ("classes+", {"name": "burst"}),
            ("pools.0.classes+", "burst"),
        ],
        [("classes.0.latency", "seconds")],
        id="preemptible-in-online-pool/non-online-class",
    ),
    pytest.param(
        "pool-unreachable",
        [("pools+", {"name": "gpu-legacy", "gpu": {"model": "v100-32g"}, "nodes": {"max": 1}})],
        [("pools.3.classes", ["batch"])],
        id="pool-unreachable",
    ),
    pytest.param(
        "pool-unreachable",
        [
            ("pools.1.classes+", "fine-tune"),
            ("classes.2.pools", ["gpu-train"]),
            ("classes.1.pools", ["gpu-inference"]),
            ("pools.0.classes+", "batch"),
        ],
        [("classes.1.pools", ["gpu-batch"])],
        id="pool-unreachable/classes-restrict-their-pools",
    ),
    pytest.param(
        "class-without-pool",
        [("classes+", {"name": "burst"})],
        [("pools+", {**BURST_POOL, "preWarm": [PREWARM]})],
        id="class-without-pool",
    ),
    pytest.param(
        "priority-inversion",
        [("classes.1.priority", 100000)],
        [("classes.1.priority", 99999)],
        id="priority-inversion",
    ),
    pytest.param(
        # kube-scheduler: online-infer (100000, PreemptLowerPriority) preempts burst (90000)
        # on any node both may use
        "victim-rule-not-enforceable",
        [("classes+", {"name": "burst"}), ("pools.0.classes+", "burst")],
        [("pools.0.classes", ["online-infer"]), ("pools+", {**BURST_POOL, "preWarm": [PREWARM]})],
        id="victim-rule-not-enforceable",
    ),
    pytest.param(
        "online-without-headroom",
        [("classes.0.headroom", "0%")],
        [("classes.0.headroom", "10%")],
        id="online-without-headroom/class",
    ),
    pytest.param(
        "online-without-headroom",
        [("services.0.headroom", 0)],
        [("services.0.headroom", "15%")],
        id="online-without-headroom/service",
    ),
    pytest.param(
        "pool-headroom-exhausted",
        [("services.0.replicas", {"min": 26, "max": 30})],
        [("services.0.replicas", {"min": 25, "max": 30})],
        id="pool-headroom-exhausted",
    ),
    pytest.param(
        "cold-start-exceeds-queue-wait",
        [("pools.0.nodes.min", 0)],
        [("pools.0.preWarm", [PREWARM])],
        id="cold-start-exceeds-queue-wait",
    ),
    pytest.param(
        "cold-start-exceeds-queue-wait",
        [("pools.0.nodes.min", 0)],
        [("classes.0.maxQueueWait", "10m")],
        id="cold-start-exceeds-queue-wait/longer-promise",
    ),
    pytest.param(
        "burst-pool-without-prewarm",
        [("classes+", {"name": "burst"}), ("pools+", BURST_POOL)],
        [("pools.3.preWarm", [{"schedule": "0 18 28 * *", "duration": "4d", "minNodes": 1}])],
        id="burst-pool-without-prewarm",
    ),
    pytest.param(
        "online-shared-gpu-untested",
        [("pools.0.sharing", "timeslice:2")],
        [("services.0.loadTest", {"report": "https://wiki/lt-42", "sharing": "timeslice:2"})],
        id="online-shared-gpu-untested/timeslice",
    ),
    pytest.param(
        "online-shared-gpu-untested",
        [("pools.0.sharing", "mig:3g.40gb")],
        [("services.0.loadTest", {"report": "lt-43"})],
        id="online-shared-gpu-untested/mig",
    ),
    pytest.param(
        "online-shared-gpu-untested",
        [
            ("pools.0.sharing", "timeslice:4"),
            ("services.0.loadTest", {"report": "lt-44", "sharing": "timeslice:2"}),
        ],
        [("pools.0.sharing", "timeslice:2")],
        id="online-shared-gpu-untested/evidence-for-other-sharing",
    ),
    pytest.param(
        "gpu-model-mismatch",
        [("services.0.gpu", {"model": "h100-80g"})],
        [("services.0.gpu", {"model": "a100-80g"})],
        id="gpu-model-mismatch",
    ),
    pytest.param(
        "nvlink-unavailable",
        [
            ("pools.0.gpu.topology", "nvlink-2"),
            ("services.0.tensorParallel", 4),
            ("services.0.gang", "replica"),
            ("services.0.gpu", {"nvlink": True}),
        ],
        [("pools.0.gpu.topology", "nvlink-8")],
        id="nvlink-unavailable",
    ),
    pytest.param(
        "nvlink-unavailable",
        [("pools.0.gpu.topology", "pcie"), ("services.0.gpu", {"nvlink": True})],
        [("pools.0.gpu.topology", "nvlink")],
        id="nvlink-unavailable/no-nvlink",
    ),
    pytest.param(
        "model-exceeds-gpu-memory",
        [("services.0.model", {"name": "llama-70b", "params": "70B", "quantization": "fp16"})],
        [("services.0.tensorParallel", 2), ("services.0.gpusPerPod", 2)],
        id="model-exceeds-gpu-memory",
    ),
    pytest.param(
        "model-exceeds-gpu-memory",
        [("services.0.model", {"name": "llama-70b", "params": "70B", "quantization": "fp16"})],
        [("services.0.model.quantization", "int8")],
        id="model-exceeds-gpu-memory/quantised",
    ),
    pytest.param(
        "model-exceeds-gpu-memory",
        [("pools.0.sharing", "mig:1g.10gb"), ("services.0.loadTest", {"report": "lt"})],
        [("services.0.model.quantization", "int4")],  # 3.5 GB of weights fit a 10 GB slice
        id="model-exceeds-gpu-memory/mig-slice",
    ),
    pytest.param(
        "preemptible-class-for-protected-service",
        [("services.0.class", "batch"), ("services.0.preemptible", False)],
        [("services.0.preemptible", DROP)],
        id="preemptible-class-for-protected-service",
    ),
    pytest.param(
        "onboarding-incomplete",
        [("services.0.concurrency", DROP), ("services.0.priority", DROP)],
        [("services.0.concurrency", 5), ("services.0.priority", "low")],
        id="onboarding-incomplete",
    ),
    pytest.param(
        "hpa-metric-blind-to-queue",
        [("services.0.ttftSlo", "2s")],
        [("services.0.replicas.max", 2)],
        id="hpa-metric-blind-to-queue",
    ),
    pytest.param(
        "multi-pod-replica-without-gang",
        [("services.0.tensorParallel", 2)],
        [("services.0.gang", "replica")],
        id="multi-pod-replica-without-gang",
    ),
    pytest.param(
        "multi-pod-replica-without-gang",
        [("services.0.tensorParallel", 2)],
        [("services.0.gpusPerPod", 2)],
        id="multi-pod-replica-without-gang/one-pod-replica",
    ),
    pytest.param(
        "pod-exceeds-node",
        [("jobs.0.gpusPerPod", 16)],
        [("jobs.0.gpusPerPod", 8)],
        id="pod-exceeds-node",
    ),
    pytest.param(
        "gang-exceeds-pool",
        [("jobs.1.pods", 3)],
        [("pools.2.nodes.max", 3)],
        id="gang-exceeds-pool/job",
    ),
    pytest.param(
        "gang-exceeds-pool",
        [
            ("services.0.tensorParallel", 8),
            ("services.0.gang", "service"),
            ("services.0.replicas", {"min": 5, "max": 5}),
            ("classes.0.headroom", "0%"),
        ],
        [("services.0.replicas", {"min": 4, "max": 5})],
        id="gang-exceeds-pool/service",
    ),
    pytest.param(
        "gang-exceeds-pool",
        [
            ("pools.0.nodes.max", 0),
            ("pools.0.nodes.min", 0),
            ("classes.0.maxQueueWait", "1h"),
            ("services.0.tensorParallel", 2),
            ("services.0.gang", "replica"),
        ],
        [("pools.0.nodes.max", 1)],
        id="gang-exceeds-pool/replica",
    ),
    pytest.param(
        "gpu-requests-not-limits",
        [("jobs.0.resources", {"requests": {"nvidia.com/gpu": 1}})],
        [("jobs.0.resources.limits", {"nvidia.com/gpu": "1"})],
        id="gpu-requests-not-limits/no-limit",
    ),
    pytest.param(
        "gpu-requests-not-limits",
        [
            (
                "services.0.resources",
                {
                    "requests": {"nvidia.com/gpu": 2, "cpu": "4"},
                    "limits": {"nvidia.com/gpu": 1, "cpu": "8"},
                },
            )
        ],
        [("services.0.resources.requests", {"nvidia.com/gpu": "1", "cpu": "4"})],
        id="gpu-requests-not-limits/differs",
    ),
    pytest.param(
        "quota-exceeds-capacity",
        [("tenants.0.quotas.0.gpus", 33)],
        [("tenants.0.quotas.0.gpus", 32)],
        id="quota-exceeds-capacity",
    ),
    pytest.param(
        "quota-exceeds-capacity",
        [
            ("tenants.0.quotas.0.gpus", 30),
            (
                "tenants.0.raises",
                [
                    {
                        "pool": "gpu-inference",
                        "gpus": 4,
                        "reason": "peak",
                        "expires": "2026-12-01T00:00:00Z",
                    }
                ],
            ),
        ],
        [("tenants.0.raises.0.expires", "2026-11-01T00:00:00Z")],
        id="quota-exceeds-capacity/active-raise",
    ),
    pytest.param(
        "job-exceeds-quota",
        [("jobs.0.pods", 25)],
        [("jobs.0.pods", 24)],  # 16 own + 8 lent by the cohort
        id="job-exceeds-quota",
    ),
    pytest.param(
        "job-exceeds-quota",
        [("tenants.0.quotas.1.borrowingLimit", 4), ("jobs.0.pods", 24)],
        [("tenants.0.quotas.1.borrowingLimit", 8)],
        id="job-exceeds-quota/borrowing-limit",
    ),
    pytest.param(
        "job-exceeds-quota",
        [("tenants.1.quotas.0.lendingLimit", 2), ("jobs.0.pods", 24)],
        [
            (
                "tenants.0.raises",
                [{"pool": "gpu-batch", "gpus": 6, "reason": "rebuild", "expires": "2026-12-01"}],
            )
        ],
        id="job-exceeds-quota/lending-limit-and-raise",
    ),
    pytest.param(
        "service-replicas-exceed-pool",
        [("services.0.replicas", {"min": 2, "max": 40})],
        [("services.0.replicas.max", 4)],
        id="service-replicas-exceed-pool",
    ),
    pytest.param(
        "service-replicas-exceed-quota",
        [("services.0.replicas.max", 12)],
        [("tenants.0.quotas.0.gpus", 12)],
        id="service-replicas-exceed-quota",
    ),
    pytest.param(
        "missing-owner",
        [("metadata.owner", DROP)],
        [("metadata.owner", "platform@example.com")],
        id="missing-owner/contract",
    ),
    pytest.param(
        "missing-owner",
        [("tenants.0.owner", DROP)],
        [
            ("services.0.owner", "svc@example.com"),
            ("jobs.0.owner", "a"),
            ("jobs.1.owner", "b"),
            ("tenants.0.owner", "team@example.com"),
        ],
        id="missing-owner",
    ),
    pytest.param(
        "missing-cost-center",
        [("tenants.1.costCenter", DROP)],
        [("tenants.1.costCenter", "CC-9")],
        id="missing-cost-center",
    ),
    pytest.param(
        "raise-without-expiry",
        [("tenants.0.raises", [{"pool": "gpu-batch", "gpus": 2, "reason": "peak"}])],
        [("tenants.0.raises.0.expires", "2026-12-01T00:00:00Z")],
        id="raise-without-expiry",
    ),
    pytest.param(
        "raise-expired",
        [
            (
                "tenants.0.raises",
                [
                    {
                        "pool": "gpu-batch",
                        "gpus": 2,
                        "reason": "peak",
                        "expires": "2026-11-11T00:00:00Z",
                    }
                ],
            )
        ],  # expiry == now
        [("tenants.0.raises.0.expires", "2026-11-11T00:00:01Z")],
        id="raise-expired",
    ),
    pytest.param(
        "service-expired",
        [("services.0.expires", "2026-11-01")],
        [("services.0.expires", "2026-12-01")],
        id="service-expired",
    ),
]


def rule_ids(data) -> list[str]:
    return [f.rule for f in check(load(data).contract, NOW)]


def test_base_contract_is_clean():
    assert check(load(BASE).contract, NOW) == []


@pytest.mark.parametrize(("rule_id", "breaks", "repairs"), CASES)
def test_rule_fails_then_passes(rule_id, breaks, repairs):
    broken = edit(BASE, breaks)
    assert rule_id in rule_ids(broken), f"{rule_id} did not fire"
    repaired = edit(broken, repairs)
    assert rule_id not in rule_ids(repaired), f"{rule_id} still fires after the repair"


def test_every_rule_has_a_case():
    covered = {p.values[0] for p in CASES}
    assert covered == set(RULES)


def test_findings_carry_path_subject_message_and_fix():
    data = edit(BASE, [("pools.0.sharing", "timeslice:2")])
    loaded = load(data)
    [finding] = check(loaded.contract, NOW)
    assert finding.rule == "online-shared-gpu-untested"
    assert finding.severity is Severity.error
    assert finding.path == ("services", 0)
    assert finding.subject == "service/svc"
    assert "timeslice:2" in finding.message and "loadTest" in finding.fix
    assert loaded.locate(finding.path) is not None


def test_mig_sharing_is_a_warning_not_an_error():
    data = edit(BASE, [("pools.0.sharing", "mig:3g.40gb")])
    [finding] = check(load(data).contract, NOW)
    assert finding.severity is Severity.warning


def test_raises_count_only_while_active():
    data = edit(
        BASE,
        [
            ("tenants.0.quotas.0.gpus", 30),
            (
                "tenants.0.raises",
                [
                    {
                        "pool": "gpu-inference",
                        "gpus": 4,
                        "reason": "p",
                        "expires": "2026-12-01T00:00:00Z",
                    }
                ],
            ),
        ],
    )
    contract = load(data).contract
    assert "quota-exceeds-capacity" in [f.rule for f in check(contract, NOW)]
    later = datetime.fromisoformat("2026-12-02T00:00:00+00:00")
    assert [f.rule for f in check(contract, later)] == ["raise-expired"]


def test_owner_is_reported_per_subject():
    data = edit(BASE, [("tenants.0.owner", DROP), ("services.0.owner", "svc@example.com")])
    subjects = [f.subject for f in check(load(data).contract, NOW) if f.rule == "missing-owner"]
    assert subjects == ["tenant/team", "job/job", "job/tune"]


def test_service_replicas_against_quota_and_pool_severities():
    # minimum replicas over the tenant's quota: error; only the HPA maximum over it: warning
    def severity(edits, rule_id):
        found = [f for f in check(load(edit(BASE, edits)).contract, NOW) if f.rule == rule_id]
        return [(f.severity.value, f.path) for f in found]

    assert severity([("services.0.replicas.max", 12)], "service-replicas-exceed-quota") == [
        ("warning", ("services", 0, "replicas", "max"))
    ]
    assert severity(
        [("services.0.replicas", {"min": 9, "max": 9})], "service-replicas-exceed-quota"
    ) == [("error", ("services", 0, "replicas", "min"))]
    # two services that each fit the pool but not together: a warning on the pool
    second = {**BASE["services"][0], "name": "svc2", "replicas": {"min": 1, "max": 20}}
    assert severity(
        [("services.0.replicas.max", 20), ("services+", second), ("tenants.0.quotas.0.gpus", 32)],
        "service-replicas-exceed-pool",
    ) == [("warning", ("pools", 0, "nodes", "max"))]


def test_check_needs_an_aware_now():
    with pytest.raises(ValueError, match="timezone"):
        check(load(BASE).contract, datetime(2026, 11, 11))


def test_rules_are_documented():
    for r in RULES.values():
        assert r.summary and r.id == r.id.lower() and " " not in r.id
