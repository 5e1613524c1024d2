"""examples/promo-peak tells the chapter's story: sized by plan's numbers, the contract keeps
the peak, the single pool loses it. Relations only: the serving model's numbers will move."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpupact.contract.loader import load_contract
from gpupact.plan.planner import plan_service
from gpupact.plan.report import service_dict
from gpupact.twin.run import load_all, simulate

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "promo-peak"
SERVICE = "shop-assistant"


@pytest.fixture(scope="module")
def runs() -> dict[str, dict[str, Any]]:
    return {item.directory.name: simulate(item) for item in load_all(EXAMPLE)}


def _peak_rate(variant: str) -> float:
    loaded = load_all(EXAMPLE / variant)[0]
    return max(p.value for load in loaded.scenario.load for p in load.rps)


def _plan_at(variant: str, rate: float) -> dict[str, Any]:
    """Plan's sizing of the service at `rate` requests per second."""
    contract = load_contract(EXAMPLE / variant / "contract.yaml").contract
    return service_dict(plan_service(contract, SERVICE, rate=rate))


def test_the_contract_holds_what_plan_asks_for_at_the_peak() -> None:
    planned = _plan_at("contract", _peak_rate("contract"))
    assert planned["ok"], planned["findings"]
    needed = planned["capacity"]["replicas"]
    contract = load_contract(EXAMPLE / "contract" / "contract.yaml").contract
    service = next(s for s in contract.services if s.name == SERVICE)
    pool = contract.pool(service.pool or "gpu-inference")
    assert service.replicas.upper >= needed
    gpus = needed * (planned["capacity"]["gpus"] // needed)
    assert pool.nodes.max * pool.gpu.per_node >= gpus
    assert max(w.min_nodes for w in pool.pre_warm) * pool.gpu.per_node >= gpus
    quota = next(q.gpus for t in contract.tenants for q in t.quotas if q.pool == pool.name)
    assert quota >= gpus


def test_both_variants_have_the_same_hardware() -> None:
    def gpus(variant: str) -> int:
        contract = load_contract(EXAMPLE / variant / "contract.yaml").contract
        return sum(p.nodes.max * p.gpu.per_node for p in contract.pools)

    assert gpus("contract") == gpus("single-pool")


def test_the_contract_keeps_the_peak_and_the_single_pool_loses_it(
    runs: dict[str, dict[str, Any]],
) -> None:
    contract = runs["contract"]["summary"]
    single = runs["single-pool"]["summary"]
    c_peak = contract["services"][SERVICE]["peakWindow"]
    s_peak = single["services"][SERVICE]["peakWindow"]
    assert c_peak["sloBreachedShare"] < s_peak["sloBreachedShare"]
    assert s_peak["sloBreachedShare"] > 0.01  # lost, not a rounding error
    # judged in the window, the single pool's loss is larger than over the whole day
    assert s_peak["sloBreachedShare"] > single["services"][SERVICE]["sloBreachedShare"]
    assert contract["promises"]["online-infer"]["kept"]
    assert not single["promises"]["online-infer"]["kept"]


def test_the_contract_pays_for_it_in_batch(runs: dict[str, dict[str, Any]]) -> None:
    contract = runs["contract"]["summary"]["batchCost"]["batch"]
    single = runs["single-pool"]["summary"]["batchCost"]["batch"]
    assert contract["evictions"] > 0 and contract["gpuHoursLost"] > 0
    assert contract["gpuHours"] < single["gpuHours"]  # batch has its own 5 nodes only
