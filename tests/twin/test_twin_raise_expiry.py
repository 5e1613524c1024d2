"""A temporary quota raise that expires inside a run: the ClusterQueue drops to the quota
`gpupact compile --now <expiry>` writes at that instant. Kueue's behaviour on a lower
nominalQuota (https://kueue.sigs.k8s.io/docs/concepts/cluster_queue/ : quota is checked at
admission; nothing in Kueue evicts an admitted workload when nominalQuota shrinks, only
preemption by a pending workload can): the admitted workloads keep running, new ones are
admitted only under the lower quota."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from twin_helpers import contract, scenario, write
from typer.testing import CliRunner

import gpupact.cli.audit  # noqa: F401  (registers `audit`)
from gpupact.cli.main import app
from gpupact.contract import load_contract
from gpupact.ledger import month_window
from gpupact.ops.review import review
from gpupact.twin.scenario import load_scenario
from gpupact.twin.simulation import Simulation

GPU = "nvidia.com/gpu"
EXPIRED_CODE = "expired-quota-raise"
NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "batch-0"}, "status": {}}
EXPIRY_S = 1800.0  # the raise expires 30 min into the run


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def _nominal(sim: Simulation, cq: str) -> int:
    spec = sim.world.admission.cluster_queue_specs[cq]
    return sum(
        f.resources[GPU].nominal
        for g in spec.resource_groups
        for f in g.flavors
        if GPU in f.resources
    )


def _usage(sim: Simulation, cq: str) -> int:
    return sum(v for fr, v in sim.world.admission.usage(cq).items() if fr[1] == GPU)


def test_raise_expiry_drops_the_quota_keeps_the_admitted_and_gates_new_admissions(
    tmp_path: Path,
) -> None:
    c = contract()
    c["pools"][1]["nodes"] = {"min": 2, "max": 2}  # 16 GPUs: capacity is never the limit
    c["tenants"][1]["raises"] = [
        {
            "pool": "gpu-batch",
            "gpus": 8,
            "reason": "quarter close",
            "expires": "2026-11-11T00:30:00Z",
        }
    ]
    jobs = [
        {
            "name": "embed",
            "tenant": "lab",
            "class": "batch",
            "perHour": 12,
            "pods": 2,
            "gpusPerPod": 2,
            "duration": "50m",
        }
    ]
    sim = Simulation(load_scenario(write(tmp_path, c, scenario(jobs=jobs))))
    cq = "lab-gpu"  # lab's ClusterQueue: quota 8 on gpu-batch, raised by 8
    sim.run_until(EXPIRY_S - 1)
    assert _nominal(sim, cq) == 16
    before = set(sim.world.admission.admitted())
    assert _usage(sim, cq) > 8  # the raise is in use when it expires

    sim.run_until(EXPIRY_S)
    assert _nominal(sim, cq) == 8
    assert before <= set(sim.world.admission.admitted())  # nothing evicted for the lower quota
    assert any(
        e["kind"] == "quota-raise-expired" and e["t"] == EXPIRY_S and e["subject"] == cq
        for e in sim.metrics.events
    )

    t = EXPIRY_S
    admitted = set(sim.world.admission.admitted())
    later = 0
    while t < 7200:
        t += 60
        sim.run_until(t)
        now = set(sim.world.admission.admitted())
        if now - admitted:  # a new admission happened: under the lowered quota only
            assert _usage(sim, cq) <= 8
            later += 1
        admitted = now
    assert later > 0  # the lowered quota was exercised


# --- what becomes preemptible once the raise is gone -----------------------------------------
#
# Kueue has no eviction for a smaller nominalQuota: its eviction reasons are Preempted,
# PodsReadyTimeout, AdmissionCheck, ClusterQueueStopped, LocalQueueStopped, NodeFailures, ...
# (kueue apis/kueue/v1beta2/workload_types.go), and a ClusterQueue spec update only refreshes
# the cache and requeues pending workloads (pkg/controller/core/clusterqueue_controller.go
# Update). What changes is preemption: usage above nominal is borrowing, so a cohort mate's
# reclaimWithinCohort may take it (candidates come only from ClusterQueues that borrow,
# pkg/scheduler/preemption/preemption.go cqIsBorrowing), and a higher-priority workload of the
# same ClusterQueue must fit under the lower nominal (withinClusterQueue: LowerPriority).

LAB_JOBS = [  # 4 x 4 GPUs from 00:01: the raised quota (8 + 8), full
    {
        "name": f"embed-{i}",
        "tenant": "lab",
        "class": "batch",
        "pods": 2,
        "gpusPerPod": 2,
        "duration": "3h",
        "schedule": "1 0 * * *",
    }
    for i in range(4)
]
LATE = "40 0 * * *"  # 00:40, ten minutes after the expiry


def _expiring_contract(expires: str, jobs: list[dict], **changes: object) -> dict:
    c = contract()
    c["pools"][1]["nodes"] = {"min": 3, "max": 3}  # 24 GPUs: capacity never decides
    c["tenants"][1]["raises"] = [
        {"pool": "gpu-batch", "gpus": 8, "reason": "quarter close", "expires": expires}
    ]
    c["jobs"] = jobs
    c.update(changes)
    return c


def _evictions(sim: Simulation) -> list[tuple[float, str, str]]:
    return [
        (e["t"], e["subject"], e["text"])
        for e in sim.metrics.events
        if e["kind"] == "preempted" and "Kueue evicted" in e["text"]
    ]


def _simulate(tmp_path: Path, doc: dict, until: float) -> Simulation:
    sim = Simulation(
        load_scenario(write(tmp_path, doc, scenario(jobs=[{"contract": True}], load=[])))
    )
    sim.run_until(until)
    return sim


def test_after_expiry_a_cohort_mate_reclaims_what_the_raise_lent(tmp_path: Path) -> None:
    """lab (8 + a raise of 8) and ml (8) share a cohort. lab runs 16 GPUs; at 00:30 its
    nominal drops to 8 and the other 8 become borrowed from ml's unused quota. At 00:40 ml's
    8-GPU job is within ml's nominal: its ClusterQueue reclaims (reclaimWithinCohort: Any,
    every lab class being preemptible) and evicts two of lab's 4-GPU workloads. With the raise
    still valid, lab borrows nothing and ml's job fits beside it: no eviction."""
    ml = {
        "name": "ml",
        "owner": "ml@example.com",
        "costCenter": "CC-3",
        "cohort": "research",
        "quotas": [{"pool": "gpu-batch", "gpus": 8}],
    }
    tune = {
        "name": "tune",
        "tenant": "ml",
        "class": "batch",
        "pods": 2,
        "gpusPerPod": 4,
        "duration": "1h",
        "schedule": LATE,
    }

    def run(expires: str, directory: Path) -> Simulation:
        doc = _expiring_contract(expires, [*LAB_JOBS, tune])
        doc["tenants"][1]["cohort"] = "research"
        doc["tenants"].append(ml)
        return _simulate(directory, doc, 2700)

    sim = run("2026-11-11T00:30:00Z", tmp_path / "expiring")
    spec = sim.world.admission.cluster_queue_specs["ml-gpu"]
    assert spec.preemption.reclaim_within_cohort == "Any"
    evicted = _evictions(sim)
    assert [t for t, _, _ in evicted] == [2400.0, 2400.0]
    assert all(s.startswith("embed-") and "InCohortReclamation" in d for _, s, d in evicted)
    assert _usage(sim, "lab-gpu") == 8 and _usage(sim, "ml-gpu") == 8

    kept = run("2026-11-11T05:00:00Z", tmp_path / "kept")
    assert _evictions(kept) == []
    assert _usage(kept, "lab-gpu") == 16 and _usage(kept, "ml-gpu") == 8


def test_after_expiry_a_higher_priority_workload_must_fit_under_the_lower_nominal(
    tmp_path: Path,
) -> None:
    """lab alone (no cohort: nothing to borrow) runs 16 GPUs of batch on 8 + 8. At 00:40 an
    urgent 4-GPU workload of lab's own (priority above batch; withinClusterQueue:
    LowerPriority, compiled because every lower class is preemptible) needs usage + 4 <= the
    nominal: 16 + 4 <= 16 with the raise (one batch workload evicted), 16 + 4 <= 8 after it
    expired (three evicted)."""
    urgent_class = {
        "name": "urgent",
        "latency": "minutes",
        "priority": 20000,  # above every class on the pool, all of them preemptible
        "pools": ["gpu-batch"],
    }
    urgent = {
        "name": "hotfix",
        "tenant": "lab",
        "class": "urgent",
        "pods": 1,
        "gpusPerPod": 4,
        "duration": "1h",
        "schedule": LATE,
    }

    def run(expires: str, directory: Path) -> Simulation:
        doc = _expiring_contract(expires, [*LAB_JOBS, urgent])
        doc["classes"].append(urgent_class)
        doc["pools"][1]["classes"].append("urgent")
        return _simulate(directory, doc, 2700)

    sim = run("2026-11-11T00:30:00Z", tmp_path / "expiring")
    spec = sim.world.admission.cluster_queue_specs["lab-gpu"]
    assert spec.preemption.within_cluster_queue == "LowerPriority"
    evicted = _evictions(sim)
    assert len(evicted) == 3
    assert all(t == 2400.0 and "InClusterQueue" in d for t, _, d in evicted)
    assert _usage(sim, "lab-gpu") == 4 + 4  # the hotfix and the one batch workload left

    kept = run("2026-11-11T05:00:00Z", tmp_path / "kept")
    evicted = _evictions(kept)
    assert len(evicted) == 1 and "InClusterQueue" in evicted[0][2]
    assert _usage(kept, "lab-gpu") == 16


# --- the audit and the ledger's review see the same expiry -----------------------------------


def test_audit_and_review_see_the_expiry_the_twin_simulates(tmp_path: Path) -> None:
    """The objects compiled while the raise was valid, still applied after its expiry: the
    audit of that cluster reports the expired raise on lab's ClusterQueue with the 8 GPUs too
    many (and nothing once recompiled after the expiry, the quota the twin drops to), the
    ledger's review of the contract reports it, and neither does before 00:30."""
    doc = _expiring_contract("2026-11-11T00:30:00Z", LAB_JOBS)
    directory = write(tmp_path / "run", doc, scenario(jobs=[{"contract": True}], load=[]))
    contract_file = str(directory / "contract.yaml")
    snap = tmp_path / "snapshot"
    snap.mkdir()
    (snap / "nodes.json").write_text(json.dumps(NODE))

    def compile_at(now: str) -> None:
        code, out, err = run("compile", contract_file, "--now", now, "-o", "json")
        assert code == 0, err
        (snap / "objects.json").write_text(out)

    compile_at("2026-11-11T00:00:00Z")

    def audit_codes(now: str) -> dict[str, dict]:
        code, out, err = run(
            "audit", "--snapshot", str(snap), "--contract", contract_file, "--now", now,
            "-o", "json", "--fail-on", "never",
        )  # fmt: skip
        assert code == 0, err
        return {f["subject"]: f for f in json.loads(out)["findings"] if f["code"] == EXPIRED_CODE}

    assert audit_codes("2026-11-11T00:29:00Z") == {}
    finding = audit_codes("2026-11-11T00:31:00Z")["ClusterQueue lab-gpu"]
    assert "8 GPU(s) too many" in finding["summary"]
    assert any("expired 2026-11-11T00:30:00Z" in e for e in finding["evidence"])
    compile_at("2026-11-11T00:31:00Z")  # what the twin switched to at the expiry
    assert audit_codes("2026-11-11T00:31:00Z") == {}

    terms = load_contract(directory / "contract.yaml").contract
    expiry = datetime(2026, 11, 11, 0, 30, tzinfo=UTC).timestamp()
    window = month_window("2026-11")

    def reviewed(now: float) -> list[str]:
        report = review([], [], window, now, contract=terms)
        return [f.subject for f in report.findings if f.code == EXPIRED_CODE]

    assert reviewed(expiry - 60) == []
    assert reviewed(expiry) == ["tenant lab raise 0 (pool gpu-batch, +8 GPUs)"]
