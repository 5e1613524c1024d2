"""`gpupact plan --profiles`: token percentiles measured by the gateway replace declared ones."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from gpupact.cli.main import app
from gpupact.ledger import Ledger

ACME = Path(__file__).resolve().parents[2] / "examples" / "acme" / "contract.yaml"


def _ledger(tmp_path: Path, model: str, prompt: int) -> str:
    db = f"sqlite:///{tmp_path / 'ledger.db'}"
    body = {
        "inputTokens": [{"le": prompt // 2, "count": 10}, {"le": prompt, "count": 90}],
        "outputTokens": [{"le": 100, "count": 50}, {"le": 400, "count": 50}],
    }
    with Ledger.open(db) as store:
        store.add_profile("customer-service", model, 0.0, body)
    return db


def _plan(*args: str) -> dict:
    result = CliRunner().invoke(app, ["plan", *args, "-o", "json"])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.output)


def test_measured_prompts_change_the_contract_plan(tmp_path: Path) -> None:
    declared = _plan(str(ACME), "--service", "cs-agent")
    db = _ledger(tmp_path, "qwen2.5-14b-instruct", 16000)
    measured = _plan(str(ACME), "--service", "cs-agent", "--profiles", db)
    before = declared["services"][0]["requests"]["input"]
    after = measured["services"][0]["requests"]["input"]
    assert (before["p50"], before["p95"]) == (800, 6000)
    assert (after["p50"], after["p95"]) == (16000, 16000)
    assert measured["services"][0]["requests"]["output"]["p95"] == 400


def test_flags_mode_takes_the_models_profile_and_flags_still_win(tmp_path: Path) -> None:
    db = _ledger(tmp_path, "llama-3.1-8b", 4000)
    base = ["--model", "llama-3.1-8b", "--gpu", "h100-80gb", "--profiles", db]
    measured = _plan(*base)
    assert measured["requests"]["input"]["p95"] == 4000
    flagged = _plan(*base, "--input-p95", "9000")
    assert flagged["requests"]["input"]["p95"] == 9000
