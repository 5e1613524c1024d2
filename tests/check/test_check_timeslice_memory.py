"""`gpupact check` reports a service whose model does not fit in its share of a time-sliced
GPU's memory (`timeslice-memory`, error): the k engines of a device share its memory, each
within 1/k of an engine's budget (plan/memory.py `time_sliced`), the share `gpupact plan` and
the twin use, so the pods would not start and the twin's replicas serve nothing."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

import gpupact.cli.check  # noqa: F401  (registers the command)
from gpupact.cli.main import app
from gpupact.contract import parse_contract
from gpupact.plan.planner import plan_service

NOW = "2026-11-11T00:00:00+00:00"
QWEN_14B = {"name": "qwen2.5-14b-instruct", "params": "14B", "quantization": "bf16"}
LLAMA_8B = {"name": "llama-3.1-8b-instruct", "params": "8B", "quantization": "bf16"}


def contract(sharing: str, model: dict[str, Any], tp: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "gpupact.io/v1alpha1",
        "kind": "Contract",
        "metadata": {"name": "shared", "owner": "platform@example.com", "costCenter": "CC-0"},
        "pools": [
            {
                "name": "gpu-shared",
                "gpu": {"model": "a100-80g", "perNode": 8, "topology": "nvlink-8"},
                "nodes": {"min": 1, "max": 2},
                "sharing": sharing,
                "classes": ["online-infer"],
                "coldStart": {"provision": "5m"},
            }
        ],
        "classes": [{"name": "online-infer"}],
        "tenants": [
            {
                "name": "team",
                "owner": "team@example.com",
                "costCenter": "CC-1",
                "quotas": [{"pool": "gpu-shared", "gpus": 16}],
            }
        ],
        "services": [
            {
                "name": "svc",
                "class": "online-infer",
                "tenant": "team",
                "model": model,
                "tensorParallel": tp,
                "concurrency": 10,
                "contextLength": 4096,
                "coldStart": "5m",
                "priority": "high",
                "replicas": {"min": 1, "max": 4},
                "loadTest": {"report": "lt-1", "sharing": sharing},
            }
        ],
    }


def check(tmp_path: Path, doc: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    path = tmp_path / "contract.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    result = CliRunner().invoke(app, ["check", str(path), "--now", NOW, "-o", "json"])
    return result.exit_code, json.loads(result.stdout)


def hits(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in report["findings"] if f["rule"] == "timeslice-memory"]


def test_a_model_larger_than_its_time_slice_is_a_check_error(tmp_path: Path) -> None:
    code, report = check(tmp_path, contract("timeslice:4", QWEN_14B))
    (hit,) = hits(report)
    assert code == 1
    assert hit["severity"] == "error" and hit["subject"] == "service/svc"
    assert hit["path"] == "services[0]" and hit["line"] is not None
    assert "pool gpu-shared (timeslice:4) runs 4 engines a GPU" in hit["message"]
    assert "0.225 x 79.2 GiB = 17.8 GiB a GPU" in hit["message"]
    assert "on a GPU of its own it would fit" in hit["message"]
    # plan says the same of the same service
    planned = plan_service(parse_contract(yaml.safe_dump(contract("timeslice:4", QWEN_14B)),
                                          "c.yaml").contract, "svc")  # fmt: skip
    (finding,) = [f for f in planned.findings if f.code == "timeslice-memory"]
    assert finding.message == hit["message"]


@pytest.mark.parametrize(
    ("sharing", "model", "tp"),
    [
        ("timeslice:2", QWEN_14B, 1),  # 0.45 x 79.2 GiB holds its 29.5 GB of weights
        ("timeslice:4", QWEN_14B, 2),  # half the weights a GPU
        ("timeslice:4", LLAMA_8B, 1),
        ("exclusive", QWEN_14B, 1),
    ],
)
def test_a_model_that_fits_its_share_is_not_reported(
    tmp_path: Path, sharing: str, model: dict[str, Any], tp: int
) -> None:
    doc = contract(sharing, model, tp)
    if sharing == "exclusive":
        del doc["services"][0]["loadTest"]
    _code, report = check(tmp_path, doc)
    assert hits(report) == []


@pytest.mark.parametrize(
    ("sharing", "expected"), [("timeslice:2", "0.45"), ("timeslice:4", "0.225")]
)
def test_compile_hands_the_engine_its_share_plan_sizes_with(sharing: str, expected: str) -> None:
    """The compiled Deployment passes the share as GPU_MEMORY_UTILIZATION (for the image's
    --gpu-memory-utilization), the same number plan and the twin size the replica with."""
    from gpupact.compile import CompileOptions, compile_contract
    from gpupact.plan.from_contract import workload_for_service

    parsed = parse_contract(yaml.safe_dump(contract(sharing, LLAMA_8B)), "c.yaml").contract
    bundle = compile_contract(parsed, CompileOptions(now=datetime.fromisoformat(NOW)))
    deployment = bundle.find("Deployment", "svc", "team")
    env = {
        e["name"]: e["value"]
        for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]
    }
    assert env["GPU_MEMORY_UTILIZATION"] == expected
    service = next(s for s in parsed.services if s.name == "svc")
    workload = workload_for_service(parsed, service)
    assert float(workload.engine.memory_fraction) == pytest.approx(float(expected))


def test_an_exclusive_pool_compiles_no_memory_share() -> None:
    from gpupact.compile import CompileOptions, compile_contract

    doc = contract("exclusive", LLAMA_8B)
    del doc["services"][0]["loadTest"]
    parsed = parse_contract(yaml.safe_dump(doc), "c.yaml").contract
    deployment = compile_contract(parsed, CompileOptions(now=datetime.fromisoformat(NOW))).find(
        "Deployment", "svc", "team"
    )
    names = [e["name"] for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]]
    assert "GPU_MEMORY_UTILIZATION" not in names


def max_context_hits(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in report["findings"] if f["rule"] == "model-max-context"]


def test_no_context_length_means_the_model_maximum_which_must_fit(tmp_path: Path) -> None:
    """Without contextLength vLLM takes the model's own maximum (Llama-3.1-8B: 131,072) as
    max_model_len and does not start when one such request does not fit its KV cache: on a
    GPU shared four ways it has ~16k tokens, on a GPU of its own ~450k."""
    shared = contract("timeslice:4", LLAMA_8B)
    del shared["services"][0]["contextLength"]
    _code, report = check(tmp_path, shared)
    (hit,) = max_context_hits(report)
    assert hit["severity"] == "warning" and hit["path"] == "services[0]"
    assert "vLLM takes llama-3.1-8b's maximum (131,072 tokens)" in hit["message"]
    assert "set contextLength" in hit["fix"]
    alone = contract("exclusive", LLAMA_8B)
    del alone["services"][0]["contextLength"], alone["services"][0]["loadTest"]
    assert max_context_hits(check(tmp_path, alone)[1]) == []
    assert max_context_hits(check(tmp_path, contract("timeslice:4", LLAMA_8B))[1]) == []
