"""What the twin reads of a contract's replica: the same engine and curve plan sizes with."""

from __future__ import annotations

import pytest
from plan_helpers import acme, contract

from gpupact.contract.schema import ModelSpec
from gpupact.plan.planner import plan_service
from gpupact.plan.serving import replica_serving


def test_the_twin_and_plan_read_one_curve() -> None:
    c = contract()
    serving = replica_serving(c, c.services[0])
    planned = plan_service(c, "chat")
    assert serving.curve is planned.serving.curve  # one cached curve, not two models
    assert serving.spec == planned.serving.spec


def test_time_slicing_shares_compute_and_bandwidth() -> None:
    c = contract()
    one = replica_serving(c, c.services[0])
    two = replica_serving(c, c.services[0], timeslice=2)
    assert (two.spec.compute_share, two.spec.bandwidth_share) == (0.5, 0.5)
    assert two.spec.kv_tokens == one.spec.kv_tokens  # memory is not time-sliced away
    # decode is bandwidth-bound: an idle replica's TPOT doubles, less the fixed overheads
    ratio = two.curve.points[0].tpot_p50_s / one.curve.points[0].tpot_p50_s
    assert 1.7 < ratio <= 2.0
    assert two.curve.saturation < 0.6 * one.curve.saturation


def test_a_mig_slice_has_its_compute_and_memory_slices() -> None:
    c = contract(gpu={"model": "a100-80g", "memory": "80Gi"}, pool={"sharing": "mig:3g.40gb"})
    serving = replica_serving(c, c.services[0])
    assert serving.spec.compute_share == pytest.approx(3 / 7)
    assert serving.spec.bandwidth_share == pytest.approx(4 / 8)


@pytest.mark.parametrize(
    ("gpu", "profile", "compute", "memory"),
    [
        ({"model": "h100-80g", "memory": "80Gi"}, "mig:1g.10gb", 1, 1),
        ({"model": "h100-80g", "memory": "80Gi"}, "mig:1g.20gb", 1, 2),
        ({"model": "h100-80g", "memory": "80Gi"}, "mig:4g.40gb", 4, 4),
        ({"model": "a100-40g", "memory": "40Gi"}, "mig:3g.20gb", 3, 4),
    ],
)
def test_a_mig_slices_bandwidth_follows_its_memory_slices(
    gpu: dict, profile: str, compute: int, memory: int
) -> None:
    c = contract(gpu=gpu, pool={"sharing": profile})
    serving = replica_serving(c, c.services[0])
    assert serving.spec.compute_share == pytest.approx(compute / 7)
    assert serving.spec.bandwidth_share == pytest.approx(memory / 8)


def test_a_service_without_a_model_gets_the_default_engine() -> None:
    c = contract({"model": None})
    assert replica_serving(c, c.services[0]).curve is not None
    workload = plan_service(c, "chat").workload
    assert any(note.startswith("no model declared") for note in workload.assumptions)
    # weights fill half of 90% of the H100's 80 GiB: 19.3B bf16 parameters
    assert workload.model.params == 80 * 2**30 * 9 // 10 // 2 // 2


def test_a_model_that_does_not_fit_serves_nothing() -> None:
    # 70B fp16 (141 GB) on one 80 GB GPU: the plan reports it; the twin's replica serves nothing
    c = contract({"model": {"name": "llama-3.1-70b", "params": "70B"}})
    assert replica_serving(c, c.services[0]).curve is None


def test_acme_services_are_engines_in_proportion_to_their_models() -> None:
    c = acme()
    by_name = {s.name: replica_serving(c, s) for s in c.services}
    small, large = by_name["cs-agent"], by_name["llm-70b-tp4"]
    assert small.curve is not None and large.curve is not None
    assert large.spec.tp == 4
    # an idle 70B over four GPUs decodes slower than a 14B on one
    assert large.curve.points[0].tpot_p50_s > small.curve.points[0].tpot_p50_s


def test_model_spec_weight_bytes_is_the_quantization_rule() -> None:
    spec = ModelSpec.model_validate({"name": "m", "params": "70B", "quantization": "int4"})
    assert spec.weight_bytes == 35 * 10**9
