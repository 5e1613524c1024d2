"""`gpupact simulate` prints each service's time over SLO in its peak window and the cost to
batch, in text and in JSON."""

from __future__ import annotations

import json
from pathlib import Path

from twin_helpers import contract, scenario, write
from typer.testing import CliRunner

from gpupact.cli.main import app

runner = CliRunner()
LOAD = [
    {
        "service": "chat",
        "rps": [
            {"at": "0s", "value": 2},
            {"at": "20m", "value": 2},
            {"at": "25m", "value": 40},
            {"at": "40m", "value": 40},
            {"at": "45m", "value": 2},
        ],
    }
]


def test_json_carries_the_peak_window_and_the_batch_cost(tmp_path: Path) -> None:
    write(tmp_path, contract(), scenario(duration="1h", load=LOAD))
    result = runner.invoke(app, ["simulate", str(tmp_path), "--report", "-", "-o", "json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)[0]["summary"]
    peak = summary["services"]["chat"]["peakWindow"]
    assert 20 * 60 < peak["start"] < peak["end"] < 45 * 60
    assert summary["peakWindow"] == {"start": peak["start"], "end": peak["end"]}
    assert 0.0 <= peak["sloBreachedShare"] <= 1.0
    batch = summary["batchCost"]["batch"]
    assert batch["gpuHours"] > 0
    assert set(batch) == {
        "gpuHours",
        "gpuHoursLost",
        "evictions",
        "waitP50",
        "waitP99",
        "stillPending",
    }
    assert "online-infer" not in summary["batchCost"]  # the service's class is not batch


def test_text_shows_the_peak_rows(tmp_path: Path) -> None:
    write(tmp_path, contract(), scenario(duration="1h", load=LOAD))
    result = runner.invoke(app, ["simulate", str(tmp_path), "--report", "-"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "peak window · chat" in out and "0h2" in out  # the window opens in minute 20
    assert "TTFT over SLO in peak · chat" in out
    assert "cost to batch: GPU-h run / lost" in out
    assert "cost to batch: evictions" in out
