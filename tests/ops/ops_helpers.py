"""Shared setup for the diagnose / audit tests: fixtures, the fixed clock, the CLI."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

import gpupact.cli.audit
import gpupact.cli.diagnose  # noqa: F401  (registers `diagnose`)
from gpupact.cli.main import app
from gpupact.contract import load_contract
from gpupact.contract.schema import Contract
from gpupact.ops import Analysis, load_snapshot_dir
from gpupact.ops.model import parse_time

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"
ROOT = HERE.parents[1]
ACME = ROOT / "examples" / "acme" / "contract.yaml"
NOW_TEXT = "2026-11-10T12:00:00Z"
NOW = parse_time(NOW_TEXT)
assert NOW is not None


def fixture(name: str) -> Path:
    return FIXTURES / name


def acme() -> Contract:
    return load_contract(ACME).contract


def analysis(name: str, *, contract: Contract | None = None) -> Analysis:
    return Analysis(load_snapshot_dir(fixture(name)), now=NOW, contract=contract)


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr
