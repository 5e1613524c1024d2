"""Each target on a contract that varies what ACME does not, and contracts that cannot compile."""

from __future__ import annotations

import copy
from datetime import timedelta

import pytest
from compile_helpers import BEFORE_EXPIRY, acme, compile_acme, compile_varied, find, varied

from gpupact.compile import CompileInvalid, CompileOptions, NodeClassRef, compile_contract
from gpupact.compile.names import go_duration, label_safe
from gpupact.compile.validate import check_bundle, label_problems
from gpupact.errors import FieldError


def _template(obj):
    if obj["kind"] == "LeaderWorkerSet":
        return obj["spec"]["leaderWorkerTemplate"]["workerTemplate"]
    return obj["spec"]["template"]


# --- kueue ----------------------------------------------------------------------------------


def test_mig_and_cpu_memory_share_one_resource_group():
    cq = find(compile_varied(), "ClusterQueue", "lab-gpu")["spec"]
    group = cq["resourceGroups"][0]
    assert group["coveredResources"] == [
        "nvidia.com/gpu",
        "nvidia.com/mig-1g.10gb",
        "cpu",
        "memory",
    ]
    flavors = {
        f["name"]: {r["name"]: r["nominalQuota"] for r in f["resources"]} for f in group["flavors"]
    }
    # 28 of a node's 56 MIG slices (8 GPUs x 7) get half its 96 cpu and 1Ti memory
    assert flavors["gpu-mig"] == {
        "nvidia.com/gpu": 0,
        "nvidia.com/mig-1g.10gb": 28,
        "cpu": "48",
        "memory": "512Gi",
    }
    # no node shape and no cpu-requesting job there: no cpu quota
    assert flavors["gpu-online"] == {
        "nvidia.com/gpu": 8,
        "nvidia.com/mig-1g.10gb": 0,
        "cpu": 0,
        "memory": 0,
    }
    assert cq["queueingStrategy"] == "BestEffortFIFO"


def test_job_requesting_cpu_on_a_pool_without_node_shape_is_bad_input():
    with pytest.raises(FieldError) as err:
        compile_varied({"pools.0.node": None})
    assert err.value.path == ("pools", 0, "node", "cpu")


def test_job_requesting_an_unquotable_resource_is_bad_input():
    limits = {"nvidia.com/gpu": "1", "ephemeral-storage": "10Gi"}
    with pytest.raises(FieldError) as err:
        compile_varied({"jobs.0.resources": {"limits": limits}})
    assert err.value.path == ("jobs", 0, "resources")
    assert "ephemeral-storage" in str(err.value)


def test_job_pod_asks_for_the_pool_device_and_keeps_its_cpu():
    bundle = compile_varied()
    job = find(bundle, "Job", "shards", "batch/v1")
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "lab-special"
    resources = job["spec"]["template"]["spec"]["containers"][0]["resources"]
    assert resources["limits"] == {"cpu": "2", "memory": "8Gi", "nvidia.com/mig-1g.10gb": "1"}
    assert resources["requests"] == {"nvidia.com/mig-1g.10gb": "1"}
    assert find(bundle, "LocalQueue", "lab-special")["spec"]["clusterQueue"] == "lab-gpu"


def test_strict_fifo_only_for_gang_only_tenants():
    gang_job = {"name": "t", "tenant": "lab", "class": "fine-tune", "pods": 2}
    contract = varied(
        {
            "services": [],
            "jobs": [gang_job],
            "tenants.0.quotas": [{"pool": "gpu-train", "gpus": 16}],
        }
    )
    bundle = compile_contract(contract, CompileOptions(now=BEFORE_EXPIRY))
    assert find(bundle, "ClusterQueue", "lab-gpu")["spec"]["queueingStrategy"] == "StrictFIFO"


def test_reclaim_only_from_lower_priority_when_a_cohort_mate_is_not_preemptible():
    contract = acme()
    tenants = list(contract.tenants)
    tenants[0] = tenants[0].model_copy(update={"cohort": "offline"})  # customer-service
    bundle = compile_contract(
        contract.model_copy(update={"tenants": tenants}), CompileOptions(now=BEFORE_EXPIRY)
    )
    search = find(bundle, "ClusterQueue", "search-gpu")["spec"]
    assert search["preemption"]["reclaimWithinCohort"] == "LowerPriority"


# --- core -----------------------------------------------------------------------------------


def test_tenantless_fixed_size_service():
    bundle = compile_varied()
    deploy = find(bundle, "Deployment", "shared-embed")
    assert deploy["metadata"]["namespace"] == "varied"
    assert "gpupact.io/tenant" not in deploy["metadata"]["labels"]
    assert deploy["spec"]["replicas"] == 2
    assert not any(
        h["metadata"]["name"] == "shared-embed" for h in bundle.of_kind("HorizontalPodAutoscaler")
    )
    assert find(bundle, "Namespace", "varied")
    resources = _template(deploy)["spec"]["containers"][0]["resources"]
    assert resources["requests"] == {"cpu": "4", "memory": "32Gi", "nvidia.com/gpu": "1"}
    assert resources["limits"] == {"nvidia.com/gpu": "1"}


def test_service_scope_gang_deployment_and_gpu_metric():
    bundle = compile_varied()
    deploy = find(bundle, "Deployment", "ring")
    template = _template(deploy)
    assert template["spec"]["schedulerName"] == "volcano"
    assert template["metadata"]["annotations"] == {"scheduling.k8s.io/group-name": "ring"}
    pg = find(bundle, "PodGroup", "ring")["spec"]
    assert pg["minMember"] == 3  # every pod of the minimum replicas
    assert pg["minResources"] == {"nvidia.com/gpu": 24}
    hpa = find(bundle, "HorizontalPodAutoscaler", "ring")["spec"]
    pods = hpa["metrics"][0]["pods"]
    assert pods["metric"]["name"] == "DCGM_FI_DEV_GPU_UTIL"
    assert pods["target"]["averageValue"] == "70"  # headroom 30%
    # the pool's cold start (2h) caps at the HPA maximum window
    assert hpa["behavior"]["scaleDown"]["stabilizationWindowSeconds"] == 3600
    spread = template["spec"]["topologySpreadConstraints"][0]
    assert spread["labelSelector"] == {"matchLabels": {"app.kubernetes.io/name": "ring"}}


def test_multi_pod_replica_without_nvlink_spreads_groups():
    lws = find(compile_varied(), "LeaderWorkerSet", "wide")
    assert "leaderworkerset.sigs.k8s.io/exclusive-topology" not in lws["metadata"]["annotations"]
    spec = _template(lws)["spec"]
    term = spec["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]
    assert term["podAffinityTerm"]["mismatchLabelKeys"] == [
        "leaderworkerset.sigs.k8s.io/group-index"
    ]
    assert lws["spec"]["leaderWorkerTemplate"]["size"] == 2


def test_owner_and_cost_centre_become_label_safe():
    ns = find(compile_varied(), "Namespace", "lab")
    assert ns["metadata"]["labels"]["gpupact.io/owner"] == "Lab_Team__lab_at_example.com"
    assert ns["metadata"]["labels"]["gpupact.io/cost-centre"] == "CC_77"
    assert ns["metadata"]["annotations"]["gpupact.io/owner"] == "Lab Team <lab@example.com>"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ops@acme.example", "ops_at_acme.example"),
        ("CC-2001", "CC-2001"),
        ("  ", None),
        ("@@", "at__at"),
        ("x" * 80, "x" * 63),
        ("--a--", "a"),
        (None, None),
    ],
)
def test_label_safe(text, expected):
    assert label_safe(text) == expected
    if expected:
        assert label_problems({"k": expected}) == []


def test_go_duration():
    assert go_duration(timedelta(0)) == "0s"
    assert go_duration(timedelta(minutes=13, seconds=30)) == "13m30s"
    assert go_duration(timedelta(days=1, hours=1)) == "25h"


def test_priority_lift_may_not_cross_a_class():
    # batch at 100001 sits between online-infer (100000) and its `high` lift (100002)
    contract = varied(
        {"classes.1": {"name": "batch", "priority": 100001}, "services.1.priority": "high"}
    )
    with pytest.raises(FieldError) as err:
        compile_contract(contract, CompileOptions(now=BEFORE_EXPIRY))
    assert err.value.path == ("services", 1, "priority")


def test_raise_without_expiry_is_bad_input():
    contract = acme()
    tenants = list(contract.tenants)
    finance = tenants[1]
    tenants[1] = finance.model_copy(
        update={"raises": [finance.raises[0].model_copy(update={"expires": None})]}
    )
    with pytest.raises(FieldError) as err:
        compile_contract(
            contract.model_copy(update={"tenants": tenants}), CompileOptions(now=BEFORE_EXPIRY)
        )
    assert err.value.path == ("tenants", 1, "raises", 0, "expires")


# --- volcano --------------------------------------------------------------------------------


def test_scheduled_gang_job_keeps_its_schedule_for_a_trigger():
    vj = find(compile_varied(), "Job", "pretrain", "batch.volcano.sh/v1alpha1")
    assert vj["metadata"]["annotations"]["gpupact.io/schedule"] == "0 3 * * 6"
    assert vj["metadata"]["annotations"]["gpupact.io/time-zone"] == "Etc/UTC"
    shanghai = compile_varied({"timeZone": "Asia/Shanghai"})
    zoned = find(shanghai, "Job", "pretrain", "batch.volcano.sh/v1alpha1")
    assert zoned["metadata"]["annotations"]["gpupact.io/time-zone"] == "Asia/Shanghai"


def test_two_objects_with_one_name_cannot_compile():
    # a gang job whose queue is named like the pool queue of a gang service
    with pytest.raises(CompileInvalid) as err:
        compile_varied({"jobs.1.queue": "gpu-online"})
    assert "Queue gpu-online: emitted twice" in str(err.value)


# --- karpenter ------------------------------------------------------------------------------


def test_node_pools_only_for_elastic_capacity_with_azure_gpu_requirements():
    azure = NodeClassRef.parse("karpenter.azure.com/AKSNodeClass/gpu")
    bundle = compile_varied(node_class=azure)
    names = sorted(n["metadata"]["name"] for n in bundle.of_kind("NodePool"))
    assert names == ["gpu-online", "gpu-train"]  # gpu-mig: min == max, all fixed
    online = find(bundle, "NodePool", "gpu-online")["spec"]
    assert online["template"]["spec"]["nodeClassRef"] == {
        "group": "karpenter.azure.com",
        "kind": "AKSNodeClass",
        "name": "gpu",
    }
    requirements = {
        r["key"]: (r["operator"], r["values"]) for r in online["template"]["spec"]["requirements"]
    }
    assert requirements == {
        "karpenter.sh/capacity-type": ("In", ["on-demand"]),
        "topology.kubernetes.io/zone": ("In", ["zone-a", "zone-b"]),
        # Azure's well-known SKU labels; it names GPUs in capitals and has no memory label
        "karpenter.azure.com/sku-gpu-manufacturer": ("In", ["nvidia"]),
        "karpenter.azure.com/sku-gpu-name": ("In", ["H100"]),
        "karpenter.azure.com/sku-gpu-count": ("In", ["8"]),
    }
    assert online["limits"] == {"nodes": 2, "nvidia.com/gpu": 16}
    assert online["disruption"]["consolidateAfter"] == "2h"


def test_node_class_without_gpu_labels_is_refused_for_elastic_pools():
    # a GCP (or any other) NodePool could launch nodes without the pool's GPU
    gcp = NodeClassRef.parse("karpenter.k8s.gcp/GCENodeClass/gpu")
    with pytest.raises(FieldError) as err:
        compile_varied(node_class=gcp)
    assert err.value.path == ("pools", 1, "nodes")
    assert "karpenter.k8s.gcp/GCENodeClass has no GPU instance labels" in err.value.message
    # with every pool fixed (min == max) there is no NodePool to refuse
    fixed = {"pools.1.nodes": {"min": 3, "max": 3}, "pools.2.nodes": {"min": 2, "max": 2}}
    assert compile_varied(fixed, node_class=gcp).of_kind("NodePool") == []


@pytest.mark.parametrize("text", ["a/b", "a//c", "", "a/b/c/d"])
def test_node_class_ref_needs_three_parts(text):
    with pytest.raises(ValueError, match="GROUP/KIND/NAME"):
        NodeClassRef.parse(text)


# --- check_bundle ---------------------------------------------------------------------------


def _problems_after(mutate) -> list[str]:
    bundle = compile_acme()
    bundle.objects = [copy.deepcopy(e) for e in bundle.objects]
    mutate(bundle)
    return [str(p) for p in check_bundle(bundle)]


def _drop(kind, name):
    def mutate(bundle):
        bundle.objects = [
            e
            for e in bundle.objects
            if not (e.obj["kind"] == kind and e.obj["metadata"]["name"] == name)
        ]

    return mutate


def _edit(kind, name, change):
    def mutate(bundle):
        for e in bundle.objects:
            if e.obj["kind"] == kind and e.obj["metadata"]["name"] == name:
                change(e.obj)

    return mutate


def _gpu_request(obj):
    container = obj["spec"]["template"]["spec"]["containers"][0]
    container["resources"]["requests"]["nvidia.com/gpu"] = "2"


def _restricted_requirement(obj):
    requirement = {"key": "karpenter.sh/nodepool", "operator": "Exists"}
    obj["spec"]["template"]["spec"]["requirements"].append(requirement)


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (
            _drop("PriorityClass", "online-infer-critical"),
            "priorityClassName online-infer-critical",
        ),
        (
            _drop("Queue", "gpu-inference"),
            "Volcano Queue gpu-inference (annotation scheduling.volcano.sh/queue-name)",
        ),
        (_drop("ClusterQueue", "finance-gpu"), "ClusterQueue finance-gpu is not emitted"),
        (_drop("LocalQueue", "search-batch"), "LocalQueue search-batch is not emitted"),
        (_drop("ResourceFlavor", "gpu-batch"), "ResourceFlavor gpu-batch is not emitted"),
        (_drop("Cohort", "offline"), "Cohort offline is not emitted"),
        (_drop("Namespace", "finance"), "namespace finance is not emitted"),
        (_drop("Deployment", "cs-agent"), "scaleTargetRef Deployment cs-agent"),
        (_drop("WorkloadPriorityClass", "batch"), "WorkloadPriorityClass batch"),
        (_edit("Deployment", "cs-agent", _gpu_request), "requests != limits"),
        (
            _edit("Deployment", "cs-agent", lambda o: o["metadata"]["labels"].update(bad="a b")),
            "is not a valid label value",
        ),
        (
            _edit("ClusterQueue", "ml-platform-gpu", lambda o: o["spec"].pop("cohortName")),
            "borrowingLimit without a cohort",
        ),
        (
            _edit("NodePool", "gpu-batch", _restricted_requirement),
            "requirement key karpenter.sh/nodepool is restricted",
        ),
        (
            _edit(
                "CronJob",
                "eval-nightly",
                lambda o: o["spec"]["jobTemplate"]["spec"].update(suspend=False),
            ),
            "must be created suspended",
        ),
        (
            _edit(
                "PodDisruptionBudget",
                "cs-agent",
                lambda o: o["spec"]["selector"]["matchLabels"].update(x="y"),
            ),
            "selector matches no emitted pod template",
        ),
        (_edit("Namespace", "finance", lambda o: o["metadata"].update(name="Fin")), "DNS label"),
    ],
)
def test_check_bundle_finds_broken_objects(mutate, expected):
    problems = _problems_after(mutate)
    assert any(expected in p for p in problems), problems


def test_acme_is_clean():
    assert check_bundle(compile_acme()) == []
