"""The openb trace: CSV loading, the artefact's replay protocol, and the real trace."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpupact.cluster.state import pod_usage
from gpupact.engine.placement.strategies import TargetWorkload, make_strategy
from gpupact.errors import InputError
from gpupact.twin.traces import openb

NODE_HEADER = "sn,cpu_milli,memory_mib,gpu,model\n"
POD_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"  # noqa: E501


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# --- loading ------------------------------------------------------------------------------


def test_read_nodes_and_pods_exactly(tmp_path):
    nodes = openb.read_nodes(
        write(tmp_path, "n.csv", NODE_HEADER + "n0,96000,393216,8,G2\nn1,32000,262144,0,\n")
    )
    assert nodes == [
        openb.OpenbNode("n0", 96000, 393216 << 20, 8, "G2"),
        openb.OpenbNode("n1", 32000, 262144 << 20, 0, ""),
    ]
    pods = openb.read_pods(
        write(
            tmp_path,
            "p.csv",
            POD_HEADER
            + "p0,12000,16384,1,1000,,LS,Running,0,12537496,0\n"
            + "p1,6000,12288,1,460,V100M16|V100M32,BE,Pending,427061,,\n"
            + "p2,88000,327680,8,1000,,Burstable,Succeeded,9,10,9\n"
            + "p3,32000,65536,0,0,,BE,Running,1,,\n",
        )
    )
    assert [(p.name, p.gpu_count, p.gpu_milli, p.total_gpu_milli) for p in pods] == [
        ("p0", 1, 1000, 1000),
        ("p1", 1, 460, 460),
        ("p2", 8, 1000, 8000),
        ("p3", 0, 0, 0),
    ]
    assert pods[1].gpu_models == frozenset({"V100M16", "V100M32"})
    assert pods[1].deletion_time is None and pods[0].deletion_time == 12537496
    assert pods[0].memory == 16384 << 20


def test_minimal_pod_columns(tmp_path):
    pods = openb.read_pods(
        write(tmp_path, "p.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,0,0,2,1000\n")
    )
    assert pods[0].gpu_models is None and pods[0].qos == ""
    assert pods[0].request().cpu_milli == openb.NON_ZERO_CPU_MILLI  # scoring default


@pytest.mark.parametrize(
    ("row", "column", "message"),
    [
        ("p0,12000,16384,1,1001,,LS,Running,0,1,0", "gpu_milli", "1..1000"),
        ("p0,12000,16384,2,500,,LS,Running,0,1,0", "gpu_milli", "takes 1 GPU"),
        ("p0,12000,16384,0,500,,LS,Running,0,1,0", "gpu_milli", "num_gpu is 0"),
        ("p0,12k,16384,1,1000,,LS,Running,0,1,0", "cpu_milli", "non-negative integer"),
        ("p0,-5,16384,1,1000,,LS,Running,0,1,0", "cpu_milli", "non-negative integer"),
        ("p0,12000,16384,1,1000,,LS,Running,x,1,0", "creation_time", "integer"),
        (",12000,16384,1,1000,,LS,Running,0,1,0", "name", "empty"),
    ],
)
def test_bad_pod_rows_name_file_line_and_column(tmp_path, row, column, message):
    path = write(
        tmp_path, "pods.csv", POD_HEADER + "ok,1000,1,0,0,,BE,Running,0,1,0\n" + row + "\n"
    )
    with pytest.raises(InputError) as info:
        openb.read_pods(path)
    err = info.value
    assert (err.file, err.line, err.path) == (str(path), 3, (column,))
    assert message in str(err) and str(path) in str(err) and ":3" in str(err)


def test_bad_files(tmp_path):
    with pytest.raises(InputError, match="missing column"):
        openb.read_pods(write(tmp_path, "a.csv", "name,cpu_milli\np,1\n"))
    with pytest.raises(InputError, match="empty file"):
        openb.read_nodes(write(tmp_path, "b.csv", ""))
    with pytest.raises(InputError, match="cannot read"):
        openb.read_nodes(tmp_path / "absent.csv")
    with pytest.raises(InputError, match="appears twice") as info:
        openb.read_nodes(write(tmp_path, "c.csv", NODE_HEADER + "n,1,1,1,T4\nn,1,1,1,T4\n"))
    assert info.value.line == 3
    with pytest.raises(InputError, match="needs a GPU model"):
        openb.read_nodes(write(tmp_path, "d.csv", NODE_HEADER + "n,1,1,2,\n"))
    with pytest.raises(InputError, match="6 fields, the header has 5"):
        openb.read_nodes(write(tmp_path, "e.csv", NODE_HEADER + "n,1,1,2,T4,extra\n"))


def test_pods_become_engine_requests():
    share = openb.OpenbPod("s", 4000, 1 << 30, 1, 470, frozenset({"T4", "A10"}))
    whole = openb.OpenbPod("w", 12000, 1 << 30, 4, 1000)
    cpu = openb.OpenbPod("c", 32000, 1 << 30)
    share_gpu = pod_usage(share.to_pod()).gpu
    assert (share_gpu.count, share_gpu.milli, share_gpu.models) == (1, 470, share.gpu_models)
    whole_gpu = pod_usage(whole.to_pod()).gpu
    assert (whole_gpu.count, whole_gpu.milli, whole_gpu.models) == (4, 1000, None)
    assert pod_usage(cpu.to_pod()).gpu is None
    assert whole.to_pod().key == "openb/w"


def test_data_dir(monkeypatch, tmp_path):
    monkeypatch.delenv(openb.DATA_DIR_ENV, raising=False)
    assert openb.data_dir(tmp_path / "main") == tmp_path / "shared" / "data" / "openb"
    monkeypatch.setenv(openb.DATA_DIR_ENV, str(tmp_path / "x"))
    assert openb.data_dir(tmp_path / "main") == tmp_path / "x"
    assert openb.pod_file(tmp_path, "default").name == "openb_pod_list_default.csv"


# --- the replay protocol ------------------------------------------------------------------


def tiny_pods() -> list[openb.OpenbPod]:
    return [
        openb.OpenbPod("a", 4000, 1 << 30, 1, 1000),
        openb.OpenbPod("b", 4000, 1 << 30, 1, 500),
        openb.OpenbPod("c", 8000, 1 << 30),
        openb.OpenbPod("d", 4000, 1 << 30, 2, 1000),
    ]


def test_arrival_order_shuffles_then_appends_copies_up_to_the_target():
    pods = tiny_pods()
    order = openb.arrival_order(pods, 8000, np.random.default_rng(1), tune_pct=130)
    assert sorted(p.name for p in order[:4]) == ["a", "b", "c", "d"]
    copies = order[4:]
    assert copies and all("-tuned-" in p.name for p in copies)
    assert [p.name.rsplit("-", 1)[1] for p in copies] == [str(i) for i in range(len(copies))]
    total = sum(p.total_gpu_milli for p in order)
    # the stop test adds a copy's per-device milli: at most one multi-GPU copy overshoots
    assert total - 1000 <= 10400 <= total + 1000
    again = openb.arrival_order(pods, 8000, np.random.default_rng(1), tune_pct=130)
    assert [p.name for p in again] == [p.name for p in order]


def test_arrival_order_drops_pods_when_the_trace_asks_for_too_much():
    order = openb.arrival_order(tiny_pods(), 2000, np.random.default_rng(3), tune_pct=100)
    assert sum(p.total_gpu_milli for p in order) <= 2000
    with pytest.raises(ValueError):
        openb.arrival_order([], 1000, np.random.default_rng(0))


def test_allocation_curve_rounds_like_the_artefact():
    # capacity 1000 milli: arrived 5 -> 0.5% rounds to 0 (ties to even), 15 -> 2, 25 -> 2;
    # a point without attempts averages those within +/-1 point (1, 3, 5, 7)
    result = openb.ReplayResult(
        "x",
        0,
        1000,
        arrived=np.array([5, 15, 25, 40, 60]),
        allocated=np.array([5, 10, 20, 40, 40]),
    )
    assert openb.allocation_curve(result, range(8)) == {
        0: 0.5,
        1: 1.17,
        2: 1.5,
        3: 2.33,
        4: 4.0,
        5: 4.0,
        6: 4.0,
        7: 4.0,
    }
    assert openb.allocation_curve(result, [9]) == {}
    assert openb.unallocated_curve(result, [4])[4] == 96.0


def test_replay_places_through_the_engine():
    nodes = [
        openb.OpenbNode("n0", 16000, 64 << 30, 2, "T4"),
        openb.OpenbNode("n1", 16000, 64 << 30, 2, "T4"),
    ]
    pods = tiny_pods()
    workload = TargetWorkload.from_requests(p.request() for p in pods)
    fgd = make_strategy("FGD", workload=workload)
    first = openb.replay(nodes, pods, lambda streams: fgd, seed=42)
    second = openb.replay(nodes, pods, lambda streams: fgd, seed=42)
    assert first.attempts == len(first.arrived) and first.policy == "FGD"
    assert np.array_equal(first.allocated, second.allocated)
    assert first.capacity_gpu_milli == 4000
    assert first.allocated[-1] <= 4000 and first.failed > 0
    placed = first.arrived[-1] - first.failed_gpu_milli
    assert first.allocated[-1] == placed
    random = openb.replay(
        nodes, pods, lambda streams: make_strategy("Random", rng=streams.policy), seed=42
    )
    assert random.arrived.tolist() == first.arrived.tolist()  # same pods, same order
    explained = openb.replay(nodes, pods, lambda streams: fgd, seed=42, explain_refusals=True)
    # the cheap refusal mode changes no placement: same curve, same refusals
    assert np.array_equal(explained.allocated, first.allocated)
    assert explained.failed == first.failed


# --- the real trace (skipped without ../shared/data/openb) ----------------------------------

DATA = openb.data_dir(Path(__file__).resolve().parents[2])


@pytest.mark.skipif(
    not (DATA / openb.NODE_FILE).is_file(),
    reason=f"openb trace not found at {DATA} (set ${openb.DATA_DIR_ENV})",
)
def test_real_trace_loads_and_replays_a_light_load():
    nodes = openb.read_nodes(DATA / openb.NODE_FILE)
    pods = openb.read_pods(openb.pod_file(DATA, "default"))
    assert len(nodes) == 1213 and len(pods) == 8152
    assert openb.capacity_gpu_milli(nodes) == 6212 * 1000
    workload = TargetWorkload.from_requests(p.request() for p in pods)
    assert workload.size == 35 and workload.total_weight == 7766  # 95% of the pods' shapes
    # 10% of capacity: the dropped-down trace fits entirely, every GPU milli is allocated
    result = openb.replay(
        nodes, pods, lambda s: make_strategy("FGD", workload=workload), seed=42, tune_pct=10
    )
    assert result.failed == 0
    assert result.allocated[-1] == result.arrived[-1] <= 621_200


# --- the benchmark script on a synthetic trace (no ../shared needed) -------------------------


def _benchmark_module():
    import importlib.util
    import sys

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "openb_replay.py"
    spec = importlib.util.spec_from_file_location("openb_replay_script", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_benchmark_says_where_the_trace_is_missing(tmp_path, capsys):
    script = _benchmark_module()
    code = script.main(["--data-dir", str(tmp_path / "nowhere"), "--policy", "FGD"])
    assert code == 2
    err = capsys.readouterr().err
    assert "the openb trace is missing" in err and str(tmp_path / "nowhere") in err
    assert openb.DATA_DIR_ENV in err


def test_benchmark_runs_a_synthetic_trace(tmp_path, capsys):
    write(tmp_path, openb.NODE_FILE, NODE_HEADER + "n0,32000,65536,4,T4\nn1,64000,65536,2,T4\n")
    write(
        tmp_path,
        "openb_pod_list_tiny.csv",
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
        "p0,4000,1024,1,1000\np1,2000,1024,1,500\np2,8000,2048,0,0\np3,4000,1024,2,1000\n",
    )
    script = _benchmark_module()
    args = ["--data-dir", str(tmp_path), "--trace", "tiny", "--seeds", "1-2", "--jobs", "1"]
    assert script.main([*args, "--policy", "FGD,FGD-Reach,Random"]) == 0
    out = capsys.readouterr().out
    assert "| FGD-Reach |" in out and "openb_pod_list_tiny" in out and "6 GPUs" in out
