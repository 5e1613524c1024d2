"""`gpupact fit` end to end on the committed example and on bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpupact.cli.main import _register, app

ROOT = Path(__file__).resolve().parents[2]
POD = ROOT / "examples/fit/pod.yaml"
CLUSTER = ROOT / "examples/fit/cluster.json"

_register()
runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def test_example_explains_every_node() -> None:
    result = invoke("fit", "-f", str(POD), "--nodes", str(CLUSTER), "-o", "json")
    assert result.exit_code == 1, result.output
    data = json.loads(result.output)
    assert data["fits"] is False
    assert data["message"] == (
        "0/4 nodes are available: 1 Insufficient nvidia.com/gpu, "
        "3 node(s) had untolerated taint(s)."
    )
    by_node = {n["node"]: n for n in data["nodes"]}
    assert by_node["gpu-inf-a100-1"]["plugin"] == "NodeResourcesFit"
    assert by_node["gpu-inf-a100-1"]["detail"] == "nvidia.com/gpu 1 requested, 8/8 used"
    assert by_node["gpu-batch-l40s-1"]["detail"] == "untolerated taint workload=batch:NoSchedule"


def test_text_output_ends_with_the_scheduler_line() -> None:
    result = invoke("fit", "-f", str(POD), "--nodes", str(CLUSTER))
    assert result.exit_code == 1
    assert result.output.rstrip().endswith(
        "0/4 nodes are available: 1 Insufficient nvidia.com/gpu, "
        "3 node(s) had untolerated taint(s)."
    )


def test_pod_fits_once_a_replica_leaves(tmp_path: Path) -> None:
    cluster = json.loads(CLUSTER.read_text())
    cluster["items"] = [i for i in cluster["items"] if i["metadata"]["name"] != "cs-agent-llm-0"]
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(cluster))
    result = invoke("fit", "-f", str(POD), "--nodes", str(path), "-o", "yaml")
    assert result.exit_code == 0, result.output
    assert "feasibleNodes:\n- gpu-inf-a100-1" in result.output


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
            "  - name: c\n    resources:\n      requests:\n        cpu: 2 cores\n",
            "pod.yaml:9:14: spec.containers[0].resources.requests.cpu: ",
        ),
        (
            "kind: Pod\nmetadata: {name: p}\nspec:\n  tolerations:\n"
            "  - {key: a, operator: Sometimes, effect: NoSchedule}\n",
            "pod.yaml:5:24: spec.tolerations[0].operator: ",
        ),
        ("kind: Pod\nmetadata: {name: p}\nspec: [\n", "pod.yaml:4:1: malformed YAML"),
    ],
)
def test_bad_pod_is_one_line_exit_2(tmp_path: Path, content: str, expected: str) -> None:
    pod = tmp_path / "pod.yaml"
    pod.write_text(content)
    result = runner.invoke(app, ["fit", "-f", str(pod), "--nodes", str(CLUSTER)])
    assert result.exit_code == 2
    line = result.output.strip()
    assert "\n" not in line and "Traceback" not in line
    assert line.startswith("error: ") and str(pod) in line
    assert line.split(str(tmp_path) + "/", 1)[1].startswith(expected), line


def test_missing_nodes_file_is_exit_2(tmp_path: Path) -> None:
    result = runner.invoke(app, ["fit", "-f", str(POD), "--nodes", str(tmp_path / "x.json")])
    assert result.exit_code == 2
    assert "no such file" in result.output


_NODE = (
    "kind: Node\nmetadata:\n  name: n1\n  labels: {{{labels}}}\n"
    "status:\n  allocatable: {{{alloc}}}\n"
)
_GPU_POD = (
    "kind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    image: x\n"
    "    resources: {requests: {cpu: '1'}, limits: {nvidia.com/gpu: '1'}}\n"
)


@pytest.mark.parametrize(
    ("labels", "alloc", "expected"),
    [
        # decimal quantities are not capped by the API server; over int64 is refused at load
        ("", "cpu: '8', memory: 100E", "nodes.yaml:6:35: status.allocatable.memory: "),
        ("", "cpu: 10E, memory: 1Gi", "nodes.yaml:6:22: status.allocatable.cpu: "),
        (
            "",
            "cpu: '8', nvidia.com/gpu: '100000000'",
            "nodes.yaml:6:43: status.allocatable.nvidia.com/gpu: 100000000 GPUs",
        ),
        (
            "nvidia.com/gpu.count: 'x'",
            "nvidia.com/gpu: '1'",
            "nodes.yaml:4:34: metadata.labels.nvidia.com/gpu.count: expected an integer",
        ),
        (
            "nvidia.com/gpu.count: '4', nvidia.com/gpu.replicas: '100000000'",
            "nvidia.com/gpu: '4'",
            "nodes.yaml:4:64: metadata.labels.nvidia.com/gpu.replicas: 100000000 time-slicing",
        ),
    ],
)
def test_bad_node_is_one_located_line_exit_2(
    tmp_path: Path, labels: str, alloc: str, expected: str
) -> None:
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(_NODE.format(labels=labels, alloc=alloc))
    pod = tmp_path / "pod.yaml"
    pod.write_text(_GPU_POD)
    result = runner.invoke(app, ["fit", "-f", str(pod), "--nodes", str(nodes)])
    line = result.output.strip()
    assert result.exit_code == 2, result.output
    assert "\n" not in line and line.startswith("error: "), line
    assert line.split(str(tmp_path) + "/", 1)[1].startswith(expected), line


@pytest.mark.parametrize(
    ("requests", "expected"),
    [
        ("{cpu: 10E}", "pod.yaml:7:23: spec.containers[0].resources.requests.cpu: '10E' is too"),
        # each amount fits in an int64, their sum does not
        (
            "{memory: 5E}\n  - name: d\n    resources:\n      requests: {memory: 5E}",
            "pod.yaml:4:3: spec: the pod's total memory request",
        ),
    ],
)
def test_pod_over_int64_is_one_located_line_exit_2(
    tmp_path: Path, requests: str, expected: str
) -> None:
    pod = tmp_path / "pod.yaml"
    pod.write_text(
        "kind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n"
        f"    resources:\n      requests: {requests}\n"
    )
    result = runner.invoke(app, ["fit", "-f", str(pod), "--nodes", str(CLUSTER)])
    line = result.output.strip()
    assert result.exit_code == 2, result.output
    assert "\n" not in line and line.startswith("error: "), line
    assert line.split(str(tmp_path) + "/", 1)[1].startswith(expected), line


def test_bound_volume_claims_in_the_snapshot_are_checked(tmp_path: Path) -> None:
    """PVCs and PVs in the --nodes files feed VolumeBinding: a bound PV whose node affinity
    no node matches refuses every node."""
    cluster = json.loads(CLUSTER.read_text())
    cluster["items"] += [
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {
                "name": "data",
                "namespace": "default",
                "annotations": {"pv.kubernetes.io/bind-completed": "yes"},
            },
            "spec": {"volumeName": "pv-1"},
        },
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": "pv-1"},
            "spec": {
                "nodeAffinity": {
                    "required": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "rack", "operator": "In", "values": ["r9"]}
                                ]
                            }
                        ]
                    }
                }
            },
        },
    ]
    nodes = tmp_path / "cluster.json"
    nodes.write_text(json.dumps(cluster))
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "reader", "namespace": "default"},
        "spec": {
            "containers": [{"name": "c", "image": "x"}],
            "tolerations": [{"operator": "Exists"}],
            "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}],
        },
    }
    pod_file = tmp_path / "pod.json"
    pod_file.write_text(json.dumps(pod))
    result = invoke("fit", "-f", str(pod_file), "--nodes", str(nodes), "-o", "json")
    assert result.exit_code == 1, result.output
    data = json.loads(result.output)
    assert (
        data["message"] == "0/4 nodes are available: 4 node(s) had volume node affinity conflict."
    )


def test_a_bad_claim_in_the_snapshot_is_one_error_line(tmp_path: Path) -> None:
    cluster = json.loads(CLUSTER.read_text())
    cluster["items"].append(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data"},
            "spec": {"volumeName": 7},
        }
    )
    nodes = tmp_path / "cluster.json"
    nodes.write_text(json.dumps(cluster, indent=1))
    result = runner.invoke(app, ["fit", "-f", str(POD), "--nodes", str(nodes)])
    assert result.exit_code == 2
    assert "spec.volumeName" in result.output and "cluster.json" in result.output
    assert "Traceback" not in result.output


_VALID_POD = (
    "kind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    image: x\n"
    "    resources: {requests: {cpu: '1'}}\n"
)


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        # the API server's ValidateNodeSelectorRequirement; the scheduler would only not match
        (
            "  affinity:\n    nodeAffinity:\n"
            "      requiredDuringSchedulingIgnoredDuringExecution:\n"
            "        nodeSelectorTerms:\n        - matchExpressions:\n"
            "          - {key: zone, operator: Within, values: [a]}\n",
            "pod.yaml:13:35: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnored"
            "DuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator: "
            'Invalid value: "Within": not a valid selector operator',
        ),
        (
            "  tolerations:\n  - {key: k, operator: Exists, value: v}\n",
            "pod.yaml:9:24: spec.tolerations[0].operator: value must be empty when `operator` "
            "is 'Exists'",
        ),
        (
            "  tolerations:\n  - {key: k, effect: NoScheduleSometimes}\n",
            "pod.yaml:9:22: spec.tolerations[0].effect: Unsupported value",
        ),
        (
            "  topologySpreadConstraints:\n  - {maxSkew: 0, topologyKey: zone, "
            "whenUnsatisfiable: DoNotSchedule}\n",
            "pod.yaml:9:15: spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be "
            "greater than zero",
        ),
        (
            "  topologySpreadConstraints:\n  - {maxSkew: 1, topologyKey: zone, "
            "whenUnsatisfiable: Sometimes}\n",
            "pod.yaml:9:56: spec.topologySpreadConstraints[0].whenUnsatisfiable: Unsupported",
        ),
        (
            "  restartPolicy: Sometimes\n",
            'pod.yaml:8:18: spec.restartPolicy: Unsupported value: "Sometimes"',
        ),
        (
            "  priorityClassName: system-node-critical\n  priority: 1\n",
            "pod.yaml:9:13: spec.priority: Forbidden: the integer value of priority (1)",
        ),
    ],
)
def test_pod_the_api_server_would_refuse_is_exit_2(
    tmp_path: Path, extra: str, expected: str
) -> None:
    pod = tmp_path / "pod.yaml"
    pod.write_text(_VALID_POD + extra)
    result = runner.invoke(app, ["fit", "-f", str(pod), "--nodes", str(CLUSTER)])
    line = result.output.strip()
    assert result.exit_code == 2, result.output
    assert "\n" not in line and line.startswith("error: "), line
    assert line.split(str(tmp_path) + "/", 1)[1].startswith(expected), line


def test_the_valid_pod_itself_is_explained(tmp_path: Path) -> None:
    pod = tmp_path / "pod.yaml"
    pod.write_text(_VALID_POD)
    result = runner.invoke(app, ["fit", "-f", str(pod), "--nodes", str(CLUSTER)])
    assert result.exit_code in (0, 1), result.output
    assert "nodes are available" in result.output


@pytest.mark.parametrize(
    ("resources", "expected"),
    [
        (
            "{requests: {nvidia.com/gpu: '1'}}",
            "pod.yaml:7:16: spec.containers[0].resources.limits: Required value: Limit must be "
            "set for non overcommitable resources",
        ),
        (
            "{limits: {nvidia.com/gpu: 500m}}",
            "pod.yaml:7:42: spec.containers[0].resources.limits.nvidia.com/gpu: Invalid value: "
            '"500m": must be an integer',
        ),
    ],
)
def test_extended_resources_as_the_api_server_reads_them(
    tmp_path: Path, resources: str, expected: str
) -> None:
    pod = tmp_path / "pod.yaml"
    pod.write_text(_VALID_POD.replace("{requests: {cpu: '1'}}", resources))
    result = runner.invoke(app, ["fit", "-f", str(pod), "--nodes", str(CLUSTER)])
    line = result.output.strip()
    assert result.exit_code == 2, result.output
    assert line.split(str(tmp_path) + "/", 1)[1].startswith(expected), line


def test_a_node_with_a_fractional_gpu_count_is_exit_2(tmp_path: Path) -> None:
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(_NODE.format(labels="", alloc="cpu: '8', nvidia.com/gpu: 1500m"))
    pod = tmp_path / "pod.yaml"
    pod.write_text(_GPU_POD)
    result = runner.invoke(app, ["fit", "-f", str(pod), "--nodes", str(nodes)])
    line = result.output.strip()
    assert result.exit_code == 2, result.output
    assert line.split(str(tmp_path) + "/", 1)[1].startswith(
        'nodes.yaml:6:43: status.allocatable.nvidia.com/gpu: Invalid value: "1500m": must be '
        "an integer"
    ), line
