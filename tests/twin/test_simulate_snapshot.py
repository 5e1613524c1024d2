"""`gpupact simulate --snapshot DIR | --context CTX`: the twin started from a real cluster with
the contract applied to it. The cluster here: two inference nodes (already labelled
`nodepool: gpu-inference`) each filled by a pod of a team outside the contract, a batch node
Karpenter launched for `gpu-batch`, and a CPU node in no pool."""

from __future__ import annotations

import copy
import json
import random
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from twin_helpers import contract, scenario, write
from typer.testing import CliRunner

import gpupact.cli.simulate  # noqa: F401  (registers `simulate`)
from gpupact.cli.cluster_start import view_of
from gpupact.cli.main import app
from gpupact.ops.model import SnapshotBuilder
from gpupact.twin.initial_state import OUTSIDE, ClusterView, node_pool, starting_state
from gpupact.twin.pod_end import CONTROLLER_RULE, RUN_RULE, estimate_end
from gpupact.twin.run import load_all
from gpupact.twin.world import build_world

SNAPSHOT_TIME = datetime(2026, 11, 10, 12, 0, tzinfo=UTC)
FOREIGN_PRIORITY = 1_000_000_000  # above every contract class: kube-scheduler evicts nothing
Obj = dict[str, Any]


def stamp(before: timedelta = timedelta(0)) -> str:
    return (SNAPSHOT_TIME - before).strftime("%Y-%m-%dT%H:%M:%SZ")


def node(name: str, labels: dict[str, str], *, gpus: int = 8) -> Obj:
    alloc = {"cpu": "96", "memory": "1000Gi", "pods": "110"}
    gfd = {}
    if gpus:
        alloc["nvidia.com/gpu"] = str(gpus)
        gfd = {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "nvidia.com/gpu.count": "8"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "creationTimestamp": stamp(timedelta(days=30)),
            "labels": {"kubernetes.io/hostname": name, **gfd, **labels},
        },
        "spec": {},
        "status": {
            "capacity": alloc,
            "allocatable": alloc,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "lastHeartbeatTime": stamp(),
                    "lastTransitionTime": stamp(timedelta(days=30)),
                }
            ],
        },
    }


def owner(kind: str, name: str, api: str) -> Obj:
    return {
        "apiVersion": api,
        "kind": kind,
        "name": name,
        "uid": f"uid-{kind}-{name}",
        "controller": True,
    }


def pod(
    name: str,
    node_name: str,
    *,
    age: timedelta,
    owned_by: Obj | None,
    gpus: int = 8,
    labels: dict[str, str] | None = None,
    spec: Obj | None = None,
) -> Obj:
    meta: Obj = {
        "name": name,
        "namespace": "research",
        "uid": f"uid-{name}",
        "creationTimestamp": stamp(age + timedelta(seconds=20)),
        "labels": dict(labels or {}),
    }
    if owned_by is not None:
        meta["ownerReferences"] = [owned_by]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "nodeName": node_name,
            "priority": FOREIGN_PRIORITY,
            "containers": [
                {
                    "name": "main",
                    "image": "registry.example/train:1",
                    "resources": {
                        "requests": {"cpu": "8", "nvidia.com/gpu": str(gpus)},
                        "limits": {"nvidia.com/gpu": str(gpus)},
                    },
                }
            ],
            **(spec or {}),
        },
        "status": {"phase": "Running", "startTime": stamp(age)},
    }


def cluster(pods: list[Obj], extra: list[Obj] = ()) -> dict[str, list[Obj]]:
    nodes = [
        node("inf-a", {"nodepool": "gpu-inference"}),
        node("inf-b", {"nodepool": "gpu-inference"}),
        node("train-x", {"karpenter.sh/nodepool": "gpu-batch"}),
        node("cpu-1", {}, gpus=0),
    ]
    return {"nodes.json": nodes, "pods.json": pods, "extra.json": list(extra)}


def write_snapshot(directory: Path, files: dict[str, list[Obj]]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, items in files.items():
        body = {"apiVersion": "v1", "kind": "List", "items": items}
        (directory / name).write_text(json.dumps(body, indent=1))
    return directory


def job_pods(age: timedelta) -> list[Obj]:
    job = owner("Job", "train", "batch/v1")
    return [
        pod("train-a", "inf-a", age=age, owned_by=job),
        pod("train-b", "inf-b", age=age, owned_by=job),
    ]


def deployment_pods() -> list[Obj]:
    rs = owner("ReplicaSet", "serve-7d4f9", "apps/v1")
    hashed = {"pod-template-hash": "7d4f9"}
    return [
        pod("serve-7d4f9-a", "inf-a", age=timedelta(hours=3), owned_by=rs, labels=hashed),
        pod("serve-7d4f9-b", "inf-b", age=timedelta(hours=3), owned_by=rs, labels=hashed),
    ]


def scenario_dir(tmp_path: Path) -> Path:
    doc = scenario(jobs=[], duration="3h")
    return write(tmp_path / "scen", contract(), doc)


def run_cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["simulate", *args])
    return result.exit_code, result.stdout, result.stderr


def simulate_json(scen: Path, *source: str) -> dict[str, Any]:
    code, out, err = run_cli(str(scen), *source, "-o", "json", "--report", "-", "--full")
    assert code == 0, err
    return json.loads(out)[0]


def online_waits(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [w for w in result["timeToGpu"] if w["class"] == "online-infer"]


def bind_latency(scen: Path) -> float:
    """Placement to binding in the scenario's twin (0 where the twin binds at once)."""
    value = getattr(load_all(scen)[0].scenario, "bind_latency", None)
    return value.total_seconds() if value is not None else 0.0


def first_replicas_wait(result: dict[str, Any], bind: float) -> set[float]:
    """The waits of the service's replicas made at t = 0 (its minimum): the longest ones;
    replicas the HPA adds once the service serves find room at once (their bind aside)."""
    replicas = contract()["services"][0]["replicas"]["min"]
    waits = sorted(w["seconds"] for w in online_waits(result))
    assert all(w <= bind for w in waits[:-replicas])
    return set(waits[-replicas:])


# --- the online service waits for the foreign Job pods ------------------------------------


def test_online_service_waits_until_the_job_pods_end(tmp_path: Path) -> None:
    age = timedelta(minutes=50)
    snap = write_snapshot(tmp_path / "snap", cluster(job_pods(age)))
    scen = scenario_dir(tmp_path)
    result = simulate_json(scen, "--snapshot", str(snap))
    waits = online_waits(result)
    # the Job pods, 50 minutes old, end after as long again: the replicas made at t = 0 bind
    # then (those the HPA adds later find room at once)
    bound = age.total_seconds() + bind_latency(scen)
    assert first_replicas_wait(result, bind_latency(scen)) == {bound}
    assert all(not w["censored"] and w["seconds"] <= bound for w in waits)
    assert result["summary"]["promises"]["online-infer"]["kept"] is False
    done = [e for e in result["events"] if e["kind"] == "carried-done"]
    assert {e["subject"] for e in done} == {"research/train-a", "research/train-b"}
    state = result["startingState"]
    assert state["nodes"] == {
        "total": 4,
        "byPool": {"gpu-batch": 1, "gpu-inference": 2},
        "outsidePools": 1,
    }
    assert state["observedAt"] == SNAPSHOT_TIME.isoformat()
    job = state["estimates"]["Job"]
    assert job["rule"] == RUN_RULE
    assert (job["pods"], job["gpus"], job["endsInRun"], job["bases"]) == (2, 16, 2, {"age": 2})
    pods = {p["pod"]: p for p in result["startingPods"]}
    assert pods["research/train-a"]["endsAt"] == age.total_seconds()
    assert pods["research/train-a"]["class"] == OUTSIDE
    # the foreign GPUs are accounted outside the contract's tenants
    assert result["summary"]["gpuHoursByTenant"][OUTSIDE] == pytest.approx(
        2 * 8 * age.total_seconds() / 3600, abs=0.005
    )


def test_job_deadline_wins_over_the_age_estimate(tmp_path: Path) -> None:
    age = timedelta(hours=1)
    deadline = 5400  # seconds from the Job's startTime: it is cut 30 minutes after the snapshot
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "research", "uid": "uid-Job-train"},
        "spec": {"activeDeadlineSeconds": deadline, "template": {"spec": {"containers": []}}},
        "status": {"startTime": stamp(age)},
    }
    snap = write_snapshot(tmp_path / "snap", cluster(job_pods(age), [job]))
    scen = scenario_dir(tmp_path)
    result = simulate_json(scen, "--snapshot", str(snap))
    left = deadline - age.total_seconds()
    assert first_replicas_wait(result, bind_latency(scen)) == {left + bind_latency(scen)}
    assert result["startingState"]["estimates"]["Job"]["bases"] == {"activeDeadlineSeconds": 2}


def test_deployment_pods_never_end_and_the_service_never_starts(tmp_path: Path) -> None:
    snap = write_snapshot(tmp_path / "snap", cluster(deployment_pods()))
    scen = scenario_dir(tmp_path)
    result = simulate_json(scen, "--snapshot", str(snap))
    waits = online_waits(result)
    assert waits and all(w["censored"] for w in waits)
    assert all(w["seconds"] == result["summary"]["durationSeconds"] for w in waits)
    state = result["startingState"]["estimates"]["Deployment"]
    assert state["rule"] == CONTROLLER_RULE
    assert (state["pods"], state["heldThroughRun"], state["endsInRun"]) == (2, 2, 0)
    assert not [e for e in result["events"] if e["kind"] == "carried-done"]
    # the terminal summary says which estimate each kind got
    code, out, err = run_cli(str(scen), "--snapshot", str(snap), "--report", "-")
    assert code == 0, err
    assert "Deployment: 2 pod(s), 16 GPUs; 0 end within the 3.0h run, 2 hold through it" in out
    assert CONTROLLER_RULE in " ".join(out.split())


def test_template_run_is_unchanged_without_a_cluster(tmp_path: Path) -> None:
    """Without --snapshot the service starts on the pool's template nodes at once."""
    result = simulate_json(scenario_dir(tmp_path))
    assert "startingState" not in result
    assert all(w["seconds"] == 0 for w in online_waits(result))


# --- the starting state itself ------------------------------------------------------------


def _view(pods: list[Obj]) -> ClusterView:
    """The cluster read through ops' builder (as the directory reader does), at its time."""
    builder = SnapshotBuilder(source="test")
    for group in cluster(pods).values():
        for obj in group:
            builder.add(obj)
    return view_of(builder.finish(), SNAPSHOT_TIME.timestamp())


def test_nodes_join_pools_they_name_and_get_the_compiled_patch(tmp_path: Path) -> None:
    loaded = load_all(scenario_dir(tmp_path))[0]
    world = build_world(loaded)
    start = starting_state(_view([]), world)
    assert start.pool_of_node == {
        "inf-a": "gpu-inference",
        "inf-b": "gpu-inference",
        "train-x": "gpu-batch",
    }
    nodes = {n.name: n for n in start.nodes}
    patch = world.bundle.node_patches["gpu-inference"]
    for key, value in patch["metadata"]["labels"].items():
        assert nodes["inf-a"].labels[key] == value
    assert [(t.key, t.value, t.effect) for t in nodes["inf-a"].taints] == [
        (t["key"], t["value"], t["effect"]) for t in patch["spec"]["taints"]
    ]
    assert nodes["cpu-1"].taints == () and "nodepool" not in nodes["cpu-1"].labels
    assert node_pool(nodes["cpu-1"], list(world.pools)) is None


def test_end_estimates_by_owner_kind() -> None:
    view = _view(
        [
            pod("bare", "inf-a", age=timedelta(minutes=10), owned_by=None, gpus=1),
            pod(
                "ds",
                "inf-a",
                age=timedelta(minutes=10),
                owned_by=owner("DaemonSet", "dcgm", "apps/v1"),
                gpus=0,
            ),
            pod(
                "capped",
                "inf-b",
                age=timedelta(minutes=10),
                owned_by=None,
                gpus=1,
                spec={"activeDeadlineSeconds": 900},
            ),
        ]
    )
    ends = {p.name: estimate_end(p, view.observed, view.jobs) for p in view.pods}
    assert (ends["bare"].kind, ends["bare"].remaining, ends["bare"].basis) == ("Pod", 600, "age")
    assert ends["bare"].recreated is False
    assert (ends["ds"].kind, ends["ds"].remaining) == ("DaemonSet", None)
    assert (ends["capped"].remaining, ends["capped"].basis) == (300, "activeDeadlineSeconds")
    unknown = estimate_end(view.pods[0], None, {})
    assert (unknown.remaining, unknown.basis) == (None, "unknown-age")


def test_lower_priority_foreign_pods_are_preempted_and_recreated(tmp_path: Path) -> None:
    """Real kube-scheduler evicts lower-priority pods for the online class: the twin does too,
    and the Deployment recreates its pods, which then wait."""
    pods = deployment_pods()
    for p in pods:
        p["spec"]["priority"] = 0
    snap = write_snapshot(tmp_path / "snap", cluster(pods))
    result = simulate_json(scenario_dir(tmp_path), "--snapshot", str(snap))
    assert result["summary"]["preemptions"].get(OUTSIDE, 0) >= 1
    restarts = [e for e in result["events"] if e["kind"] == "restart"]
    assert restarts and all("Deployment research/serve" in e["text"] for e in restarts)
    waits = online_waits(result)
    assert waits and all(not w["censored"] for w in waits)


def test_adopted_replicas_serve_from_the_start(tmp_path: Path) -> None:
    """A running pod of the contract's service is one of its replicas: no new one is made."""
    loaded = load_all(scenario_dir(tmp_path))[0]
    world = build_world(loaded)
    template = world.services["chat"]
    labels = {"app.kubernetes.io/name": "chat", "gpupact.io/class": "online-infer"}
    mine = []
    for i, name in enumerate(("inf-a", "inf-b")):
        obj = pod(f"chat-{i}", name, age=timedelta(hours=5), owned_by=None, gpus=1, labels=labels)
        obj["metadata"]["namespace"] = template.pod.namespace
        mine.append(obj)
    snap = write_snapshot(tmp_path / "snap", cluster(mine))
    result = simulate_json(scenario_dir(tmp_path), "--snapshot", str(snap))
    assert result["startingState"]["pods"]["adoptedReplicas"] == {"chat": 2}
    assert online_waits(result) == []  # nothing new had to be placed
    assert result["summary"]["services"]["chat"]["peakReady"] == 2


# --- bad input: exit 2, one located line --------------------------------------------------


def test_missing_snapshot_directory(tmp_path: Path) -> None:
    code, _, err = run_cli(str(scenario_dir(tmp_path)), "--snapshot", str(tmp_path / "nope"))
    assert code == 2
    assert "no such directory" in err and "Traceback" not in err


def test_malformed_snapshot_json_is_located(tmp_path: Path) -> None:
    snap = write_snapshot(tmp_path / "snap", cluster(job_pods(timedelta(hours=1))))
    (snap / "pods.json").write_text('{"apiVersion": "v1", "kind": "List",\n "items": [}\n')
    code, _, err = run_cli(str(scenario_dir(tmp_path)), "--snapshot", str(snap))
    assert code == 2
    assert "pods.json:2" in err and "Traceback" not in err


def test_bad_field_in_a_snapshot_pod_is_located(tmp_path: Path) -> None:
    pods = job_pods(timedelta(hours=1))
    pods[1]["spec"]["priority"] = "high"
    snap = write_snapshot(tmp_path / "snap", cluster(pods))
    code, _, err = run_cli(str(scenario_dir(tmp_path)), "--snapshot", str(snap))
    assert code == 2
    assert "pods.json:" in err and "spec.priority" in err


def test_snapshot_and_context_together(tmp_path: Path) -> None:
    snap = write_snapshot(tmp_path / "snap", cluster([]))
    code, _, err = run_cli(str(scenario_dir(tmp_path)), "--snapshot", str(snap), "--context", "x")
    assert code == 2 and "not both" in err


# --- live: the ops tests' API-server stand-in -----------------------------------------------


def test_context_reads_the_live_cluster_read_only(tmp_path: Path) -> None:
    pytest.importorskip("kubernetes")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ops"))
    from test_ops_live import TOKEN, FakeApiServer

    age = timedelta(minutes=40)
    snap = write_snapshot(tmp_path / "snap", cluster(job_pods(age)))
    scen = scenario_dir(tmp_path)
    offline = simulate_json(scen, "--snapshot", str(snap))
    with FakeApiServer(snap) as server:
        config = server.kubeconfig(tmp_path)
        live = simulate_json(
            scen, "--context", "fake", "--kubeconfig", str(config), "--now", stamp()
        )
        methods = {m for m, _, _ in server.requests}
        auth = {a for _, _, a in server.requests}
    assert methods == {"GET"} and auth == {f"Bearer {TOKEN}"}
    assert live["startingState"]["source"] == "context fake"
    assert online_waits(live) == online_waits(offline)
    bind = bind_latency(scen)
    assert first_replicas_wait(live, bind) == {age.total_seconds() + bind}


# --- Kueue: the compiled objects over the cluster's -----------------------------------------

KUEUE_API = "kueue.x-k8s.io/v1beta1"


def workload(name: str, namespace: str, queue: str, job: str, admitted: tuple[str, str] | None):
    """A Workload of one 8-GPU pod; `admitted`: (ClusterQueue, flavor)."""
    status: Obj = {"conditions": []}
    if admitted is not None:
        status["conditions"] = [
            {"type": "QuotaReserved", "status": "True", "lastTransitionTime": stamp()},
            {"type": "Admitted", "status": "True", "lastTransitionTime": stamp()},
        ]
        status["admission"] = {
            "clusterQueue": admitted[0],
            "podSetAssignments": [
                {
                    "name": "main",
                    "count": 1,
                    "flavors": {"nvidia.com/gpu": admitted[1]},
                    "resourceUsage": {"nvidia.com/gpu": "8"},
                }
            ],
        }
    requests = {"nvidia.com/gpu": "8"}
    return {
        "apiVersion": KUEUE_API,
        "kind": "Workload",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-wl-{name}",
            "creationTimestamp": stamp(timedelta(hours=1)),
            "ownerReferences": [owner("Job", job, "batch/v1")],
        },
        "spec": {
            "queueName": queue,
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {"containers": [{"name": "m", "resources": {"requests": requests}}]}
                    },
                }
            ],
        },
        "status": status,
    }


def cluster_queue(name: str, flavor: str) -> Obj:
    quota = [{"name": "nvidia.com/gpu", "nominalQuota": 8}]
    return {
        "apiVersion": KUEUE_API,
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": ["nvidia.com/gpu"],
                    "flavors": [{"name": flavor, "resources": quota}],
                }
            ],
        },
    }


def kueue_cluster() -> list[Obj]:
    flavor = {"apiVersion": KUEUE_API, "kind": "ResourceFlavor", "metadata": {"name": "old"}}
    local = {
        "apiVersion": KUEUE_API,
        "kind": "LocalQueue",
        "metadata": {"name": "research-q", "namespace": "research"},
        "spec": {"clusterQueue": "research-gpu"},
    }
    return [
        flavor,
        cluster_queue("lab-gpu", "old"),  # the contract compiles its own lab-gpu
        cluster_queue("research-gpu", "old"),  # not the contract's: stays
        local,
        workload("lab-train", "lab", "lab-batch", "lab-train", ("lab-gpu", "gpu-batch")),
        workload("stale", "lab", "lab-batch", "stale", ("lab-gpu", "old")),
        workload("queued", "research", "research-q", "queued", None),
    ]


def test_kueue_objects_reconciled_and_admitted_quota_held_until_pods_end(tmp_path: Path) -> None:
    age = timedelta(minutes=30)
    lab_pod = pod("lab-train-0", "train-x", age=age, owned_by=owner("Job", "lab-train", "batch/v1"))
    lab_pod["metadata"]["namespace"] = "lab"
    snap = write_snapshot(tmp_path / "snap", cluster([lab_pod], kueue_cluster()))
    doc = scenario(
        duration="2h",
        jobs=[
            {
                "name": "embed",
                "tenant": "lab",
                "class": "batch",
                "perHour": 30,
                "pods": 1,
                "gpusPerPod": 8,
                "duration": "10m",
                "end": "20m",
            }
        ],
    )
    scen = write(tmp_path / "scen", contract(), doc)
    result = simulate_json(scen, "--snapshot", str(snap))
    kueue = result["startingState"]["kueue"]
    assert "ClusterQueue lab-gpu" in kueue["replacedByContract"]
    assert "ClusterQueue research-gpu" in kueue["keptFromCluster"]
    assert kueue["admittedWorkloads"] == 1
    assert kueue["admittedOutsideQueues"] == ["lab/stale"]
    assert kueue["pendingWorkloadsLeftOut"] == 1
    released = [e for e in result["events"] if e["kind"] == "workload-done"]
    assert [(e["t"], e["subject"]) for e in released] == [(age.total_seconds(), "lab/lab-train")]
    admitted = [e["t"] for e in result["events"] if e["kind"] == "admitted"]
    # lab's 8 GPUs of quota are the running workload's until its pod ends
    assert admitted and min(admitted) >= age.total_seconds()
    assert result["summary"]["quotaBlockedWorkloads"] >= 1


def test_now_without_a_cluster_is_bad_input(tmp_path: Path) -> None:
    code, _, err = run_cli(str(scenario_dir(tmp_path)), "--now", stamp())
    assert code == 2 and "--snapshot or --context" in err


def test_html_report_is_written_from_a_snapshot_run(tmp_path: Path) -> None:
    snap = write_snapshot(tmp_path / "snap", cluster(job_pods(timedelta(minutes=5))))
    report = tmp_path / "report.html"
    code, out, err = run_cli(
        str(scenario_dir(tmp_path)), "--snapshot", str(snap), "--report", str(report)
    )
    assert code == 0, err
    assert report.stat().st_size > 0 and "started from" in out


# --- the acme contract over the ops tests' snapshots ------------------------------------------

OPS_FIXTURES = Path(__file__).resolve().parents[1] / "ops" / "fixtures"
ACME = Path(__file__).resolve().parents[2] / "examples" / "acme" / "contract.yaml"


def acme_scenario(tmp_path: Path) -> Path:
    directory = tmp_path / "acme"
    directory.mkdir()
    (directory / "contract.yaml").write_text(ACME.read_text())
    doc = scenario(
        metadata={"name": "acme-tomorrow"},
        start="2026-11-11T08:00:00+08:00",
        duration="1h",
        load=[{"service": "cs-agent", "rps": [{"at": "0s", "value": 20}]}],
        jobs=[{"contract": True}],
    )
    (directory / "scenario.yaml").write_text(json.dumps(doc))
    return directory


def bound_pods(folder: Path) -> list[Obj]:
    pods = json.loads((folder / "pods.json").read_text())["items"]
    return [
        p
        for p in pods
        if p["kind"] == "Pod"
        and p["spec"].get("nodeName")
        and p["status"].get("phase") not in ("Succeeded", "Failed")
    ]


@pytest.mark.parametrize("name", ["healthy", "quota-exhausted", "gang-half-started", "mig-nodes"])
def test_acme_over_ops_snapshots(name: str, tmp_path: Path) -> None:
    folder = OPS_FIXTURES / name
    result = simulate_json(acme_scenario(tmp_path), "--snapshot", str(folder))
    state = result["startingState"]
    assert state["pods"]["carried"] == len(bound_pods(folder))
    carried_gpu_pods = sum(row["pods"] for row in state["estimates"].values())
    assert carried_gpu_pods == len(result["startingPods"])


def test_leaderworkerset_groups_adopted_only_whole(tmp_path: Path) -> None:
    folder = OPS_FIXTURES / "gang-half-started"
    result = simulate_json(acme_scenario(tmp_path), "--snapshot", str(folder))
    groups: dict[str, list[Obj]] = {}
    for p in bound_pods(folder):
        if p["metadata"].get("labels", {}).get("app.kubernetes.io/name") == "llm-70b-tp4":
            group = p["metadata"]["annotations"]["scheduling.k8s.io/group-name"]
            groups.setdefault(group, []).append(p)
    whole = [g for g, members in groups.items() if len(members) == 4]  # size 4 (tp4)
    partial = [p for g, members in groups.items() if len(members) != 4 for p in members]
    assert whole and partial
    adopted = result["startingState"]["pods"]["adoptedReplicas"]
    assert adopted["llm-70b-tp4"] == len(whole)
    carried = {p["pod"] for p in result["startingPods"]}
    assert {f"finance/{p['metadata']['name']}" for p in partial} <= carried


def test_carried_half_started_gangs_hold_gpus_idle(tmp_path: Path) -> None:
    """Members of a PodGroup bound below its minMember keep their GPUs while the rest waits:
    the twin counts them as GPU-hours held by incomplete gangs, until each member ends."""
    folder = OPS_FIXTURES / "gang-half-started"
    result = simulate_json(acme_scenario(tmp_path), "--snapshot", str(folder))
    volcano = json.loads((folder / "volcano.json").read_text())["items"]
    minimum = {
        f"{o['metadata']['namespace']}/{o['metadata']['name']}": o["spec"]["minMember"]
        for o in volcano
        if o["kind"] == "PodGroup"
    }
    members: dict[str, list[str]] = {}
    for p in bound_pods(folder):
        group = p["metadata"].get("annotations", {}).get("scheduling.k8s.io/group-name")
        if p["spec"].get("schedulerName") == "volcano" and group:
            members.setdefault(f"{p['metadata']['namespace']}/{group}", []).append(
                f"{p['metadata']['namespace']}/{p['metadata']['name']}"
            )
    short = {key for g, keys in members.items() if len(keys) < minimum[g] for key in keys}
    assert short
    carried = {p["pod"]: p for p in result["startingPods"]}
    duration = result["summary"]["durationSeconds"]
    step = 10.0  # the scenario's sampling step: gang waste is integrated per step
    held = [(carried[k]["gpus"], min(carried[k]["endsAt"] or duration, duration)) for k in short]
    expected = sum(g * s for g, s in held) / 3600
    slack = sum(g for g, _ in held) * step / 3600
    assert result["summary"]["incompleteGangGpuHours"] == pytest.approx(expected, abs=slack)


def test_recreated_volcano_pod_gets_a_podgroup_of_its_own(tmp_path: Path) -> None:
    """A carried pod Volcano schedules, evicted for the online class, comes back pending with
    the PodGroup Volcano's controller would make for it (`podgroup-<controller uid>`)."""
    from gpupact.twin.cluster_run import ClusterSimulation

    pods = deployment_pods()
    for p in pods:
        p["spec"].update(priority=0, schedulerName="volcano")
    sim = ClusterSimulation(load_all(scenario_dir(tmp_path))[0], _view(pods), seed=1)
    sim.run_until(60.0)
    copies = [r for r in sim.control.pending.values() if r.pod.name.startswith("serve-")]
    assert copies, "the online replicas preempted the Volcano pods"
    uid = pods[0]["metadata"]["ownerReferences"][0]["uid"]
    for rec in copies:
        assert rec.scheduler == "volcano"
        assert rec.group is not None and rec.group.name == f"podgroup-{uid}"
        assert rec.pod.annotations["scheduling.k8s.io/group-name"] == rec.group.name
        assert sim.control.groups[rec.group.key] is rec.group


def test_pool_sampling_matches_the_simulation_s(tmp_path: Path) -> None:
    """ClusterSimulation samples pools over the GPU-holding bindings only: the same values as
    over all of them."""
    from gpupact.cli.cluster_start import read_start
    from gpupact.twin.cluster_run import ClusterSimulation
    from gpupact.twin.metrics import Recorder
    from gpupact.twin.simulation import Simulation

    view = read_start(OPS_FIXTURES / "gang-half-started", None, None, None)
    assert view is not None
    sim = ClusterSimulation(load_all(acme_scenario(tmp_path))[0], view, seed=2)
    for t in (0.0, 600.0, 1800.0):
        sim.run_until(t)
        mine, base = Recorder(), Recorder()
        sim.metrics, saved = mine, sim.metrics
        sim._sample_pools(t)
        sim.metrics = base
        sim._pool_bindings = lambda row: Simulation._pool_bindings(sim, row)  # type: ignore[method-assign]
        sim._sample_pools(t)
        del sim._pool_bindings
        sim.metrics = saved
        assert {k: dict(v) for k, v in mine.pools.items()} == {
            k: dict(v) for k, v in base.pools.items()
        }
        assert any(v["allocated"][0] for v in mine.pools.values())


def test_replicas_the_contract_adds_cold_start_and_missing_pools_are_ordered(
    tmp_path: Path,
) -> None:
    """On an idle cluster the service's replicas bind at once but serve only after their
    image pull and model load (the template run has them serving at t = 0: they were there
    before); a pool with no node in the cluster gets its minimum ordered at the first scan."""
    files = cluster([])
    files["nodes.json"] = [n for n in files["nodes.json"] if n["metadata"]["name"] != "train-x"]
    snap = write_snapshot(tmp_path / "snap", files)
    scen = scenario_dir(tmp_path)
    code, out, err = run_cli(str(scen), "--snapshot", str(snap), "-o", "json", "--report", "-")
    assert code == 0, err
    assert "startingState" in json.loads(out)[0]  # in the summary output, not only --full
    result = simulate_json(scen, "--snapshot", str(snap))
    template = simulate_json(scen)
    series = result["series"]["services"]["chat"]
    times = result["series"]["t"]
    cold = contract()["services"][0]["coldStart"]
    cold_s = int(cold[:-1]) * {"s": 1, "m": 60}[cold[-1]]
    waits = sorted(w["seconds"] for w in online_waits(result))
    replicas = contract()["services"][0]["replicas"]["min"]
    assert waits[:replicas] == [0] * replicas  # bound at t = 0 (later ones: bind latency)
    assert all(w <= bind_latency(scen) for w in waits)
    assert series["ready"][0] == 0
    first_ready = next(t for t, r in zip(times, series["ready"], strict=True) if r > 0)
    assert cold_s <= first_ready <= cold_s + 10  # the next sample after the cold start
    assert template["series"]["services"]["chat"]["ready"][0] > 0
    ordered = [e for e in result["events"] if e["kind"] == "scale-up" and e["t"] == 0]
    assert [e["subject"] for e in ordered] == ["gpu-batch"]


# --- malformed clusters: a clear exit 2 or a run, never a crash ------------------------------

WRONG_VALUES = [None, True, -1, 0, 10**30, 1e308, "x", "", [], {}, [1], "2026-13-40T00:00:00Z"]


def _field_paths(obj: Any, prefix: tuple = ()) -> Iterator[tuple]:
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield (*prefix, key)
            yield from _field_paths(value, (*prefix, key))
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            yield (*prefix, i)
            yield from _field_paths(value, (*prefix, i))


def test_mutated_snapshots_run_or_exit_2(tmp_path: Path) -> None:
    """Seeded mutations of the objects this command reads beyond diagnose's reader (pods'
    owners, times and deadlines, a Job, Kueue objects): every field set to a value of the
    wrong type, range or size. (apiVersion is left out: a non-string one fails in the shared
    reader, kube/scheduling_objects.py, for diagnose too.)"""
    rng = random.Random(19)
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "research", "uid": "uid-Job-train"},
        "spec": {"activeDeadlineSeconds": 5400, "template": {"spec": {"containers": []}}},
        "status": {"startTime": stamp(timedelta(hours=1))},
    }
    lab = pod(
        "lab-0", "train-x", age=timedelta(minutes=30), owned_by=owner("Job", "lab", "batch/v1")
    )
    base = cluster([*job_pods(timedelta(minutes=50)), lab], [job, *kueue_cluster()])
    scen = write(tmp_path / "scen", contract(), scenario(jobs=[], duration="10m"))
    for case in range(30):
        files = copy.deepcopy(base)
        items = files[rng.choice(["pods.json", "extra.json"])]
        item = items[rng.randrange(len(items))]
        path = rng.choice([p for p in _field_paths(item) if p[-1] != "apiVersion"])
        target = item
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = rng.choice(WRONG_VALUES)
        snap = write_snapshot(tmp_path / f"snap{case}", files)
        code, _, err = run_cli(str(scen), "--snapshot", str(snap), "--report", "-", "-o", "json")
        assert code in (0, 2) and "Traceback" not in err, (item.get("kind"), path, err)
        if code == 2:
            assert err.startswith("error: "), err


def test_a_contract_job_already_running_is_not_created_again(tmp_path: Path) -> None:
    job = {"name": "reindex", "tenant": "lab", "class": "batch", "gpusPerPod": 8, "duration": "1h"}
    scen = write(
        tmp_path / "scen",
        contract(jobs=[job]),
        scenario(jobs=[{"contract": True}], duration="1h"),
    )
    namespace = build_world(load_all(scen)[0]).jobs["reindex"].pod.namespace
    running = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "reindex", "namespace": namespace, "uid": "uid-Job-reindex"},
        "spec": {"template": {"spec": {"containers": []}}},
        "status": {"startTime": stamp(timedelta(minutes=20))},
    }
    its_pod = pod(
        "reindex-x7k2p",
        "train-x",
        age=timedelta(minutes=20),
        owned_by=owner("Job", "reindex", "batch/v1"),
        labels={"gpupact.io/class": "batch", "gpupact.io/tenant": "lab"},
    )
    its_pod["metadata"]["namespace"] = namespace
    with_job = write_snapshot(tmp_path / "with", cluster([its_pod], [running]))
    without = write_snapshot(tmp_path / "without", cluster([]))

    def created(result: dict[str, Any]) -> list[str]:
        return [e["subject"] for e in result["events"] if e["kind"] == "admitted"]

    result = simulate_json(scen, "--snapshot", str(with_job))
    assert created(result) == []
    assert [e["subject"] for e in result["events"] if e["kind"] == "job-running"] == ["reindex"]
    pods = {p["pod"]: p for p in result["startingPods"]}
    assert pods[f"{namespace}/reindex-x7k2p"]["class"] == "batch"
    assert created(simulate_json(scen, "--snapshot", str(without))) == ["reindex-1"]
