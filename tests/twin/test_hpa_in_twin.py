"""The twin's HPA acts on the compiled metric as the adapter serves it, not on the queue."""

from __future__ import annotations

from pathlib import Path

from twin_helpers import contract, scenario, write

from gpupact.twin.scenario import load_scenario
from gpupact.twin.simulation import Simulation

STEP_LOAD = [
    {
        "service": "chat",
        "rps": [
            {"at": "0s", "value": 1},
            {"at": "20m", "value": 1},
            {"at": "20m1s", "value": 80},
            {"at": "1h", "value": 80},
        ],
    }
]


def _run(tmp_path: Path, hpa: dict) -> dict:
    s = scenario(load=STEP_LOAD, jobs=[], duration="1h", step="5s", hpa=hpa)
    return Simulation(load_scenario(write(tmp_path, contract(), s))).run()


def _first_scale_up(result: dict) -> float:
    return next(
        e["t"] for e in result["events"] if e["kind"] == "scale" and "HPA 2 ->" in e["text"]
    )


def test_scale_up_waits_for_scrape_and_adapter(tmp_path: Path) -> None:
    instant = _run(tmp_path / "a", {"metricScrapeInterval": "0s", "metricAdapterDelay": "0s"})
    delayed = _run(tmp_path / "b", {})  # defaults: 15 s scrape + 30 s adapter
    # the load rises at 1200 s; read instantly the next 15 s sync acts, read through the
    # pipeline the first sync serving a scrape taken after the rise is 30-45 s later
    assert 1200 <= _first_scale_up(instant) <= 1215
    assert _first_scale_up(delayed) - _first_scale_up(instant) >= 30


def test_running_metric_never_scales_when_the_target_exceeds_the_slots(tmp_path: Path) -> None:
    # target 5000 / 2 = 2500 running per pod, above what a replica's KV cache holds: full
    # replicas read below target (ratio < 1), so the real HPA keeps 2 while the queue grows
    c = contract()
    c["services"][0]["concurrency"] = 5000
    s = scenario(load=STEP_LOAD, jobs=[], duration="1h", step="5s")
    result = Simulation(load_scenario(write(tmp_path, c, s))).run()
    chat = result["series"]["services"]["chat"]
    assert max(chat["queue"]) > 1000
    assert set(chat["desired"]) == {2}
