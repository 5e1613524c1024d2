"""Where the upstream CRDs are (the same place the compile tests look)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def crd_dir_or_skip() -> Path:
    path = Path(os.environ.get("GPUPACT_CRD_DIR") or ROOT.parent / "shared" / "schemas" / "crds")
    if not path.is_dir() or not list(path.glob("*.yaml")):
        pytest.skip(f"upstream CRDs not found at {path} (set GPUPACT_CRD_DIR)")
    return path
