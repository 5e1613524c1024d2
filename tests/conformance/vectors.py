"""Load the upstream conformance vectors (one pytest case per vector).

The folder is `$GPUPACT_CONFORMANCE_DIR`, default `../shared/conformance` beside the project
root. Each `*.json` there is split into categories; each category is run by the module
`conformance.runners.<file>.<category>` (file stem with '-' -> '_'), whose `run(case, meta)`
asserts the upstream expectation. A category without a runner is skipped, never dropped.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DIR = PROJECT_ROOT.parent / "shared" / "conformance"


def conformance_dir() -> Path:
    return Path(os.environ.get("GPUPACT_CONFORMANCE_DIR", DEFAULT_DIR))


@dataclass(frozen=True)
class Vector:
    file: str  # module-safe stem, e.g. "volcano_kai"
    category: str
    id: str
    case: dict[str, Any] = field(repr=False)
    meta: dict[str, Any] = field(repr=False)

    @property
    def runner_module(self) -> str:
        return f"conformance.runners.{self.file}.{self.category}"


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text).strip("_").lower()


def _split(stem: str, data: dict[str, Any]) -> list[Vector]:
    file = _slug(stem)
    if isinstance(data.get("scenarios"), list):
        # scenario files: the meta is everything else; the category is the kind of test
        meta = {k: v for k, v in data.items() if k != "scenarios"}
        out = []
        for i, case in enumerate(data["scenarios"]):
            if "test_kind" in case:
                category = _slug(case["test_kind"].split()[0].split("(")[0])
            elif "scheduler" in case:
                category = _slug(case["scheduler"])
            else:
                category = "scenarios"
            vid = case.get("id") or case.get("name") or f"{stem}-{i}"
            out.append(Vector(file, category, str(vid), case, meta))
        return out
    meta = data.get("_meta", {})
    out = []
    for category, cases in data.items():
        if category.startswith("_") or not isinstance(cases, list):
            continue
        for i, case in enumerate(cases):
            test = case.get("source_test_name", "case")
            idx = case.get("case_index", i)
            vid = case.get("id") or f"{stem}/{category}/{test}#{idx}"
            out.append(Vector(file, _slug(category), vid, case, meta))
    return out


def load_vectors() -> list[Vector]:
    root = conformance_dir()
    if not root.is_dir():
        return []
    vectors: list[Vector] = []
    for path in sorted(root.glob("*.json")):
        vectors.extend(_split(path.stem, json.loads(path.read_text(encoding="utf-8"))))
    return vectors
