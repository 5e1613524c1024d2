"""`gpupact plan` end to end: the acme contract, flags, every output format, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from plan_helpers import ACME
from typer.testing import CliRunner

from gpupact.cli.main import _register, app

_register()

FLAGS = [
    "--model", "llama-3.1-70b", "--gpu", "h100-80gb", "--quantization", "fp8",
    "--context", "32768", "--concurrency", "200", "--ttft-slo", "2s",
    "--input-p50", "1000", "--input-p95", "4000", "--output-p50", "200", "--output-p95", "800",
]  # fmt: skip


def run(*args: str | Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["plan", *map(str, args)])
    return result.exit_code, result.stdout, result.stderr


def test_acme_text() -> None:
    code, out, err = run(ACME)
    assert code == 0, err
    assert "cs-agent" in out and "llm-70b-tp4" in out
    assert "327,680 B/token" in out  # Llama-3.1-70B fp16 KV
    assert "start scaling 13m30s before the peak" in out
    assert "not in the catalogue" in out  # qwen2.5-14b is approximated, and says so
    assert "start scaling at 2026-11-09T23:46:30+08:00" in out  # double-eleven, 13m30s early
    assert "start scaling at cron '46 17 28 * *'" in out
    assert out.rstrip().endswith("plan acme: ok")


def test_acme_json_and_yaml() -> None:
    code, out, _ = run(ACME, "-o", "json")
    data = json.loads(out)
    assert code == 0 and data["ok"] and data["contract"] == "acme"
    big = next(s for s in data["services"] if s["service"] == "llm-70b-tp4")
    assert big["memory"]["weightsBytes"] == 141_107_412_992
    assert big["memory"]["tensorParallel"] == 4 and big["memory"]["minTensorParallel"] == 2
    assert big["prewarm"]["leadSeconds"] == 810
    assert big["capacity"]["gpus"] == big["capacity"]["replicas"] * 4
    assert [w["window"] for w in data["prewarm"]] == ["double-eleven", "month-end"]
    code, out, _ = run("-f", ACME, "--service", "cs-agent", "-o", "yaml")
    data = yaml.safe_load(out)
    assert code == 0 and [s["service"] for s in data["services"]] == ["cs-agent"]


def test_a_slo_the_contract_cannot_meet_is_exit_1() -> None:
    # cs-agent's p95 prompt (6000 tokens) alone takes ~1.2s to prefill on one A100, and the
    # 70B service's p99 prompt (~9k tokens) ~2s on four: no replica count meets 1s
    code, out, _ = run(ACME, "--ttft-slo", "1s", "-o", "json")
    data = json.loads(out)
    assert code == 1 and not data["ok"]
    found = {(f["subject"], f["code"]) for f in data["findings"]}
    assert ("service/cs-agent", "ttft-slo") in found
    assert ("service/llm-70b-tp4", "ttft-slo") in found
    code, _, _ = run(ACME, "--ttft-slo", "20s")
    assert code == 0


def test_flags_json() -> None:
    code, out, err = run(*FLAGS, "-o", "json")
    assert code == 0, err
    data = json.loads(out)
    assert data["service"] == "llama-3.1-70b" and data["model"]["quantization"] == "fp8"
    assert data["memory"]["tensorParallel"] == 2
    assert data["capacity"]["ttftP99Seconds"] <= 2.0
    assert data["capacity"]["nodes"] == -(-data["capacity"]["gpus"] // 8)


def test_flags_text_and_a_model_that_does_not_fit() -> None:
    code, out, _ = run("--model", "llama-3.1-405b", "--gpu", "a100-80gb", "--context", "8192")
    assert code == 1
    assert "does-not-fit-node" in out


def test_an_unknown_model_with_params_is_approximated() -> None:
    code, out, _ = run("--model", "my-13b", "--params", "13B", "--gpu", "l40s", "-o", "json")
    data = json.loads(out)
    assert code == 0 and data["model"]["approximate"]
    assert any("not in the catalogue" in a for a in data["assumptions"])


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--model", "gpt-9", "--gpu", "h100-80gb"], "unknown model 'gpt-9'"),
        (["--model", "llama-3.1-8b", "--gpu", "tpu-v5"], "unknown GPU 'tpu-v5'"),
        (["--model", "llama-3.1-8b"], "--model and --gpu"),
        ([*FLAGS[:4], "--ttft-slo", "2"], "--ttft-slo"),
        ([*FLAGS[:4], "--params", "lots"], "--params"),
        ([*FLAGS[:4], "--headroom", "120%"], "--headroom"),
        ([*FLAGS[:4], "--cold-start", "provision"], "--cold-start"),
        ([*FLAGS[:4], "--cold-start", "boot=4m"], "--cold-start"),
        ([*FLAGS[:4], "--input-p50", "900", "--input-p95", "100"], "p50 <= p95"),
        ([*FLAGS[:4], "--tp", "16"], "--tp"),
        ([*FLAGS[:4], "--quantization", "fp6"], "fp6"),
        ([*FLAGS[:4], "--concurrency", "0"], "--concurrency"),
        ([*FLAGS[:4], "--service", "x"], "--service needs a contract"),
        ([str(ACME), "--model", "llama-3.1-8b"], "not both"),
        ([str(ACME), "--service", "nope"], "no service named 'nope'"),
        (["/no/such/contract.yaml"], "contract.yaml"),
    ],
)
def test_bad_input_is_one_line_exit_2(args: list[str], fragment: str) -> None:
    code, out, err = run(*args)
    lines = err.strip().splitlines()
    assert code == 2, (code, out, err)
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert fragment in lines[0]
    assert "Traceback" not in out + err
