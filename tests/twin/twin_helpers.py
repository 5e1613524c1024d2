"""Small scenarios written into a temporary directory, for twin tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

POOL_A100 = {
    "model": "a100-80g",
    "product": "NVIDIA-A100-SXM4-80GB",
    "perNode": 8,
    "topology": "nvlink-8",
}


def contract(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "apiVersion": "gpupact.io/v1alpha1",
        "kind": "Contract",
        "metadata": {"name": "twin-test", "owner": "platform@example.com", "costCenter": "CC-0"},
        "pools": [
            {
                "name": "gpu-inference",
                "gpu": POOL_A100,
                "nodes": {"min": 1, "max": 2},
                "classes": ["online-infer"],
                "coldStart": {
                    "provision": "2m",
                    "driver": "1m",
                    "devicePlugin": "30s",
                    "imagePull": "1m",
                    "modelLoad": "1m",
                },
            },
            {
                "name": "gpu-batch",
                "gpu": POOL_A100,
                "nodes": {"min": 1, "max": 1},
                "classes": ["batch", "fine-tune"],
            },
        ],
        "classes": [
            {"name": "online-infer", "pools": ["gpu-inference"]},
            {"name": "batch", "pools": ["gpu-batch"]},
            {"name": "fine-tune", "pools": ["gpu-batch"]},
        ],
        "tenants": [
            {
                "name": "shop",
                "owner": "shop@example.com",
                "costCenter": "CC-1",
                "quotas": [{"pool": "gpu-inference", "gpus": 16}],
            },
            {
                "name": "lab",
                "owner": "lab@example.com",
                "costCenter": "CC-2",
                "quotas": [{"pool": "gpu-batch", "gpus": 8}],
            },
        ],
        "services": [
            {
                "name": "chat",
                "class": "online-infer",
                "tenant": "shop",
                "model": {"name": "llama-3.1-8b-instruct", "params": "8B", "quantization": "bf16"},
                "gpu": {"model": "a100-80g"},
                "concurrency": 32,
                "contextLength": 8192,
                "tokens": {"input": {"p50": 500, "p95": 2000}, "output": {"p50": 200, "p95": 500}},
                "replicas": {"min": 2, "max": 8},
                "coldStart": "2m",
                "priority": "critical",
            }
        ],
    }
    base.update(overrides)
    return base


def scenario(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "apiVersion": "gpupact.io/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "twin-test"},
        "contract": "contract.yaml",
        "start": "2026-11-11T00:00:00Z",
        "duration": "2h",
        "step": "10s",
        "seed": 3,
        "load": [{"service": "chat", "rps": [{"at": "0s", "value": 5}, {"at": "2h", "value": 5}]}],
        "jobs": [
            {
                "name": "embed",
                "tenant": "lab",
                "class": "batch",
                "perHour": 6,
                "pods": 2,
                "duration": "20m",
            }
        ],
    }
    base.update(overrides)
    return base


def write(directory: Path, contract_doc: dict[str, Any], scenario_doc: dict[str, Any]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "contract.yaml").write_text(yaml.safe_dump(contract_doc, sort_keys=False))
    (directory / "scenario.yaml").write_text(yaml.safe_dump(scenario_doc, sort_keys=False))
    return directory
