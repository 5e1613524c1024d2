"""A contract service whose model the planner cannot know: plan and simulate refuse it at the
contract's file, line and field (what `check` reports as unknown-model)."""

from __future__ import annotations

from pathlib import Path

from twin_helpers import contract, scenario, write
from typer.testing import CliRunner

import gpupact.cli.plan
import gpupact.cli.simulate  # noqa: F401  (registers `simulate`)
from gpupact.cli.main import app


def test_plan_and_simulate_refuse_it_at_the_contracts_line(tmp_path: Path) -> None:
    doc = contract()
    doc["services"][0]["model"] = {"name": "acme-chat-13b", "params": "13B"}
    folder = write(tmp_path / "scen", doc, scenario())
    text = (folder / "contract.yaml").read_text().splitlines()
    line = next(i for i, t in enumerate(text, 1) if "acme-chat-13b" in t)
    for argv in (["plan", str(folder / "contract.yaml")], ["simulate", str(folder)]):
        result = CliRunner().invoke(app, argv)
        assert result.exit_code == 2, result.output
        (error,) = result.stderr.strip().splitlines()
        assert f"contract.yaml:{line}:" in error
        assert "services[0].model.name" in error
        assert "unknown model 'acme-chat-13b'" in error
