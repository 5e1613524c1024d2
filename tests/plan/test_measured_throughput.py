"""gpupact plan's saturated throughput against public measurements: one case per point of
tests/plan/measured/throughput.yaml (output tokens per second of one replica, every request
queued or a closed loop past the plateau), asserting the 30 % tolerance; and gpupact plan's own
capacity number (the saturation rate of its latency curve) against the same replica's run.
docs/plan-throughput.md is the table."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from measured.points import TOLERANCE, Point
from measured.predict import closed_loop
from measured.throughput import (
    THROUGHPUT,
    load_throughput_points,
    plan_capacity,
    predict_throughput,
    replica_spec,
    steady_throughput,
)

from gpupact.errors import InputError
from gpupact.plan.batching import Requests

POINTS = load_throughput_points()
CATEGORY = "throughput_saturation"

# Points plan misses today, with the mechanism and the error when they were marked. A fix
# shows up as an unexpected pass (strict).
# SGLang (steps outside CUDA graphs, separate prefill steps, the overlap scheduler and the
# ignore_eos admission of bench_serving modelled: plan/engine_flags.py) errs optimistic on its
# rate-inf runs, +15 % to +29 % within the tolerance and +52 % on the longest one: a cost that
# grows with the running batch (SGLang's per-request CPU work each step) is not modelled; the
# 16 req/s latency point of points.yaml shows the same (ITL -22 %).
SGLANG_BATCH = (
    "SGLang's per-step cost growing with the running batch not modelled (longest prompts and "
    "completions, largest KV per request): {error}"
)
MISSES = {
    # the MoE command runs attention data-parallel (enable_attention_dp) with expert
    # parallelism, which plan does not model: every GPU keeps its own batch and KV cache
    "thru-qwen3-235b-fp8-h100-tp8-trtllm-1000in-1000out": (
        "attention data parallelism and expert parallelism (the page's MoE command) not "
        "modelled: +43 %"
    ),
    "thru-llama33-70b-bf16-h200-tp4-sglang-4096in-2048out": SGLANG_BATCH.format(error="+52 %"),
}


def _marks(point: Point) -> list[pytest.MarkDecorator]:
    if point.id in MISSES:
        return [pytest.mark.xfail(strict=True, reason=MISSES[point.id])]
    return []


@pytest.mark.parametrize("point", [pytest.param(p, id=p.id, marks=_marks(p)) for p in POINTS])
def test_throughput_within_tolerance(point: Point, record_property) -> None:
    prediction = predict_throughput(point)
    error = prediction.error(point.measured)
    record_property("relative_error", round(error, 4))
    print(
        f"{point.id}: measured {point.measured:g} {point.unit}, predicted "
        f"{prediction.value:.5g}, error {error:+.1%} (tolerance {point.tolerance:.0%})"
    )
    assert abs(error) <= point.tolerance, (
        f"measured {point.measured:g} {point.unit} ({point.url}), predicted "
        f"{prediction.value:.5g}: {error:+.1%} > {point.tolerance:.0%}"
    )


# --- plan's capacity against the run ----------------------------------------------------------

# `gpupact plan` sizes on the saturation rate of its latency curve: admissions per second of an
# endless queue, counted between 25 % and 90 % of 12,000 requests (engine_load.endless_queue).
# A finite rate-inf run divides by its whole span instead, fill (the first batch's prefill, no
# decode yet) and drain (the last requests finishing in a shrinking batch) included: the larger
# the batch against the run's requests, the more (-3.4 % for 1,500 requests of 5000/500 in a
# bf16 KV cache; up to -8.5 % for 3,000 of 1000/1000 in the larger fp8 caches, whose batches
# hold ~700 sequences). With every request the same length the run finishes in waves, so a
# window inside it is no steadier. 10 % bounds it; a closed loop's steady window must agree
# closer still.
CAPACITY_TOLERANCE = 0.10
FIXED = [p for p in POINTS if isinstance(p.workload.input, int)]


@pytest.mark.parametrize("point", [pytest.param(p, id=p.id) for p in FIXED])
def test_plan_capacity_matches_the_replica_run(point: Point) -> None:
    run = predict_throughput(point).value
    capacity = plan_capacity(point)
    tolerance = CAPACITY_TOLERANCE if point.workload.concurrency is None else 0.03
    assert abs(capacity / run - 1) <= tolerance, (
        f"plan's saturation {capacity:.5g} tokens/s, the run {run:.5g}"
    )


def test_steady_window_needs_requests_past_the_fill_and_drain() -> None:
    nim = next(p for p in POINTS if p.workload.concurrency)
    spec, c = replica_spec(nim), 4
    run = closed_loop(spec, c, Requests(np.zeros(2 * c), np.full(2 * c, 100), np.full(2 * c, 8)))
    with pytest.raises(ValueError, match="no window"):
        steady_throughput(run, c)
    run = closed_loop(spec, c, Requests(np.zeros(6 * c), np.full(6 * c, 100), np.full(6 * c, 8)))
    assert steady_throughput(run, c) > 0


def test_plan_capacity_refuses_a_length_range() -> None:
    ranged = next(p for p in POINTS if not isinstance(p.workload.input, int))
    with pytest.raises(ValueError, match="log-normal"):
        plan_capacity(ranged)


# --- the data ---------------------------------------------------------------------------------


def test_points_are_many_independent_and_saturated() -> None:
    assert len(POINTS) >= 8
    assert {p.category for p in POINTS} == {CATEGORY} and CATEGORY in TOLERANCE
    assert len({p.url for p in POINTS}) >= 3 and len({p.engine for p in POINTS}) >= 3
    for p in POINTS:
        w = p.workload
        assert p.unit == "tokens/s" and w is not None
        assert (w.rate == float("inf") and w.requests) or w.concurrency


def test_marked_ids_exist() -> None:
    assert set(MISSES) <= {p.id for p in POINTS}


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ("rate: inf, requests: 3000}", "rate: 16, requests: 3000}", "workload"),
        ("rate: inf, requests: 3000}", "rate: inf}", "requests"),
        ("unit: tokens/s, statistic: run}", "unit: ms, statistic: run}", "unit"),
        ("unit: tokens/s, statistic: run}", "unit: tokens/s, statistic: p99}", "statistic"),
        ("workload: {input: 1000, output: 1000,", "workload: {input: -5, output: 1000,", "input"),
    ],
)
def test_loader_rejects_bad_fields(tmp_path: Path, old: str, new: str, field: str) -> None:
    text = THROUGHPUT.read_text()
    assert old in text
    broken = text.replace(old, new, 1)
    path = tmp_path / "throughput.yaml"
    path.write_text(broken)
    with pytest.raises(InputError) as err:
        load_throughput_points(path)
    line = next(i for i, row in enumerate(broken.splitlines(), 1) if new in row)
    assert field in str(err.value) and err.value.line == line
    assert f"throughput.yaml:{line}" in str(err.value)
