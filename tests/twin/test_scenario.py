"""Scenario files: every bad input is one located error, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from twin_helpers import contract, scenario, write
from typer.testing import CliRunner

from gpupact.cli.main import _register, app
from gpupact.errors import InputError
from gpupact.twin.scenario import load_scenario

_register()
runner = CliRunner()
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "promo-peak"


@pytest.mark.parametrize("variant", ["contract", "single-pool"])
def test_the_examples_load(variant: str) -> None:
    loaded = load_scenario(EXAMPLE / variant)
    assert loaded.scenario.duration.total_seconds() > 0


@pytest.mark.parametrize(
    ("change", "path", "message"),
    [
        (
            {"load": [{"service": "nope", "rps": [{"at": "0s", "value": 1}]}]},
            "load[0].service",
            "unknown service 'nope'",
        ),
        ({"duration": "0s"}, "", "duration must be positive"),
        ({"duration": "40d"}, "", "at most 31d"),
        ({"step": "0s"}, "", "step must be between"),
        (
            {"jobs": [{"tenant": "lab", "class": "batch"}]},
            "jobs[0]",
            "give one of",
        ),
        (
            {"jobs": [{"tenant": "ghost", "class": "batch", "perHour": 1}]},
            "jobs[0].tenant",
            "unknown tenant",
        ),
        (
            {"faults": [{"at": "1h", "kind": "meteor", "pool": "gpu-batch"}]},
            "faults[0].kind",
            "meteor",
        ),
        (
            {
                "load": [
                    {"service": "chat", "rps": [{"at": "1h", "value": 1}, {"at": "0s", "value": 2}]}
                ]
            },
            "load[0]",
            "time order",
        ),
        (
            {"load": [{"service": "chat", "rps": [{"at": "0s", "value": -1}]}]},
            "load[0].rps[0].value",
            "",
        ),
        ({"contract": "missing.yaml"}, "contract", "not found"),
        ({"kind": "Contract"}, "kind", "not a gpupact scenario"),
        ({"surprise": 1}, "surprise", "unknown field"),
    ],
)
def test_bad_scenarios_name_file_line_and_field(
    tmp_path: Path, change: dict, path: str, message: str
) -> None:
    write(tmp_path, contract(), scenario(**change))
    with pytest.raises(InputError) as err:
        load_scenario(tmp_path)
    text = str(err.value)
    assert str(tmp_path / "scenario.yaml") in text
    assert f": {path}: " in text if path else True
    assert message in text
    assert err.value.line is not None


def test_cli_bad_scenario_is_one_line_and_exit_2(tmp_path: Path) -> None:
    write(tmp_path, contract(), scenario(duration="soon"))
    result = runner.invoke(app, ["simulate", str(tmp_path), "--report", "-"])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "scenario.yaml:" in lines[0]
    assert "Traceback" not in result.output


def test_cli_missing_directory(tmp_path: Path) -> None:
    result = runner.invoke(app, ["simulate", str(tmp_path / "nowhere")])
    assert result.exit_code == 2 and "error:" in result.output


def test_cli_broken_contract_is_reported_in_the_contract_file(tmp_path: Path) -> None:
    doc = contract()
    doc["pools"][0]["nodes"] = {"min": 1}
    write(tmp_path, doc, scenario())
    result = runner.invoke(app, ["simulate", str(tmp_path), "--report", "-"])
    assert result.exit_code == 2 and "contract.yaml:" in result.output


def test_cli_json_summary_and_report(tmp_path: Path) -> None:
    write(tmp_path / "s", contract(), scenario(duration="30m"))
    report = tmp_path / "out.html"
    result = runner.invoke(
        app, ["simulate", str(tmp_path / "s"), "-o", "json", "--report", str(report)]
    )
    assert result.exit_code == 0, result.output
    data = yaml.safe_load(result.output)
    assert data[0]["scenario"] == "twin-test" and "timeToGpu" in data[0]["summary"]
    assert report.read_text().startswith("<!DOCTYPE html>")


def test_cli_strict_exits_1_on_a_broken_promise(tmp_path: Path) -> None:
    doc = contract()
    doc["classes"][1]["maxQueueWait"] = "1s"
    jobs = [
        {
            "name": "embed",
            "tenant": "lab",
            "class": "batch",
            "perHour": 60,
            "pods": 4,
            "duration": "30m",
        }
    ]
    write(tmp_path, doc, scenario(jobs=jobs))
    result = runner.invoke(app, ["simulate", str(tmp_path), "--report", "-", "--strict"])
    assert result.exit_code == 1, result.output


def test_cli_contract_compile_refuses_is_located_in_the_contract(tmp_path: Path) -> None:
    doc = contract()
    del doc["metadata"]["owner"]
    write(tmp_path, doc, scenario())
    result = runner.invoke(app, ["simulate", str(tmp_path), "--report", "-"])
    assert result.exit_code == 2
    assert "contract.yaml:" in result.output and "owner" in result.output


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"jobs": [{"tenant": "lab", "class": "batch", "perHour": 1e9}]}, "arrivals, more than"),
        (
            {
                "faults": [
                    {"at": "1h", "kind": "node-down", "pool": "gpu-batch", "recoverAfter": "10m"}
                ]
            },
            "device-plugin-lost only",
        ),
    ],
)
def test_unbounded_or_unmodelled_requests_are_refused(
    tmp_path: Path, change: dict, message: str
) -> None:
    write(tmp_path, contract(), scenario(**change))
    with pytest.raises(InputError, match=message):
        load_scenario(tmp_path)
