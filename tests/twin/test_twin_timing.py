"""The twin keeps the controllers' timing, and simulates only what is compiled.

Upstream values reproduced (each test names its own):
- kubelet skips the pull of an image the node has: imagePullPolicy defaults to IfNotPresent
  for a tagged image, Always for `:latest` or no tag
  (https://kubernetes.io/docs/concepts/containers/images/#imagepullpolicy-defaulting);
- Karpenter batches unschedulable pods: BATCH_IDLE_DURATION 1s, BATCH_MAX_DURATION 10s
  (https://karpenter.sh/docs/reference/settings/); an empty node goes after its NodePool's
  `disruption.consolidateAfter`;
- cluster-autoscaler scans every `--scan-interval` (10s) and ignores pods younger than
  `--new-pod-scale-up-delay` (0s) (cluster-autoscaler FAQ, "How does scale-up work?", "How
  can I modify Cluster Autoscaler reaction time?"); `--scale-down-unneeded-time` 10m;
- binding is an API write after placement: default bind latency 1s, the SIG Scalability SLO
  bound for single-object mutating calls (sig-scalability/slos/api_call_latency.md);
- pre-warm: pause pods of priority -10 and grace period 0 hold nodes; a real pod preempts
  one and binds at once (cluster-autoscaler FAQ, "How can I configure overprovisioning").
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from twin_helpers import contract, scenario, write

from gpupact.contract import parse_contract
from gpupact.contract.rules import check
from gpupact.errors import InputError
from gpupact.kube.objects import parse_pod
from gpupact.twin.autoscaler import Batcher, go_seconds
from gpupact.twin.scenario import DEFAULT_BIND_LATENCY, Autoscaler, Scenario, load_scenario
from gpupact.twin.simulation import Simulation, pull_policy

PULL, LOAD = 60.0, 60.0  # twin_helpers' gpu-inference pool: imagePull 1m, modelLoad 1m
NODE_READY = 120.0 + 60.0 + 30.0  # provision 2m + driver 1m + device plugin 30s
CONSOLIDATE_AFTER = NODE_READY + PULL + LOAD  # compile: the pool's whole cold start


def _contract(**pool: Any) -> dict[str, Any]:
    """One chat service of fixed size (no HPA: the tests scale it by hand), started by the
    pool's phases (no service coldStart override)."""
    c = contract()
    c["pools"][0]["nodes"] = {"min": 1, "max": 3}
    c["pools"][0]["coldStart"].update(pool.pop("coldStart", {}))
    c["pools"][0].update(pool)
    service = c["services"][0]
    service["replicas"] = {"min": 2, "max": 2}
    del service["coldStart"]
    return c


def _sim(tmp_path: Path, c: dict[str, Any] | None = None, **s: Any) -> Simulation:
    s.setdefault("jobs", [])
    write(tmp_path, c or _contract(), scenario(**s))
    return Simulation(load_scenario(tmp_path))


def _scale(sim: Simulation, at: float, replicas: int) -> None:
    sim.run_until(at)
    sim._scale_service(sim.services["chat"], replicas, sim.now)
    sim._reconcile()


def _events(sim: Simulation, kind: str) -> list[dict[str, Any]]:
    return [e for e in sim.metrics.events if e["kind"] == kind]


def _node_of(sim: Simulation, replica: Any) -> str:
    return sim.control.bound[replica.pods[0]].node or ""


def _replica_start(sim: Simulation, name: str) -> tuple[str, float]:
    """(node, ready - bound) of a single-pod replica."""
    _, replica = sim.replica_of[name]
    rec = sim.control.bound[replica.pods[0]]
    return rec.node or "", replica.ready_at - rec.bound_at  # type: ignore[operator]


# --- 1. image and model caches per node ---------------------------------------------------


def test_a_node_with_the_image_starts_a_replica_after_model_load_only(tmp_path: Path) -> None:
    sim = _sim(tmp_path)
    first = next(iter(sim.pool_of_node))
    _scale(sim, 605, 3)  # a third replica: room on the node that runs the first two
    node, start = _replica_start(sim, "chat-3")
    assert node == first
    assert start == LOAD  # IfNotPresent: no pull on a node that has the image
    _scale(sim, 700, 10)  # 8 fit the first node; the rest wait for a new node
    sim.run_until(700 + 10 + NODE_READY + 5)
    fresh = [r for r in sim.services["chat"].replicas if _node_of(sim, r) != first]
    assert fresh
    for replica in fresh:
        assert _replica_start(sim, replica.name)[1] == PULL + LOAD  # a new node pulls


def test_model_cache_on_the_node_loads_from_disk_the_second_time(tmp_path: Path) -> None:
    cache = {"coldStart": {"modelCache": "node", "cachedModelLoad": "10s"}}
    sim = _sim(tmp_path, _contract(**cache))
    _scale(sim, 605, 3)
    assert _replica_start(sim, "chat-3")[1] == 10.0  # image present, weights on the disk
    _scale(sim, 700, 10)
    sim.run_until(700 + 10 + NODE_READY + 5)
    first = next(iter(sim.pool_of_node))
    fresh = [r for r in sim.services["chat"].replicas if _node_of(sim, r) != first]
    starts = sorted(_replica_start(sim, r.name)[1] for r in fresh)
    # on a new node the first replica fetches the model; one placed with it waits for that
    # download, then loads from the cache
    assert starts[0] == PULL + LOAD
    assert all(s in (PULL + LOAD, PULL + LOAD + 10.0) for s in starts)


@pytest.mark.parametrize(
    ("image", "policy", "expected"),
    [
        ("registry.invalid/gpupact/chat:unset", None, "IfNotPresent"),
        ("registry.invalid/gpupact/chat:latest", None, "Always"),
        ("registry.invalid/gpupact/chat", None, "Always"),
        ("registry.invalid:5000/gpupact/chat", None, "Always"),  # a port is no tag
        ("registry.invalid/chat@sha256:" + "0" * 64, None, "IfNotPresent"),
        ("registry.invalid/chat:v1", "Always", "Always"),
    ],
)
def test_image_pull_policy_defaulting(image: str, policy: str | None, expected: str) -> None:
    container: dict[str, Any] = {"name": "c", "image": image}
    if policy:
        container["imagePullPolicy"] = policy
    pod = parse_pod({"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [container]}})
    assert pull_policy(pod) == expected


# --- 2. time to GPU and time to serving ---------------------------------------------------


@pytest.mark.parametrize(("until", "kept"), [("bound", True), ("ready", False)])
def test_time_to_gpu_and_to_serving_are_two_numbers(tmp_path: Path, until: str, kept: bool) -> None:
    c = _contract()
    c["classes"][0]["maxQueueWait"] = "30s"
    c["classes"][0]["maxQueueWaitUntil"] = until
    sim = _sim(tmp_path, c)
    _scale(sim, 605, 4)
    sim.run_until(1200)
    summary = sim.result()["summary"]
    gpu = summary["timeToGpu"]["online-infer"]
    serving = summary["timeToServing"]["online-infer"]
    assert gpu["max"] == DEFAULT_BIND_LATENCY.total_seconds()  # room on the node: bind only
    assert serving["max"] == DEFAULT_BIND_LATENCY.total_seconds() + LOAD  # + load
    promise = summary["promises"]["online-infer"]
    assert promise["until"] == until
    assert promise["kept"] is kept  # a 30 s promise holds to binding, not to serving


@pytest.mark.parametrize(("until", "warned"), [("bound", False), ("ready", True)])
def test_check_measures_the_promise_to_its_point(until: str, warned: bool) -> None:
    """`gpupact check`'s cold-start rule: a promise to `bound` waits for a node (provision +
    driver + device plugin, 3m30s here), one to `ready` for the pod's pull and load too
    (5m30s); a 4-minute promise on a pool without warm nodes breaks only the latter."""
    c = _contract()
    c["pools"][0]["nodes"] = {"min": 0, "max": 3}
    c["classes"][0].update(maxQueueWait="4m", maxQueueWaitUntil=until)
    loaded = parse_contract(yaml.safe_dump(c), "contract.yaml")
    rules = {f.rule for f in check(loaded.contract, datetime(2026, 11, 1, tzinfo=UTC))}
    assert ("cold-start-exceeds-queue-wait" in rules) is warned


def test_a_replica_deleted_before_it_serves_is_still_waiting_to_serve(tmp_path: Path) -> None:
    sim = _sim(tmp_path)
    _scale(sim, 605, 3)
    _scale(sim, 630, 2)  # scaled away 25 s later, before its model loaded
    waits = [s for s in sim.metrics.serving if s.owner == "chat-3"]
    assert len(waits) == 1 and waits[0].censored and waits[0].seconds == 25.0


# --- 3. node provisioning timing ----------------------------------------------------------


def test_karpenter_batch_window() -> None:
    batcher = Batcher(idle_s=1.0, max_s=10.0)
    assert batcher.trigger(100.0) == 101.0  # idle 1s after the first pod
    assert batcher.trigger(100.5) == 101.5  # each new pod extends it
    t = 100.5
    while t < 115:
        t += 0.5
        closes = batcher.trigger(t)
    assert closes == 110.0  # never beyond max 10s after it opened
    assert batcher.due(110.0) and not batcher.due(109.0)


def test_scenario_defaults_are_upstream_defaults() -> None:
    a = Autoscaler()
    assert a.provisioner.value == "karpenter"
    assert a.batch_idle_duration == timedelta(seconds=1)
    assert a.batch_max_duration == timedelta(seconds=10)
    assert a.scan_interval == timedelta(seconds=10)
    assert a.new_pod_scale_up_delay == timedelta(0)
    assert a.scale_down_unneeded == timedelta(minutes=10)
    assert Scenario.model_fields["bind_latency"].default == timedelta(seconds=1)


def _first_order(sim: Simulation) -> float:
    return next(e["t"] for e in _events(sim, "scale-up") if "unschedulable" in e["text"])


@pytest.mark.parametrize(
    ("autoscaler", "ordered_at"),
    [
        ({}, 606.0),  # Karpenter: the window closes 1s (idle) after the pod
        ({"provisioner": "cluster-autoscaler"}, 610.0),  # the next 10s scan
        ({"provisioner": "cluster-autoscaler", "newPodScaleUpDelay": "30s"}, 640.0),
        ({"provisioner": "cluster-autoscaler", "scanInterval": "1m"}, 660.0),
    ],
)
def test_when_a_node_is_ordered(
    tmp_path: Path, autoscaler: dict[str, Any], ordered_at: float
) -> None:
    sim = _sim(tmp_path, autoscaler=autoscaler)
    _scale(sim, 605, 9)  # one replica more than the first node holds
    sim.run_until(700)
    assert _first_order(sim) == ordered_at


@pytest.mark.parametrize(
    ("autoscaler", "unneeded"),
    [({}, CONSOLIDATE_AFTER), ({"provisioner": "cluster-autoscaler"}, 600.0)],
)
def test_an_empty_node_leaves_after_the_compiled_consolidate_after(
    tmp_path: Path, autoscaler: dict[str, Any], unneeded: float
) -> None:
    sim = _sim(tmp_path, autoscaler=autoscaler)
    _scale(sim, 605, 9)
    sim.run_until(605 + 20 + NODE_READY)
    assert _events(sim, "node-ready")
    _scale(sim, 1000, 2)  # the new node is empty from t = 1000
    sim.run_until(1000 + unneeded + 20)
    removed = _events(sim, "node-removed")
    assert len(removed) == 1
    # noticed empty on the first scan at or after 1000, removed on the first scan after that
    assert 1000 + unneeded <= removed[0]["t"] < 1000 + unneeded + 20


def test_karpenter_requeues_a_pod_still_unschedulable(tmp_path: Path) -> None:
    """Karpenter's pod controller re-triggers the provisioner every 10 s while a pod stays
    provisionable (PodController RequeueAfter 10s); each trigger opens a 1 s window."""
    sim = _sim(tmp_path)
    passes: list[float] = []
    provision = sim._provision

    def counted(pods: list[Any], why: str) -> None:
        passes.append(sim.now)
        provision(pods, why)

    sim._provision = counted  # type: ignore[method-assign]
    _scale(sim, 605, 30)  # 3 nodes hold 24: 6 replicas wait for good
    sim.run_until(650)
    assert passes == [606.0, 617.0, 628.0, 639.0, 650.0]


def test_karpenter_grows_a_pool_by_the_compiled_node_pool_limit(tmp_path: Path) -> None:
    """The twin reads `limits.nodes` from the NodePool: change the object, the twin follows."""
    sim = _sim(tmp_path)
    assert sim.autoscaler.pools["gpu-inference"].maximum == 3  # nodes.min 1 + limits.nodes 2
    node_pool = sim.world.bundle.of_kind("NodePool")[0]
    node_pool["spec"]["limits"]["nodes"] = 1
    sim.autoscaler.pools["gpu-inference"].maximum = 0
    sim._provisioner_bounds()
    assert sim.autoscaler.pools["gpu-inference"].maximum == 2
    assert sim.autoscaler.pools["gpu-batch"].maximum == 1  # min == max: no NodePool


def test_go_durations() -> None:
    assert go_seconds("5m30s") == CONSOLIDATE_AFTER
    assert go_seconds("1h") == 3600 and go_seconds("0s") == 0
    with pytest.raises(ValueError):
        go_seconds("5 minutes")


# --- 4. bind latency ----------------------------------------------------------------------


def test_bind_latency_is_between_placement_and_bound(tmp_path: Path) -> None:
    sim = _sim(tmp_path, bindLatency="2500ms")
    _scale(sim, 605, 3)
    _, replica = sim.replica_of["chat-3"]
    rec = sim.control.bound[replica.pods[0]]
    assert rec.bound_at == 607.5
    assert replica.ready_at == 607.5 + LOAD
    # the node's GPU is held from the placement on
    row = sim.state.node_index[rec.node]  # type: ignore[index]
    assert sim.state.pods_on(row)


# --- 5. pre-warm windows as their compiled placeholders -----------------------------------

WINDOW = {"name": "promo", "start": "2026-11-11T00:30:00Z", "end": "2026-11-11T01:30:00Z"}


def test_prewarm_placeholders_hold_nodes_and_make_room(tmp_path: Path) -> None:
    sim = _sim(tmp_path, _contract(preWarm=[{**WINDOW, "minNodes": 2}]))
    sim.run_until(1799)
    assert len(sim.autoscaler.pools["gpu-inference"].rows) == 1  # before the window
    sim.run_until(1800 + 1 + NODE_READY + 2)
    held = [r for r in sim.control.bound.values() if sim._placeholder(r)]
    assert len(held) == 2  # the CronJob's parallelism: 2 pods, each a whole node
    assert len(sim.autoscaler.pools["gpu-inference"].rows) == 3
    _scale(sim, 2400, 12)  # 6 fit next to the first two; 4 preempt a placeholder
    assert sim.metrics.placeholders_preempted == 1
    grown = [s for s in sim.metrics.pending if s.workload_class == "online-infer" and s.seconds]
    assert max(s.seconds for s in grown) == DEFAULT_BIND_LATENCY.total_seconds()
    sim.run_until(5400 + 1)  # activeDeadlineSeconds 3600: the Job's pods are deleted
    assert not [r for r in sim.control.records() if sim._placeholder(r)]
    sim.run_until(5400 + CONSOLIDATE_AFTER + 20)
    assert len(_events(sim, "node-removed")) == 1  # the node only a placeholder held
    result = sim.result()
    assert all(u["workloadClass"] for u in sim.usage_records())  # no ledger rows for them
    assert result["summary"]["placeholdersPreempted"] == 1


def test_the_twin_runs_the_compiled_cron_job(tmp_path: Path) -> None:
    """The window's timing comes from the compiled CronJob, not from the contract: change
    the object and the twin follows."""
    sim = _sim(tmp_path, _contract(preWarm=[{**WINDOW, "minNodes": 1}]))
    (run,) = sim.prewarm
    assert (run.begin, run.end, run.job.pods) == (1800.0, 5400.0, 1)
    assert run.job.pod.priority == -10 and run.job.pod.preemption_policy == "Never"
    cron = next(
        o for o in sim.world.bundle.of_kind("CronJob") if o["metadata"]["name"] == run.job.name
    )
    assert cron["spec"]["schedule"] == "30 0 11 11 *"


@pytest.mark.parametrize(
    ("change", "path", "message"),
    [
        ({"autoscaler": {"provisioner": "keda"}}, "autoscaler.provisioner", "keda"),
        (
            {"autoscaler": {"batchIdleDuration": "20s"}},
            "autoscaler",
            "batchIdleDuration must not exceed batchMaxDuration",
        ),
        ({"bindLatency": "soon"}, "bindLatency", "invalid duration"),
    ],
)
def test_bad_timing_fields_name_file_line_and_field(
    tmp_path: Path, change: dict[str, Any], path: str, message: str
) -> None:
    write(tmp_path, _contract(), scenario(**change))
    with pytest.raises(InputError) as err:
        load_scenario(tmp_path)
    text = str(err.value)
    assert str(tmp_path / "scenario.yaml") in text and f": {path}: " in text
    assert message in text and err.value.line is not None


def test_a_recurring_window_fires_on_the_contract_clock(tmp_path: Path) -> None:
    """Recurring windows are CronJobs in the contract's timeZone: 01:00 in Shanghai is
    17:00 UTC the day before, the scenario's start here."""
    window = {"name": "nightly", "schedule": "0 1 * * *", "duration": "30m", "minNodes": 1}
    c = _contract(preWarm=[window])
    c["timeZone"] = "Asia/Shanghai"
    sim = _sim(tmp_path, c, start="2026-11-10T17:00:00Z")
    (run,) = sim.prewarm
    assert (run.begin, run.end) == (0.0, 1800.0)


def test_a_gang_job_fires_on_the_schedule_compiled_into_its_annotations() -> None:
    """A Volcano Job has no schedule field: the twin reads the cron and its time zone back
    from the annotations compile writes, so editing the object moves the job."""
    import sys

    sys.path.insert(0, str(Path(__file__).parents[1] / "compile"))
    from compile_helpers import compile_varied, find, varied

    from gpupact.twin.world import _job_template

    zoned = varied({"timeZone": "Asia/Shanghai"})
    bundle = compile_varied({"timeZone": "Asia/Shanghai"})
    job = next(j for j in zoned.jobs if j.name == "pretrain")
    template = _job_template(zoned, bundle, job, {}, {})
    assert (template.schedule, template.time_zone) == ("0 3 * * 6", "Asia/Shanghai")
    vjob = find(bundle, "Job", "pretrain", "batch.volcano.sh/v1alpha1")
    vjob["metadata"]["annotations"]["gpupact.io/time-zone"] = "Europe/Paris"
    vjob["metadata"]["annotations"]["gpupact.io/schedule"] = "0 4 * * 0"
    moved = _job_template(zoned, bundle, job, {}, {})
    assert (moved.schedule, moved.time_zone) == ("0 4 * * 0", "Europe/Paris")
