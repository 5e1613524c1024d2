"""A one-pool, one-service contract to plan, with the service's fields given per test."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from gpupact.contract import Contract, load_contract, parse_contract

ROOT = Path(__file__).resolve().parents[2]
ACME = ROOT / "examples/acme/contract.yaml"


def acme() -> Contract:
    return load_contract(ACME).contract


def contract(
    service: dict[str, Any] | None = None,
    gpu: dict[str, Any] | None = None,
    pool: dict[str, Any] | None = None,
) -> Contract:
    data = {
        "apiVersion": "gpupact.io/v1alpha1",
        "kind": "Contract",
        "metadata": {"name": "plan-test"},
        "pools": [
            {
                "name": "gpu-inference",
                "gpu": {"model": "h100-80g", "perNode": 8, "topology": "nvlink-8", **(gpu or {})},
                "nodes": {"min": 0, "max": 4},
                "classes": ["online-infer"],
                "coldStart": {"provision": "4m", "driver": "2m", "imagePull": "3m"},
                **(pool or {}),
            }
        ],
        "classes": [{"name": "online-infer"}],
        "services": [
            {
                "name": "chat",
                "class": "online-infer",
                "model": {"name": "llama-3.1-8b-instruct", "params": "8B"},
                "concurrency": 100,
                "contextLength": 8192,
                "tokens": {"input": {"p50": 1000, "p95": 1000}, "output": {"p50": 200, "p95": 200}},
                "replicas": {"min": 1, "max": 8},
                **(service or {}),
            }
        ],
    }
    return parse_contract(yaml.safe_dump(data), "plan-test.yaml").contract
