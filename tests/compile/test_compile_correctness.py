"""What the compiled objects must mean on a real cluster: gangs per LeaderWorkerSet replica,
the device configuration shared pools need, the Kueue API an older Kueue serves, and labels
that let gpupact's own audit account for every object."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from compile_helpers import BEFORE_EXPIRY, compile_acme, compile_varied, find, varied

from gpupact.compile import CompileOptions, compile_contract
from gpupact.compile.gpu_operator import (
    DEVICE_PLUGIN_CONFIG_LABEL,
    DEVICE_PLUGIN_CONFIGMAP,
    GPU_OPERATOR_NAMESPACE,
    MIG_CONFIG_LABEL,
    MIG_PARTED_CONFIGMAP,
    MIG_PARTED_KEY,
)
from gpupact.compile.validate import check_bundle
from gpupact.errors import FieldError

# --- LeaderWorkerSet gangs ------------------------------------------------------------------


def test_each_leader_worker_group_is_its_own_gang():
    # `wide`: 16 GPUs per replica as 2 pods of 8 -> a LeaderWorkerSet of size 2, 1..2 replicas
    bundle = compile_varied()
    lws = find(bundle, "LeaderWorkerSet", "wide")
    assert lws["spec"]["leaderWorkerTemplate"]["size"] == 2
    assert lws["spec"]["startupPolicy"] == "LeaderCreated"  # LWS: minMember = size
    assert lws["metadata"]["annotations"]["scheduling.volcano.sh/queue-name"] == "gpu-online"
    worker = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]
    assert worker["spec"]["schedulerName"] == "volcano"
    assert "scheduling.k8s.io/group-name" not in worker["metadata"].get("annotations", {})
    # no PodGroup shared by the replicas; the Deployment-wide gang `ring` keeps its own
    assert [p["metadata"]["name"] for p in bundle.of_kind("PodGroup")] == ["ring"]


def test_service_wide_gang_of_multi_pod_replicas_is_refused():
    with pytest.raises(FieldError) as err:
        compile_varied({"services.2.gang": "service"})
    assert err.value.path == ("services", 2, "gang")
    assert "use gang: replica" in err.value.message


def test_a_volcano_leader_worker_set_needs_its_queue():
    bundle = compile_varied()
    lws = find(bundle, "LeaderWorkerSet", "wide")
    lws["metadata"]["annotations"]["scheduling.volcano.sh/queue-name"] = "nowhere"
    problems = [str(p) for p in check_bundle(bundle)]
    assert problems == [
        "LeaderWorkerSet lab/wide: Volcano Queue nowhere (annotation "
        "scheduling.volcano.sh/queue-name) is not emitted"
    ]


# --- GPU Operator configuration of shared pools ----------------------------------------------

# The config files' shapes, from the Go types that read them: NVIDIA/k8s-device-plugin
# api/config/v1 (Config, Flags, Sharing, ReplicatedResources, ReplicatedResource) and
# NVIDIA/mig-parted api/spec/v1 (Spec, MigConfigSpec: devices and mig-enabled required,
# devices "all" or a list of indexes, version "v1", no other top-level field).
DEVICE_PLUGIN_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["version"],
    "properties": {
        "version": {"const": "v1"},
        "flags": {
            "type": "object",
            "properties": {"migStrategy": {"enum": ["none", "single", "mixed"]}},
        },
        "resources": {"type": "object"},
        "imex": {"type": "object"},
        "sharing": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "timeSlicing": {"$ref": "#/definitions/replicated"},
                "mps": {"$ref": "#/definitions/replicated"},
            },
        },
    },
    "definitions": {
        "replicated": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "renameByDefault": {"type": "boolean"},
                "failRequestsGreaterThanOne": {"type": "boolean"},
                "resources": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["name", "replicas"],
                        "properties": {
                            "name": {"type": "string", "pattern": "^nvidia.com/"},
                            "rename": {"type": "string"},
                            "devices": {},
                            "replicas": {"type": "integer", "minimum": 1},
                        },
                    },
                },
            },
        }
    },
}
MIG_PARTED_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["version"],
    "properties": {
        "version": {"const": "v1"},
        "mig-configs": {
            "type": "object",
            "minProperties": 1,
            "additionalProperties": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["devices", "mig-enabled"],
                    "properties": {
                        "device-filter": {},
                        "devices": {
                            "oneOf": [
                                {"const": "all"},
                                {"type": "array", "items": {"type": "integer"}},
                            ]
                        },
                        "mig-enabled": {"type": "boolean"},
                        "mig-devices": {
                            "type": "object",
                            "propertyNames": {"pattern": r"^([1-7]c\.)?[1-7]g\.\d+gb(\+me)?$"},
                            "additionalProperties": {"type": "integer", "minimum": 0},
                        },
                    },
                },
            },
        },
    },
}


def _validate(document: Any, schema: dict[str, Any]) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(document, schema)


def test_time_sliced_pool_gets_a_device_plugin_config_and_its_node_label():
    bundle = compile_acme()  # gpu-batch: timeslice:2
    cm = find(bundle, "ConfigMap", DEVICE_PLUGIN_CONFIGMAP)
    assert cm["metadata"]["namespace"] == GPU_OPERATOR_NAMESPACE
    assert sorted(cm["data"]) == ["gpu-batch"]  # exclusive pools need no config
    config = yaml.safe_load(cm["data"]["gpu-batch"])
    _validate(config, DEVICE_PLUGIN_SCHEMA)
    assert config["sharing"]["timeSlicing"]["resources"] == [
        {"name": "nvidia.com/gpu", "replicas": 2}
    ]
    # the node label that selects the config, on fixed nodes (patch) and Karpenter's nodes
    assert bundle.node_patches["gpu-batch"]["metadata"]["labels"][DEVICE_PLUGIN_CONFIG_LABEL] == (
        "gpu-batch"
    )
    pool = find(bundle, "NodePool", "gpu-batch")
    assert pool["spec"]["template"]["metadata"]["labels"][DEVICE_PLUGIN_CONFIG_LABEL] == "gpu-batch"
    assert (
        DEVICE_PLUGIN_CONFIG_LABEL not in bundle.node_patches["gpu-inference"]["metadata"]["labels"]
    )
    assert bundle.of_kind("ConfigMap") == [cm]  # no MIG pool, no mig-parted config


def test_mig_pool_gets_a_mig_parted_layout_and_the_mixed_strategy():
    bundle = compile_varied()  # gpu-mig: mig:1g.10gb on 8 x a100-80g
    mig_cm = find(bundle, "ConfigMap", MIG_PARTED_CONFIGMAP)
    spec = yaml.safe_load(mig_cm["data"][MIG_PARTED_KEY])
    _validate(spec, MIG_PARTED_SCHEMA)
    assert spec["mig-configs"] == {
        "gpu-mig": [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": 7}}]
    }
    plugin = yaml.safe_load(find(bundle, "ConfigMap", DEVICE_PLUGIN_CONFIGMAP)["data"]["gpu-mig"])
    _validate(plugin, DEVICE_PLUGIN_SCHEMA)
    # "mixed" is the strategy under which pods request nvidia.com/mig-1g.10gb
    assert plugin["flags"]["migStrategy"] == "mixed"
    labels = bundle.node_patches["gpu-mig"]["metadata"]["labels"]
    assert (labels[MIG_CONFIG_LABEL], labels[DEVICE_PLUGIN_CONFIG_LABEL]) == ("gpu-mig", "gpu-mig")
    job = find(bundle, "Job", "shards")
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"]["nvidia.com/mig-1g.10gb"] == "1"


def test_the_schemas_above_refuse_what_the_go_readers_refuse():
    jsonschema = pytest.importorskip("jsonschema")
    with pytest.raises(jsonschema.ValidationError):
        _validate({"version": "v1", "mig-configs": {"x": [{"devices": "all"}]}}, MIG_PARTED_SCHEMA)
    with pytest.raises(jsonschema.ValidationError):
        _validate({"version": "v2"}, DEVICE_PLUGIN_SCHEMA)


# --- Kueue before v0.15 ---------------------------------------------------------------------


def test_kueue_v1beta1_spells_the_cohort_as_v1beta1_does():
    bundle = compile_acme(kueue_api="v1beta1")
    kueue = [o for o in (e.obj for e in bundle.objects) if o["apiVersion"].startswith("kueue")]
    assert {o["apiVersion"] for o in kueue} == {"kueue.x-k8s.io/v1beta1"}
    cq = find(bundle, "ClusterQueue", "search-gpu")["spec"]
    assert cq["cohort"] == "offline" and "cohortName" not in cq
    default = find(compile_acme(), "ClusterQueue", "search-gpu")["spec"]
    assert default["cohortName"] == "offline"
    # the rest is the same object
    assert {k: v for k, v in cq.items() if k != "cohort"} == {
        k: v for k, v in default.items() if k != "cohortName"
    }


def test_unknown_kueue_api_version_is_refused():
    with pytest.raises(ValueError, match="v1alpha9"):
        compile_contract(varied(), CompileOptions(now=BEFORE_EXPIRY, kueue_api="v1alpha9"))


# --- owners -----------------------------------------------------------------------------------


def test_every_object_carries_owner_and_cost_centre():
    for bundle in (compile_acme(), compile_varied()):
        for e in bundle.objects:
            labels = e.obj["metadata"].get("labels", {})
            assert labels.get("gpupact.io/owner"), e.obj["metadata"]["name"]
            assert labels.get("gpupact.io/cost-centre"), e.obj["metadata"]["name"]


def test_a_contract_without_owners_is_refused_where_the_owner_belongs():
    with pytest.raises(FieldError) as err:
        compile_varied({"metadata": {"name": "varied"}})
    assert err.value.path == ("metadata",)
    assert "has no owner" in err.value.message
    with pytest.raises(FieldError) as err:
        compile_varied({"tenants.0.costCenter": "--"})
    assert err.value.path == ("tenants", 0) and "costCenter" in err.value.message


def test_check_bundle_flags_an_object_without_labels():
    bundle = compile_acme()
    find(bundle, "PriorityClass", "batch")["metadata"]["labels"].pop("gpupact.io/cost-centre")
    assert [str(p) for p in check_bundle(bundle)] == [
        "PriorityClass batch: no gpupact.io/cost-centre label"
    ]


def _nodes(bundle) -> list[dict[str, Any]]:
    """One node per pool, labelled and tainted by the compiled node patch."""
    out = []
    for pool, patch in bundle.node_patches.items():
        out.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": f"{pool}-0", "labels": patch["metadata"]["labels"]},
                "spec": patch.get("spec", {}),
                "status": {
                    "allocatable": {"cpu": "96", "memory": "1Ti", "pods": "110"},
                    "capacity": {"cpu": "96", "memory": "1Ti", "pods": "110"},
                },
            }
        )
    return out


def test_gpupact_audit_finds_no_governance_problem_in_compiled_output(tmp_path: Path):
    """compile ACME as JSON (each file a v1 List, as `kubectl get -o json` writes), add the
    nodes the node patches describe, and run `gpupact audit --snapshot` on the files."""
    from typer.testing import CliRunner

    from gpupact.cli.main import _register, app
    from gpupact.compile import write_bundle

    _register()
    bundle = compile_acme()
    out = tmp_path / "out"
    written = write_bundle(bundle, out, "json")
    snapshot = tmp_path / "snapshot"
    snapshot.mkdir()
    objects = [name for name in written if name[:2].isdigit() and name.endswith(".json")]
    assert len(objects) == 7  # every target, gpu-operator included
    for name in objects:
        (snapshot / name).write_text((out / name).read_text())
    (snapshot / "nodes.json").write_text(json.dumps({"kind": "List", "items": _nodes(bundle)}))

    def audit_findings() -> list[dict[str, Any]]:
        result = CliRunner().invoke(
            app,
            ["audit", "--snapshot", str(snapshot), "--now", "2026-06-01T00:00:00Z", "-o", "json"],
        )
        assert "Traceback" not in result.stdout + result.stderr, result.stderr
        return json.loads(result.stdout)["findings"]

    assert [f for f in audit_findings() if f["domain"] == "governance"] == []
    # the same audit does flag a compiled Deployment once its cost centre is gone
    core = json.loads((snapshot / "40-core.json").read_text())
    deploy = next(o for o in core["items"] if o["kind"] == "Deployment")
    del deploy["metadata"]["labels"]["gpupact.io/cost-centre"]
    (snapshot / "40-core.json").write_text(json.dumps(core))
    flagged = [f for f in audit_findings() if f["domain"] == "governance"]
    assert [(f["code"], f["subject"]) for f in flagged] == [
        ("missing-owner-labels", "Deployment customer-service/cs-agent")
    ]


# --- values that do not fit their Kubernetes types ----------------------------------------------


def test_a_quota_whose_cpu_share_overflows_is_refused_at_the_quota():
    # lab's jobs on gpu-mig request cpu: the share of the node's 96 cpus for 2^62 devices
    # is no int64; check reports the same quota as an error (beyond the pool's capacity)
    from gpupact.contract import check

    contract = varied({"tenants.0.quotas.0.gpus": 2**62})
    with pytest.raises(FieldError) as err:
        compile_contract(contract, CompileOptions(now=BEFORE_EXPIRY))
    assert err.value.path == ("tenants", 0, "quotas", 0, "gpus")
    assert "its cpu quota" in err.value.message
    errors = [f.rule for f in check(contract, BEFORE_EXPIRY) if f.severity.value == "error"]
    assert "quota-exceeds-capacity" in errors
