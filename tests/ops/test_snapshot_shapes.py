"""Snapshot files in the shapes real tools write, and the shapes that must be refused:
client-go lists whose items carry no kind, a `kind: Pod` of another API, items that are not
a list."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gpupact.cluster.snapshot import load_objects
from gpupact.errors import InputError
from gpupact.ops import load_snapshot_dir
from gpupact.ops.model import SnapshotBuilder

FIXTURE = Path(__file__).parent / "fixtures" / "healthy"


def _strip_kinds(data: dict) -> dict:
    """What client-go's List() returns, serialised: items without kind/apiVersion."""
    first = data["items"][0]
    items = [{k: v for k, v in i.items() if k not in ("kind", "apiVersion")} for i in data["items"]]
    return {
        "kind": f"{first['kind']}List",
        "apiVersion": first["apiVersion"],
        "metadata": {"resourceVersion": "1"},
        "items": items,
    }


def test_typed_lists_without_item_kinds_read_the_same(tmp_path: Path) -> None:
    folder = tmp_path / "snap"
    shutil.copytree(FIXTURE, folder)
    for name in ("nodes.json", "pods.json"):
        data = json.loads((FIXTURE / name).read_text())
        assert len({i["kind"] for i in data["items"]}) == 1
        (folder / name).write_text(json.dumps(_strip_kinds(data)))
    assert load_snapshot_dir(folder).counts() == load_snapshot_dir(FIXTURE).counts()
    objs = load_objects([folder / "nodes.json", folder / "pods.json"])
    assert len(objs.nodes) == 8 and objs.pods


@pytest.mark.parametrize("api", ["example.com/v1", "v2", "apps/v1"])
def test_a_pod_or_node_of_another_api_is_not_taken_for_one(api: str, tmp_path: Path) -> None:
    pod = {"apiVersion": api, "kind": "Pod", "metadata": {"name": "p", "namespace": "x"}}
    node = {"apiVersion": api, "kind": "Node", "metadata": {"name": "n"}}
    builder = SnapshotBuilder()
    builder.add(pod)
    builder.add(node)
    snap = builder.finish()
    assert snap.pods == [] and snap.nodes == []
    assert snap.ignored == {f"Pod ({api})": 1, f"Node ({api})": 1}
    path = tmp_path / "objs.json"
    path.write_text(json.dumps({"kind": "List", "items": [pod, node]}))
    objs = load_objects([path])
    assert objs.pods == [] and objs.nodes == []


def test_core_objects_without_api_version_still_read() -> None:
    builder = SnapshotBuilder()
    builder.add({"kind": "Node", "metadata": {"name": "n"}})
    assert [n.name for n in builder.finish().nodes] == ["n"]


@pytest.mark.parametrize("items", [{"a": 1}, "text", 7])
def test_items_that_are_not_a_list_are_not_an_empty_cluster(tmp_path: Path, items) -> None:
    folder = tmp_path / "snap"
    shutil.copytree(FIXTURE, folder)
    (folder / "pods.json").write_text(json.dumps({"kind": "PodList", "items": items}))
    with pytest.raises(InputError, match=r"pods\.json:1:\d+: items: expected a list"):
        load_snapshot_dir(folder)
