"""Numbers Python cannot hold, in every file `check`, `compile` and `serve --tokens` read:
a 5,000-digit integer (past the int-str conversion limit) and a float past the float range
(read as inf) are refused with exit 2 and one line naming file:line:column: field."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from gpupact.cli.main import _register, app

ROOT = Path(__file__).resolve().parents[2]
CONTRACT = ROOT / "examples/acme/contract.yaml"
SCENARIO = ROOT / "examples/promo-peak/single-pool"
HUGE = "9" * (sys.get_int_max_str_digits() + 700)

_register()


def run(*args: str | Path) -> tuple[int, str]:
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stderr


def assert_one_error(code: int, stderr: str, *fragments: str) -> None:
    lines = stderr.strip().splitlines()
    assert code == 2, stderr
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    assert "Traceback" not in stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


def _contract_yaml(old: str, new: str) -> str:
    text = CONTRACT.read_text()
    assert old in text
    return text.replace(old, new, 1)


def _contract_json(old: str, new: str) -> str:
    text = json.dumps(yaml.safe_load(CONTRACT.read_text()), default=str, indent=1)
    assert old in text
    return text.replace(old, new, 1)


CASES = {
    "int-yaml": (
        "c.yaml",
        _contract_yaml("concurrency: 200", f"concurrency: {HUGE}"),
        ["services[0].concurrency", "digits"],
    ),
    "int-yaml-tagged": (
        "c.yaml",
        _contract_yaml("concurrency: 200", f"concurrency: !!int {HUGE}"),
        ["services[0].concurrency", "digits"],
    ),
    "float-yaml-long": (
        "c.yaml",
        _contract_yaml("gpus: 16", f"gpus: {HUGE}.5"),
        ["tenants[0].quotas[0].gpus", "beyond the float range"],
    ),
    "float-yaml-exponent": (
        "c.yaml",
        _contract_yaml("gpus: 16", "gpus: 1.0e+400"),
        ["tenants[0].quotas[0].gpus", "1.0e+400", "float range"],
    ),
    "int-json": (
        "c.json",
        _contract_json('"concurrency": 200', f'"concurrency": {HUGE}'),
        ["services[0].concurrency", "digits"],
    ),
    "float-json": (
        "c.json",
        _contract_json('"concurrency": 200', '"concurrency": -1e400'),
        ["services[0].concurrency", "float range"],
    ),
    "nan-json": (
        "c.json",
        _contract_json('"concurrency": 200', '"concurrency": NaN'),
        ["services[0].concurrency", "NaN is not a JSON number"],
    ),
}


@pytest.mark.parametrize("command", ["check", "compile"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_contract_numbers_out_of_range(tmp_path: Path, command: str, case: str) -> None:
    name, text, fragments = CASES[case]
    path = tmp_path / name
    path.write_text(text)
    code, stderr = run(command, path)
    # the line of the offending value: file:line:column
    line = next(
        i
        for i, row in enumerate(text.splitlines(), 1)
        if HUGE in row or "e+400" in row or "e400" in row or "NaN" in row
    )
    assert_one_error(code, stderr, f"{path}:{line}:", *fragments)


def test_a_quoted_long_number_is_a_string_not_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(_contract_yaml("costCenter: CC-PLATFORM", f'costCenter: "{HUGE[:5000]}"'))
    code, stderr = run("check", path)
    assert code in (0, 1) and "digits" not in stderr and "Traceback" not in stderr


TOKEN = "t" * 20


@pytest.mark.parametrize(
    ("budget", "fragment"),
    [
        (HUGE, "digits"),
        (f"{HUGE}.0", "float range"),
        ("1.0e+999", "float range"),
        (".inf", "finite"),
        (".nan", "finite"),
        ("-.inf", "finite"),
    ],
)
def test_serve_token_budget_out_of_range(tmp_path: Path, budget: str, fragment: str) -> None:
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(
        f"tenants:\n  - name: finance\n    token: {TOKEN}\n    gpuHourBudget: {budget}\n"
    )
    code, stderr = run("serve", SCENARIO, "--tokens", tokens, "--port", "1")
    assert_one_error(code, stderr, f"{tokens}:4:", "tenants[0].gpuHourBudget", fragment)
