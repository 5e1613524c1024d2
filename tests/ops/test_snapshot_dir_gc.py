"""load_snapshot_dir pauses the cyclic collector while it loads, and always restores it."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pytest

from gpupact.errors import InputError
from gpupact.ops import load_snapshot_dir


def write(tmp_path: Path, items: list[dict]) -> Path:
    (tmp_path / "objects.json").write_text(json.dumps({"kind": "List", "items": items}))
    return tmp_path


NODE = {"kind": "Node", "metadata": {"name": "n"}, "status": {"capacity": {"cpu": "1"}}}


@pytest.fixture
def collector():
    was = gc.isenabled()
    yield
    gc.enable() if was else gc.disable()


@pytest.mark.parametrize("enabled", [True, False])
def test_collector_state_is_restored(tmp_path: Path, collector, enabled: bool) -> None:
    gc.enable() if enabled else gc.disable()
    snapshot = load_snapshot_dir(write(tmp_path, [NODE]))
    assert [n.name for n in snapshot.nodes] == ["n"]
    assert gc.isenabled() is enabled


def test_collector_is_restored_after_a_bad_object(tmp_path: Path, collector) -> None:
    gc.enable()
    bad = {"kind": "Pod", "metadata": {"name": "p"}, "spec": {"tolerations": "x"}}
    with pytest.raises(InputError, match=r"spec\.tolerations"):
        load_snapshot_dir(write(tmp_path, [NODE, bad]))
    assert gc.isenabled()
