"""A small clean contract to break one rule at a time, and edits written as dotted paths."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import yaml

from gpupact.contract import LoadedContract, parse_contract

NOW = datetime(2026, 11, 11, tzinfo=UTC)
DROP = object()

BASE: dict[str, Any] = {
    "apiVersion": "gpupact.io/v1alpha1",
    "kind": "Contract",
    "metadata": {"name": "base", "owner": "platform@example.com", "costCenter": "CC-0"},
    "pools": [
        {
            "name": "gpu-inference",
            "gpu": {"model": "a100-80g", "topology": "nvlink-8"},
            "nodes": {"min": 2, "max": 4},
            "classes": ["online-infer"],
            "coldStart": {"provision": "5m"},
        },
        {
            "name": "gpu-batch",
            "gpu": {"model": "a100-80g"},
            "nodes": {"max": 4},
            "classes": ["batch"],
            "coldStart": {"provision": "5m"},
        },
        {
            "name": "gpu-train",
            "gpu": {"model": "h100-80g", "topology": "nvlink-8"},
            "nodes": {"max": 2},
            "classes": ["fine-tune"],
        },
    ],
    "classes": [{"name": "online-infer"}, {"name": "batch"}, {"name": "fine-tune"}],
    "tenants": [
        {
            "name": "team",
            "owner": "team@example.com",
            "costCenter": "CC-1",
            "cohort": "shared",
            "quotas": [
                {"pool": "gpu-inference", "gpus": 8},
                {"pool": "gpu-batch", "gpus": 16},
                {"pool": "gpu-train", "gpus": 16},
            ],
        },
        {
            "name": "other",
            "owner": "other@example.com",
            "costCenter": "CC-2",
            "cohort": "shared",
            "quotas": [{"pool": "gpu-batch", "gpus": 8}],
        },
    ],
    "services": [
        {
            "name": "svc",
            "class": "online-infer",
            "tenant": "team",
            "model": {"name": "llama-2-7b", "params": "7B"},  # a catalogue model: plan sizes it
            "concurrency": 10,
            "contextLength": 4096,
            "coldStart": "5m",
            "priority": "high",
            "replicas": {"min": 2, "max": 4},
        }
    ],
    "jobs": [
        {"name": "job", "tenant": "team", "class": "batch", "pods": 4},
        {"name": "tune", "tenant": "team", "class": "fine-tune", "pods": 2, "gpusPerPod": 8},
    ],
}


def edit(data: dict[str, Any], edits: list[tuple[str, Any]]) -> dict[str, Any]:
    """A copy of `data` with edits applied: `a.0.b` sets, `a.0.b+` appends, DROP deletes."""
    data = copy.deepcopy(data)
    for dotted, value in edits:
        append = dotted.endswith("+")
        *parents, last = dotted.rstrip("+").split(".")
        node: Any = data
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
        key: Any = int(last) if isinstance(node, list) else last
        if append:
            node.setdefault(key, []).append(copy.deepcopy(value))
        elif value is DROP:
            del node[key]
        else:
            node[key] = copy.deepcopy(value)
    return data


def load(data: dict[str, Any]) -> LoadedContract:
    return parse_contract(yaml.safe_dump(data, sort_keys=False), "contract.yaml")
