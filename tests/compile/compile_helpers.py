"""Shared setup for the compile tests: the ACME example, a small contract to vary, the CRDs."""

from __future__ import annotations

import copy
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpupact.compile import Bundle, CompileOptions, Obj, compile_contract
from gpupact.contract import load_contract, parse_contract
from gpupact.contract.schema import Contract

ROOT = Path(__file__).resolve().parents[2]
ACME = ROOT / "examples" / "acme" / "contract.yaml"
BEFORE_EXPIRY = datetime(2026, 6, 1, tzinfo=UTC)  # finance's raise (until 2026-12-31) active
AFTER_EXPIRY = datetime(2027, 1, 1, tzinfo=UTC)
KUBERNETES_VERSION = "1.34.0"  # a recent version kubernetes-validate ships


def crd_dir() -> Path:
    """../shared/schemas/crds from the project root, or $GPUPACT_CRD_DIR; skip if absent."""
    path = Path(os.environ.get("GPUPACT_CRD_DIR") or ROOT.parent / "shared" / "schemas" / "crds")
    if not path.is_dir() or not list(path.glob("*.yaml")):
        pytest.skip(f"upstream CRDs not found at {path} (set GPUPACT_CRD_DIR)")
    return path


def acme() -> Contract:
    return load_contract(ACME).contract


def compile_acme(now: datetime = BEFORE_EXPIRY, **options: Any) -> Bundle:
    return compile_contract(acme(), CompileOptions(now=now, **options))


def find(bundle: Bundle, kind: str, name: str, api: str | None = None) -> Obj:
    hits = [
        e.obj
        for e in bundle.objects
        if e.obj["kind"] == kind
        and e.obj["metadata"]["name"] == name
        and (api is None or e.obj["apiVersion"] == api)
    ]
    assert len(hits) == 1, f"expected one {kind} {name}, got {len(hits)}"
    return hits[0]


def kinds(bundle: Bundle) -> set[str]:
    return {e.obj["kind"] for e in bundle.objects}


# A contract that exercises what ACME does not: MIG, explicit cpu/memory, a tenantless
# fixed-size service, a service-scope gang, a custom queue, a pool without elastic nodes.
VARIED: dict[str, Any] = {
    "apiVersion": "gpupact.io/v1alpha1",
    "kind": "Contract",
    "metadata": {"name": "varied", "owner": "Platform <gpu@example.com>", "costCenter": "CC 1"},
    "pools": [
        {
            "name": "gpu-mig",
            "gpu": {"model": "a100-80g", "perNode": 8},
            "nodes": {"min": 2, "max": 2},
            "sharing": "mig:1g.10gb",
            "classes": ["batch"],
            "node": {"cpu": "96", "memory": "1Ti"},
        },
        {
            "name": "gpu-online",
            "gpu": {"model": "h100-80g", "perNode": 8, "topology": "nvlink-8"},
            "nodes": {"min": 1, "max": 3},
            "classes": ["online-infer"],
            "zones": ["zone-a", "zone-b"],
            "coldStart": {"provision": "2h"},
        },
        {
            "name": "gpu-train",
            "gpu": {"model": "h100-80g", "perNode": 8, "topology": "nvlink-8"},
            "nodes": {"max": 2},
            "classes": ["fine-tune"],
        },
    ],
    "classes": [{"name": "online-infer"}, {"name": "batch"}, {"name": "fine-tune"}],
    "tenants": [
        {
            "name": "lab",
            "owner": "Lab Team <lab@example.com>",
            "costCenter": "CC 77",
            "quotas": [
                {"pool": "gpu-mig", "gpus": 28},
                {"pool": "gpu-online", "gpus": 8},
                {"pool": "gpu-train", "gpus": 16},
            ],
        }
    ],
    "services": [
        {
            "name": "shared-embed",
            "class": "online-infer",
            "replicas": {"min": 2, "max": 2},
            "resources": {"requests": {"cpu": "4", "memory": "32Gi"}},
        },
        {
            "name": "ring",
            "class": "online-infer",
            "tenant": "lab",
            "tensorParallel": 8,
            "gpusPerPod": 8,
            "gang": "service",
            "replicas": {"min": 3, "max": 5},
            "headroom": "30%",
        },
        {
            "name": "wide",
            "class": "online-infer",
            "tenant": "lab",
            "tensorParallel": 16,
            "gpusPerPod": 8,
            "gang": "replica",
            "replicas": {"min": 1, "max": 2},
        },
    ],
    "jobs": [
        {
            "name": "shards",
            "tenant": "lab",
            "class": "batch",
            "pods": 3,
            "queue": "lab-special",
            "resources": {"limits": {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "1"}},
        },
        {
            "name": "pretrain",
            "tenant": "lab",
            "class": "fine-tune",
            "pods": 2,
            "gpusPerPod": 8,
            "schedule": "0 3 * * 6",
        },
    ],
}


def varied(edit: dict[str, Any] | None = None) -> Contract:
    data = copy.deepcopy(VARIED)
    for path, value in (edit or {}).items():
        target: Any = data
        parts = path.split(".")
        for part in parts[:-1]:
            target = target[int(part)] if part.isdigit() else target[part]
        last = parts[-1]
        if last.isdigit():
            target[int(last)] = value
        else:
            target[last] = value
    return parse_contract(yaml.safe_dump(data), "varied.yaml").contract


def compile_varied(edit: dict[str, Any] | None = None, **options: Any) -> Bundle:
    return compile_contract(varied(edit), CompileOptions(now=BEFORE_EXPIRY, **options))
