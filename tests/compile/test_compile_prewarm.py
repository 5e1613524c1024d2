"""Pre-warm windows compile to placeholder pods, and `modelCache: node` to a node-local
volume: objects the cluster runs, which the twin then simulates.

Upstream values reproduced:
- cluster-autoscaler FAQ "How can I configure overprovisioning with Cluster Autoscaler?"
  (https://github.com/kubernetes/autoscaler/blob/master/cluster-autoscaler/FAQ.md): a
  PriorityClass of value -10 ("the lowest priority that triggers scaling clusters"), pause pods
  with terminationGracePeriodSeconds 0;
- Job `activeDeadlineSeconds` ends the Job and its pods; `podFailurePolicy` action Ignore on
  the DisruptionTarget condition replaces a preempted pod without counting a failure
  (https://kubernetes.io/docs/concepts/workloads/controllers/job/);
- CronJob names are at most 52 characters (the controller appends 11 to its Jobs' names);
- huggingface_hub keeps its cache under $HF_HOME (default ~/.cache/huggingface); CA does not
  remove a node whose pods use hostPath unless `safe-to-evict-local-volumes` lists them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from compile_helpers import (
    ACME,
    BEFORE_EXPIRY,
    KUBERNETES_VERSION,
    ROOT,
    compile_varied,
    find,
    varied,
)
from typer.testing import CliRunner

import gpupact.cli.compile  # noqa: F401  (registers the command)
from gpupact.cli.main import app
from gpupact.compile import CompileOptions, compile_contract
from gpupact.compile.model_cache import HF_HOME, HOST_PATH, MOUNT_PATH, SAFE_TO_EVICT_LOCAL
from gpupact.compile.prewarm import PAUSE_IMAGE, PRIORITY_CLASS
from gpupact.contract import ContractInvalid, load_contract
from gpupact.errors import FieldError

PROMO = ROOT / "examples" / "promo-peak" / "contract" / "contract.yaml"
FIXED = {"name": "launch", "start": "2026-11-11T19:00:00+08:00", "end": "2026-11-11T23:30:00+08:00"}


def _bundle(path: Path) -> Any:
    return compile_contract(load_contract(path).contract, CompileOptions(now=BEFORE_EXPIRY))


def test_a_fixed_window_is_a_cron_job_of_placeholders() -> None:
    bundle = _bundle(PROMO)
    pc = find(bundle, "PriorityClass", PRIORITY_CLASS)
    assert (pc["value"], pc["preemptionPolicy"], pc["globalDefault"]) == (-10, "Never", False)
    cron = find(bundle, "CronJob", "gpu-inference-prewarm-evening-promo")
    # 19:00 +08:00 is 11:00 UTC on 11 November; 4h30m long; 13 nodes
    assert cron["spec"]["schedule"] == "0 11 11 11 *"
    assert cron["spec"]["timeZone"] == "Etc/UTC"
    job = cron["spec"]["jobTemplate"]["spec"]
    assert job["activeDeadlineSeconds"] == 4 * 3600 + 30 * 60
    assert job["parallelism"] == job["completions"] == 13
    assert job["podFailurePolicy"]["rules"] == [
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}
    ]
    spec = job["template"]["spec"]
    assert spec["priorityClassName"] == PRIORITY_CLASS
    assert spec["terminationGracePeriodSeconds"] == 0
    assert spec["restartPolicy"] == "Never"  # podFailurePolicy requires it
    (container,) = spec["containers"]
    assert container["image"] == PAUSE_IMAGE
    # a whole node of the pool's GPUs per placeholder
    assert container["resources"]["requests"] == container["resources"]["limits"]
    assert container["resources"]["requests"] == {"nvidia.com/gpu": "8"}
    assert spec["tolerations"] == [
        {"key": "workload", "operator": "Equal", "value": "online-infer", "effect": "NoSchedule"}
    ]
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == ["gpu-inference"]
    assert "kueue.x-k8s.io/queue-name" not in cron["metadata"]["labels"]  # Kueue leaves it


def test_the_placeholder_objects_pass_the_kubernetes_openapi_schema() -> None:
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    bundle = _bundle(PROMO)
    cron = find(bundle, "CronJob", "gpu-inference-prewarm-evening-promo")
    for obj in (cron, find(bundle, "PriorityClass", PRIORITY_CLASS)):
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
    cached = compile_varied({"pools.1.coldStart": {"modelCache": "node", "cachedModelLoad": "0s"}})
    kubernetes_validate.validate(
        find(cached, "Deployment", "shared-embed"), KUBERNETES_VERSION, strict=True
    )


def test_a_recurring_window_keeps_its_schedule() -> None:
    bundle = _bundle(ACME)
    cron = find(bundle, "CronJob", "gpu-burst-prewarm-month-end")
    assert cron["spec"]["schedule"] == "0 18 28 * *"
    assert cron["spec"]["jobTemplate"]["spec"]["activeDeadlineSeconds"] == 4 * 86400


def test_a_recurring_window_is_read_in_the_contract_time_zone() -> None:
    contract = load_contract(ACME).contract.model_copy(update={"time_zone": "Asia/Shanghai"})
    bundle = compile_contract(contract, CompileOptions(now=BEFORE_EXPIRY))
    recurring = find(bundle, "CronJob", "gpu-burst-prewarm-month-end")
    assert recurring["spec"]["timeZone"] == "Asia/Shanghai"  # as the job CronJobs
    fixed = find(bundle, "CronJob", "gpu-burst-prewarm-double-eleven")
    # a fixed window is an instant: written in UTC, whatever the contract's clock
    assert (fixed["spec"]["schedule"], fixed["spec"]["timeZone"]) == ("0 16 9 11 *", "Etc/UTC")


def test_no_window_no_placeholders() -> None:
    bundle = compile_varied()
    assert not [
        p for p in bundle.of_kind("PriorityClass") if p["metadata"]["name"] == PRIORITY_CLASS
    ]
    assert not [c for c in bundle.of_kind("CronJob") if "prewarm" in c["metadata"]["name"]]


def test_time_sliced_pool_placeholders_ask_for_its_replicas() -> None:
    window = {**FIXED, "minNodes": 1}
    bundle = compile_varied({"pools.0.preWarm": [window], "pools.0.nodes": {"min": 1, "max": 2}})
    cron = find(bundle, "CronJob", "gpu-mig-prewarm-launch")
    requests = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
    # gpu-mig is 8 x A100 cut into 1g.10gb: 7 instances per GPU
    assert requests["resources"]["requests"] == {"nvidia.com/mig-1g.10gb": "56"}


def test_a_cron_job_name_too_long_is_refused_at_the_window() -> None:
    window = {**FIXED, "name": "x" * 40, "minNodes": 1}
    with pytest.raises(FieldError) as info:
        compile_varied({"pools.1.preWarm": [window]})
    assert info.value.path == ("pools", 1, "preWarm", 0, "name")


def test_model_cache_compiles_to_a_host_path_volume() -> None:
    cold = {"modelLoad": "5m", "modelCache": "node", "cachedModelLoad": "30s"}
    bundle = compile_varied({"pools.1.coldStart": cold})
    template = find(bundle, "Deployment", "shared-embed")["spec"]["template"]
    spec = template["spec"]
    assert spec["volumes"] == [
        {"name": "model-cache", "hostPath": {"path": HOST_PATH, "type": "DirectoryOrCreate"}}
    ]
    container = spec["containers"][0]
    assert {"name": "model-cache", "mountPath": MOUNT_PATH} in container["volumeMounts"]
    assert {"name": HF_HOME, "value": MOUNT_PATH} in container["env"]
    assert template["metadata"]["annotations"][SAFE_TO_EVICT_LOCAL] == "model-cache"
    plain = find(compile_varied(), "Deployment", "shared-embed")["spec"]["template"]["spec"]
    assert "volumes" not in plain


@pytest.mark.parametrize(
    ("cold", "message"),
    [
        ({"modelCache": "node"}, "modelCache: node needs cachedModelLoad"),
        ({"modelLoad": "1m", "cachedModelLoad": "10s"}, "cachedModelLoad is read only with"),
        (
            {"modelLoad": "1m", "modelCache": "node", "cachedModelLoad": "2m"},
            "cachedModelLoad must not exceed modelLoad",
        ),
        ({"modelCache": "disk"}, "must be 'none' or 'node'"),
    ],
)
def test_model_cache_fields_are_validated(cold: dict[str, str], message: str) -> None:
    with pytest.raises(ContractInvalid) as info:
        varied({"pools.1.coldStart": cold})
    (error,) = info.value.errors
    assert error.path[:3] == ("pools", 1, "coldStart")
    assert message in error.message


def test_queue_wait_until_is_validated_and_defaults_to_bound() -> None:
    assert varied().classes[0].max_queue_wait_until.value == "bound"
    assert (
        varied({"classes.0.maxQueueWaitUntil": "ready"}).classes[0].max_queue_wait_until.value
        == "ready"
    )
    with pytest.raises(ContractInvalid) as info:
        varied({"classes.0.maxQueueWaitUntil": "serving"})
    assert info.value.errors[0].path == ("classes", 0, "maxQueueWaitUntil")


def test_bad_model_cache_is_one_located_line_and_exit_2(tmp_path: Path) -> None:
    text = PROMO.read_text().replace(
        "imagePull: 2m, modelLoad: 3m}", "imagePull: 2m, modelLoad: 3m, modelCache: node}", 1
    )
    bad = tmp_path / "contract.yaml"
    bad.write_text(text)
    result = CliRunner().invoke(app, ["compile", str(bad), "-o", "name"])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "contract.yaml:" in lines[0] and "coldStart" in lines[0]
    assert "Traceback" not in result.output
