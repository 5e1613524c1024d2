"""Issue 20's promise over this session's new inputs: each bad value below exits 2 with one
located line (file:line:column: field: reason), no traceback, no hang, and what the tool cannot
honour is refused rather than run. The corpus (test_malformed_corpus.py) throws the generic
shapes at every file; these are the values only one field can get wrong.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from gpupact.cli.main import _register, app

ROOT = Path(__file__).resolve().parents[2]
CONTRACT = ROOT / "examples/acme/contract.yaml"
SCENARIO = ROOT / "examples/promo-peak/single-pool"
NOW = "2026-06-01T00:00:00Z"

_register()


def run(*args: str | Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def assert_located(result: tuple[int, str, str], file: Path, field: str, *fragments: str) -> str:
    """Exit 2, one `error: FILE:LINE:COL: FIELD: reason` line naming `field`; the line."""
    code, stdout, stderr = result
    lines = stderr.strip().splitlines()
    assert code == 2, (code, stdout[-2000:], stderr)
    assert len(lines) == 1, lines
    line = lines[0]
    assert line.startswith(f"error: {file}:"), line
    location = line[len(f"error: {file}:") :].split(": ", 1)[0]
    assert all(part.isdigit() for part in location.split(":")), line  # line:column
    assert f": {field}: " in line, (field, line)
    for fragment in fragments:
        assert fragment in line, (fragment, line)
    return line


# --- the contract's timeZone ----------------------------------------------------------------


def _contract_with(tmp_path: Path, **fields: Any) -> Path:
    data = yaml.safe_load(CONTRACT.read_text())
    data.update(fields)
    path = tmp_path / "contract.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.mark.parametrize(
    ("zone", "fragment"),
    [
        ("America", "unknown time zone"),  # a folder of the zone database, not a zone
        ("Etc", "unknown time zone"),
        ("A" * 300, "IANA"),  # past a file name's length (OSError before the fix)
        ("Asia/" + "S" * 15, "IANA"),  # a part longer than tz's 14 characters
        ("Local", "own zone"),
        ("local", "own zone"),  # the API server compares case-insensitively
        ("localtime", "own zone"),  # the host's /etc/localtime link, not an IANA name
        ("Asia/../Europe/Paris", "IANA"),
        ("/etc/localtime", "IANA"),
        ("-0500", "IANA"),  # a part starting with '-'
        ("", "IANA"),
        ("Asia/Shanghai ", "IANA"),
        ("leapseconds", "unknown time zone"),  # a file of the database that is not a zone
        (5, "IANA"),
        (["UTC"], "IANA"),
    ],
)
def test_a_bad_time_zone_is_located(tmp_path: Path, zone: Any, fragment: str) -> None:
    path = _contract_with(tmp_path, timeZone=zone)
    for command in (["check", path, "--now", NOW], ["compile", path, "--now", NOW, "-o", "yaml"]):
        assert_located(run(*command), path, "timeZone", fragment)


@pytest.mark.parametrize("zone", ["Asia/Shanghai", "America/Argentina/Buenos_Aires", "Etc/GMT+5"])
def test_a_good_time_zone_is_compiled(tmp_path: Path, zone: str) -> None:
    path = _contract_with(tmp_path, timeZone=zone)
    code, stdout, stderr = run("compile", path, "--now", NOW, "-o", "yaml")
    assert code == 0, stderr
    assert f"timeZone: {zone}" in stdout


# --- scenario.yaml --------------------------------------------------------------------------


def _scenario_with(tmp_path: Path, **fields: Any) -> Path:
    home = tmp_path / "scenario"
    home.mkdir()
    shutil.copy(SCENARIO / "contract.yaml", home / "contract.yaml")
    data = yaml.safe_load((SCENARIO / "scenario.yaml").read_text())
    data["duration"] = "10m"
    for key, value in fields.items():
        node = data
        *parents, last = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
    (home / "scenario.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return home


def simulate(home: Path) -> tuple[int, str, str]:
    return run("simulate", home, "--report", "-", "-o", "json")


@pytest.mark.parametrize("period", ["0s", "1ms", "999ms"])
def test_an_hpa_sync_period_under_a_second_is_refused(tmp_path: Path, period: str) -> None:
    """0 divided by zero; 1ms queued 600,000 syncs for ten minutes (a hang at a month)."""
    home = _scenario_with(tmp_path, **{"hpa.syncPeriod": period})
    assert_located(simulate(home), home / "scenario.yaml", "hpa.syncPeriod", "at least 1s")


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_a_non_finite_rate_says_so(tmp_path: Path, value: float) -> None:
    """Not 'must be greater than or equal to 0', which NaN's failed comparison said."""
    home = _scenario_with(tmp_path)
    data = yaml.safe_load((home / "scenario.yaml").read_text())
    data["jobs"] = data["jobs"][:1]
    data["jobs"][0]["perHour"] = value
    (home / "scenario.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    assert_located(simulate(home), home / "scenario.yaml", "jobs[0].perHour", "finite")


def test_a_fifo_named_scenario_yaml_is_named(tmp_path: Path) -> None:
    """Not 'no scenario.yaml here': the file is there and is not a regular file."""
    home = tmp_path / "scenario"
    home.mkdir()
    fifo = home / "scenario.yaml"
    os.mkfifo(fifo)
    code, _, stderr = simulate(home)
    assert code == 2 and stderr.startswith(f"error: {fifo}"), stderr
    assert "not a regular file" in stderr


def test_a_contract_that_is_a_directory_is_named(tmp_path: Path) -> None:
    home = _scenario_with(tmp_path)
    (home / "contract.yaml").unlink()
    (home / "contract.yaml").mkdir()
    code, _, stderr = simulate(home)
    assert code == 2 and "not found" not in stderr, stderr
    assert "contract.yaml" in stderr and len(stderr.strip().splitlines()) == 1, stderr
