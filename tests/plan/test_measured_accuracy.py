"""gpupact plan against public measurements (issue 18): one case per point of
tests/plan/measured/points.yaml, asserting its category's tolerance; the relative error of each
point is printed and recorded (`record_property`). docs/plan-accuracy.md is the same table
(benchmarks/plan_accuracy.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from measured.points import TOLERANCE, Point, load_points
from measured.predict import Unpredictable, closed_loop, gpu_of, model_of, predict

from gpupact.contract.schema import Quantization
from gpupact.errors import InputError
from gpupact.plan.batching import Requests, simulate
from gpupact.plan.engine import EngineSpec
from gpupact.plan.gpus import CATALOGUE as GPUS
from gpupact.plan.latency import prefill_flops
from gpupact.plan.models import CATALOGUE as MODELS

DATA = Path(__file__).parent / "measured/points.yaml"
POINTS = load_points(DATA)

# Memory points the memory model misses, and the one latency point whose miss is the KV
# capacity it is given, each with why.
MEMORY_REWORK = {
    # 4.3 GiB a GPU less KV cache than plan leaves; not the LMCache connector (its one GPU
    # buffer is 12 MB) and the issue logs no breakdown (test_measured_logs.py)
    "kv-qwen3-235b-fp8-h100-tp4-vllm": "4.3 GiB a GPU of non-KV memory unexplained (+54 %)",
    # the saturated batch is what the KV cache holds: a bf16 KV cache in TensorRT-LLM's budget
    # gives 41 sequences of 5,500 tokens (no-evict reserves all of each); NIM runs ~86
    # (920 tokens/s at 93 ms per token). An fp8 cache would give TTFT +12 %, ITL -2 %, but
    # the page states no KV format.
    "ttft-sat-llama33-70b-fp8-h100-tp2-nim-c250": (
        "NIM's KV-cache format unstated; a bf16 cache holds half the batch NIM ran (+85 %)"
    ),
}
# Latency points on a GPU or model plan's catalogue does not have yet.
CATALOGUE_MISSING: dict[str, str] = {}
# Latency points whose miss is a mechanism plan does not model.
UNMODELLED = {
    # Qwen3-0.6B, 500 requests at once: plan prefills all 500 prompts in GPU time (mean TTFT
    # 335 ms, -88 %); the measured 2.9 s mean, read as a linear ramp, is ~12 ms per admitted
    # request: the engine's per-request CPU work on a model whose GPU steps are tiny
    "ttft-sat-qwen3-06b-bf16-h100-rateinf-vllm": (
        "per-request CPU admission of a tiny model not modelled (-88 %)"
    ),
    # the same run: with every prefill done at once plan decodes all 500 together, ~33 GB of
    # KV read a step (~10 ms at the H100's peak bandwidth): 15.3 ms, +180 %; the measured
    # 5.45 ms means far fewer were decoding together (the slow admission above)
    "itl-sat-qwen3-06b-bf16-h100-rateinf-vllm": (
        "per-request CPU admission of a tiny model not modelled (+180 %)"
    ),
}


def _marks(point: Point) -> list[pytest.MarkDecorator]:
    if point.id in MEMORY_REWORK:
        return [pytest.mark.xfail(strict=True, reason=MEMORY_REWORK[point.id])]
    if point.id in CATALOGUE_MISSING:
        reason = f"{CATALOGUE_MISSING[point.id]} not in plan's catalogue"
        return [pytest.mark.xfail(strict=True, reason=reason)]
    if point.id in UNMODELLED:
        return [pytest.mark.xfail(strict=True, reason=UNMODELLED[point.id])]
    return []


@pytest.mark.parametrize("point", [pytest.param(p, id=p.id, marks=_marks(p)) for p in POINTS])
def test_prediction_within_tolerance(point: Point, record_property) -> None:
    prediction = predict(point)
    error = prediction.error(point.measured)
    record_property("relative_error", round(error, 4))
    print(
        f"{point.id}: measured {point.measured:g} {point.unit}, predicted "
        f"{prediction.value:.4g}, error {error:+.1%} (tolerance {point.tolerance:.0%})"
    )
    assert point.within(error), (
        f"{point.category}: measured {point.measured:g} {point.unit} ({point.url}), "
        f"predicted {prediction.value:.4g}: {error:+.1%} beyond {point.tolerance:.0%}"
        + (" (from below: prefix-cached)" if point.prefix_cache else "")
    )


# --- the data ---------------------------------------------------------------------------------


def test_every_category_has_points_and_the_file_has_thirty() -> None:
    assert len(POINTS) >= 30
    # saturated throughput has its own file (measured/throughput.yaml)
    assert {p.category for p in POINTS} == set(TOLERANCE) - {"throughput_saturation"}


def test_marked_ids_exist() -> None:
    ids = {p.id for p in POINTS}
    assert set(MEMORY_REWORK) | set(CATALOGUE_MISSING) | set(UNMODELLED) <= ids


def test_catalogue_misses_are_real() -> None:
    """A point marked for a missing catalogue entry raises Unpredictable today, and every
    other point's model and GPU are in plan's catalogue."""
    for point in POINTS:
        if point.id in CATALOGUE_MISSING:
            with pytest.raises(Unpredictable):
                model_of(point), gpu_of(point)
        else:
            assert model_of(point) and gpu_of(point), point.id


def _cold_prefill_floor_s(point: Point) -> float:
    """The least time a prefill of the point's prompt takes at the GPUs' dense peak."""
    assert point.workload is not None
    gpu = gpu_of(point)
    peak = point.tp * gpu.flops(Quantization(point.quantization))
    return prefill_flops(model_of(point), point.workload.input) / peak


def test_a_ttft_faster_than_the_hardware_is_marked_prefix_cached() -> None:
    """A TTFT below what 100 % of the dense peak could compute cold must carry `prefix_cache`
    (only a cache hit explains it)."""
    below = {
        point.id
        for point in POINTS
        if point.category == "ttft_c1" and point.measured / 1e3 < _cold_prefill_floor_s(point)
    }
    assert below  # the Qwen2.5-72B 2048-token row: 100.6 % of two H100s' dense peak
    assert all(next(p for p in POINTS if p.id == i).prefix_cache for i in below)


def test_prefix_cached_points_bound_from_below_only() -> None:
    cached = next(p for p in POINTS if p.prefix_cache)
    assert cached.within(+0.9) and cached.within(-0.3) and not cached.within(-0.31)
    cold = next(p for p in POINTS if p.category == "ttft_c1" and not p.prefix_cache)
    assert cold.within(-0.3) and not cold.within(+0.31)


def test_loader_names_file_line_and_field(tmp_path: Path) -> None:
    text = DATA.read_text()
    broken = text.replace("tp: 8\n", "tp: eight\n", 1)
    path = tmp_path / "points.yaml"
    path.write_text(broken)
    with pytest.raises(InputError) as err:
        load_points(path)
    line = broken.splitlines().index("  tp: eight") + 1
    assert err.value.line == line and err.value.path[-1] == "tp"
    assert f"points.yaml:{line}" in str(err.value) and "tp" in str(err.value)


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ("category: weights", "category: latency", "category"),
        ("unit: GiB, per: gpu", "unit: MiB, per: gpu", "unit"),
        ("concurrency: 1}", "concurrency: 1, batch: 8}", "workload"),
        ("value: 406.77", "value: -1", "value"),
    ],
)
def test_loader_rejects_bad_fields(tmp_path: Path, old: str, new: str, field: str) -> None:
    text = DATA.read_text()
    assert old in text
    path = tmp_path / "points.yaml"
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(InputError) as err:
        load_points(path)
    assert err.value.line is not None and field in str(err.value)


def test_duplicate_ids_are_refused(tmp_path: Path) -> None:
    text = DATA.read_text()
    path = tmp_path / "points.yaml"
    first, second = (p.id for p in POINTS[:2])
    path.write_text(text.replace(f"id: {second}", f"id: {first}", 1))
    with pytest.raises(InputError, match="duplicate id"):
        load_points(path)


# --- the closed-loop driver -----------------------------------------------------------------


def _spec() -> EngineSpec:
    return EngineSpec(
        model=MODELS["llama-3.1-8b"],
        weights=Quantization.bf16,
        gpu=GPUS["h100-80gb"],
        tp=1,
        kv_per_token=131072,
        kv_tokens=200_000,
    )


def test_closed_loop_at_full_concurrency_is_all_at_once() -> None:
    spec = _spec()
    once = simulate(spec, Requests(np.zeros(16), np.full(16, 300), np.full(16, 40)))
    loop = closed_loop(spec, 16, once.requests)
    assert np.array_equal(loop.finished, once.finished)


def test_closed_loop_sends_the_next_request_when_one_finishes() -> None:
    spec = _spec()
    run = closed_loop(spec, 3, Requests(np.zeros(12), np.full(12, 500), np.full(12, 30)))
    arrivals = run.requests.arrival
    assert np.array_equal(arrivals[:3], np.zeros(3))
    assert np.array_equal(arrivals[3:], np.sort(run.finished)[:9])
    in_flight = [np.sum((arrivals <= t) & (run.finished > t)) for t in arrivals]
    assert max(in_flight) == 3
