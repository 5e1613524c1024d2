"""Schema defaults and cross-field resolution: what a compiler walking the contract sees."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from contract_helpers import BASE, DROP, edit, load

from gpupact.contract import ContractInvalid, GangScope, LatencyTier, load_contract
from gpupact.errors import InputError

ACME = Path(__file__).resolve().parents[2] / "examples" / "acme" / "contract.yaml"


def errors_of(data) -> list[str]:
    with pytest.raises(ContractInvalid) as info:
        load(data)
    return [f"{'.'.join(map(str, e.path))}: {e.message}" for e in info.value.errors]


def test_known_classes_take_the_chapter_defaults():
    contract = load(BASE).contract
    online, batch, tune = contract.classes
    assert (online.latency, online.preemptible, online.gang, online.headroom) == (
        LatencyTier.seconds,
        False,
        False,
        20,
    )
    assert online.max_queue_wait == timedelta(seconds=30) and online.online
    assert (batch.preemptible, batch.headroom, batch.online) == (True, 0, False)
    assert tune.gang and tune.preemptible and tune.latency is LatencyTier.hours
    assert online.priority > tune.priority > batch.priority


def test_explicit_class_fields_override_defaults():
    data = edit(BASE, [("classes.1.priority", 5), ("classes.1.maxQueueWait", "1h")])
    batch = load(data).contract.workload_class("batch")
    assert batch.priority == 5 and batch.max_queue_wait == timedelta(hours=1)


def test_unknown_class_needs_latency_and_priority():
    data = edit(BASE, [("classes+", {"name": "eval"})])
    assert errors_of(data) == [
        "classes.3.latency: required field missing",
        "classes.3.priority: required field missing",
    ]


def test_class_pools_resolve_from_pools_that_admit_them():
    data = edit(BASE, [("pools.1.classes+", "fine-tune")])
    contract = load(data).contract
    assert contract.workload_class("fine-tune").pools == ["gpu-batch", "gpu-train"]
    assert contract.workload_class("online-infer").pools == ["gpu-inference"]


def test_class_may_not_list_a_pool_that_does_not_admit_it():
    data = edit(BASE, [("classes.1.pools", ["gpu-train"])])
    assert errors_of(data) == [
        "classes.1.pools.0: pool gpu-train does not admit class batch (its classes: fine-tune); "
        "add batch to that pool's classes or drop it here",
    ]


def test_pool_derived_values():
    pool = load(BASE).contract.pool("gpu-inference")
    assert pool.gpu.memory == 80 * 2**30  # from the `-80g` suffix
    assert (pool.devices_per_node, pool.max_devices, pool.gpu.nvlink_domain) == (8, 32, 8)
    assert pool.taint == ("workload", "online-infer", "NoSchedule")
    assert pool.node_labels() == {
        "nodepool": "gpu-inference",
        "gpu.model": "a100-80g",
        "gpu.topology": "nvlink-8",
        "workload": "online-infer",
    }
    assert pool.cold_start.total == timedelta(minutes=5)


def test_gpu_memory_required_without_model_suffix():
    data = edit(BASE, [("pools.1.gpu.model", "l40s")])
    assert errors_of(data) == [
        "pools.1.gpu: gpu.memory is required when gpu.model ('l40s') does not end in '-<N>g', "
        "e.g. memory: 48Gi",
    ]
    data = edit(data, [("pools.1.gpu.memory", "48Gi")])
    assert load(data).contract.pool("gpu-batch").gpu.memory == 48 * 2**30


def test_service_resolution():
    svc = load(BASE).contract.services[0]
    assert svc.pool == "gpu-inference"
    assert (svc.gpus_per_pod, svc.gang, svc.preemptible) == (1, GangScope.none, False)
    assert (svc.owner, svc.cost_center) == ("team@example.com", "CC-1")  # from the tenant
    assert svc.replicas.max == 4 and svc.min_member is None
    assert svc.model.weight_bytes == 14 * 10**9


def test_service_pool_prefers_matching_gpu():
    data = edit(
        BASE,
        [
            (
                "pools+",
                {
                    "name": "gpu-h100",
                    "gpu": {"model": "h100-80g"},
                    "nodes": {"min": 1, "max": 2},
                    "classes": ["online-infer"],
                },
            ),
            ("services.0.gpu", {"model": "h100-80g"}),
        ],
    )
    assert load(data).contract.services[0].pool == "gpu-h100"


def test_gang_min_member():
    data = edit(BASE, [("services.0.tensorParallel", 4), ("services.0.gang", "replica")])
    svc = load(data).contract.services[0]
    assert (svc.pods_per_replica, svc.min_member) == (4, 4)
    data = edit(data, [("services.0.gang", "service")])
    assert load(data).contract.services[0].min_member == 8  # 2 replicas x 4 pods
    data = edit(data, [("services.0.gpusPerPod", 2)])
    assert load(data).contract.services[0].min_member == 4  # 2 replicas x 2 pods


def test_gpus_per_pod_from_resources():
    data = edit(BASE, [("jobs.0.resources", {"limits": {"nvidia.com/gpu": 2}})])
    assert load(data).contract.jobs[0].gpus_per_pod == 2
    clash = edit(data, [("jobs.0.gpusPerPod", 4)])
    assert errors_of(clash) == [
        "jobs.0.gpusPerPod: gpusPerPod (4) differs from the nvidia.com/gpu resource (2); "
        "give one of them",
    ]


def test_tensor_parallel_must_be_multiple_of_gpus_per_pod():
    data = edit(BASE, [("services.0.tensorParallel", 3), ("services.0.gpusPerPod", 2)])
    assert errors_of(data) == [
        "services.0.gpusPerPod: tensorParallel (3) must be a multiple of gpusPerPod (2): a "
        "replica is tensorParallel / gpusPerPod pods",
    ]


def test_job_resolution():
    job, tune = load(BASE).contract.jobs
    assert (job.pool, job.queue, job.min_member, job.gpus) == ("gpu-batch", "team-batch", 1, 4)
    assert (tune.pool, tune.min_member, tune.gpus) == ("gpu-train", 2, 16)  # gang class


def test_job_min_member_within_pods():
    data = edit(BASE, [("jobs.0.minMember", 5)])
    assert errors_of(data) == ["jobs.0.minMember: minMember (5) must not exceed pods (4)"]


def test_explicit_pool_must_belong_to_class():
    data = edit(BASE, [("services.0.pool", "gpu-batch")])
    assert errors_of(data) == [
        "services.0.pool: class online-infer may not use pool gpu-batch (its pools: gpu-inference)",
    ]


def test_duplicate_names():
    data = edit(BASE, [("pools+", {**BASE["pools"][1]})])
    assert errors_of(data) == ["pools.3.name: name 'gpu-batch' already used by pools[1]"]


def test_quota_rules():
    data = edit(BASE, [("tenants.0.quotas.0.lendingLimit", 9)])
    assert errors_of(data) == [
        "tenants.0.quotas.0.lendingLimit: lendingLimit (9) must not exceed gpus (8)"
    ]
    data = edit(BASE, [("tenants.0.cohort", DROP), ("tenants.0.quotas.0.lendingLimit", 2)])
    assert errors_of(data) == [
        "tenants.0.quotas.0.lendingLimit: lendingLimit needs the tenant to be in a cohort"
    ]


def test_windows():
    bad = edit(BASE, [("pools.0.preWarm", [{"start": "2026-11-10T00:00:00Z", "minNodes": 1}])])
    assert errors_of(bad) == ["pools.0.preWarm.0: a fixed window needs both start and end"]
    both = edit(
        BASE,
        [
            (
                "pools.0.preWarm",
                [
                    {
                        "start": "2026-11-10T00:00:00Z",
                        "end": "2026-11-11T00:00:00Z",
                        "schedule": "0 0 * * *",
                        "duration": "1h",
                        "minNodes": 1,
                    }
                ],
            )
        ],
    )
    assert errors_of(both) == [
        "pools.0.preWarm.0: give either start and end, or schedule and duration"
    ]
    backwards = edit(
        BASE,
        [
            (
                "pools.0.preWarm",
                [{"start": "2026-11-11T00:00:00Z", "end": "2026-11-10T00:00:00Z", "minNodes": 1}],
            )
        ],
    )
    assert errors_of(backwards) == ["pools.0.preWarm.0: end must be after start"]
    too_many = edit(
        BASE, [("pools.0.preWarm", [{"schedule": "0 0 * * *", "duration": "1h", "minNodes": 9}])]
    )
    assert errors_of(too_many) == ["pools.0.preWarm.0.minNodes: minNodes (9) exceeds nodes.max (4)"]


def test_snake_case_keys_are_unknown():
    data = edit(BASE, [("jobs.0.gpus_per_pod", 2)])
    assert errors_of(data) == ["jobs.0.gpus_per_pod: unknown field (did you mean 'gpusPerPod'?)"]


def test_strict_types():
    data = edit(
        BASE, [("jobs.0.pods", "4"), ("services.0.concurrency", True), ("classes.0.headroom", 0.2)]
    )
    assert errors_of(data) == [
        "classes.0.headroom: expected a percentage such as '20%', got a number (0.2)",
        "services.0.concurrency: must be a valid integer, got True",
        "jobs.0.pods: must be a valid integer, got '4'",
    ]


def test_names_are_dns_labels():
    data = edit(BASE, [("tenants.0.name", "Team_A")])
    [message] = errors_of(data)
    assert message.startswith("tenants.0.name: must be a DNS-1123 label")


def test_load_contract_from_file_and_missing_file(tmp_path):
    loaded = load_contract(ACME)
    assert loaded.file == str(ACME)
    assert [p.name for p in loaded.contract.pools] == [
        "gpu-inference",
        "gpu-train",
        "gpu-batch",
        "gpu-burst",
    ]
    llm = next(s for s in loaded.contract.services if s.name == "llm-70b-tp4")
    assert (llm.min_member, llm.pool) == (4, "gpu-inference")
    finance = loaded.contract.tenant("finance")
    assert finance.quota("gpu-inference").gpus == 12
    with pytest.raises(InputError, match="no such file"):
        load_contract(tmp_path / "nope.yaml")


def test_model_dump_round_trips_through_the_loader():
    import yaml

    from gpupact.contract import parse_contract

    contract = load_contract(ACME).contract
    dumped = contract.model_dump(mode="json", exclude_none=True)
    again = parse_contract(yaml.safe_dump(dumped), "again.yaml").contract
    assert again == contract


def test_pool_size_is_bounded_so_compiled_quantities_fit_int64():
    too_many = errors_of(edit(BASE, [("pools.0.nodes.max", 10**10)]))
    assert too_many == ["pools.0.nodes.max: must be less than or equal to 100000"]
    huge_nodes = edit(
        BASE, [("pools.0.nodes.max", 90_000), ("pools.0.node", {"cpu": "96", "memory": "1Pi"})]
    )
    (error,) = errors_of(huge_nodes)
    assert error.startswith("pools.0: nodes.max - nodes.min (89998) x node.memory is beyond")
    fits = edit(BASE, [("pools.0.nodes.max", 90_000), ("pools.0.node", {"memory": "1Ti"})])
    assert load(fits).contract.pools[0].nodes.max == 90_000


def test_counts_compile_writes_fit_their_kubernetes_types():
    # replicas / parallelism / minMember are int32 in Kubernetes; quotas int64 quantities
    data = edit(
        BASE,
        [
            ("services.0.replicas", {"min": 2, "max": 2**31}),
            ("jobs.0.pods", 2**31),
            ("tenants.1.quotas.0.gpus", 2**63),
        ],
    )
    errors = errors_of(data)
    assert any(e.startswith("services.0.replicas.max: must be at most 2147483647") for e in errors)
    assert any(e.startswith("jobs.0.pods: must be at most 2147483647") for e in errors)
    assert any(
        e.startswith("tenants.1.quotas.0.gpus: must be at most 9223372036854775807") for e in errors
    )


def test_quota_and_raises_together_fit_an_int64():
    data = edit(
        BASE,
        [
            ("tenants.1.quotas.0.gpus", 2**62),
            (
                "tenants.1.raises",
                [{"pool": "gpu-batch", "gpus": 2**62, "reason": "r", "expires": "2027-01-01"}],
            ),
        ],
    )
    [message] = errors_of(data)
    assert message.startswith("tenants.1: quota and raises on pool gpu-batch add up to")


def test_service_wide_gang_fits_one_podgroup():
    data = edit(
        BASE,
        [
            ("services.0.gang", "service"),
            ("services.0.tensorParallel", 8),
            ("services.0.replicas", {"min": 2**30, "max": 2**30}),
        ],
    )
    [message] = errors_of(data)
    assert message.startswith("services.0.replicas.min: gang: service puts 8589934592 pods")
    data = edit(
        BASE,
        [
            ("services.0.gang", "service"),
            ("services.0.replicas", {"min": 4, "max": 4}),
            ("services.0.resources", {"requests": {"memory": "4Ei"}}),
        ],
    )
    [message] = errors_of(data)
    assert message.startswith("services.0.resources: memory 4Ei x 4 pods of the gang")


def test_service_names_are_dns_1035_labels():
    # a Service named after it must start with a letter
    [message] = errors_of(edit(BASE, [("services.0.name", "7b-chat")]))
    assert message.startswith("services.0.name: must be a DNS-1035 label")
    assert load(edit(BASE, [("services.0.name", "chat-7b")])).contract.services[0].name == "chat-7b"
