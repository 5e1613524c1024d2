"""A time-sliced or MIG replica in the twin is the same engine with a share of the SMs and of
the memory bandwidth (plan/serving.py `shares_of`), not a fixed divisor, and a time-sliced one
1/k of the memory budget (plan/memory.py `time_sliced`): checked from the contract's pool
sharing through the simulation's serving queue to the latency of a tick."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from twin_helpers import contract, scenario, write

from gpupact.plan.engine import STEP_OVERHEAD_S
from gpupact.plan.engine_load import latency_curve
from gpupact.plan.serving import replica_serving
from gpupact.twin.scenario import load_scenario
from gpupact.twin.simulation import Simulation

RPS = 2.0


def simulation(tmp_path: Path, sharing: str, model: dict | None = None) -> Simulation:
    doc = contract()
    doc["pools"][0]["sharing"] = sharing
    if model is not None:
        doc["services"][0]["model"] = model
    load = [{"service": "chat", "rps": [{"at": "0s", "value": RPS}, {"at": "10m", "value": RPS}]}]
    name = sharing.replace(":", "-") + ("-" + model["name"] if model else "")
    directory = write(tmp_path / name, doc, scenario(load=load, jobs=[]))
    return Simulation(load_scenario(directory))


def serving_of(sim: Simulation):
    c = sim.world.contract
    return c, next(s for s in c.services if s.name == "chat")


@pytest.mark.parametrize(
    ("sharing", "compute", "bandwidth"),
    [("timeslice:2", 1 / 2, 1 / 2), ("timeslice:4", 1 / 4, 1 / 4), ("mig:3g.40gb", 3 / 7, 4 / 8)],
)
def test_the_twins_replica_is_the_engine_with_its_share(
    tmp_path: Path, sharing: str, compute: float, bandwidth: float
) -> None:
    sim = simulation(tmp_path, sharing)
    curve = sim.services["chat"].queue.curve
    c, service = serving_of(sim)
    timeslice = int(sharing.split(":")[1]) if sharing.startswith("timeslice") else 1
    serving = replica_serving(c, service, timeslice=timeslice)
    spec = serving.spec
    assert (spec.compute_share, spec.bandwidth_share) == pytest.approx((compute, bandwidth))
    # the twin's queue reads the curve of exactly that engine (one cached curve)
    assert curve is serving.curve
    assert curve is latency_curve(spec, serving.input, serving.output, serving.context)
    # the same step formula: a decode step's kernel time grows by 1 / bandwidth share, the
    # per-step CPU overhead does not
    whole = dataclasses.replace(spec, compute_share=1.0, bandwidth_share=1.0)
    for context in (100, 4000):
        shared = spec.step_s(1, context + 1, context) - STEP_OVERHEAD_S
        alone = whole.step_s(1, context + 1, context) - STEP_OVERHEAD_S
        assert shared == pytest.approx(alone / bandwidth, rel=1e-9)


def test_time_slicing_slows_a_replica_and_shrinks_its_kv_cache(tmp_path: Path) -> None:
    sims = {s: simulation(tmp_path, s) for s in ("exclusive", "timeslice:2", "timeslice:4")}
    exclusive, two, four = (sim.services["chat"].queue.curve for sim in sims.values())
    assert exclusive is not None and two is not None and four is not None
    kv = [replica_serving(*serving_of(sim)).spec.kv_tokens for sim in sims.values()]
    assert kv[0] > 2 * kv[1] > 4 * kv[2] > 0  # 1/k of the budget, the weights taken whole
    # half the SMs and bandwidth alone: each step's kernels take twice as long, its fixed
    # overhead not, so with the whole KV cache the replica would take in more than half as
    # many requests; its share of the memory holds a smaller batch and takes it lower, and
    # the co-tenants of a GPU together serve less than one engine alone
    c, service = serving_of(sims["timeslice:2"])
    spec = replica_serving(c, service).spec
    whole = dataclasses.replace(spec, kv_tokens=kv[0])
    whole_memory = latency_curve(whole, *_profile(c, service))
    assert 1.0 < exclusive.saturation / whole_memory.saturation < 2.0
    assert two.saturation <= whole_memory.saturation
    assert 2 * two.saturation < exclusive.saturation
    assert 4 * four.saturation < exclusive.saturation
    assert four.saturation < two.saturation
    idle_tpot = [curve.points[0].tpot_p50_s for curve in (exclusive, two, four)]
    assert idle_tpot[0] < idle_tpot[1] < idle_tpot[2] < 4 * idle_tpot[0]


def _profile(c, service):
    serving = replica_serving(c, service)
    return serving.input, serving.output, serving.context


def test_a_tick_of_a_time_sliced_service_reads_its_own_curve(tmp_path: Path) -> None:
    sim = simulation(tmp_path, "timeslice:2")
    result = sim.run()
    chat = result["series"]["services"]["chat"]
    curve = sim.services["chat"].queue.curve
    exclusive = simulation(tmp_path, "exclusive").services["chat"].queue.curve
    # a tick with replicas ready and the load settled: the curve at the per-replica rate
    i = max(k for k, ready in enumerate(chat["ready"]) if ready > 0)
    per_replica = chat["rps"][i] / chat["ready"][i]
    # (the series keeps milliseconds)
    assert chat["tpotP50"][i] == pytest.approx(curve.at(per_replica).tpot_p50_s, abs=6e-4)
    assert chat["tpotP50"][i] > exclusive.at(per_replica).tpot_p50_s


def test_a_mig_slice_keeps_the_kv_cache_of_its_memory(tmp_path: Path) -> None:
    mig = simulation(tmp_path, "mig:3g.40gb")
    exclusive = simulation(tmp_path, "exclusive")
    # a 3g.40gb slice holds 40 GiB: its KV cache is what is left of that, not of 80 GiB
    slice_kv = replica_serving(*serving_of(mig)).spec.kv_tokens
    whole_kv = replica_serving(*serving_of(exclusive)).spec.kv_tokens
    assert 0 < slice_kv < whole_kv / 2


def test_a_model_too_large_for_its_time_slice_serves_nothing(tmp_path: Path) -> None:
    # Qwen2.5-14B bf16 fits an 80 GB A100 alone, not a quarter of its memory budget
    qwen = {"name": "qwen2.5-14b-instruct", "params": "14B", "quantization": "bf16"}
    assert simulation(tmp_path, "exclusive", qwen).services["chat"].queue.curve is not None
    sim = simulation(tmp_path, "timeslice:4", qwen)
    assert sim.services["chat"].queue.curve is None
    chat = sim.run()["summary"]["services"]["chat"]
    # ready replicas, no answer: every request waits, the whole run is over the SLO
    assert chat["peakReady"] == 2 and chat["ttftP99Worst"] is None
    assert chat["sloBreachedShare"] == 1.0 and chat["peakQueue"] == RPS * 7200
    served = simulation(tmp_path, "timeslice:2", qwen)
    assert served.services["chat"].queue.curve is not None  # half the budget holds it
    assert served.run()["summary"]["services"]["chat"]["sloBreachedShare"] < 1.0
