"""Generate the snapshot fixtures of tests/ops/fixtures (run: python tests/ops/make_fixtures.py).

Each fixture is a small cluster in the shape `kubectl get ... -A -o json` prints (List files
with apiVersion, kind, metadata with uid / creationTimestamp, spec and status), built from
one healthy base cluster and changed to show one failure mode of Tables 43-5 / 43-6:

healthy                 nothing pending, disciplined
device-plugin-lost      a Ready node advertises 0 GPUs after a driver upgrade
affinity-unsatisfiable  a selector typo; a batch pod aimed at the tainted inference pool
fragmentation           6 GPUs free, 2 per node, a 4-GPU pod pending
gang-min-member         a PodGroup with minMember 4 and only 3 pods
gang-half-started       3/4 of a TP=4 gang running; two training gangs deadlocked; one waiting
quota-exhausted         a tenant's ClusterQueue used up, a zombie job; a StrictFIFO head blocking
autoscaler-cold-start   a Karpenter NodeClaim launching for a pending online pod
pool-at-max             cluster-autoscaler: max node group size reached
gpu-oom                 a serving pod crash-looping on CUDA out of memory / OOMKilled
mis-preemption          an online pod preempted by an over-prioritised batch pod
node-drift              two driver / CUDA versions in the inference pool
governance              audit: no pool taint, online on time-sliced GPUs, missing labels,
                        GPU requests != limits, an expired temporary quota raise
gang-waiting            a 2 x 8-GPU gang behind a running gang that holds both training nodes
init-oom                an init container OOMKilled 6 times at its memory limit (bound, Pending)
mig-nodes               MIG nodes beyond the built-in tables (H20 1g.12gb from GPU feature
                        discovery labels, A100-40GB 1g.5gb, a profile nothing describes)

Time is fixed: NOW = 2026-11-10T12:00:00Z (pass `--now` with it).
"""

from __future__ import annotations

import copy
import json
import sys
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

NOW = datetime(2026, 11, 10, 12, 0, 0, tzinfo=UTC)
NOW_TEXT = "2026-11-10T12:00:00Z"
OUT = Path(__file__).resolve().parent / "fixtures"
_NS = uuid.UUID("6b1f9d1e-43a5-4c2b-9a43-000000000043")
KUEUE = "kueue.x-k8s.io/v1beta1"
VOLCANO = "scheduling.volcano.sh/v1beta1"
Obj = dict[str, Any]


def ts(minutes_ago: float) -> str:
    return (NOW - timedelta(minutes=minutes_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def uid(*parts: str) -> str:
    return str(uuid.uuid5(_NS, "/".join(parts)))


def meta(
    kind: str,
    name: str,
    namespace: str | None = None,
    *,
    age: float = 60 * 24 * 7,
    labels: dict | None = None,
    annotations: dict | None = None,
    owner: tuple[str, str, str] | None = None,
) -> Obj:
    m: Obj = {"name": name}
    if namespace is not None:
        m["namespace"] = namespace
    m["uid"] = uid(kind, namespace or "", name)
    m["resourceVersion"] = str(100000 + int(uuid.UUID(m["uid"]).int % 900000))
    m["creationTimestamp"] = ts(age)
    if labels:
        m["labels"] = dict(labels)
    if annotations:
        m["annotations"] = dict(annotations)
    if owner is not None:
        api, kind_, oname = owner
        m["ownerReferences"] = [
            {
                "apiVersion": api,
                "kind": kind_,
                "name": oname,
                "uid": uid(kind_, namespace or "", oname),
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
    return m


# --- nodes --------------------------------------------------------------------------------------

POOLS: dict[str, Obj] = {
    "gpu-inference": {
        "model": "a100-80g",
        "product": "NVIDIA-A100-SXM4-80GB",
        "gpus": 8,
        "klass": "online-infer",
        "topology": "nvlink-8",
        "memory": "81920",
    },
    "gpu-train": {
        "model": "h100-80g",
        "product": "NVIDIA-H100-80GB-HBM3",
        "gpus": 8,
        "klass": "fine-tune",
        "topology": "nvlink-8",
        "memory": "81559",
    },
    "gpu-batch": {
        "model": "l40s",
        "product": "NVIDIA-L40S",
        "gpus": 4,
        "klass": "batch",
        "topology": "pcie",
        "memory": "46068",
        "replicas": 2,
    },
}


def node(
    name: str,
    pool: str | None,
    zone: str = "cn-east-1a",
    *,
    driver: str = "535.129.03",
    cuda: str = "12.2",
    taint: bool = True,
    gpus_alloc: int | None = None,
    ready: bool = True,
    karpenter: bool = False,
    age: float = 60 * 24 * 40,
) -> Obj:
    labels = {
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        "kubernetes.io/hostname": name,
        "node.kubernetes.io/instance-type": "p4d.24xlarge" if pool == "gpu-inference" else "m7i",
        "topology.kubernetes.io/region": "cn-east-1",
        "topology.kubernetes.io/zone": zone,
    }
    taints = []
    capacity = {
        "cpu": "96",
        "memory": "1056561856Ki",
        "pods": "110",
        "ephemeral-storage": "1758372Mi",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
    }
    allocatable = {
        "cpu": "95690m",
        "memory": "1045001408Ki",
        "pods": "110",
        "ephemeral-storage": "1620451632557",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
    }
    if pool is not None:
        spec = POOLS[pool]
        major, minor, rev = driver.split(".")
        cmaj, cmin = cuda.split(".")
        labels.update(
            {
                "nodepool": pool,
                "gpu.model": spec["model"],
                "gpu.topology": spec["topology"],
                "workload": spec["klass"],
                "nvidia.com/gpu.present": "true",
                "nvidia.com/gpu.product": spec["product"],
                "nvidia.com/gpu.count": str(spec["gpus"]),
                "nvidia.com/gpu.memory": spec["memory"],
                "nvidia.com/cuda.driver.major": major,
                "nvidia.com/cuda.driver.minor": minor,
                "nvidia.com/cuda.driver.rev": rev,
                "nvidia.com/cuda.runtime.major": cmaj,
                "nvidia.com/cuda.runtime.minor": cmin,
                "nvidia.com/gfd.timestamp": "1762700000",
            }
        )
        advertised = spec["gpus"] * spec.get("replicas", 1)
        if spec.get("replicas"):
            labels["nvidia.com/gpu.replicas"] = str(spec["replicas"])
            labels["nvidia.com/gpu.sharing-strategy"] = "time-slicing"
        if karpenter:
            labels["karpenter.sh/nodepool"] = pool
            labels["karpenter.sh/capacity-type"] = "on-demand"
        if taint:
            taints.append({"key": "workload", "value": spec["klass"], "effect": "NoSchedule"})
        capacity["nvidia.com/gpu"] = str(advertised)
        allocatable["nvidia.com/gpu"] = str(advertised if gpus_alloc is None else gpus_alloc)
    conditions = [
        {
            "type": t,
            "status": "False",
            "reason": f"KubeletHas{r}",
            "message": f"kubelet has {m}",
            "lastHeartbeatTime": ts(0.5),
            "lastTransitionTime": ts(age),
        }
        for t, r, m in (
            ("MemoryPressure", "SufficientMemory", "sufficient memory available"),
            ("DiskPressure", "NoDiskPressure", "no disk pressure"),
            ("PIDPressure", "SufficientPID", "sufficient PID available"),
        )
    ]
    if ready:
        conditions.append(
            {
                "type": "Ready",
                "status": "True",
                "reason": "KubeletReady",
                "message": "kubelet is posting ready status",
                "lastHeartbeatTime": ts(0.5),
                "lastTransitionTime": ts(age),
            }
        )
    else:
        conditions.append(
            {
                "type": "Ready",
                "status": "Unknown",
                "reason": "NodeStatusUnknown",
                "message": "Kubelet stopped posting node status.",
                "lastHeartbeatTime": ts(25),
                "lastTransitionTime": ts(24),
            }
        )
        taints += [
            {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule", "timeAdded": ts(24)},
            {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": ts(24)},
        ]
    spec_: Obj = {"providerID": f"aws:///cn-east-1a/i-{uid('ec2', name)[:17].replace('-', '')}"}
    if taints:
        spec_["taints"] = taints
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": meta(
            "Node",
            name,
            age=age,
            labels=labels,
            annotations={
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        ),
        "spec": spec_,
        "status": {
            "capacity": capacity,
            "allocatable": allocatable,
            "conditions": conditions,
            "addresses": [
                {"type": "InternalIP", "address": f"10.0.{len(name)}.{sum(map(ord, name)) % 250}"},
                {"type": "Hostname", "address": name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "architecture": "amd64",
                "bootID": uid("boot", name),
                "containerRuntimeVersion": "containerd://1.7.22",
                "kernelVersion": "5.15.0-1071-aws",
                "kubeProxyVersion": "v1.31.2",
                "kubeletVersion": "v1.31.2",
                "machineID": uid("machine", name).replace("-", ""),
                "operatingSystem": "linux",
                "osImage": "Ubuntu 22.04.5 LTS",
                "systemUUID": uid("sys", name),
            },
        },
    }


# --- pods ---------------------------------------------------------------------------------------

DEFAULT_TOLERATIONS = [
    {
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
    {
        "key": "node.kubernetes.io/unreachable",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
]
OWNERS = {
    "customer-service": ("cs-platform_at_acme.example", "CC-2001"),
    "finance": ("finance-ai_at_acme.example", "CC-4410"),
    "search": ("search-infra_at_acme.example", "CC-3100"),
    "ml-platform": ("ml-platform_at_acme.example", "CC-1000"),
}
# kube-scheduler's FitError for an online pod when the inference pool is full (upstream format:
# each distinct untolerated taint counted on its own, reasons sorted as strings)
FULL_POOL = (
    "0/8 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
    "2 node(s) had untolerated taint {workload: batch}, 2 node(s) had untolerated taint "
    "{workload: fine-tune}, 3 Insufficient nvidia.com/gpu. preemption: 0/8 nodes are "
    "available: 3 No preemption victims found for incoming pod, 5 Preemption is not helpful "
    "for scheduling."
)
PRIORITY = {
    "online-infer-critical": 100003,
    "online-infer-high": 100002,
    "online-infer": 100000,
    "burst": 90000,
    "fine-tune": 10000,
    "batch": 1000,
    "batch-urgent": 200000,
    "system-node-critical": 2000001000,
}


def pod(
    name: str,
    namespace: str,
    *,
    node_name: str | None = None,
    gpus: int = 1,
    cpu: str = "8",
    memory: str = "64Gi",
    klass: str = "online-infer",
    pool: str | None = None,
    app: str | None = None,
    labelled: bool = True,
    tolerate: str | None = "pool",
    selector: dict | None = None,
    phase: str | None = None,
    owner: tuple[str, str, str] | None = None,
    group: str | None = None,
    scheduler: str = "default-scheduler",
    age: float = 60 * 24,
    priority_class: str | None = None,
    limits: dict | None = None,
    gates: list[str] | None = None,
    message: str = "",
    statuses: list[Obj] | None = None,
    extra_labels: dict | None = None,
    annotations: dict | None = None,
) -> Obj:
    pool = (
        pool
        or {
            "online-infer": "gpu-inference",
            "fine-tune": "gpu-train",
            "batch": "gpu-batch",
            "burst": "gpu-inference",
        }[klass]
    )
    labels: dict[str, str] = {}
    if app:
        labels["app.kubernetes.io/name"] = app
    if labelled:
        owner_label, cc = OWNERS.get(namespace, ("platform_at_acme.example", "CC-0001"))
        labels.update(
            {
                "gpupact.io/class": klass,
                "gpupact.io/pool": pool,
                "gpupact.io/tenant": namespace,
                "gpupact.io/owner": owner_label,
                "gpupact.io/cost-centre": cc,
            }
        )
    labels.update(extra_labels or {})
    notes = dict(annotations or {})
    if group:
        notes["scheduling.k8s.io/group-name"] = group
    requests = {"cpu": cpu, "memory": memory}
    if gpus:
        requests["nvidia.com/gpu"] = str(gpus)
    lim = dict(requests) if limits is None else limits
    tolerations = list(DEFAULT_TOLERATIONS)
    if tolerate == "pool":
        tolerate = POOLS[pool]["klass"]
    if tolerate:
        tolerations.insert(
            0, {"key": "workload", "operator": "Equal", "value": tolerate, "effect": "NoSchedule"}
        )
    pc = priority_class or klass
    spec: Obj = {
        "containers": [
            {
                "name": "server" if klass in ("online-infer", "burst") else "worker",
                "image": f"registry.acme.example/{app or name}:1.4.2",
                "resources": {"requests": requests, "limits": lim},
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "imagePullPolicy": "IfNotPresent",
            }
        ],
        "restartPolicy": "Always" if klass in ("online-infer", "burst") else "Never",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "serviceAccountName": "default",
        "schedulerName": scheduler,
        "priorityClassName": pc,
        "priority": PRIORITY.get(pc, PRIORITY.get(klass, 0)),
        "preemptionPolicy": "PreemptLowerPriority",
        "enableServiceLinks": True,
        "tolerations": tolerations,
        "nodeSelector": {"nodepool": pool} if selector is None else selector,
    }
    if gates:
        spec["schedulingGates"] = [{"name": g} for g in gates]
    if node_name:
        spec["nodeName"] = node_name
    phase = phase or ("Running" if node_name else "Pending")
    status: Obj = {"phase": phase, "qosClass": "Guaranteed" if lim == requests else "Burstable"}
    if phase == "Running":
        status.update(
            {
                "conditions": [
                    {
                        "type": t,
                        "status": "True",
                        "lastProbeTime": None,
                        "lastTransitionTime": ts(age - 1),
                    }
                    for t in (
                        "PodReadyToStartContainers",
                        "Initialized",
                        "Ready",
                        "ContainersReady",
                        "PodScheduled",
                    )
                ],
                "hostIP": "10.0.1.10",
                "podIP": f"10.244.{len(name)}.{sum(map(ord, name)) % 250}",
                "startTime": ts(age - 0.5),
                "containerStatuses": statuses
                or [
                    {
                        "name": spec["containers"][0]["name"],
                        "ready": True,
                        "restartCount": 0,
                        "image": spec["containers"][0]["image"],
                        "imageID": "",
                        "started": True,
                        "containerID": f"containerd://{uid('c', name).replace('-', '')}",
                        "state": {"running": {"startedAt": ts(age - 0.4)}},
                        "lastState": {},
                    }
                ],
            }
        )
    elif phase == "Pending":
        if gates:
            cond = {
                "type": "PodScheduled",
                "status": "False",
                "reason": "SchedulingGated",
                "message": "Scheduling is blocked due to non-empty scheduling gates",
                "lastProbeTime": None,
                "lastTransitionTime": ts(age),
            }
        else:
            cond = {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": message or "0/8 nodes are available: 8 Insufficient nvidia.com/gpu.",
                "lastProbeTime": None,
                "lastTransitionTime": ts(age),
            }
        status["conditions"] = [cond]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta(
            "Pod", name, namespace, age=age, labels=labels, annotations=notes or None, owner=owner
        ),
        "spec": spec,
        "status": status,
    }


def device_plugin(node_name: str, *, broken: bool = False) -> Obj:
    name = f"nvidia-device-plugin-daemonset-{uid('dp', node_name)[:5]}"
    statuses = None
    if broken:
        statuses = [
            {
                "name": "nvidia-device-plugin-ctr",
                "ready": False,
                "restartCount": 17,
                "started": False,
                "image": "nvcr.io/nvidia/k8s-device-plugin:v0.16.2",
                "imageID": "",
                "containerID": f"containerd://{uid('dpc', node_name).replace('-', '')}",
                "state": {
                    "waiting": {
                        "reason": "CrashLoopBackOff",
                        "message": "back-off 5m0s restarting failed container",
                    }
                },
                "lastState": {
                    "terminated": {
                        "exitCode": 1,
                        "reason": "Error",
                        "startedAt": ts(6),
                        "finishedAt": ts(5.9),
                        "message": "failed to initialize NVML: Driver/library version mismatch",
                    }
                },
            }
        ]
    p = pod(
        name,
        "kube-system",
        node_name=node_name,
        gpus=0,
        cpu="50m",
        memory="100Mi",
        klass="online-infer",
        labelled=False,
        tolerate=None,
        selector={},
        owner=("apps/v1", "DaemonSet", "nvidia-device-plugin-daemonset"),
        statuses=statuses,
        priority_class="system-node-critical",
        age=60 * 24 * 30,
    )
    p["spec"]["tolerations"] = [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"operator": "Exists"},
    ]
    p["metadata"]["labels"] = {"app.kubernetes.io/name": "nvidia-device-plugin"}
    return p


def event(
    obj: Obj,
    reason: str,
    message: str,
    *,
    component: str = "default-scheduler",
    kind_type: str = "Warning",
    age: float = 5,
    count: int = 1,
    first: float | None = None,
) -> Obj:
    m = obj["metadata"]
    ns = m.get("namespace", "default")
    name = f"{m['name']}.{uid('ev', m['name'], reason, message)[:16].replace('-', '')}"
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": meta("Event", name, ns, age=age),
        "involvedObject": {
            "apiVersion": obj["apiVersion"],
            "kind": obj["kind"],
            "name": m["name"],
            "namespace": ns,
            "uid": m["uid"],
            "resourceVersion": m.get("resourceVersion", ""),
        },
        "reason": reason,
        "message": message,
        "source": {"component": component},
        "firstTimestamp": ts(first if first is not None else age),
        "lastTimestamp": ts(age),
        "count": count,
        "type": kind_type,
        "eventTime": None,
        "reportingComponent": component,
        "reportingInstance": "",
    }


# --- scheduling objects -------------------------------------------------------------------------


def priority_class(name: str, value: int, *, never: bool = False) -> Obj:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": meta("PriorityClass", name, labels={"app.kubernetes.io/managed-by": "gpupact"}),
        "value": value,
        "globalDefault": False,
        "preemptionPolicy": "Never" if never else "PreemptLowerPriority",
        "description": f"{name} workloads (Table 43-1)",
    }


def podgroup(
    name: str,
    namespace: str,
    min_member: int,
    *,
    queue: str = "default",
    phase: str = "Running",
    running: int = 0,
    pending: int = 0,
    age: float = 60,
    conditions: list[Obj] | None = None,
    labelled: bool = True,
    min_resources: dict | None = None,
) -> Obj:
    spec: Obj = {"minMember": min_member, "queue": queue}
    if min_resources:
        spec["minResources"] = min_resources
    status: Obj = {"phase": phase}
    if running:
        status["running"] = running
    if conditions:
        status["conditions"] = conditions
    labels = None
    if labelled:
        owner_label, cc = OWNERS.get(namespace, ("platform_at_acme.example", "CC-0001"))
        labels = {"gpupact.io/owner": owner_label, "gpupact.io/cost-centre": cc}
    return {
        "apiVersion": VOLCANO,
        "kind": "PodGroup",
        "metadata": meta("PodGroup", name, namespace, age=age, labels=labels),
        "spec": spec,
        "status": status,
    }


def unschedulable(message: str, age: float = 30) -> list[Obj]:
    return [
        {
            "type": "Unschedulable",
            "status": "True",
            "reason": "NotEnoughResources",
            "message": message,
            "transitionID": uid("tr", message),
            "lastTransitionTime": ts(age),
        }
    ]


def volcano_queue(name: str, *, capability: dict | None = None, labelled: bool = True) -> Obj:
    spec: Obj = {"weight": 1, "reclaimable": True}
    if capability:
        spec["capability"] = capability
    return {
        "apiVersion": VOLCANO,
        "kind": "Queue",
        "metadata": meta(
            "Queue",
            name,
            labels={
                "gpupact.io/owner": "platform_at_acme.example",
                "gpupact.io/cost-centre": "CC-0001",
            }
            if labelled
            else None,
        ),
        "spec": spec,
        "status": {"state": "Open", "running": 0},
    }


def flavor(pool: str) -> Obj:
    spec: Obj = {
        "nodeLabels": {"nodepool": pool},
        "nodeTaints": [{"key": "workload", "value": POOLS[pool]["klass"], "effect": "NoSchedule"}],
    }
    return {
        "apiVersion": KUEUE,
        "kind": "ResourceFlavor",
        "metadata": meta("ResourceFlavor", pool),
        "spec": spec,
    }


def cluster_queue(
    name: str,
    quotas: dict[str, int],
    *,
    cohort: str | None = None,
    strategy: str = "BestEffortFIFO",
    tenant: str = "",
    lending: dict | None = None,
    labelled: bool = True,
    annotations: dict | None = None,
    usage: dict | None = None,
) -> Obj:
    flavors = []
    for pool, gpus in quotas.items():
        gpu = {"name": "nvidia.com/gpu", "nominalQuota": gpus}
        if lending and pool in lending:
            gpu["lendingLimit"] = lending[pool]
        flavors.append(
            {
                "name": pool,
                "resources": [
                    {"name": "cpu", "nominalQuota": "2000"},
                    {"name": "memory", "nominalQuota": "20Ti"},
                    gpu,
                ],
            }
        )
    spec: Obj = {
        "namespaceSelector": {"matchLabels": {"gpupact.io/tenant": tenant}},
        "resourceGroups": [
            {"coveredResources": ["cpu", "memory", "nvidia.com/gpu"], "flavors": flavors}
        ],
        "queueingStrategy": strategy,
        "preemption": {
            "withinClusterQueue": "LowerPriority",
            "reclaimWithinCohort": "Any",
            "borrowWithinCohort": {"policy": "Never"},
        },
        "flavorFungibility": {"whenCanBorrow": "Borrow", "whenCanPreempt": "TryNextFlavor"},
        "stopPolicy": "None",
    }
    if cohort:
        spec["cohort"] = cohort
    labels = None
    if labelled:
        owner_label, cc = OWNERS.get(tenant, ("platform_at_acme.example", "CC-0001"))
        labels = {
            "gpupact.io/owner": owner_label,
            "gpupact.io/cost-centre": cc,
            "gpupact.io/tenant": tenant,
        }
    status: Obj = {
        "conditions": [
            {
                "type": "Active",
                "status": "True",
                "reason": "Ready",
                "message": "Can admit new workloads",
                "lastTransitionTime": ts(60 * 24 * 7),
            }
        ],
        "pendingWorkloads": 0,
        "reservingWorkloads": 0,
        "admittedWorkloads": 0,
    }
    if usage:
        status["flavorsReservation"] = [
            {"name": f, "resources": [{"name": "nvidia.com/gpu", "total": str(v)}]}
            for f, v in usage.items()
        ]
    return {
        "apiVersion": KUEUE,
        "kind": "ClusterQueue",
        "metadata": meta("ClusterQueue", name, labels=labels, annotations=annotations),
        "spec": spec,
        "status": status,
    }


def local_queue(name: str, namespace: str, cq: str) -> Obj:
    owner_label, cc = OWNERS.get(namespace, ("platform_at_acme.example", "CC-0001"))
    return {
        "apiVersion": KUEUE,
        "kind": "LocalQueue",
        "metadata": meta(
            "LocalQueue",
            name,
            namespace,
            labels={"gpupact.io/owner": owner_label, "gpupact.io/cost-centre": cc},
        ),
        "spec": {"clusterQueue": cq, "stopPolicy": "None"},
        "status": {"pendingWorkloads": 0, "reservingWorkloads": 0, "admittedWorkloads": 0},
    }


def workload(
    job: str,
    namespace: str,
    queue: str,
    *,
    count: int,
    gpus: int,
    admitted_to: str | None = None,
    flavor_name: str = "gpu-batch",
    priority: int = 1000,
    age: float = 60,
    pending_message: str = "",
) -> Obj:
    name = f"job-{job}-{uid('wl', job)[:5]}"
    template = {
        "metadata": {"labels": {"job-name": job}},
        "spec": {
            "restartPolicy": "Never",
            "tolerations": [
                {
                    "key": "workload",
                    "operator": "Equal",
                    "value": POOLS[flavor_name]["klass"],
                    "effect": "NoSchedule",
                }
            ],
            "containers": [
                {
                    "name": "worker",
                    "image": f"registry.acme.example/{job}:2.0",
                    "resources": {
                        "requests": {"cpu": "4", "memory": "32Gi", "nvidia.com/gpu": str(gpus)},
                        "limits": {"cpu": "4", "memory": "32Gi", "nvidia.com/gpu": str(gpus)},
                    },
                }
            ],
        },
    }
    spec = {
        "queueName": queue,
        "priority": priority,
        "priorityClassSource": "scheduling.k8s.io/priorityclass",
        "priorityClassName": "batch" if priority <= 1000 else "online-infer",
        "active": True,
        "podSets": [{"name": "main", "count": count, "template": template}],
    }
    conditions = []
    status: Obj = {}
    if admitted_to:
        conditions = [
            {
                "type": "QuotaReserved",
                "status": "True",
                "reason": "QuotaReserved",
                "message": f"Quota reserved in ClusterQueue {admitted_to}",
                "lastTransitionTime": ts(age - 1),
                "observedGeneration": 1,
            },
            {
                "type": "Admitted",
                "status": "True",
                "reason": "Admitted",
                "message": "The workload is admitted",
                "lastTransitionTime": ts(age - 1),
                "observedGeneration": 1,
            },
        ]
        status["admission"] = {
            "clusterQueue": admitted_to,
            "podSetAssignments": [
                {
                    "name": "main",
                    "count": count,
                    "flavors": {
                        "cpu": flavor_name,
                        "memory": flavor_name,
                        "nvidia.com/gpu": flavor_name,
                    },
                    "resourceUsage": {
                        "cpu": str(4 * count),
                        "memory": f"{32 * count}Gi",
                        "nvidia.com/gpu": str(gpus * count),
                    },
                }
            ],
        }
    else:
        conditions = [
            {
                "type": "QuotaReserved",
                "status": "False",
                "reason": "Pending",
                "message": pending_message or "couldn't assign flavors to pod set main",
                "lastTransitionTime": ts(age - 0.5),
                "observedGeneration": 1,
            }
        ]
    status["conditions"] = conditions
    return {
        "apiVersion": KUEUE,
        "kind": "Workload",
        "metadata": meta(
            "Workload",
            name,
            namespace,
            age=age,
            labels={"kueue.x-k8s.io/job-uid": uid("Job", namespace, job)},
            owner=("batch/v1", "Job", job),
        ),
        "spec": spec,
        "status": status,
    }


def node_pool(pool: str, *, limit_nodes: int, cold_start: str | None = None) -> Obj:
    spec = POOLS[pool]
    annotations = {
        "karpenter.sh/nodepool-hash": "6821555240594823858",
        "karpenter.sh/nodepool-hash-version": "v3",
    }
    if cold_start:
        annotations["gpupact.io/cold-start"] = cold_start
    labels = {
        "nodepool": pool,
        "gpu.model": spec["model"],
        "gpu.topology": spec["topology"],
        "workload": spec["klass"],
        "nvidia.com/gpu.product": spec["product"],
    }
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": meta(
            "NodePool",
            pool,
            age=60 * 24 * 30,
            annotations=annotations,
            labels={"app.kubernetes.io/managed-by": "gpupact", "gpupact.io/pool": pool},
        ),
        "spec": {
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.k8s.aws",
                        "kind": "EC2NodeClass",
                        "name": "gpu",
                    },
                    "requirements": [
                        {
                            "key": "karpenter.sh/capacity-type",
                            "operator": "In",
                            "values": ["on-demand"],
                        }
                    ],
                    "taints": [{"key": "workload", "value": spec["klass"], "effect": "NoSchedule"}],
                    "expireAfter": "720h",
                },
            },
            "limits": {
                "nodes": str(limit_nodes),
                "nvidia.com/gpu": str(limit_nodes * spec["gpus"]),
            },
            "disruption": {
                "consolidationPolicy": "WhenEmpty",
                "consolidateAfter": "13m30s",
                "budgets": [{"nodes": "1"}],
            },
        },
        "status": {
            "resources": {"cpu": "0", "memory": "0", "nodes": "0", "pods": "0"},
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "Ready",
                    "message": "",
                    "lastTransitionTime": ts(60 * 24 * 30),
                    "observedGeneration": 1,
                }
            ],
        },
    }


def node_claim(name: str, pool: str, *, age: float, launched: bool, registered: bool) -> Obj:
    spec = POOLS[pool]
    labels = {
        "karpenter.sh/nodepool": pool,
        "nodepool": pool,
        "gpu.model": spec["model"],
        "gpu.topology": spec["topology"],
        "workload": spec["klass"],
        "nvidia.com/gpu.product": spec["product"],
        "karpenter.sh/capacity-type": "on-demand",
        "node.kubernetes.io/instance-type": "p4d.24xlarge",
    }
    conditions = [
        {
            "type": "Launched",
            "status": "True" if launched else "Unknown",
            "reason": "Launched" if launched else "AwaitingReconciliation",
            "message": "",
            "lastTransitionTime": ts(age - 1),
            "observedGeneration": 1,
        },
        {
            "type": "Registered",
            "status": "True" if registered else "Unknown",
            "reason": "Registered" if registered else "AwaitingReconciliation",
            "message": "" if registered else "Node not registered with cluster",
            "lastTransitionTime": ts(age - 1),
            "observedGeneration": 1,
        },
        {
            "type": "Initialized",
            "status": "Unknown",
            "reason": "AwaitingReconciliation",
            "message": "Node not registered with cluster",
            "lastTransitionTime": ts(age - 1),
            "observedGeneration": 1,
        },
        {
            "type": "Ready",
            "status": "Unknown",
            "reason": "AwaitingReconciliation",
            "message": "Initialized=Unknown",
            "lastTransitionTime": ts(age - 1),
            "observedGeneration": 1,
        },
    ]
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": meta(
            "NodeClaim", name, age=age, labels=labels, owner=("karpenter.sh/v1", "NodePool", pool)
        ),
        "spec": {
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"},
            "requirements": [{"key": "nodepool", "operator": "In", "values": [pool]}],
            "resources": {
                "requests": {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "1", "pods": "1"}
            },
            "taints": [{"key": "workload", "value": spec["klass"], "effect": "NoSchedule"}],
            "expireAfter": "720h",
        },
        "status": {
            "conditions": conditions,
            "providerID": f"aws:///cn-east-1a/i-{uid('ec2', name)[:17].replace('-', '')}",
            "imageID": "ami-0a1b2c3d4e5f67890",
        },
    }


def controller(
    kind: str,
    name: str,
    namespace: str,
    template_pod: Obj,
    *,
    replicas: int | None = None,
    api: str = "apps/v1",
    labelled: bool = True,
) -> Obj:
    labels = dict(template_pod["metadata"].get("labels", {})) if labelled else {}
    tmpl = {
        "metadata": {"labels": dict(template_pod["metadata"].get("labels", {}))},
        "spec": copy.deepcopy(template_pod["spec"]),
    }
    tmpl["spec"].pop("nodeName", None)
    tmpl["spec"].pop("priority", None)
    spec: Obj = {"template": tmpl}
    if replicas is not None:
        spec["replicas"] = replicas
    if kind == "Deployment":
        spec["selector"] = {"matchLabels": {"app.kubernetes.io/name": name}}
    if kind == "ReplicaSet":
        spec["selector"] = {"matchLabels": {"app.kubernetes.io/name": name.rsplit("-", 1)[0]}}
    if api.startswith("batch.volcano.sh"):
        spec = {
            "minAvailable": replicas or 1,
            "schedulerName": "volcano",
            "queue": "default",
            "tasks": [{"name": "worker", "replicas": replicas or 1, "template": tmpl}],
        }
    return {
        "apiVersion": api,
        "kind": kind,
        "metadata": meta(kind, name, namespace, labels=labels or None),
        "spec": spec,
    }


# --- the base cluster ---------------------------------------------------------------------------


def cs_agent(i: int, node_name: str | None, **kw: Any) -> Obj:
    return pod(
        f"cs-agent-7d9f8b6c4-{uid('cs', str(i))[:5]}",
        "customer-service",
        node_name=node_name,
        app="cs-agent",
        owner=("apps/v1", "ReplicaSet", "cs-agent-7d9f8b6c4"),
        priority_class="online-infer-critical",
        **kw,
    )


def base() -> dict[str, list[Obj]]:
    nodes = [
        node("inf-a100-0", "gpu-inference", "cn-east-1a"),
        node("inf-a100-1", "gpu-inference", "cn-east-1b"),
        node("inf-a100-2", "gpu-inference", "cn-east-1a"),
        node("train-h100-0", "gpu-train", "cn-east-1a"),
        node("train-h100-1", "gpu-train", "cn-east-1b"),
        node("batch-l40s-0", "gpu-batch", "cn-east-1a"),
        node("batch-l40s-1", "gpu-batch", "cn-east-1b"),
        node("cpu-0", None, "cn-east-1a"),
    ]
    pods = [device_plugin(n["metadata"]["name"]) for n in nodes[:7]]
    pods += [cs_agent(i, f"inf-a100-{i // 2}") for i in range(4)]
    for i in range(4):
        pods.append(
            pod(
                f"llm-70b-tp4-0-{i}",
                "finance",
                node_name="inf-a100-2",
                app="llm-70b-tp4",
                group="llm-70b-tp4-0",
                scheduler="volcano",
                priority_class="online-infer-high",
                owner=("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "llm-70b-tp4"),
            )
        )
    for i in range(2):
        pods.append(
            pod(
                f"lora-finetune-worker-{i}",
                "ml-platform",
                node_name=f"train-h100-{i}",
                gpus=8,
                klass="fine-tune",
                app="lora-finetune",
                group="lora-finetune",
                scheduler="volcano",
                owner=("batch.volcano.sh/v1alpha1", "Job", "lora-finetune"),
                cpu="32",
                memory="256Gi",
            )
        )
    for i in range(4):
        pods.append(
            pod(
                f"embedding-rebuild-{uid('eb', str(i))[:5]}",
                "search",
                node_name=f"batch-l40s-{i % 2}",
                gpus=2,
                klass="batch",
                app="embedding-rebuild",
                cpu="4",
                memory="32Gi",
                owner=("batch/v1", "Job", "embedding-rebuild"),
            )
        )
    for p in pods:
        if p["metadata"]["namespace"] != "kube-system":
            p["metadata"]["labels"]["pod-template-hash"] = "7d9f8b6c4"
    cs_template = cs_agent(0, None)
    controllers = [
        controller("Deployment", "cs-agent", "customer-service", cs_template, replicas=4),
        controller(
            "Job",
            "lora-finetune",
            "ml-platform",
            _find(pods, "lora-finetune-worker-0"),
            replicas=2,
            api="batch.volcano.sh/v1alpha1",
        ),
        controller(
            "Job",
            "embedding-rebuild",
            "search",
            next(p for p in pods if p["metadata"]["name"].startswith("embedding-rebuild")),
            api="batch/v1",
        ),
    ]
    rs = controller("ReplicaSet", "cs-agent-7d9f8b6c4", "customer-service", cs_template, replicas=4)
    rs["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "name": "cs-agent",
            "uid": uid("Deployment", "customer-service", "cs-agent"),
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    controllers.append(rs)
    scheduling = [
        priority_class("online-infer-critical", 100003),
        priority_class("online-infer-high", 100002),
        priority_class("online-infer", 100000),
        priority_class("burst", 90000),
        priority_class("fine-tune", 10000, never=True),
        priority_class("batch", 1000, never=True),
    ]
    volcano = [
        volcano_queue("default"),
        podgroup("llm-70b-tp4-0", "finance", 4, running=4, age=60 * 24),
        podgroup("lora-finetune", "ml-platform", 2, running=2, age=60 * 5),
    ]
    kueue = [
        flavor("gpu-inference"),
        flavor("gpu-train"),
        flavor("gpu-batch"),
        cluster_queue("customer-service-gpu", {"gpu-inference": 16}, tenant="customer-service"),
        cluster_queue("finance-gpu", {"gpu-inference": 12}, tenant="finance"),
        cluster_queue(
            "search-gpu",
            {"gpu-batch": 32},
            cohort="offline",
            tenant="search",
            lending={"gpu-batch": 16},
        ),
        cluster_queue(
            "ml-platform-gpu",
            {"gpu-batch": 16, "gpu-train": 16},
            cohort="offline",
            tenant="ml-platform",
        ),
        local_queue("finance-batch", "finance", "finance-gpu"),
        local_queue("search-batch", "search", "search-gpu"),
        local_queue("ml-platform-batch", "ml-platform", "ml-platform-gpu"),
        workload(
            "embedding-rebuild",
            "search",
            "search-batch",
            count=4,
            gpus=2,
            admitted_to="search-gpu",
            age=90,
        ),
    ]
    autoscaling = [
        node_pool("gpu-inference", limit_nodes=3, cold_start=COLD_START_INFERENCE),
        node_pool("gpu-batch", limit_nodes=8),
    ]
    namespaces = [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": meta(
                "Namespace", ns, labels={"kubernetes.io/metadata.name": ns, "gpupact.io/tenant": ns}
            ),
            "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Active"},
        }
        for ns in ("customer-service", "finance", "search", "ml-platform", "kube-system")
    ]
    events = [
        event(
            pods[7],
            "Scheduled",
            "Successfully assigned customer-service/"
            + pods[7]["metadata"]["name"]
            + " to inf-a100-0",
            kind_type="Normal",
            age=60 * 23,
        ),
    ]
    return {
        "nodes": nodes,
        "pods": pods,
        "events": events,
        "scheduling": scheduling + namespaces,
        "controllers": controllers,
        "volcano": volcano,
        "kueue": kueue,
        "karpenter": autoscaling,
    }


COLD_START_INFERENCE = json.dumps(
    {
        "provision": "4m",
        "driver": "2m",
        "devicePlugin": "30s",
        "imagePull": "3m",
        "modelLoad": "4m",
    },
    separators=(",", ":"),
)


def _find(objs: list[Obj], name: str) -> Obj:
    return next(o for o in objs if o["metadata"]["name"] == name)


def fill_inference(c: dict[str, list[Obj]], free: tuple[int, int, int] = (0, 0, 0)) -> None:
    """Top up the inference nodes with a reranker service until each has `free` GPUs left."""
    used = {f"inf-a100-{i}": 0 for i in range(3)}
    for p in c["pods"]:
        name = p["spec"].get("nodeName")
        if name in used:
            used[name] += int(
                p["spec"]["containers"][0]["resources"]["requests"].get("nvidia.com/gpu", "0")
            )
    for i, (name, left) in enumerate(zip(sorted(used), free, strict=True)):
        alloc = int(_find(c["nodes"], name)["status"]["allocatable"]["nvidia.com/gpu"])
        gpus = alloc - used[name] - left
        if gpus > 0:
            c["pods"].append(
                pod(
                    f"rerank-5c8d7f9b-{uid('rr', name)[:5]}",
                    "customer-service",
                    node_name=name,
                    gpus=gpus,
                    app="rerank",
                    owner=("apps/v1", "ReplicaSet", "rerank-5c8d7f9b"),
                    age=60 * 12 + i,
                )
            )


# --- scenarios ----------------------------------------------------------------------------------


def healthy() -> dict[str, list[Obj]]:
    return base()


def device_plugin_lost() -> dict[str, list[Obj]]:
    c = base()
    c["nodes"][2] = node(
        "inf-a100-2", "gpu-inference", "cn-east-1a", driver="550.54.15", gpus_alloc=0
    )
    c["pods"] = [
        p
        for p in c["pods"]
        if not p["metadata"]["name"].startswith(("llm-70b", "nvidia-device-plugin"))
    ]
    c["pods"] += [device_plugin(f"inf-a100-{i}") for i in range(2)]
    c["pods"].append(device_plugin("inf-a100-2", broken=True))
    c["pods"] += [
        device_plugin(n) for n in ("train-h100-0", "train-h100-1", "batch-l40s-0", "batch-l40s-1")
    ]
    c["volcano"] = [v for v in c["volcano"] if v["metadata"]["name"] != "llm-70b-tp4-0"]
    fill_inference(c)
    pending = cs_agent(
        9,
        None,
        age=12,
        message=FULL_POOL,
    )
    c["pods"].append(pending)
    c["events"].append(
        event(
            pending,
            "FailedScheduling",
            pending["status"]["conditions"][0]["message"],
            age=1,
            count=9,
            first=12,
        )
    )
    c["events"].append(
        event(
            c["nodes"][2],
            "NodeAllocatableEnforced",
            "Updated Node Allocatable limit across pods",
            component="kubelet",
            kind_type="Normal",
            age=40,
        )
    )
    return c


def affinity_unsatisfiable() -> dict[str, list[Obj]]:
    c = base()
    typo = cs_agent(
        10,
        None,
        age=30,
        selector={"nodepool": "gpu-inference", "gpu.model": "a100-80gb"},
        message="0/8 nodes are available: 2 node(s) had untolerated taint {workload: batch}, "
        "2 node(s) had untolerated taint {workload: fine-tune}, 4 node(s) didn't match Pod's "
        "node affinity/selector. preemption: 0/8 nodes are available: 8 Preemption is not "
        "helpful for scheduling.",
    )
    typo["metadata"]["name"] = "cs-agent-canary-6f7c9d8b5-x2k4p"
    stray = pod(
        "embedding-adhoc-q7w2z",
        "search",
        gpus=2,
        klass="batch",
        app="embedding-adhoc",
        selector={"nodepool": "gpu-inference"},
        age=45,
        owner=("batch/v1", "Job", "embedding-adhoc"),
        message="0/8 nodes are available: 2 node(s) had untolerated taint {workload: fine-tune}, "
        "3 node(s) didn't match Pod's node affinity/selector, 3 node(s) had untolerated taint "
        "{workload: online-infer}. preemption: 0/8 nodes are available: 8 Preemption is not "
        "helpful for scheduling.",
    )
    c["pods"] += [typo, stray]
    return c


def fragmentation() -> dict[str, list[Obj]]:
    c = base()
    fill_inference(c, free=(2, 2, 2))
    big = pod(
        "llm-34b-tp4-0",
        "finance",
        gpus=4,
        app="llm-34b",
        age=20,
        owner=("apps/v1", "StatefulSet", "llm-34b"),
        priority_class="online-infer-high",
        message=FULL_POOL,
    )
    c["pods"].append(big)
    return c


def gang_min_member() -> dict[str, list[Obj]]:
    c = base()
    for i in range(3):
        c["pods"].append(
            pod(
                f"llm-70b-tp4-1-{i}",
                "finance",
                app="llm-70b-tp4",
                group="llm-70b-tp4-1",
                scheduler="volcano",
                priority_class="online-infer-high",
                age=50,
                owner=("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "llm-70b-tp4"),
            )
        )
    c["volcano"].append(
        podgroup(
            "llm-70b-tp4-1",
            "finance",
            4,
            phase="Pending",
            pending=3,
            age=50,
            conditions=unschedulable(
                "3/3 tasks in gang unschedulable: pod group is not ready, 3 Pending, "
                "4 minAvailable; Pending: 3 Schedulable"
            ),
        )
    )
    return c


def gang_half_started() -> dict[str, list[Obj]]:
    c = base()
    c["pods"] = [p for p in c["pods"] if not p["metadata"]["name"].startswith("lora-finetune")]
    c["volcano"] = [v for v in c["volcano"] if v["metadata"]["name"] != "lora-finetune"]
    fill_inference(c, free=(0, 0, 3))
    for i in range(4):
        c["pods"].append(
            pod(
                f"llm-70b-tp4-1-{i}",
                "finance",
                node_name="inf-a100-2" if i < 3 else None,
                app="llm-70b-tp4",
                group="llm-70b-tp4-1",
                scheduler="volcano",
                priority_class="online-infer-high",
                age=150,
                owner=("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "llm-70b-tp4"),
            )
        )
    c["volcano"].append(
        podgroup(
            "llm-70b-tp4-1",
            "finance",
            4,
            phase="Unknown",
            running=3,
            age=150,
            conditions=unschedulable(
                "1/4 tasks in gang unschedulable: 1 Insufficient nvidia.com/gpu"
            ),
        )
    )
    # two training gangs each holding one of the two training nodes, each waiting for the other
    for gang, node_name in (("lora-a", "train-h100-0"), ("lora-c", "train-h100-1")):
        for i in range(2):
            c["pods"].append(
                pod(
                    f"{gang}-worker-{i}",
                    "ml-platform",
                    node_name=node_name if i == 0 else None,
                    gpus=8,
                    klass="fine-tune",
                    app=gang,
                    group=gang,
                    scheduler="volcano",
                    cpu="32",
                    memory="256Gi",
                    age=180,
                    owner=("batch.volcano.sh/v1alpha1", "Job", gang),
                )
            )
        c["volcano"].append(
            podgroup(
                gang,
                "ml-platform",
                2,
                phase="Unknown",
                running=1,
                age=180,
                conditions=unschedulable(
                    "1/2 tasks in gang unschedulable: 1 Insufficient nvidia.com/gpu"
                ),
            )
        )
    add_queued_training_gang(c, age=60)
    return c


def add_queued_training_gang(c: dict[str, list[Obj]], *, age: float) -> None:
    """lora-b: 2 x 8 GPUs, Inqueue, no member placed (each needs a whole training node)."""
    for i in range(2):
        c["pods"].append(
            pod(
                f"lora-b-worker-{i}",
                "ml-platform",
                gpus=8,
                klass="fine-tune",
                app="lora-b",
                group="lora-b",
                scheduler="volcano",
                cpu="32",
                memory="256Gi",
                age=age,
                owner=("batch.volcano.sh/v1alpha1", "Job", "lora-b"),
            )
        )
    c["volcano"].append(
        podgroup(
            "lora-b",
            "ml-platform",
            2,
            phase="Inqueue",
            age=age,
            conditions=unschedulable(
                "2/2 tasks in gang unschedulable: 2 Insufficient nvidia.com/gpu"
            ),
        )
    )


def quota_exhausted() -> dict[str, list[Obj]]:
    c = base()
    k = c["kueue"]
    k.append(
        workload(
            "report-gen",
            "finance",
            "finance-batch",
            count=2,
            gpus=4,
            admitted_to="finance-gpu",
            flavor_name="gpu-inference",
            age=240,
        )
    )
    k.append(
        workload(
            "month-end-close",
            "finance",
            "finance-batch",
            count=1,
            gpus=4,
            admitted_to="finance-gpu",
            flavor_name="gpu-inference",
            age=60 * 24 * 3,
        )
    )
    k.append(
        workload(
            "risk-eval",
            "finance",
            "finance-batch",
            count=1,
            gpus=4,
            flavor_name="gpu-inference",
            age=95,
            pending_message="couldn't assign flavors to pod set main: insufficient unused "
            "quota for nvidia.com/gpu in flavor gpu-inference, 4 more needed",
        )
    )
    for i in range(2):
        c["pods"].append(
            pod(
                f"report-gen-{uid('rg', str(i))[:5]}",
                "finance",
                node_name=f"inf-a100-{i}",
                gpus=4,
                app="report-gen",
                owner=("batch/v1", "Job", "report-gen"),
                age=239,
            )
        )
    # search's queue is StrictFIFO; its head asks for more than the cohort can ever give
    cq = _find(k, "search-gpu")
    cq["spec"]["queueingStrategy"] = "StrictFIFO"
    k.append(
        workload(
            "reindex-full",
            "search",
            "search-batch",
            count=16,
            gpus=4,
            age=120,
            pending_message="couldn't assign flavors to pod set main: insufficient quota for "
            "nvidia.com/gpu in flavor gpu-batch, request > maximum capacity (64 > 48)",
        )
    )
    k.append(workload("eval-small", "search", "search-batch", count=1, gpus=2, age=30))
    return c


def autoscaler_cold_start() -> dict[str, list[Obj]]:
    c = base()
    fill_inference(c)
    c["karpenter"] = [
        node_pool("gpu-inference", limit_nodes=3, cold_start=COLD_START_INFERENCE),
        node_pool("gpu-batch", limit_nodes=8),
        node_claim("gpu-inference-7xk2p", "gpu-inference", age=3, launched=True, registered=False),
    ]
    pending = cs_agent(
        11,
        None,
        age=4,
        message=FULL_POOL,
    )
    c["pods"].append(pending)
    c["events"] += [
        event(pending, "FailedScheduling", pending["status"]["conditions"][0]["message"], age=3.5),
        event(
            pending,
            "Nominated",
            "Pod should schedule on: nodeclaim/gpu-inference-7xk2p",
            component="karpenter",
            kind_type="Normal",
            age=3,
        ),
    ]
    return c


def pool_at_max() -> dict[str, list[Obj]]:
    c = base()
    fill_inference(c)
    c["karpenter"] = []
    pending = cs_agent(
        12,
        None,
        age=25,
        message=FULL_POOL,
    )
    c["pods"].append(pending)
    c["events"] += [
        event(
            pending,
            "FailedScheduling",
            pending["status"]["conditions"][0]["message"],
            age=1,
            count=14,
            first=25,
        ),
        event(
            pending,
            "NotTriggerScaleUp",
            "pod didn't trigger scale-up: 1 max node group size reached, "
            "2 node(s) didn't match Pod's node affinity/selector",
            component="cluster-autoscaler",
            kind_type="Normal",
            age=1,
            count=20,
            first=24,
        ),
    ]
    return c


def gpu_oom() -> dict[str, list[Obj]]:
    c = base()
    victim = _find(c["pods"], c["pods"][8]["metadata"]["name"])
    victim["status"]["containerStatuses"] = [
        {
            "name": "server",
            "ready": False,
            "restartCount": 6,
            "started": False,
            "image": "registry.acme.example/cs-agent:1.4.2",
            "imageID": "",
            "containerID": f"containerd://{uid('oom', 'c').replace('-', '')}",
            "state": {
                "waiting": {
                    "reason": "CrashLoopBackOff",
                    "message": "back-off 5m0s restarting failed container=server",
                }
            },
            "lastState": {
                "terminated": {
                    "exitCode": 1,
                    "reason": "Error",
                    "startedAt": ts(9),
                    "finishedAt": ts(7),
                    "message": "INFO 11-10 11:52:01 model_runner.py:1072] Loading model weights "
                    "took 27.6 GiB\n"
                    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 6.00 GiB. "
                    "GPU 0 has a "
                    "total capacity of 79.14 GiB of which 2.31 GiB is free.",
                }
            },
        }
    ]
    victim["status"]["conditions"][2]["status"] = "False"
    sibling = c["pods"][9]
    sibling["status"]["containerStatuses"][0]["restartCount"] = 2
    sibling["status"]["containerStatuses"][0]["lastState"] = {
        "terminated": {
            "exitCode": 137,
            "reason": "OOMKilled",
            "startedAt": ts(50),
            "finishedAt": ts(31),
        }
    }
    c["events"].append(
        event(
            victim,
            "BackOff",
            "Back-off restarting failed container server in pod " + victim["metadata"]["name"],
            component="kubelet",
            age=2,
            count=31,
            first=40,
        )
    )
    return c


def mis_preemption() -> dict[str, list[Obj]]:
    c = base()
    c["scheduling"].append(priority_class("batch-urgent", 200000))
    hog = pod(
        "embedding-hog-8k2lq",
        "search",
        node_name="inf-a100-1",
        gpus=7,
        klass="batch",
        pool="gpu-inference",
        tolerate="online-infer",
        app="embedding-hog",
        priority_class="batch-urgent",
        selector={"nodepool": "gpu-inference"},
        owner=("batch/v1", "Job", "embedding-hog"),
        age=20,
    )
    c["pods"].append(hog)
    gone = cs_agent(3, "inf-a100-1")  # the preempted replica: only its events remain
    replacement = cs_agent(
        13,
        None,
        age=19,
        message=FULL_POOL,
    )
    c["pods"] = [p for p in c["pods"] if p["metadata"]["name"] != gone["metadata"]["name"]]
    fill_inference(c)
    c["pods"].append(replacement)
    c["events"] += [
        event(
            gone,
            "Preempted",
            f"Preempted by pod {hog['metadata']['uid']} on node inf-a100-1",
            age=20,
        ),
        event(
            gone,
            "Killing",
            "Stopping container server",
            component="kubelet",
            kind_type="Normal",
            age=20,
        ),
    ]
    return c


def node_drift() -> dict[str, list[Obj]]:
    c = base()
    c["nodes"][1] = node(
        "inf-a100-1", "gpu-inference", "cn-east-1b", driver="550.54.15", cuda="12.4"
    )
    return c


def governance() -> dict[str, list[Obj]]:
    c = base()
    for i in range(3):  # the inference pool lost its taint: only affinity keeps batch out
        c["nodes"][i] = node(
            f"inf-a100-{i}",
            "gpu-inference",
            ("cn-east-1a", "cn-east-1b", "cn-east-1a")[i],
            taint=False,
        )
    faq = pod(
        "faq-bot-5b6c7d8e9-h3j4k",
        "customer-service",
        node_name="batch-l40s-0",
        app="faq-bot",
        pool="gpu-batch",
        tolerate="batch",
        selector={"nodepool": "gpu-batch"},
        labelled=False,
        extra_labels={"gpupact.io/class": "online-infer"},
        cpu="8",
        limits={"cpu": "16", "memory": "64Gi", "nvidia.com/gpu": "1"},
        owner=("apps/v1", "ReplicaSet", "faq-bot-5b6c7d8e9"),
    )
    c["pods"].append(faq)
    faq_deploy = controller(
        "Deployment", "faq-bot", "customer-service", faq, replicas=1, labelled=False
    )
    rs = controller(
        "ReplicaSet", "faq-bot-5b6c7d8e9", "customer-service", faq, replicas=1, labelled=False
    )
    rs["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "name": "faq-bot",
            "uid": faq_deploy["metadata"]["uid"],
            "controller": True,
        }
    ]
    c["controllers"] += [faq_deploy, rs]
    # search's batch job and its pods were launched without owner labels
    for p in c["pods"] + c["controllers"]:
        if p["metadata"]["namespace"] == "search":
            for key in ("gpupact.io/owner", "gpupact.io/cost-centre"):
                p["metadata"].get("labels", {}).pop(key, None)
    tmpl_pod = pod(
        "sweep",
        "ml-platform",
        gpus=1,
        klass="batch",
        limits={"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "2"},
    )
    c["controllers"].append(
        controller(
            "Job",
            "hparam-sweep",
            "ml-platform",
            tmpl_pod,
            replicas=4,
            api="batch.volcano.sh/v1alpha1",
        )
    )
    c["volcano"].append(volcano_queue("scratch", labelled=False))
    search = _find(c["kueue"], "search-gpu")
    search["metadata"].pop("labels", None)
    finance = _find(c["kueue"], "finance-gpu")
    finance["spec"]["resourceGroups"][0]["flavors"][0]["resources"][2]["nominalQuota"] = 16
    finance["metadata"]["annotations"] = {
        "gpupact.io/quota-raises": json.dumps(
            [
                {
                    "flavor": "gpu-inference",
                    "resource": "nvidia.com/gpu",
                    "baseQuota": 12,
                    "nominalQuota": 16,
                    "raises": [
                        {"gpus": 4, "expires": "2026-11-01T00:00:00Z", "reason": "month-end close"}
                    ],
                }
            ]
        ),
        "gpupact.io/next-raise-expiry": "2026-11-01T00:00:00Z",
    }
    return c


def gang_waiting() -> dict[str, list[Obj]]:
    """A 2 x 8-GPU training gang queued behind a running one that holds both training nodes:
    each member alone would need a whole node; the gang is what blocks."""
    c = base()
    add_queued_training_gang(c, age=40)
    return c


def init_oom() -> dict[str, list[Obj]]:
    """A reranker whose init container (model download into host RAM) is OOMKilled at its
    memory limit, over and over: the pod is bound and Pending (Init:CrashLoopBackOff)."""
    c = base()
    rerank = pod(
        "cs-rerank-5f6d7c8b9-m4n8q",
        "customer-service",
        node_name="inf-a100-1",
        phase="Pending",
        app="cs-rerank",
        owner=("apps/v1", "ReplicaSet", "cs-rerank-5f6d7c8b9"),
        age=25,
    )
    rerank["metadata"]["labels"]["pod-template-hash"] = "5f6d7c8b9"
    rerank["spec"]["initContainers"] = [
        {
            "name": "model-fetch",
            "image": "registry.acme.example/model-fetch:0.9.1",
            "args": ["--model", "bge-reranker-v2", "--to", "/models"],
            "resources": {
                "requests": {"cpu": "1", "memory": "4Gi"},
                "limits": {"cpu": "1", "memory": "4Gi"},
            },
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
            "imagePullPolicy": "IfNotPresent",
        }
    ]
    rerank["status"] = {
        "phase": "Pending",
        "qosClass": "Guaranteed",
        "hostIP": "10.0.1.11",
        "startTime": ts(24),
        "conditions": [
            {"type": "PodReadyToStartContainers", "status": "True", "lastTransitionTime": ts(24)},
            {
                "type": "Initialized",
                "status": "False",
                "reason": "ContainersNotInitialized",
                "message": "containers with incomplete status: [model-fetch]",
                "lastTransitionTime": ts(24),
            },
            {
                "type": "Ready",
                "status": "False",
                "reason": "ContainersNotReady",
                "message": "containers with unready status: [server]",
                "lastTransitionTime": ts(24),
            },
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": ts(24.5)},
        ],
        "initContainerStatuses": [
            {
                "name": "model-fetch",
                "ready": False,
                "restartCount": 6,
                "started": False,
                "image": "registry.acme.example/model-fetch:0.9.1",
                "imageID": "",
                "containerID": f"containerd://{uid('init', 'rerank').replace('-', '')}",
                "state": {
                    "waiting": {
                        "reason": "CrashLoopBackOff",
                        "message": "back-off 2m40s restarting failed container=model-fetch",
                    }
                },
                "lastState": {
                    "terminated": {
                        "exitCode": 137,
                        "reason": "OOMKilled",
                        "startedAt": ts(4),
                        "finishedAt": ts(3),
                    }
                },
            }
        ],
        "containerStatuses": [
            {
                "name": "server",
                "ready": False,
                "restartCount": 0,
                "started": False,
                "image": "registry.acme.example/cs-rerank:1.4.2",
                "imageID": "",
                "state": {"waiting": {"reason": "PodInitializing"}},
                "lastState": {},
            }
        ],
    }
    c["pods"].append(rerank)
    deploy = controller("Deployment", "cs-rerank", "customer-service", rerank, replicas=1)
    c["controllers"].append(deploy)
    c["events"].append(
        event(
            rerank,
            "BackOff",
            "Back-off restarting failed container model-fetch in pod " + rerank["metadata"]["name"],
            component="kubelet",
            age=1,
            count=22,
            first=20,
        )
    )
    return c


# GPU feature discovery labels of a MIG node (mixed strategy): per profile its count, memory
# (MiB), multiprocessors and GPU / compute instance slices
def mig_labels(profiles: dict[str, tuple[int, int, int, int]]) -> dict[str, str]:
    labels = {"nvidia.com/mig.strategy": "mixed"}
    for name, (count, mib, sms, gi) in profiles.items():
        labels.update(
            {
                f"nvidia.com/mig-{name}.count": str(count),
                f"nvidia.com/mig-{name}.memory": str(mib),
                f"nvidia.com/mig-{name}.multiprocessors": str(sms),
                f"nvidia.com/mig-{name}.slices.gi": str(gi),
                f"nvidia.com/mig-{name}.slices.ci": str(gi),
                f"nvidia.com/mig-{name}.engines.copy": str(gi),
            }
        )
    return labels


def mig_node(
    name: str, product: str, memory: int, gpus: int, slices: dict[str, int], labels: dict
) -> Obj:
    n = node(name, None, "cn-east-1b")
    n["metadata"]["labels"].update(
        {
            "nodepool": "gpu-mig",
            "nvidia.com/gpu.present": "true",
            "nvidia.com/gpu.product": product,
            "nvidia.com/gpu.count": str(gpus),
            "nvidia.com/gpu.memory": str(memory),
            "nvidia.com/mig.config": "all-1g" if len(slices) == 1 else "custom",
            "nvidia.com/mig.config.state": "success",
            **labels,
        }
    )
    for key in ("capacity", "allocatable"):
        for profile, count in slices.items():
            n["status"][key][f"nvidia.com/mig-{profile}"] = str(count)
    return n


def mig_nodes() -> dict[str, list[Obj]]:
    """MIG nodes beyond the built-in tables: an H20 (1g.12gb, geometry from GPU feature
    discovery labels), an A100-40GB without GFD labels (1g.5gb, the table by product) and a
    node advertising a profile nothing describes. One pending pod asks for a profile no node
    has."""
    c = base()
    c["nodes"] += [
        mig_node(
            "mig-h20-0",
            "NVIDIA-H20",
            97871,
            1,
            {"1g.12gb": 7},
            mig_labels({"1g.12gb": (7, 11008, 8, 1)}),
        ),
        mig_node("mig-a100-40g-0", "NVIDIA-A100-SXM4-40GB", 40960, 1, {"1g.5gb": 7}, {}),
        mig_node("mig-odd-0", "NVIDIA-X200", 0, 1, {"1g.33gb": 4}, {}),
    ]
    c["nodes"][-1]["metadata"]["labels"].pop("nvidia.com/gpu.memory")
    for i, (profile, node_name) in enumerate(
        (("1g.12gb", "mig-h20-0"), ("1g.5gb", "mig-a100-40g-0"), ("1g.33gb", "mig-odd-0"))
    ):
        c["pods"].append(_mig_pod(f"embed-mig-{i}", profile, node_name))
    c["pods"].append(_mig_pod("embed-mig-wide", "2g.24gb", None))
    return c


def _mig_pod(name: str, profile: str, node_name: str | None) -> Obj:
    p = pod(
        name,
        "search",
        node_name=node_name,
        gpus=0,
        klass="batch",
        app="embed-mig",
        tolerate=None,
        selector={"nodepool": "gpu-mig"},
        age=30,
        message="0/11 nodes are available: 3 Insufficient nvidia.com/mig-2g.24gb, "
        "8 node(s) didn't match Pod's node affinity/selector.",
    )
    res = p["spec"]["containers"][0]["resources"]
    for key in ("requests", "limits"):
        res[key][f"nvidia.com/mig-{profile}"] = "1"
    return p


SCENARIOS: dict[str, Callable[[], dict[str, list[Obj]]]] = {
    "healthy": healthy,
    "device-plugin-lost": device_plugin_lost,
    "affinity-unsatisfiable": affinity_unsatisfiable,
    "fragmentation": fragmentation,
    "gang-min-member": gang_min_member,
    "gang-half-started": gang_half_started,
    "quota-exhausted": quota_exhausted,
    "autoscaler-cold-start": autoscaler_cold_start,
    "pool-at-max": pool_at_max,
    "gpu-oom": gpu_oom,
    "mis-preemption": mis_preemption,
    "node-drift": node_drift,
    "governance": governance,
    "gang-waiting": gang_waiting,
    "init-oom": init_oom,
    "mig-nodes": mig_nodes,
}
# one fixture is written as a single mixed List (`kubectl get nodes,pods,... -o json`)
SINGLE_FILE = {"node-drift"}


def as_list(items: list[Obj]) -> Obj:
    return {"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}}


def render(name: str) -> dict[str, str]:
    """File name -> text, as written for scenario `name`."""
    groups = SCENARIOS[name]()
    if name in SINGLE_FILE:
        items = [o for key in sorted(groups) for o in groups[key]]
        return {"cluster.json": json.dumps(as_list(items), indent=1) + "\n"}
    return {
        f"{key}.json": json.dumps(as_list(objs), indent=1) + "\n"
        for key, objs in sorted(groups.items())
        if objs
    }


def main(argv: list[str]) -> int:
    for name in SCENARIOS:
        folder = OUT / name
        folder.mkdir(parents=True, exist_ok=True)
        files = render(name)
        for stale in folder.glob("*.json"):
            if stale.name not in files:
                stale.unlink()
        for file, text in files.items():
            (folder / file).write_text(text, encoding="utf-8")
    print(f"wrote {len(SCENARIOS)} fixtures to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
