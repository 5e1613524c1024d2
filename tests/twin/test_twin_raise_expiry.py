"""A temporary quota raise that expires inside a run: the ClusterQueue drops to the quota
`gpupact compile --now <expiry>` writes at that instant. Kueue's behaviour on a lower
nominalQuota (https://kueue.sigs.k8s.io/docs/concepts/cluster_queue/ : quota is checked at
admission; nothing in Kueue evicts an admitted workload when nominalQuota shrinks, only
preemption by a pending workload can): the admitted workloads keep running, new ones are
admitted only under the lower quota."""

from __future__ import annotations

from pathlib import Path

from twin_helpers import contract, scenario, write

from gpupact.twin.scenario import load_scenario
from gpupact.twin.simulation import Simulation

GPU = "nvidia.com/gpu"
EXPIRY_S = 1800.0  # the raise expires 30 min into the run


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
