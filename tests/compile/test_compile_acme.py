"""Golden-ish assertions on the ACME example: the chapter's shapes, object by object."""

from __future__ import annotations

import json

from compile_helpers import AFTER_EXPIRY, compile_acme, find, kinds

from gpupact.contract.keys import ANNOTATION_NEXT_RAISE_EXPIRY, ANNOTATION_QUOTA_RAISES


def _pod_spec(obj):
    if obj["kind"] == "LeaderWorkerSet":
        return obj["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]
    if obj["kind"] == "CronJob":
        return obj["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    if obj["apiVersion"].startswith("batch.volcano.sh"):
        return obj["spec"]["tasks"][0]["template"]["spec"]
    return obj["spec"]["template"]["spec"]


def _node_terms(spec):
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    return {e["key"]: e for e in terms["nodeSelectorTerms"][0]["matchExpressions"]}


def test_finance_cluster_queue_carries_the_raise_until_it_expires():
    cq = find(compile_acme(), "ClusterQueue", "finance-gpu")
    flavor = cq["spec"]["resourceGroups"][0]["flavors"][0]
    assert cq["spec"]["resourceGroups"][0]["coveredResources"] == ["nvidia.com/gpu"]
    assert flavor["name"] == "gpu-inference"
    assert flavor["resources"] == [{"name": "nvidia.com/gpu", "nominalQuota": 16}]  # 12 + 4
    record = json.loads(cq["metadata"]["annotations"][ANNOTATION_QUOTA_RAISES])
    assert record == [
        {
            "flavor": "gpu-inference",
            "resource": "nvidia.com/gpu",
            "baseQuota": 12,
            "nominalQuota": 16,
            "raises": [{"gpus": 4, "expires": "2026-12-31T00:00:00Z", "reason": "month-end close"}],
        }
    ]
    assert cq["metadata"]["annotations"][ANNOTATION_NEXT_RAISE_EXPIRY] == "2026-12-31T00:00:00Z"


def test_a_later_now_drops_the_expired_raise():
    cq = find(compile_acme(AFTER_EXPIRY), "ClusterQueue", "finance-gpu")
    flavor = cq["spec"]["resourceGroups"][0]["flavors"][0]
    assert flavor["resources"] == [{"name": "nvidia.com/gpu", "nominalQuota": 12}]
    assert "annotations" not in cq["metadata"]


def test_cluster_queues_follow_tenants_and_cohorts():
    bundle = compile_acme()
    search = find(bundle, "ClusterQueue", "search-gpu")["spec"]
    assert search["cohortName"] == "offline"
    assert search["resourceGroups"][0]["flavors"] == [
        {
            "name": "gpu-batch",
            "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 32, "lendingLimit": 16}],
        }
    ]
    ml = find(bundle, "ClusterQueue", "ml-platform-gpu")["spec"]
    batch = next(f for f in ml["resourceGroups"][0]["flavors"] if f["name"] == "gpu-batch")
    assert batch["resources"][0]["borrowingLimit"] == 8
    # its fine-tune work may displace its own batch work; batch borrowers are reclaimed
    assert ml["preemption"] == {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"}
    assert ml["namespaceSelector"] == {"matchLabels": {"gpupact.io/tenant": "ml-platform"}}
    cs = find(bundle, "ClusterQueue", "customer-service-gpu")["spec"]
    assert "cohortName" not in cs and cs["preemption"] == {"withinClusterQueue": "Never"}
    assert [c["metadata"]["name"] for c in bundle.of_kind("Cohort")] == ["offline"]


def test_resource_flavors_gate_by_taint_without_tolerations():
    flavor = find(compile_acme(), "ResourceFlavor", "gpu-inference")
    assert flavor["spec"] == {
        "nodeLabels": {"nodepool": "gpu-inference"},
        "nodeTaints": [{"key": "workload", "value": "online-infer", "effect": "NoSchedule"}],
    }


def test_local_queues_and_workload_priority_classes():
    bundle = compile_acme()
    queues = {
        (q["metadata"]["namespace"], q["metadata"]["name"]): q["spec"]["clusterQueue"]
        for q in bundle.of_kind("LocalQueue")
    }
    assert queues[("finance", "finance-online-infer")] == "finance-gpu"
    assert queues[("search", "search-batch")] == "search-gpu"
    assert queues[("ml-platform", "ml-platform-batch")] == "ml-platform-gpu"
    wpc = {w["metadata"]["name"]: w["value"] for w in bundle.of_kind("WorkloadPriorityClass")}
    assert wpc == {"online-infer": 100000, "burst": 90000, "fine-tune": 10000, "batch": 1000}


def test_tp4_replicas_get_one_pod_group_each_from_lws():
    # a shared PodGroup would let replica 2 start with part of its workers: LWS's Volcano
    # integration makes one per group (<lws>-<group index>-<revision>, minMember = size), so
    # compile emits none and names the queue on the LeaderWorkerSet
    bundle = compile_acme()
    assert bundle.of_kind("PodGroup") == []
    lws = find(bundle, "LeaderWorkerSet", "llm-70b-tp4")
    assert lws["metadata"]["annotations"]["scheduling.volcano.sh/queue-name"] == "gpu-inference"
    assert lws["spec"]["startupPolicy"] == "LeaderCreated"  # minMember = size, not 1
    find(bundle, "Queue", "gpu-inference")


def test_tp4_replica_is_a_gang_scheduled_leader_worker_group():
    bundle = compile_acme()
    lws = find(bundle, "LeaderWorkerSet", "llm-70b-tp4")
    template = lws["spec"]["leaderWorkerTemplate"]
    assert template["size"] == 4
    assert template["restartPolicy"] == "RecreateGroupOnPodRestart"
    assert "replicas" not in lws["spec"]  # the HPA owns it
    # NVLink: one group per node
    notes = lws["metadata"]["annotations"]
    assert notes["leaderworkerset.sigs.k8s.io/exclusive-topology"] == "kubernetes.io/hostname"
    worker = template["workerTemplate"]
    # LWS's webhook writes each pod's scheduling.k8s.io/group-name; a fixed one would be shared
    assert "annotations" not in worker["metadata"]
    spec = worker["spec"]
    assert spec["schedulerName"] == "volcano"
    assert spec["priorityClassName"] == "online-infer-high"
    terms = _node_terms(spec)
    assert terms["nodepool"]["values"] == ["gpu-inference"]
    assert terms["gpu.model"]["values"] == ["a100-80g"]
    assert terms["gpu.topology"]["values"] == ["nvlink-8"]
    hpa = find(bundle, "HorizontalPodAutoscaler", "llm-70b-tp4")["spec"]
    assert hpa["scaleTargetRef"]["kind"] == "LeaderWorkerSet"
    assert (hpa["minReplicas"], hpa["maxReplicas"]) == (2, 4)  # groups, not pods


def test_cs_agent_deployment():
    bundle = compile_acme()
    deploy = find(bundle, "Deployment", "cs-agent")
    meta = deploy["metadata"]
    assert meta["namespace"] == "customer-service"
    labels = meta["labels"]
    assert labels["gpupact.io/tenant"] == "customer-service"
    assert labels["gpupact.io/class"] == "online-infer"
    assert labels["gpupact.io/cost-centre"] == "CC-2001"
    assert labels["gpupact.io/owner"] == "cs-platform_at_acme.example"
    assert meta["annotations"]["gpupact.io/owner"] == "cs-platform@acme.example"
    assert "replicas" not in deploy["spec"]
    spec = deploy["spec"]["template"]["spec"]
    assert "schedulerName" not in spec  # no gang: the default scheduler
    assert spec["priorityClassName"] == "online-infer-critical"
    assert spec["tolerations"] == [
        {"key": "workload", "operator": "Equal", "value": "online-infer", "effect": "NoSchedule"}
    ]
    terms = _node_terms(spec)
    assert terms["nodepool"] == {"key": "nodepool", "operator": "In", "values": ["gpu-inference"]}
    assert terms["gpu.model"]["values"] == ["a100-80g"]
    anti = spec["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert anti[0]["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    spread = spec["topologySpreadConstraints"][0]
    assert spread["topologyKey"] == "topology.kubernetes.io/zone"
    assert spread["whenUnsatisfiable"] == "ScheduleAnyway"
    resources = spec["containers"][0]["resources"]
    assert resources["requests"] == resources["limits"] == {"nvidia.com/gpu": "1"}
    hpa = find(bundle, "HorizontalPodAutoscaler", "cs-agent")["spec"]
    assert (hpa["minReplicas"], hpa["maxReplicas"]) == (4, 12)
    assert hpa["metrics"][0]["pods"]["target"]["averageValue"] == "50"  # 200 / 4
    assert hpa["behavior"]["scaleDown"]["stabilizationWindowSeconds"] == 360  # coldStart 6m
    pdb = find(bundle, "PodDisruptionBudget", "cs-agent")["spec"]
    assert pdb == {
        "maxUnavailable": 1,
        "selector": {"matchLabels": {"app.kubernetes.io/name": "cs-agent"}},
    }


def test_priority_classes():
    classes = {p["metadata"]["name"]: p for p in compile_acme().of_kind("PriorityClass")}
    assert {n: p["value"] for n, p in classes.items()} == {
        "online-infer": 100000,
        "online-infer-critical": 100003,
        "online-infer-high": 100002,
        "burst": 90000,
        "fine-tune": 10000,
        "batch": 1000,
        # acme's gpu-burst has preWarm windows: their placeholders (compile/prewarm.py)
        "gpupact-prewarm": -10,
    }
    assert classes["batch"]["preemptionPolicy"] == "Never"
    assert classes["gpupact-prewarm"]["preemptionPolicy"] == "Never"
    assert classes["online-infer-high"]["preemptionPolicy"] == "PreemptLowerPriority"
    assert not any(p["globalDefault"] for p in classes.values())


def test_jobs_kueue_cron_and_volcano_gang():
    bundle = compile_acme()
    cron = find(bundle, "CronJob", "embedding-rebuild")
    assert cron["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "search-batch"
    assert cron["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == "batch"
    assert cron["spec"]["schedule"] == "0 2 * * *"
    job = cron["spec"]["jobTemplate"]
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "search-batch"
    assert job["spec"]["suspend"] is True
    assert (job["spec"]["parallelism"], job["spec"]["completions"]) == (8, 8)
    spec = _pod_spec(cron)
    assert _node_terms(spec)["nodepool"]["values"] == ["gpu-batch"]
    assert spec["tolerations"][0]["value"] == "batch"
    # gpu-batch is time-sliced 2 ways on l40s: pods still ask for the plain GPU resource
    assert spec["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "1"}

    vj = find(bundle, "Job", "lora-finetune", "batch.volcano.sh/v1alpha1")
    assert vj["spec"]["minAvailable"] == 2
    assert vj["spec"]["queue"] == "ml-platform-fine-tune"
    assert vj["spec"]["tasks"][0]["replicas"] == 2
    assert _pod_spec(vj)["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "8"}
    queue = find(bundle, "Queue", "ml-platform-fine-tune")["spec"]
    assert queue["capability"] == {"nvidia.com/gpu": 16}
    assert not any(
        j["apiVersion"] == "batch/v1" and j["metadata"]["name"] == "lora-finetune"
        for j in bundle.of_kind("Job")
    )


def test_karpenter_node_pools():
    bundle = compile_acme()
    inference = find(bundle, "NodePool", "gpu-inference")["spec"]
    template = inference["template"]
    assert template["spec"]["taints"] == [
        {"key": "workload", "value": "online-infer", "effect": "NoSchedule"}
    ]
    assert template["metadata"]["labels"]["nodepool"] == "gpu-inference"
    assert template["metadata"]["labels"]["gpu.model"] == "a100-80g"
    reqs = {r["key"]: r for r in template["spec"]["requirements"]}
    assert reqs["karpenter.sh/capacity-type"]["values"] == ["on-demand"]
    assert reqs["topology.kubernetes.io/zone"]["values"] == ["cn-east-1a", "cn-east-1b"]
    assert reqs["karpenter.k8s.aws/instance-gpu-name"]["values"] == ["a100"]
    assert reqs["karpenter.k8s.aws/instance-gpu-count"]["values"] == ["8"]
    # nodes 3..6: three fixed, Karpenter adds up to three
    assert inference["limits"] == {"nodes": 3, "nvidia.com/gpu": 24, "cpu": "288", "memory": "3Ti"}
    assert inference["disruption"]["consolidationPolicy"] == "WhenEmpty"
    assert inference["disruption"]["consolidateAfter"] == "13m30s"
    batch = find(bundle, "NodePool", "gpu-batch")["spec"]
    assert batch["limits"] == {"nodes": 8}  # time-sliced: nodes report replicas, not GPUs
    reqs = {r["key"]: r for r in batch["template"]["spec"]["requirements"]}
    assert reqs["karpenter.sh/capacity-type"]["values"] == ["on-demand", "spot"]


def test_node_patches_for_fixed_nodes():
    patch = compile_acme().node_patches["gpu-inference"]
    assert patch["metadata"]["labels"]["workload"] == "online-infer"
    assert patch["spec"]["taints"] == [
        {"key": "workload", "value": "online-infer", "effect": "NoSchedule"}
    ]


def test_namespaces_and_targets():
    bundle = compile_acme()
    names = sorted(n["metadata"]["name"] for n in bundle.of_kind("Namespace"))
    # `acme`: the shared namespace of the pre-warm placeholders (no tenant owns them)
    assert names == ["acme", "customer-service", "finance", "ml-platform", "search"]
    assert kinds(bundle) >= {
        "Namespace", "PriorityClass", "Deployment", "LeaderWorkerSet", "Service",
        "HorizontalPodAutoscaler", "PodDisruptionBudget", "CronJob", "ResourceFlavor",
        "Cohort", "ClusterQueue", "LocalQueue", "WorkloadPriorityClass", "Queue", "Job",
        "NodePool", "ConfigMap",
    }  # fmt: skip
