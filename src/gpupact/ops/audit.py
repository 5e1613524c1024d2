"""`audit`: the cluster against the chapter's discipline (43.2, 43.4, 43.5, 43.6).

Each check is a function `(analysis, options) -> list[Finding]`, findings carry a severity
and a fix:

- offline work able to enter the online pool: the taint filter re-run for every batch /
  fine-tune pod against the inference-pool nodes, ignoring affinity (43.2: "if removing the
  affinity lets batch into the inference pool, the boundary is not there");
- online pods on time-sliced or shared GPUs (Table 43-4);
- GPU requests != limits; GPU pods that are not Guaranteed QoS;
- pods, queues and services without owner / cost-centre labels (43.6);
- CUDA / driver versions differing inside one pool (node drift, Table 43-6);
- Ready nodes advertising fewer GPUs than they have (device plugin, Table 43-5);
- PodGroups half-started past a threshold while holding GPUs;
- temporary quota raises still in place after their expiry; services past their expiry;
- online pods preempted, PriorityClasses that let batch outrank online;
- admitted Kueue workloads holding quota with no pod (zombie jobs);

and `shortage_plan`: what to stop first when GPUs are short (43.5): protect online traffic,
release half-started gangs, queue or refuse low-priority batch — an ordered list.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from gpupact.cluster.devices import (
    LABEL_MIG_CONFIG,
    LABEL_MIG_CONFIG_STATE,
    MIG_RESOURCE_PREFIX,
    SharingMode,
)
from gpupact.contract.keys import (
    ANNOTATION_EXPIRES,
    ANNOTATION_NEXT_RAISE_EXPIRY,
    ANNOTATION_QUOTA_RAISES,
    LABEL_CLASS,
)
from gpupact.errors import FieldError
from gpupact.kube.objects import Pod
from gpupact.kube.requests import parse_pod_resources
from gpupact.kube.taints import do_not_schedule_taint, find_untolerated_taint
from gpupact.ops.cluster import Analysis
from gpupact.ops.device_plugin import device_plugin_action, device_plugin_pods
from gpupact.ops.diagnose import (
    gang_counts,
    is_waiting,
    partial_gangs,
    unique_shapes,
    zombie_command,
    zombie_workloads,
)
from gpupact.ops.evidence import gpu_milli, gpus_text
from gpupact.ops.findings import Domain, Finding, Severity, format_duration, sort_findings
from gpupact.ops.model import time_or_none
from gpupact.ops.owners import Owner, owner_of
from gpupact.ops.roles import (
    COST_CENTRE_KEYS,
    OWNER_KEYS,
    gpu_lost,
    owner_labels_missing,
    pools_of,
)

GPU_RESOURCES_PREFIX = "nvidia.com/"
DRIVER_LABELS = (
    "nvidia.com/cuda.driver.major",
    "nvidia.com/cuda.driver.minor",
    "nvidia.com/cuda.driver.rev",
)
DRIVER_FULL = "nvidia.com/cuda.driver-version.full"
RUNTIME_LABELS = ("nvidia.com/cuda.runtime.major", "nvidia.com/cuda.runtime.minor")
RUNTIME_FULL = "nvidia.com/cuda.runtime-version.full"


@dataclass(frozen=True)
class AuditOptions:
    gang_threshold: int = 1800  # seconds a gang may sit half-started
    zombie_threshold: int = 600  # seconds (zombie_workloads' own floor)
    owner_keys: tuple[str, ...] = OWNER_KEYS  # label/annotation keys naming the owner
    cost_keys: tuple[str, ...] = COST_CENTRE_KEYS  # ... and the cost centre


# --- helpers ------------------------------------------------------------------------------------


def _workload_key(a: Analysis, pod: Pod) -> str:
    """Pods are reported per owning workload (Deployment, Job, ...), else one by one."""
    return str(owner_of(a, pod))


def _by_workload(a: Analysis, pods: Iterable[Pod]) -> dict[str, list[Pod]]:
    out: dict[str, list[Pod]] = {}
    for pod in pods:
        out.setdefault(_workload_key(a, pod), []).append(pod)
    return dict(sorted(out.items()))


def _gpu_pods(a: Analysis) -> list[Pod]:
    if "gpu-pods" not in a.memo:
        a.memo["gpu-pods"] = [
            p for p in a.snapshot.pods if p.phase in ("Running", "Pending") and gpu_milli(p) > 0
        ]
    return a.memo["gpu-pods"]


def _names(pods: Iterable[Any], limit: int = 4) -> str:
    items = [getattr(p, "name", str(p)) for p in pods]
    shown = ", ".join(items[:limit])
    return shown + (f" (+{len(items) - limit} more)" if len(items) > limit else "")


# --- checks -------------------------------------------------------------------------------------


def check_taint_gaps(a: Analysis, opts: AuditOptions) -> list[Finding]:
    online_nodes = [n for n in a.snapshot.nodes if a.roles.is_online_pool_node(n)]
    if not online_nodes:
        return []
    out = []
    untainted = [n for n in online_nodes if not any(do_not_schedule_taint(t) for t in n.taints)]
    if untainted:
        pools = sorted({a.roles.node_pool(n) for n in untainted})
        out.append(
            Finding(
                Domain.placement,
                "online-pool-untainted",
                Severity.error,
                f"pool {', '.join(pools)}",
                f"{len(untainted)} online-pool node(s) carry no NoSchedule taint: only affinity "
                "keeps other work out",
                tuple(f"node {n.name}: no taint" for n in untainted[:6]),
                "taint the pool's nodes workload=online-infer:NoSchedule (gpupact compile's node "
                "patches; Karpenter NodePool template taints) and tolerate it only in online pods",
            )
        )
    online_names = {n.name for n in online_nodes}
    offline = [p for p in _gpu_pods(a) if a.roles.is_offline(p)]
    accepted: dict[tuple, list] = {}  # tolerations -> online nodes whose taints they tolerate
    for key, pods in _by_workload(a, offline).items():
        pod = pods[0]
        open_nodes = accepted.get(pod.tolerations)
        if open_nodes is None:
            open_nodes = accepted[pod.tolerations] = [
                n
                for n in online_nodes
                if find_untolerated_taint(n.taints, pod.tolerations, do_not_schedule_taint) is None
            ]
        if not open_nodes:
            continue
        inside = [p for p in pods if p.node_name in online_names]
        klass = a.roles.pod_class(pod)
        tolerated = [
            str(t.key) + ("=" + t.value if t.value else "")
            for t in pod.tolerations
            if not t.key.startswith("node.kubernetes.io/")
        ]
        evidence = [
            f"taint filter without affinity: {len(open_nodes)} online-pool node(s) accept it "
            f"({_names(open_nodes)})",
            f"its tolerations: {', '.join(tolerated) or 'none'}",
        ]
        if inside:
            evidence.append(f"already running in the online pool: {_names(inside)}")
        out.append(
            Finding(
                Domain.placement,
                "offline-in-online-pool" if inside else "offline-can-enter-online-pool",
                Severity.error,
                key,
                f"{klass} work ({len(pods)} pod(s)) "
                + (
                    "runs in the online pool"
                    if inside
                    else "could land in the online pool if its affinity were removed"
                ),
                tuple(evidence),
                "the pool boundary must be a taint, not a selector: taint the online pool's nodes "
                "and remove the online toleration from batch / fine-tune pods",
                {"pods": len(pods), "nodes": [n.name for n in open_nodes]},
            )
        )
    return out


def check_online_shared(a: Analysis, opts: AuditOptions) -> list[Finding]:
    out = []
    online = [p for p in _gpu_pods(a) if a.roles.is_online(p) and p.node_name]
    for key, pods in _by_workload(a, online).items():
        sliced, shared = [], []
        for pod in pods:
            row = a.state.node_index.get(pod.node_name)
            if row is None:
                continue
            mode = a.state.sharing_mode(row)
            gpu = a.state.gpu_request_of(pod)
            if mode is SharingMode.TIME_SLICED:
                sliced.append(pod)
            elif (gpu is not None and gpu.fractional) or mode is SharingMode.FRACTIONAL:
                shared.append(pod)
        if sliced:
            out.append(
                Finding(
                    Domain.placement,
                    "online-on-time-sliced-gpu",
                    Severity.error,
                    key,
                    f"{len(sliced)} online pod(s) run on time-sliced GPUs: no memory isolation, "
                    "tail latency jitters (Table 43-4)",
                    tuple(f"pod {p.key} on {p.node_name} (time-slicing)" for p in sliced[:5]),
                    "run online inference on whole GPUs (exclusive pool); MIG only for same-SLA "
                    "services and with a load test proving the SLO holds",
                )
            )
        if shared:
            out.append(
                Finding(
                    Domain.placement,
                    "online-on-shared-gpu",
                    Severity.warning,
                    key,
                    f"{len(shared)} online pod(s) share a GPU with other pods",
                    tuple(f"pod {p.key} on {p.node_name}" for p in shared[:5]),
                    "give online pods whole GPUs unless a load test shows sharing keeps the SLO",
                )
            )
    return out


def _container_mismatches(resources: Any) -> tuple[list[str], list[str]]:
    """(GPU resources whose request != limit, cpu/memory whose request != limit)."""
    gpu, other = [], []
    for c in (*resources.init_containers, *resources.containers):
        names = set(c.requests) | set(c.limits)
        for r in sorted(names):
            req, lim = c.requests.get(r), c.limits.get(r)
            if req == lim:
                continue
            if r.startswith(GPU_RESOURCES_PREFIX):
                gpu.append(f"container {c.name}: {r} request {req} != limit {lim}")
            elif r in ("cpu", "memory"):
                other.append(f"container {c.name}: {r} request {req} != limit {lim}")
    return gpu, other


def check_requests_limits(a: Analysis, opts: AuditOptions) -> list[Finding]:
    out = []
    for key, pods in _by_workload(a, _gpu_pods(a)).items():
        gpu, other = _container_mismatches(pods[0].resources)
        if gpu:
            out.append(_gpu_mismatch(key, gpu))
        elif other:
            out.append(
                Finding(
                    Domain.placement,
                    "gpu-pod-not-guaranteed",
                    Severity.warning,
                    key,
                    "a GPU pod whose cpu/memory requests differ from limits is not Guaranteed "
                    "QoS: it is evicted first under node pressure and its CPU can be throttled",
                    tuple(other[:4]),
                    "for exclusive GPU pods keep requests equal to limits for every resource",
                )
            )
    # templates of controllers: pods not created yet (a Job waiting, a Deployment at 0)
    for ctrl in a.snapshot.controllers:
        if ctrl.kind == "ReplicaSet":
            continue  # its Deployment's template is checked
        for i, template in enumerate(ctrl.templates):
            spec = template.get("spec") if isinstance(template, dict) else None
            if not isinstance(spec, dict):
                continue
            try:
                gpu, _ = _container_mismatches(parse_pod_resources(spec))
            except FieldError:
                continue
            if gpu:
                out.append(_gpu_mismatch(f"{ctrl.kind} {ctrl.meta.key} (template {i})", gpu))
    return out


def _gpu_mismatch(subject: str, lines: list[str]) -> Finding:
    return Finding(
        Domain.placement,
        "gpu-requests-not-limits",
        Severity.error,
        subject,
        "GPU requests differ from limits: extended resources cannot be overcommitted",
        tuple(lines[:4]),
        "set the GPU request equal to the limit (or give only limits)",
    )


def check_owner_labels(a: Analysis, opts: AuditOptions) -> list[Finding]:
    """Objects nobody can be charged for. An object is covered when it carries an accepted
    owner and cost-centre key (label or annotation); pods are covered by their owning
    controller when it is in the snapshot (and judged there)."""

    def gaps(labels: Any, annotations: Any) -> list[str]:
        return owner_labels_missing(labels, annotations, opts.owner_keys, opts.cost_keys)

    out = []
    seen: set[str] = set()
    for ctrl in a.snapshot.controllers:
        if ctrl.kind == "ReplicaSet":
            continue
        gpu_templates = [
            t for t in ctrl.templates if GPU_RESOURCES_PREFIX in json.dumps(t.get("spec", {}))
        ]
        missing = gaps(ctrl.meta.labels, ctrl.meta.annotations)
        owner = Owner(ctrl.kind, ctrl.meta.namespace, ctrl.meta.name, ctrl.api_group)
        seen.add(str(owner))
        if gpu_templates and missing:
            out.append(
                _unowned(
                    str(owner), "a GPU service/job", missing, opts, owner.ref, ctrl.meta.namespace
                )
            )
    for key, pods in _by_workload(a, _gpu_pods(a)).items():
        if key in seen:
            continue  # its controller is in the snapshot and was judged above
        missing = sorted({m for p in pods for m in gaps(p.labels, p.annotations)})
        if missing:
            owner = owner_of(a, pods[0])
            out.append(
                _unowned(key, f"{len(pods)} GPU pod(s)", missing, opts, owner.ref, owner.namespace)
            )
    for obj in a.snapshot.kueue:
        if obj.kind in ("ClusterQueue", "LocalQueue"):
            missing = gaps(obj.meta.labels, obj.meta.annotations)
            if missing:
                ref = f"{obj.kind.lower()}/{obj.meta.name}"
                out.append(
                    _unowned(
                        f"{obj.kind} {obj.meta.key}",
                        "a queue",
                        missing,
                        opts,
                        ref,
                        obj.meta.namespace,
                    )
                )
    for name, qmeta in sorted(a.snapshot.volcano_queue_meta.items()):
        missing = gaps(qmeta.labels, qmeta.annotations)
        if missing and name != "root":
            ref = f"queues.scheduling.volcano.sh/{name}"
            out.append(_unowned(f"Queue {name}", "a Volcano queue", missing, opts, ref, ""))
    return out


def _unowned(
    subject: str, what: str, missing: list[str], opts: AuditOptions, ref: str, namespace: str
) -> Finding:
    where = f"-n {namespace} " if namespace else ""
    values = " ".join(f"{k}=<{'team' if k in opts.owner_keys else 'cost-centre'}>" for k in missing)
    accepted = [
        f"{k} ({', '.join(keys)})"
        for k, keys in ((opts.owner_keys[0], opts.owner_keys), (opts.cost_keys[0], opts.cost_keys))
        if k in missing
    ]
    return Finding(
        Domain.governance,
        "missing-owner-labels",
        Severity.warning,
        subject,
        f"{what} without {', '.join(missing)}: GPU hours cannot be charged to anyone",
        (
            f"missing label(s): {', '.join(missing)}",
            "accepted keys (label or annotation, on the object or, for pods, on their "
            f"controller): {'; '.join(accepted)}",
        ),
        f"`kubectl {where}label {ref} {values}` (and in its manifest / pod template: gpupact "
        "compile writes both from the contract); resources without an owner should not grow "
        "(43.6)",
    )


def _version(labels: dict[str, str], full: str, parts: tuple[str, ...]) -> str:
    if labels.get(full):
        return labels[full]
    values = [labels.get(k, "") for k in parts]
    return ".".join(values) if all(values) else ""


def check_drift(a: Analysis, opts: AuditOptions) -> list[Finding]:
    out = []
    for pool, nodes in sorted(pools_of(a.roles, a.snapshot.nodes).items()):
        attributes: list[tuple[str, Severity, Callable[[Any], str]]] = [
            ("driver", Severity.error, lambda n: _version(n.labels, DRIVER_FULL, DRIVER_LABELS)),
            (
                "CUDA runtime",
                Severity.error,
                lambda n: _version(n.labels, RUNTIME_FULL, RUNTIME_LABELS),
            ),
            ("kubelet", Severity.warning, lambda n: _node_info(n, "kubeletVersion")),
            ("kernel", Severity.warning, lambda n: _node_info(n, "kernelVersion")),
        ]
        for what, severity, read in attributes:
            versions: dict[str, list[str]] = {}
            for node in nodes:
                value = read(node)
                if value:
                    versions.setdefault(value, []).append(node.name)
            if len(versions) > 1:
                out.append(
                    Finding(
                        Domain.nodes,
                        "node-drift",
                        severity,
                        f"pool {pool}",
                        f"{len(versions)} {what} versions in one pool: the same pod behaves "
                        "differently depending on the node it lands on",
                        tuple(
                            f"{what} {v}: {_names(sorted(ns), 5)}"
                            for v, ns in sorted(versions.items())
                        ),
                        "standardise the pool's node image and roll the upgrade node by node "
                        "(cordon, drain, upgrade, verify the device plugin, uncordon) (Table 43-6)",
                        {"attribute": what, "versions": sorted(versions)},
                    )
                )
    return out


def _node_info(node: Any, key: str) -> str:
    status = node.raw.get("status") if isinstance(node.raw, dict) else None
    info = status.get("nodeInfo") if isinstance(status, dict) else None
    return str(info.get(key, "")) if isinstance(info, dict) else ""


def check_gpu_less_nodes(a: Analysis, opts: AuditOptions) -> list[Finding]:
    out = []
    for node in a.snapshot.nodes:
        lost = gpu_lost(a.roles, node)
        if lost is None:
            continue
        expected, alloc = lost
        plugins = device_plugin_pods(a, node.name)
        causes = list({c.code: c for _, _, c in plugins if c is not None}.values())
        out.append(
            Finding(
                Domain.nodes,
                "ready-node-without-gpus",
                Severity.error,
                f"node {node.name}",
                f"Ready, but advertises {alloc} of its {expected} GPUs: the device plugin lost "
                "them (Table 43-5)",
                (
                    f"allocatable nvidia.com/gpu {alloc}, expected {expected}",
                    *(line.strip() for _, line, _ in plugins),
                    *(f"device plugin says: {c.what}" for c in causes),
                ),
                device_plugin_action([node.name], [p for p, _, _ in plugins], causes),
                {"causes": [c.code for c in causes]} if causes else {},
            )
        )
    return out


def check_mig_nodes(a: Analysis, opts: AuditOptions) -> list[Finding]:
    """MIG nodes whose slices could not be read as hardware geometry (a profile neither GPU
    feature discovery's labels nor the built-in tables describe), and nodes where mig-manager
    failed to apply the layout the `nvidia.com/mig.config` label asks for."""
    out = []
    for row, node in enumerate(a.state.nodes):
        spec = a.state.gpu_specs[row]
        if spec.mig_notes:
            out.append(
                Finding(
                    Domain.nodes,
                    "mig-geometry-unknown",
                    Severity.warning,
                    f"node {node.name}",
                    "MIG slices whose geometry is unknown: counted as advertised, without "
                    "checking they fit the GPUs",
                    spec.mig_notes,
                    "deploy GPU feature discovery with the mixed MIG strategy (it labels "
                    "nvidia.com/mig-<profile>.slices.gi / .memory and nvidia.com/gpu.memory), or "
                    "check the node's MIG layout with `nvidia-smi mig -lgi`",
                    {"notes": list(spec.mig_notes)},
                )
            )
        missing = _mig_slices_missing(node)
        if missing and node.ready:
            plugins = [
                p.key for p in a.pods_by_node.get(node.name, []) if "device-plugin" in p.name
            ]
            out.append(
                Finding(
                    Domain.nodes,
                    "mig-slices-missing",
                    Severity.error,
                    f"node {node.name}",
                    "Ready, but the kubelet advertises fewer MIG slices than GPU feature "
                    "discovery counts: the device plugin is not registering them",
                    tuple(
                        f"{MIG_RESOURCE_PREFIX}{name}: {counted} counted "
                        f"({MIG_RESOURCE_PREFIX}{name}.count), {advertised} allocatable"
                        for name, counted, advertised in missing
                    )
                    + tuple(f"device plugin pod {key}" for key in plugins),
                    f"`kubectl cordon {node.name}`; restart the device plugin on it"
                    + (
                        f" (`kubectl -n {plugins[0].split('/')[0]} delete pod "
                        f"{plugins[0].split('/')[1]}`)"
                        if plugins
                        else ""
                    )
                    + f" and check its MIG strategy matches the node's; `kubectl uncordon "
                    f"{node.name}` when the slices are back",
                    {"missing": {n: c - v for n, c, v in missing}},
                )
            )
        state = node.labels.get(LABEL_MIG_CONFIG_STATE, "")
        if state == "failed":
            config = node.labels.get(LABEL_MIG_CONFIG, "?")
            out.append(
                Finding(
                    Domain.nodes,
                    "mig-config-failed",
                    Severity.error,
                    f"node {node.name}",
                    f"mig-manager failed to apply {LABEL_MIG_CONFIG}={config}: the GPUs are not "
                    "cut the way the label asks",
                    (f"{LABEL_MIG_CONFIG}={config}, {LABEL_MIG_CONFIG_STATE}=failed",),
                    "read the nvidia-mig-manager pod's logs on the node (GPU operator namespace); "
                    "drain GPU pods first (MIG changes need idle GPUs), then relabel "
                    f"`kubectl label node {node.name} {LABEL_MIG_CONFIG}={config} --overwrite`",
                )
            )
    return out


def _mig_slices_missing(node: Any) -> list[tuple[str, int, int]]:
    """(profile, counted by GFD's `nvidia.com/mig-<profile>.count`, allocatable) where the
    kubelet advertises fewer slices than the node's labels count."""
    out = []
    for key, text in sorted(node.labels.items()):
        if not (key.startswith(MIG_RESOURCE_PREFIX) and key.endswith(".count")):
            continue
        name = key[len(MIG_RESOURCE_PREFIX) : -len(".count")]
        advertised = node.allocatable.get(MIG_RESOURCE_PREFIX + name, 0)
        if text.isdigit() and int(text) > advertised:
            out.append((name, int(text), advertised))
    return out


def check_stale_gangs(a: Analysis, opts: AuditOptions) -> list[Finding]:
    out = []
    for group, counts in partial_gangs(a):
        started = [p for p in counts.holding]
        since = min(
            (t for t in (time_or_none(p.start_time) for p in started) if t is not None),
            default=group.meta.created,
        )
        age = a.age(since)
        if age is None or age < opts.gang_threshold:
            continue
        out.append(
            Finding(
                Domain.gang,
                "stale-half-started-gang",
                Severity.error,
                f"PodGroup {group.key}",
                f"{counts.ready}/{counts.min_member} members have held "
                f"{gpus_text(counts.held_milli)} GPU(s) for {format_duration(age)} without the "
                "gang starting",
                tuple(f"member {p.key} on {p.node_name}" for p in started[:4]),
                "release the gang (delete its pods so it requeues whole) and enable the Volcano "
                "gang plugin for it",
                {"heldGpus": counts.held_milli / 1000, "seconds": age},
            )
        )
    return out


def check_expired_raises(a: Analysis, opts: AuditOptions) -> list[Finding]:
    out = []
    for obj in a.snapshot.kueue_of("ClusterQueue"):
        text = obj.meta.annotations.get(ANNOTATION_QUOTA_RAISES)
        if text is None:
            nxt = obj.meta.annotations.get(ANNOTATION_NEXT_RAISE_EXPIRY)
            when = time_or_none(nxt) if nxt else None
            if when is not None and when <= a.now:
                out.append(
                    _raise_finding(obj.meta.name, [f"{ANNOTATION_NEXT_RAISE_EXPIRY}: {nxt}"])
                )
            continue
        records = _raise_records(text)
        if records is None:
            out.append(
                Finding(
                    Domain.quota,
                    "unreadable-raise-annotation",
                    Severity.warning,
                    f"ClusterQueue {obj.meta.name}",
                    f"annotation {ANNOTATION_QUOTA_RAISES} is not the JSON list gpupact compile "
                    "writes",
                    (text[:120],),
                    "recompile the quota objects with gpupact compile",
                )
            )
            continue
        quotas = {
            (f.name, r): q.nominal
            for g in obj.parsed.resource_groups
            for f in g.flavors
            for r, q in f.resources.items()
        }
        for record in records:
            flavor, resource = record.get("flavor"), record.get("resource")
            base = record.get("baseQuota")
            raises = [r for r in record.get("raises", []) if isinstance(r, dict)]
            active = sum(
                r.get("gpus", 0) for r in raises if (time_or_none(r.get("expires")) or 0) > a.now
            )
            expired = [r for r in raises if (time_or_none(r.get("expires")) or 0) <= a.now]
            current = quotas.get((flavor, resource))
            if not expired or not isinstance(base, int) or current is None:
                continue
            if current > base + active:
                evidence = [
                    f"{resource} in flavor {flavor}: nominalQuota {current}, base {base}, "
                    f"active raises {active}"
                ]
                for r in expired:
                    age = a.now - (time_or_none(r.get("expires")) or a.now)
                    evidence.append(
                        f"raise of {r.get('gpus')} ({r.get('reason', '')}) expired "
                        f"{r.get('expires')} ({format_duration(age)} ago)"
                    )
                out.append(_raise_finding(obj.meta.name, evidence, current - base - active))
    for ctrl in a.snapshot.controllers:
        text = ctrl.meta.annotations.get(ANNOTATION_EXPIRES)
        when = time_or_none(text) if text else None
        if when is not None and when <= a.now:
            out.append(
                Finding(
                    Domain.governance,
                    "service-expired",
                    Severity.warning,
                    f"{ctrl.kind} {ctrl.meta.key}",
                    f"past its expiry ({text}) and still deployed",
                    (f"{ANNOTATION_EXPIRES}: {text}",),
                    "remove it, or renew its expiry in the contract with a reason (43.6)",
                )
            )
    return out


def _raise_records(text: str) -> list[dict[str, Any]] | None:
    """The raises annotation's records (objects; anything else in the list is passed over), or
    None when it is not what gpupact compile writes: a JSON list whose records hold `raises` as
    a list with whole-number `gpus`."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, list):
        return None
    records = [r for r in data if isinstance(r, dict)]
    for record in records:
        raises = record.get("raises", [])
        if not isinstance(raises, list):
            return None
        for r in raises:
            gpus = r.get("gpus", 0) if isinstance(r, dict) else 0
            if not isinstance(gpus, int) or isinstance(gpus, bool):
                return None
    return records


def _raise_finding(cq: str, evidence: list[str], excess: int | None = None) -> Finding:
    return Finding(
        Domain.quota,
        "expired-quota-raise",
        Severity.error,
        f"ClusterQueue {cq}",
        "a temporary quota raise expired and is still in place"
        + (f" ({excess} GPU(s) too many)" if excess else ""),
        tuple(evidence),
        "recompile with `gpupact compile --now <now>` and apply (expired raises drop out), "
        "or renew the raise in the contract with a new expiry and reason",
    )


def check_preemption(a: Analysis, opts: AuditOptions) -> list[Finding]:
    out = []
    by_uid = {p.uid: p for p in a.snapshot.pods if p.uid}
    for event in a.snapshot.events:
        if event.reason != "Preempted" or event.object_kind != "Pod":
            continue
        victim_class = _class_of_pod_name(a, event.namespace, event.object_name)
        if victim_class not in a.roles.online_classes:
            continue
        preemptor = None
        words = event.message.split()
        if "pod" in words and words.index("pod") + 1 < len(words):
            preemptor = by_uid.get(words[words.index("pod") + 1])
        evidence = [f"event Preempted on {event.namespace}/{event.object_name}: {event.message}"]
        if preemptor is not None:
            evidence.append(
                f"preemptor {preemptor.key}: class {a.roles.pod_class(preemptor) or '?'}, "
                f"priority {preemptor.priority} ({preemptor.priority_class_name})"
            )
        out.append(
            Finding(
                Domain.placement,
                "online-preempted",
                Severity.error,
                f"pod {event.namespace}/{event.object_name}",
                "an online pod was preempted: user sessions were cut (Table 43-6: 抢占误伤)",
                tuple(evidence),
                "give online PriorityClasses the highest values, set batch / fine-tune "
                "PriorityClasses to preemptionPolicy: Never, and keep batch out of the online "
                "pool with a taint",
            )
        )
    online = [
        p
        for p in a.snapshot.priority_classes.values()
        if a.roles.class_of_priority_class(p.name) in a.roles.online_classes
    ]
    floor = min((p.value for p in online), default=None)
    for pc in sorted(a.snapshot.priority_classes.values(), key=lambda p: p.name):
        klass = a.roles.class_of_priority_class(pc.name)
        if not klass or klass in a.roles.online_classes or floor is None or pc.value < floor:
            continue
        out.append(
            Finding(
                Domain.placement,
                "priority-inversion",
                Severity.error,
                f"PriorityClass {pc.name}",
                f"{klass} PriorityClass {pc.name} ({pc.value}) is not below online "
                f"({floor}): batch can preempt online pods",
                (f"{pc.name}: value {pc.value}, preemptionPolicy {pc.preemption_policy}",),
                "lower it below every online PriorityClass and set preemptionPolicy: Never",
            )
        )
    return out


def _class_of_pod_name(a: Analysis, namespace: str, name: str) -> str:
    pod = a.pods.get(f"{namespace}/{name}")
    if pod is not None:
        return a.roles.pod_class(pod)
    # the victim is gone: its ReplicaSet / StatefulSet is named by the pod name's prefix
    prefix = name.rsplit("-", 1)[0]
    for ctrl in a.snapshot.controllers:
        if ctrl.meta.namespace == namespace and ctrl.meta.name == prefix and ctrl.templates:
            labels = ctrl.templates[0].get("metadata", {}).get("labels", {})
            if isinstance(labels, dict) and labels.get(LABEL_CLASS):
                return str(labels[LABEL_CLASS])
    return ""


def check_zombies(a: Analysis, opts: AuditOptions) -> list[Finding]:
    out = []
    for wl, age in zombie_workloads(a):
        usage = ", ".join(
            f"{v} {r}"
            for ps in wl.parsed.admission.pod_sets
            for r, v in sorted(ps.usage.items())
            if r.startswith(GPU_RESOURCES_PREFIX)
        )
        out.append(
            Finding(
                Domain.quota,
                "zombie-workload",
                Severity.warning,
                f"Workload {wl.key}",
                f"holds quota ({usage or 'no GPUs'}) with no running pod for "
                f"{format_duration(age)}",
                (f"admitted to {wl.parsed.admission.cluster_queue}; no pod of its job is running",),
                f"delete the finished or dead job so its quota returns to the queue: "
                f"`{zombie_command(wl)}` (Table 43-6: clean zombie jobs)",
            )
        )
    return out


CHECKS: tuple[Callable[[Analysis, AuditOptions], list[Finding]], ...] = (
    check_gpu_less_nodes,
    check_mig_nodes,
    check_drift,
    check_taint_gaps,
    check_online_shared,
    check_requests_limits,
    check_preemption,
    check_stale_gangs,
    check_expired_raises,
    check_zombies,
    check_owner_labels,
)


# --- what to stop first -------------------------------------------------------------------------


def shortage_plan(a: Analysis) -> dict[str, Any]:
    """The chapter's order under shortage: protect online, release half-started gangs, queue or
    refuse low-priority batch (lowest priority and latest started first: least work lost)."""
    waiting = [p for p in a.snapshot.pods if is_waiting(p) and gpu_milli(p) > 0]
    online_waiting = [p for p in waiting if a.roles.is_online(p)]
    online_demand = sum(gpu_milli(p) for p in online_waiting)
    demand = sum(gpu_milli(p) for p in waiting)
    free_rows = [a.state.node_index[n.name] for n in a.snapshot.nodes]
    online_rows = [
        a.state.node_index[n.name] for n in a.snapshot.nodes if a.roles.is_online_pool_node(n)
    ]
    free_all = _free_whole(a, free_rows)
    free = _free_whole(a, online_rows)
    short = any(not a.placement(p).fits for p in online_waiting)
    running = [p for p in a.snapshot.pods if p.holds_resources and gpu_milli(p) > 0]
    online = [p for p in running if a.roles.is_online(p)]
    gangs = partial_gangs(a)
    in_gang = {p.key for _, c in gangs for p in c.holding}
    # only batch on nodes the waiting online pods could use frees anything for them
    wanted = {
        n.name
        for p in unique_shapes(online_waiting, a)
        for n in a.snapshot.nodes
        if a.node_relevant(p, n)
    }
    batch = sorted(
        (
            p
            for p in running
            if a.roles.is_offline(p) and p.key not in in_gang and p.node_name in wanted
        ),
        key=lambda p: (p.priority, -(time_or_none(p.start_time) or 0), p.key),
    )
    steps = [
        {
            "order": 1,
            "action": "protect online traffic: never preempt or drain these",
            "subjects": sorted({_workload_key(a, p) for p in online}),
            "gpus": gpus_text(sum(gpu_milli(p) for p in online)),
        },
        {
            "order": 2,
            "action": "release half-started gangs (their GPUs do no work)",
            "subjects": [f"PodGroup {g.key} ({c.ready}/{c.min_member})" for g, c in gangs],
            "gpus": gpus_text(sum(c.held_milli for _, c in gangs)),
        },
    ]
    need = max(0, online_demand - free - sum(c.held_milli for _, c in gangs))
    chosen, freed = [], 0
    for pod in batch:
        if freed >= need:
            break
        chosen.append(pod)
        freed += gpu_milli(pod)
    queued = sorted({_workload_key(a, p) for p in waiting if a.roles.is_offline(p)})
    queued += [
        f"Workload {k}"
        for k, wl in sorted(a.workloads.items())
        if wl.parsed.admission is None and not wl.parsed.finished
    ]
    steps.append(
        {
            "order": 3,
            "action": "stop low-priority batch (lowest priority, latest started first)"
            if chosen
            else "no running batch needs to stop",
            "subjects": [f"pod {p.key} (priority {p.priority})" for p in chosen],
            "gpus": gpus_text(freed),
        }
    )
    steps.append(
        {
            "order": 4,
            "action": "keep low-priority batch queued (or refuse it) until online demand is met",
            "subjects": queued,
            "gpus": gpus_text(sum(gpu_milli(p) for p in waiting if a.roles.is_offline(p))),
        }
    )
    return {
        "shortage": short,
        "pendingGpus": gpus_text(demand),
        "pendingOnlineGpus": gpus_text(online_demand),
        "freeGpus": gpus_text(free_all),
        "freeOnlinePoolGpus": gpus_text(free),
        "steps": steps,
    }


def _free_whole(a: Analysis, rows: list[int]) -> int:
    """Free GPU-milli on `rows`, counting only fully free devices of exclusive nodes."""
    if not rows:
        return 0
    free = a.state.dev_free_milli[rows].clip(min=0)
    return int(((free // 1000) * 1000).sum())


# --- the report ---------------------------------------------------------------------------------


@dataclass
class AuditReport:
    source: str
    now: int
    findings: list[Finding]
    plan: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        counts = {s.value: sum(1 for f in self.findings if f.severity is s) for s in Severity}
        return {
            "source": self.source,
            "now": self.now,
            "summary": counts,
            "findings": [f.to_dict() for f in self.findings],
            "shortagePlan": self.plan,
        }

    @property
    def failing(self) -> bool:
        return self.fails(Severity.warning)

    def fails(self, threshold: Severity | None) -> bool:
        """Some finding is at `threshold` or worse (None: never fail on findings)."""
        if threshold is None:
            return False
        return any(f.severity.rank <= threshold.rank for f in self.findings)


def audit(a: Analysis, options: AuditOptions | None = None) -> AuditReport:
    opts = options or AuditOptions()
    findings = [f for check in CHECKS for f in check(a, opts)]
    return AuditReport(a.snapshot.source, a.now, sort_findings(findings), shortage_plan(a))


__all__ = ["CHECKS", "AuditOptions", "AuditReport", "audit", "gang_counts", "shortage_plan"]
