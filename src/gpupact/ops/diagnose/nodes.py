"""Runbook step 1, nodes: Ready nodes advertising `nvidia.com/gpu` as the hardware says (the
Device Plugin), and pods bound to a node whose containers do not start.
"""

from __future__ import annotations

from typing import Any

from gpupact.cluster.devices import GPU_RESOURCE
from gpupact.kube.objects import Pod
from gpupact.ops.cluster import Analysis
from gpupact.ops.device_plugin import device_plugin_action, device_plugin_pods
from gpupact.ops.diagnose.case import SLOW_START_SECONDS, Case, is_starting, unique_shapes
from gpupact.ops.diagnose.model_memory import check_memory
from gpupact.ops.evidence import gpu_milli, gpus_text
from gpupact.ops.findings import Domain, Finding, Severity, format_duration
from gpupact.ops.memory import container_troubles, oom_history, waiting_reason
from gpupact.ops.model import time_or_none
from gpupact.ops.owners import owner_of

STARTING_TROUBLE = frozenset(
    {"ImagePullBackOff", "ErrImagePull", "CreateContainerConfigError", "CreateContainerError"}
)


def check_nodes(a: Analysis, case: Case) -> Finding | None:
    starting = [p for p in case.members if is_starting(p)]
    if case.target is not None and is_starting(case.target):
        starting = [case.target]
    if starting and not case.pods:
        if any(oom_history(p) for p in starting):
            case.note(Domain.nodes, "ok", "scheduled already; a container runs out of memory")
            return check_memory(a, case)
        return _starting(a, case, starting)
    pods = case.placeable
    if not pods:
        case.note(Domain.nodes, "n/a", "no pod to place yet")
        return None
    lost: dict[str, tuple[Any, str, int, int]] = {}
    blocked = [p for p in unique_shapes(pods, a) if not a.placement(p).fits]
    for pod in blocked:
        needs_gpu = gpu_milli(pod) > 0
        for node, what, expected, alloc in a.unhealthy_nodes:
            if what == "gpu-lost" and not needs_gpu:
                continue
            if node.name not in lost and a.node_relevant(pod, node):
                lost[node.name] = (node, what, expected, alloc)
    if not lost:
        if not blocked:
            case.note(Domain.nodes, "ok", "the pod fits on Ready nodes now")
        else:
            sick = len(a.unhealthy_nodes)
            case.note(
                Domain.nodes,
                "ok",
                "no NotReady or GPU-less node where the pod could go"
                + (f" ({sick} unhealthy elsewhere)" if sick else ""),
            )
        return None
    gpu_lost = [v for v in lost.values() if v[1] == "gpu-lost"]
    evidence = []
    plugin_pods: list[Pod] = []
    causes: dict[str, Any] = {}
    for node, what, expected, alloc in sorted(lost.values(), key=lambda v: v[0].name):
        pool = a.roles.node_pool(node)
        where = f" (pool {pool})" if pool else ""
        if what == "gpu-lost":
            evidence.append(
                f"node {node.name}{where}: Ready, but allocatable {GPU_RESOURCE} is {alloc} of "
                f"{expected} ({_gpu_source(node)})"
            )
        else:
            ready = condition_text(node.raw)
            evidence.append(f"node {node.name}{where}: NotReady{ready}")
        for plugin, line, cause in device_plugin_pods(a, node.name):
            evidence.append(line)
            plugin_pods.append(plugin)
            if cause is not None:
                causes.setdefault(cause.code, cause)
    pod = blocked[0]
    evidence.append(f"pod needs {gpus_text(gpu_milli(pod))} GPU(s): {a.placement(pod).message}")
    if gpu_lost:
        gpus = sum(v[2] - v[3] for v in gpu_lost)
        names = sorted(v[0].name for v in gpu_lost)
        found = list(causes.values())
        evidence.extend(f"device plugin says: {c.what}" for c in found)
        return Finding(
            Domain.nodes,
            "device-plugin-lost",
            Severity.error,
            case.subject,
            f"{len(gpu_lost)} Ready node(s) where this pod belongs advertise {gpus} GPU(s) fewer "
            f"than they have: the device plugin is not registering them (Table 43-5: driver "
            f"upgrade, capacity back to zero)",
            tuple(evidence),
            device_plugin_action(names, plugin_pods, found),
            {
                "nodes": sorted(lost),
                "missingGpus": gpus,
                **({"causes": [c.code for c in found]} if found else {}),
            },
        )
    return Finding(
        Domain.nodes,
        "nodes-not-ready",
        Severity.error,
        case.subject,
        f"{len(lost)} node(s) where this pod belongs are NotReady",
        tuple(evidence),
        "find why the kubelet stopped reporting (`kubectl describe node "
        f"{' '.join(sorted(lost)[:5])}`: conditions, events; then the kubelet's log on the "
        "node); repair or replace the node(s); the pool's autoscaler replaces failed nodes "
        "only if it is enabled",
        {"nodes": sorted(lost)},
    )


def _gpu_source(node: Any) -> str:
    count = node.labels.get("nvidia.com/gpu.count")
    if count:
        return f"label nvidia.com/gpu.count={count}"
    if node.capacity.get(GPU_RESOURCE):
        return f"capacity {node.capacity[GPU_RESOURCE]}"
    return "labelled as a GPU node"


def condition_text(raw: Any) -> str:
    status = raw.get("status") if isinstance(raw, dict) else None
    conds = status.get("conditions") if isinstance(status, dict) else None
    for cond in conds if isinstance(conds, list) else []:
        if isinstance(cond, dict) and cond.get("type") == "Ready":
            parts = [str(cond.get(k)) for k in ("reason", "message") if cond.get(k)]
            since = cond.get("lastTransitionTime")
            text = ": ".join(parts)
            if since:
                text += f" (since {since})"
            return f" ({text})" if text else ""
    return ""


_START_ACTIONS = {
    "ImagePullBackOff": "fix the image name / tag or the pull secret (`kubectl -n {ns} describe "
    "pod {pod}` shows the registry's answer); pre-pull large images on the pool's nodes",
    "ErrImagePull": "fix the image name / tag or the pull secret (`kubectl -n {ns} describe "
    "pod {pod}` shows the registry's answer); pre-pull large images on the pool's nodes",
    "CreateContainerConfigError": "a ConfigMap / Secret (or a key in it) the pod references is "
    "missing: create it, or fix the reference in {owner}",
    "CreateContainerError": "the runtime could not create the container: read `kubectl -n {ns} "
    "describe pod {pod}` (command, mounts, security context) and fix {owner}",
}


def _starting(a: Analysis, case: Case, pods: list[Pod]) -> Finding:
    pod = pods[0]
    troubles = container_troubles(pod)
    failing = [t for t in troubles if t.reason or t.waiting == "CrashLoopBackOff"]
    case.note(Domain.nodes, "ok", "scheduled already")
    if failing:
        return _container_failing(a, case, pod, failing)
    reason = waiting_reason(pod) or "ContainerCreating"
    age = a.age(time_or_none(pod.creation_timestamp))
    slow = age is not None and age > SLOW_START_SECONDS
    severity = Severity.warning if reason in STARTING_TROUBLE or slow else Severity.info
    evidence = [
        f"pod {p.key}: bound to node {p.node_name}, containers waiting: "
        f"{waiting_reason(p) or 'ContainerCreating'}"
        for p in pods[:5]
    ]
    evidence.extend(t.line(a.now) for t in troubles[:3] if t.waiting_message)
    for event in a.events_for("Pod", pod.namespace, pod.name)[-3:]:
        if event.type == "Warning":
            evidence.append(f"event {event.reason}: {event.message}")
    owner = owner_of(a, pod)
    template = _START_ACTIONS.get(
        reason,
        "image pull and model load are part of the cold start (43.4): pre-pull images on the "
        "pool's nodes and keep model weights on a local cache",
    )
    return Finding(
        Domain.nodes,
        "pod-starting",
        severity,
        case.subject,
        f"scheduled on {pod.node_name}, not started yet ({reason}"
        + (f", for {format_duration(age)})" if age is not None else ")"),
        tuple(evidence),
        template.format(ns=pod.namespace, pod=pod.name, owner=owner),
        {"node": pod.node_name, "reason": reason, "owner": str(owner)},
    )


def _container_failing(a: Analysis, case: Case, pod: Pod, failing: list[Any]) -> Finding:
    first = failing[0]
    owner = owner_of(a, pod)
    where = "before the app starts" if first.init else "after it starts"
    evidence = [f"pod {pod.key} on node {pod.node_name}: {t.line(a.now)}" for t in failing[:4]]
    for event in a.events_for("Pod", pod.namespace, pod.name)[-2:]:
        if event.type == "Warning":
            evidence.append(f"event {event.reason}: {event.message}")
    return Finding(
        Domain.nodes,
        "init-container-failing" if first.init else "container-failing",
        Severity.error,
        case.subject,
        f"scheduled on {pod.node_name}; {first.what} fails {where} "
        f"({first.reason or first.waiting}"
        + (f", exit {first.exit_code}" if first.exit_code is not None else "")
        + f", {first.restarts} restart(s))",
        tuple(evidence),
        f"read why: `kubectl -n {pod.namespace} logs {pod.name} -c {first.container} "
        f"--previous`; fix the command, config or image of {first.what} in {owner} (this is "
        "not an image-pull or scheduling problem)",
        {"node": pod.node_name, "container": first.container, "init": first.init},
    )
