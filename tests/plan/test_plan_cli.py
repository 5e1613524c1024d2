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
    assert "79.25 GiB" in out  # the A100-80GB as the runtime reports it, in GiB
    assert "not in the catalogue" not in out  # qwen2.5-14b is in the catalogue
    assert "start scaling at 2026-11-09T23:46:30+08:00" in out  # double-eleven, 13m30s early
    assert "start scaling at cron '46 17 28 * *'" in out
    assert out.rstrip().endswith("plan acme: ok")


def test_acme_json_and_yaml() -> None:
    code, out, _ = run(ACME, "-o", "json")
    data = json.loads(out)
    assert code == 0 and data["ok"] and data["contract"] == "acme"
    big = next(s for s in data["services"] if s["service"] == "llm-70b-tp4")
    # Llama-3.1-70B in fp16: 70.55B parameters x 2 bytes, the vocabulary split over 4 GPUs
    # (70.55B parameters x 2 bytes; the replica holds the 161 norms of 8192 on each of 4 GPUs)
    assert big["memory"]["weightsBytes"] == 141_107_412_992 + 3 * 2 * 8192 * 161
    assert big["memory"]["weightsBytesPerGpu"] * 4 == big["memory"]["weightsBytes"]
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
    # a 10 s SLO every service can meet (cs-agent may still need more than its replicas.max)
    _, out, _ = run(ACME, "--ttft-slo", "10s", "-o", "json")
    assert "ttft-slo" not in {f["code"] for f in json.loads(out)["findings"]}


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


def test_params_needs_the_kv_shape() -> None:
    code, _, err = run("--model", "my-13b", "--params", "13B", "--gpu", "l40s")
    assert code == 2 and "--layers and --kv-heads" in err
    code, out, _ = run(
        "--model", "my-13b", "--params", "13B", "--layers", "40", "--kv-heads", "40",
        "--gpu", "l40s", "-o", "json",
    )  # fmt: skip
    data = json.loads(out)
    assert code in (0, 1) and data["model"]["approximate"]
    assert data["memory"]["kvBytesPerToken"] == 2 * 40 * 40 * 128 * 2
    assert any("assumed" in a for a in data["assumptions"])


def test_a_quantised_name_and_engine_flags(tmp_path: Path) -> None:
    code, out, err = run(
        "--model", "Qwen/Qwen2.5-72B-Instruct-AWQ", "--gpu", "h100", "--engine", "sglang",
        "--gpu-memory-utilization", "0.85", "--max-num-seqs", "64",
        "--max-num-batched-tokens", "4096", "--kv-cache-dtype", "fp8", "-o", "json",
    )  # fmt: skip
    assert code in (0, 1), err
    data = json.loads(out)
    assert data["model"]["quantization"] == "int4" and data["model"]["kvCacheDtype"] == "fp8"
    assert data["memory"]["engine"] == "sglang" and data["memory"]["utilization"] == 0.85
    assert data["engine"]["maxNumSeqs"] == 64 and data["engine"]["maxNumBatchedTokens"] == 4096
    assert data["engine"]["kvTokens"] == data["memory"]["kvTokens"]


def test_a_model_config_file(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(
        json.dumps(
            {"num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
             "intermediate_size": 11008, "vocab_size": 32000}
        )
    )  # fmt: skip
    code, out, err = run("--model-config", config, "--gpu", "a100-80gb", "-o", "json")
    assert code in (0, 1), err
    data = json.loads(out)
    # no num_key_value_heads: multi-head attention, 512 KiB a token
    assert data["memory"]["kvBytesPerToken"] == 2 * 32 * 32 * 128 * 2


def test_a_config_list_naming_no_module_is_said_in_the_plan(tmp_path: Path) -> None:
    """An entry of quantization_config.ignore that names no module changes nothing, and the
    plan says so instead of silently counting it quantised."""
    config = tmp_path / "config.json"
    config.write_text(
        json.dumps(
            {"num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
             "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
             "quantization_config": {
                 "quant_method": "compressed-tensors",
                 "config_groups": {"g": {"weights": {"num_bits": 4}}},
                 "ignore": ["lm_head", "re:visual.*"]}}
        )
    )  # fmt: skip
    code, out, err = run("--model-config", config, "--gpu", "a100-80gb", "-o", "json")
    assert code in (0, 1), err
    assert "1 entry names no module of the model ('re:visual.*')" in out


def test_a_contract_naming_an_unknown_model_is_the_same_error(tmp_path: Path) -> None:
    text = ACME.read_text().replace("qwen2.5-14b-instruct", "qwen2.5-15b-instruct")
    path = tmp_path / "contract.yaml"
    path.write_text(text)
    code, _, err = run(path)
    assert code == 2
    # located at the contract's line and field, as `check` reports it (unknown-model)
    assert "contract.yaml:" in err and "services[0].model.name: " in err
    assert "unknown model 'qwen2.5-15b-instruct'" in err
    assert "closest: " in err and "qwen2.5-14b" in err


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--model", "gpt-9", "--gpu", "h100-80gb"], "unknown model 'gpt-9'"),
        (["--model", "llama-3.1-7b", "--gpu", "h100"], "llama-3.1-8b"),
        (["--model", "llama-3.1-8b", "--gpu", "h10"], "closest: "),
        ([*FLAGS[:4], "--gpu-memory-utilization", "1.5"], "--gpu-memory-utilization"),
        ([*FLAGS[:4], "--gpu-memory", "lots"], "--gpu-memory"),
        ([*FLAGS[:4], "--kv-cache-dtype", "int4"], "--kv-cache-dtype"),
        ([*FLAGS[:4], "--engine", "tgi"], "--engine"),
        (["--model-config", "/no/such/config.json", "--gpu", "h100"], "config.json"),
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
