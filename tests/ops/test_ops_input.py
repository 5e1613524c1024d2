"""Snapshot directories: the shapes kubectl prints, and bad input as one located line (exit 2)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from ops_helpers import NOW, NOW_TEXT, fixture, run

from gpupact.errors import InputError
from gpupact.ops import Analysis, diagnose, load_snapshot_dir, open_cluster
from gpupact.ops.model import SnapshotBuilder, parse_event


def copy_fixture(tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    shutil.copytree(fixture(name), target)
    return target


def test_one_mixed_list_file() -> None:
    snap = load_snapshot_dir(fixture("node-drift"))
    assert [p.name for p in fixture("node-drift").iterdir()] == ["cluster.json"]
    assert len(snap.nodes) == 8 and len(snap.podgroups) == 2 and len(snap.kueue) == 11
    assert snap.counts()["nodePools"] == 2


def test_one_object_per_yaml_file(tmp_path: Path) -> None:
    import yaml

    items = json.loads((fixture("fragmentation") / "nodes.json").read_text())["items"]
    for item in items:
        (tmp_path / f"{item['metadata']['name']}.yaml").write_text(yaml.safe_dump(item))
    pods = json.loads((fixture("fragmentation") / "pods.json").read_text())
    (tmp_path / "pods.json").write_text(json.dumps(pods["items"]))  # a bare JSON array
    snap = load_snapshot_dir(tmp_path)
    report = diagnose(Analysis(snap, now=NOW))
    assert [d.finding.code for d in report.diagnoses] == ["gpu-fragmentation"]


def test_events_k8s_io_v1_shape() -> None:
    event = parse_event(
        {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": "p.1", "namespace": "ns"},
            "regarding": {"kind": "Pod", "name": "p", "namespace": "ns", "uid": "u"},
            "reason": "TriggeredScaleUp",
            "note": "pod triggered scale-up: [{gpu-pool 2->3 (max: 6)}]",
            "reportingController": "cluster-autoscaler",
            "eventTime": "2026-11-10T11:58:00.000000Z",
            "series": {"count": 3, "lastObservedTime": "2026-11-10T11:59:00.000000Z"},
        }
    )
    assert (event.object_name, event.reason, event.component, event.count) == (
        "p",
        "TriggeredScaleUp",
        "cluster-autoscaler",
        3,
    )
    assert event.message.startswith("pod triggered scale-up")


def test_unknown_kinds_are_counted() -> None:
    builder = SnapshotBuilder()
    builder.add({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})
    assert builder.finish().ignored == {"ConfigMap": 1}


def _bad(tmp_path: Path, file: str, mutate) -> str:  # type: ignore[no-untyped-def]
    folder = copy_fixture(tmp_path, "healthy")
    path = folder / file
    data = json.loads(path.read_text())
    mutate(data)
    path.write_text(json.dumps(data, indent=2))
    with pytest.raises(InputError) as err:
        load_snapshot_dir(folder)
    return str(err.value)


def test_bad_node_field_is_located(tmp_path: Path) -> None:
    def mutate(data):  # type: ignore[no-untyped-def]
        data["items"][1]["status"]["allocatable"]["nvidia.com/gpu"] = "eight"

    text = _bad(tmp_path, "nodes.json", mutate)
    assert "nodes.json:" in text
    assert "status.allocatable.nvidia.com/gpu" in text
    assert "Node inf-a100-1" in text


@pytest.mark.parametrize(
    ("resource", "amount", "message"),
    [
        ("memory", "100E", "'100E' is too large: over 2^63-1 units"),
        ("cpu", "10E", "'10E' is too large: over 2^63-1 millicores"),
        ("nvidia.com/gpu", "100000000", "100000000 GPUs on one node is more than the 1024"),
    ],
)
def test_node_amount_out_of_range_is_located(
    tmp_path: Path, resource: str, amount: str, message: str
) -> None:
    def mutate(data):  # type: ignore[no-untyped-def]
        data["items"][1]["status"]["allocatable"][resource] = amount

    text = _bad(tmp_path, "nodes.json", mutate)
    assert "nodes.json:" in text and f"status.allocatable.{resource}: Node inf-a100-1: " in text
    assert message in text


def test_bad_gpu_annotation_is_located(tmp_path: Path) -> None:
    def mutate(data):  # type: ignore[no-untyped-def]
        data["items"][8]["metadata"].setdefault("annotations", {})["gpupact.io/gpu-milli"] = "lots"

    text = _bad(tmp_path, "pods.json", mutate)
    assert "metadata.annotations.gpupact.io/gpu-milli" in text


def test_bad_kueue_field_is_located(tmp_path: Path) -> None:
    def mutate(data):  # type: ignore[no-untyped-def]
        cq = next(o for o in data["items"] if o["kind"] == "ClusterQueue")
        cq["spec"]["queueingStrategy"] = "Random"

    text = _bad(tmp_path, "kueue.json", mutate)
    assert "kueue.json:" in text and "spec.queueingStrategy" in text


def test_duplicate_pod(tmp_path: Path) -> None:
    def mutate(data):  # type: ignore[no-untyped-def]
        data["items"].append(data["items"][8])

    assert "appears twice" in _bad(tmp_path, "pods.json", mutate)


def test_malformed_json_has_line(tmp_path: Path) -> None:
    folder = copy_fixture(tmp_path, "healthy")
    (folder / "broken.json").write_text('{"kind": "List", "items": [\n  {"kind": "Pod",,}\n]}')
    code, _, err = run("diagnose", "-A", "--snapshot", str(folder))
    assert code == 2
    assert "broken.json:2:" in err and "malformed JSON" in err


def test_dangling_kueue_reference_is_a_finding_not_an_error(tmp_path: Path) -> None:
    folder = copy_fixture(tmp_path, "quota-exhausted")
    path = folder / "kueue.json"
    data = json.loads(path.read_text())
    wl = next(o for o in data["items"] if o["metadata"]["name"].startswith("job-risk-eval"))
    wl["spec"]["queueName"] = "finance-typo"
    path.write_text(json.dumps(data))
    report = diagnose(
        Analysis(load_snapshot_dir(folder), now=NOW), "workload/finance/" + wl["metadata"]["name"]
    )
    (d,) = report.diagnoses
    assert d.finding.code == "kueue-queue-missing"
    assert "LocalQueue 'finance-typo' does not exist" in d.finding.summary


def test_bad_cold_start_annotation(tmp_path: Path) -> None:
    folder = copy_fixture(tmp_path, "autoscaler-cold-start")
    path = folder / "karpenter.json"
    data = json.loads(path.read_text())
    data["items"][0]["metadata"]["annotations"]["gpupact.io/cold-start"] = "ten minutes"
    path.write_text(json.dumps(data))
    code, _, err = run("diagnose", "-A", "--snapshot", str(folder), "--now", NOW_TEXT)
    assert code == 2
    assert "NodePool gpu-inference" in err and "13m30s" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["diagnose", "-A", "--snapshot", "/nonexistent/snap"], "no such directory"),
        (["diagnose", "-A"], "no cluster"),
        (["diagnose"], "give a target"),
        (["diagnose", "a/b", "-A", "--snapshot", "."], "not both"),
        (["diagnose", "-A", "--snapshot", "x", "--context", "prod"], "not both"),
        (["diagnose", "default/nope", "--snapshot", "<healthy>"], "no pod default/nope"),
        (["diagnose", "just-a-name", "--snapshot", "<healthy>"], "no pod default/just-a-name"),
        (["diagnose", "a/b/c/d", "--snapshot", "<healthy>"], "expected NAME, KIND/NAME"),
        (["diagnose", "deploy/ns/x", "--snapshot", "<healthy>"], "unknown kind"),
        (["diagnose", "-A", "--snapshot", "<healthy>", "--now", "2026-11-10"], "no timezone"),
        (["audit", "--snapshot", "<healthy>", "--contract", "/nonexistent.yaml"], "no such file"),
        (["audit", "--kubeconfig", "/nonexistent/kubeconfig"], "no such file"),
    ],
)
def test_bad_arguments(args: list[str], message: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", "/nonexistent/kubeconfig")  # no cluster by default
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    args = [str(fixture("healthy")) if a == "<healthy>" else a for a in args]
    code, _, err = run(*args)
    assert code == 2, err
    assert message in err
    assert "Traceback" not in err


def test_empty_directory(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"no \.json, \.yaml, \.yml files"):
        open_cluster(snapshot_dir=tmp_path)


@pytest.mark.parametrize("content", ["", '{"kind": "List", "items": []}'])
def test_directory_without_nodes_is_bad_input(tmp_path: Path, content: str) -> None:
    (tmp_path / "pods.json").write_text(content)
    code, out, err = run("diagnose", "-A", "--snapshot", str(tmp_path))
    assert code == 2, (out, err)
    assert err.strip() == f"error: no Node objects found in {tmp_path} " + (
        "(add `kubectl get nodes -o json` output)"
    )


def test_directory_with_only_pods_is_bad_input(tmp_path: Path) -> None:
    folder = copy_fixture(tmp_path, "healthy")
    (folder / "nodes.json").unlink()
    with pytest.raises(InputError, match="no Node objects found in "):
        load_snapshot_dir(folder)
