"""`diagnose`: why is it Pending — the chapter's runbook (43.5), executable.

Every Pending pod, PodGroup and Kueue Workload is walked through the runbook in order, and the
walk stops at the first domain that explains it (Table 43-5 names the domains, Table 43-6
the recovery actions):

1. nodes       Ready, and `nvidia.com/gpu` advertised as the hardware says (Device Plugin)
2. placement   taints / tolerations / affinity satisfiable; GPU fragmentation (kube-scheduler)
3. gang        PodGroup minMember reachable now; GPUs held by half-started gangs (Volcano)
4. quota       ClusterQueue usage vs nominal + borrowable, queue position, StrictFIFO (Kueue)
5. autoscaler  scale-up under way and its cold start; pool at max (Autoscaler / Karpenter)
6. memory      the model's memory vs the GPU: OOM history, KV cache at its context length

A subject none of them explains ends in the `capacity` domain: it fits now (the scheduler
has not bound it yet) or the pool is simply full.

Each step is a small function `(analysis, case) -> Finding | None`; a step that passes leaves
a note (`ok` or `n/a`) on the case, so the report shows the whole walk.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from gpupact.cluster.devices import GPU_RESOURCE
from gpupact.cluster.state import pod_usage
from gpupact.engine.admission import reasons as kr
from gpupact.engine.admission.reasons import format_amount
from gpupact.engine.gang import PodGroupPhase, gang_is_stale
from gpupact.engine.placement import FitResult
from gpupact.errors import InputError
from gpupact.kube.objects import Pod
from gpupact.kube.selectors import Selector
from gpupact.kube.taints import do_not_schedule_taint, find_untolerated_taint
from gpupact.ops import autoscale
from gpupact.ops.cluster import KUEUE_GATE, Analysis, PlacementOutcome, shape_key
from gpupact.ops.device_plugin import device_plugin_action, device_plugin_pods
from gpupact.ops.evidence import (
    affinity_lines,
    gpu_milli,
    gpus_text,
    holder_lines,
    release_command,
    room_lines,
    taints_and_pools,
    toleration_action,
)
from gpupact.ops.findings import (
    Diagnosis,
    Domain,
    Finding,
    Severity,
    StepResult,
    format_duration,
)
from gpupact.ops.memory import (
    container_troubles,
    memory_profile,
    oom_history,
    service_of,
    status_reason,
    waiting_reason,
)
from gpupact.ops.model import GangObject, KueueObject, condition, time_or_none
from gpupact.ops.owners import SET_RESOURCES_KINDS, owner_of

STARTING_TROUBLE = frozenset(
    {"ImagePullBackOff", "ErrImagePull", "CreateContainerConfigError", "CreateContainerError"}
)
SLOW_START_SECONDS = 600


# --- the subject of one walk ------------------------------------------------------------------


@dataclass
class Case:
    kind: str  # Pod | PodGroup | Workload
    namespace: str
    name: str
    status: str
    created: int | None
    pods: list[Pod] = field(default_factory=list)  # unbound Pending pods to place
    members: list[Pod] = field(default_factory=list)  # every pod of the subject
    group: GangObject | None = None
    workload: KueueObject | None = None
    target: Pod | None = None  # the pod named on the command line / the Pod subject
    notes: list[StepResult] = field(default_factory=list)

    @property
    def subject(self) -> str:
        return f"{self.kind.lower()} {self.namespace}/{self.name}"

    def note(self, domain: Domain, outcome: str, text: str) -> None:
        self.notes.append(StepResult(domain, outcome, text))

    @property
    def placeable(self) -> list[Pod]:
        """Pending pods the scheduler would consider (not held by a scheduling gate)."""
        return [p for p in self.pods if not gates(p)]


def gates(pod: Pod) -> list[str]:
    spec = pod.raw.get("spec") if pod.raw else None
    raw = spec.get("schedulingGates") if isinstance(spec, dict) else None
    if not isinstance(raw, list):
        return []
    return [str(g.get("name", "")) for g in raw if isinstance(g, dict)]


def is_waiting(pod: Pod) -> bool:
    """Pending and not yet bound to a node (what the scheduler still has to place)."""
    return pod.phase == "Pending" and not pod.node_name and not pod.terminating


def is_starting(pod: Pod) -> bool:
    """Bound to a node, containers not started yet (Pending phase)."""
    return pod.phase == "Pending" and bool(pod.node_name) and not pod.terminating


def unique_shapes(pods: Iterable[Pod], a: Analysis | None = None) -> list[Pod]:
    """One pod per placement shape (the first of each), in order."""
    seen: set[Any] = set()
    out = []
    for pod in pods:
        key = a.shape_of(pod) if a is not None else shape_key(pod)
        if key is None or key not in seen:
            out.append(pod)
            if key is not None:
                seen.add(key)
    return out


def _pod_status(pod: Pod) -> str:
    reason = status_reason(pod)
    if pod.terminating:
        return f"{pod.phase} (terminating)"
    if is_starting(pod):
        return f"Pending (bound to {pod.node_name}" + (f", {reason})" if reason else ")")
    if is_waiting(pod):
        blocked = gates(pod)
        return "Pending (SchedulingGated)" if blocked else "Pending (unscheduled)"
    return f"{pod.phase} ({reason})" if reason else pod.phase


# --- step 1: nodes ------------------------------------------------------------------------------


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


# --- step 2: placement --------------------------------------------------------------------------


def check_placement(a: Analysis, case: Case) -> Finding | None:
    if not case.pods:
        case.note(Domain.placement, "n/a", "no pod exists yet")
        return None
    other_gates = sorted({g for p in case.pods for g in gates(p) if g != KUEUE_GATE})
    if other_gates:
        return Finding(
            Domain.placement,
            "scheduling-gated",
            Severity.warning,
            case.subject,
            f"held by scheduling gate(s) {', '.join(other_gates)}: kube-scheduler does not try it",
            tuple(f"pod {p.key}: schedulingGates {gates(p)}" for p in case.pods[:5]),
            "the controller that added the gate removes it when its condition holds; if it "
            "never does, check that controller, or remove the gates by hand: `kubectl -n "
            f"{case.pods[0].namespace} patch pod {case.pods[0].name} --type=json -p "
            '\'[{"op":"remove","path":"/spec/schedulingGates"}]\'`',
            {"gates": other_gates, "owner": str(owner_of(a, case.pods[0]))},
        )
    pods = case.placeable
    if not pods:
        case.note(Domain.placement, "n/a", f"gated by {KUEUE_GATE}: Kueue admits first")
        return None
    for pod in unique_shapes(pods, a):
        outcome = a.placement(pod)
        if outcome.kind in ("unsatisfiable", "constraints"):
            return _unsatisfiable(a, case, pod, outcome)
        if outcome.kind == "fragmented":
            return _fragmented(a, case, pod, outcome)
    outcome = a.placement(pods[0])
    if outcome.fits:
        case.note(Domain.placement, "ok", f"fits on {outcome.feasible} node(s) now")
    else:
        case.note(
            Domain.placement,
            "ok",
            f"constraints satisfiable on {outcome.eligible} node(s), none has room now",
        )
    return None


def _scheduler_said(a: Analysis, pod: Pod) -> list[str]:
    status = pod.raw.get("status") if pod.raw else None
    conds = status.get("conditions") if isinstance(status, dict) else None
    for cond in conds if isinstance(conds, list) else []:
        if (
            isinstance(cond, dict)
            and cond.get("type") == "PodScheduled"
            and cond.get("status") == "False"
            and cond.get("message")
        ):
            return [f"scheduler reported: {cond['message']}"]
    return []


def _dominant_plugin(outcome: PlacementOutcome) -> str:
    counts: dict[str, int] = {}
    for reason in outcome.reasons:
        n = int(reason.detail.split()[0]) if reason.detail else 1
        counts[reason.plugin] = counts.get(reason.plugin, 0) + n
    return max(counts, key=lambda k: counts[k]) if counts else ""


_UNSAT_ACTIONS = {
    "TaintToleration": (
        "the pool's nodes carry taints this pod does not tolerate: if the workload belongs in "
        "that pool, add the pool's toleration (workload=<class>:NoSchedule); otherwise point "
        "it at its own pool - do not remove the pool taint"
    ),
    "NodeAffinity": (
        "no node has the labels the pod selects: fix the nodeSelector / required affinity "
        "(a typo in nodepool or gpu.model?) or label the pool's nodes (Table 43-2)"
    ),
    "NodeUnschedulable": "every candidate node is cordoned: `kubectl uncordon {nodes}` once "
    "the maintenance is done, or add nodes",
    "NodeResourcesFit": (
        "it asks for more cpu / memory / other resources than any node it may use has "
        "allocatable: request less per pod (split it), or add a pool of larger nodes"
    ),
    "GPUDevices": (
        "no node offers the GPUs asked for (model, count per node, MIG profile or NVLink "
        "group): request what a pool has, or fewer GPUs per pod"
    ),
    "PodTopologySpread": (
        "topology spread cannot be satisfied with the current nodes: relax maxSkew, use "
        "whenUnsatisfiable: ScheduleAnyway, or add nodes in the missing zones"
    ),
    "InterPodAffinity": (
        "pod (anti-)affinity rules leave no node: relax requiredDuringScheduling anti-affinity "
        "to preferred, or add nodes"
    ),
}


def blocking_filter(a: Analysis, pod: Pod) -> tuple[str, list[str]]:
    """Which static filter keeps the pod off the nodes it selects: NodeAffinity when its
    selector / required affinity matches no node; TaintToleration when the nodes it selects
    all carry a taint it does not tolerate; NodeUnschedulable when they are all cordoned;
    else GPUDevices (the hardware). With example lines for the evidence. Memoised per shape."""
    memo_key = ("blocking", a.shape_of(pod))
    if memo_key[1] is not None and memo_key in a.memo:
        return a.memo[memo_key]
    answer = _blocking_filter(a, pod)
    if memo_key[1] is not None:
        a.memo[memo_key] = answer
    return answer


def _blocking_filter(a: Analysis, pod: Pod) -> tuple[str, list[str]]:
    nodes = a.snapshot.nodes
    required = pod.required_node_affinity
    selected = [n for n in nodes if required.matches(n.name, n.labels)]
    if not selected:
        return "NodeAffinity", affinity_lines(a, pod)
    tolerated = [
        n
        for n in selected
        if find_untolerated_taint(n.taints, pod.tolerations, do_not_schedule_taint) is None
    ]
    if not tolerated:
        lines = []
        for n in selected[:4]:
            taint = find_untolerated_taint(n.taints, pod.tolerations, do_not_schedule_taint)
            lines.append(f"node {n.name} (selected by the pod): untolerated taint {taint}")
        return "TaintToleration", lines
    open_ = [n for n in tolerated if not n.unschedulable]
    if not open_:
        return "NodeUnschedulable", [f"node {n.name}: cordoned" for n in tolerated[:4]]
    return "GPUDevices", []


def _unsatisfiable(a: Analysis, case: Case, pod: Pod, outcome: PlacementOutcome) -> Finding:
    if outcome.kind == "constraints":
        plugin, lines = _dominant_plugin(outcome), list(outcome.examples)
    elif outcome.never_enough:
        gpu_only = all(r.startswith("nvidia.com/") for r, _ in outcome.never_enough)
        plugin = "GPUDevices" if gpu_only else "NodeResourcesFit"
        lines = [line for _, line in outcome.never_enough] + list(outcome.examples)
    else:
        plugin, lines = blocking_filter(a, pod)
        if not lines:
            lines = list(outcome.examples)
    evidence = [f"kube-scheduler: {outcome.message}", *_scheduler_said(a, pod), *lines]
    asks = _asks(pod)
    if asks:
        evidence.append(f"pod asks: {asks}")
    what = {
        "NodeAffinity": "its nodeSelector / node affinity matches no node",
        "TaintToleration": "the nodes it selects carry taints it does not tolerate",
        "NodeUnschedulable": "the nodes it may use are all cordoned",
        "GPUDevices": "no node has the GPUs it asks for",
        "NodeResourcesFit": "no node it may use has that much allocatable, even empty",
    }.get(plugin, "topology spread / pod affinity leave no node")
    owner = owner_of(a, pod)
    action = _UNSAT_ACTIONS.get(plugin, _UNSAT_ACTIONS["NodeAffinity"])
    data: dict[str, Any] = {"plugin": plugin, "message": outcome.message, "nodes": outcome.nodes}
    if plugin == "TaintToleration":
        taints, pools = taints_and_pools(a, pod)
        action = toleration_action(a, pod, taints, pools) or action
        data["taints"] = [str(t) for t in taints]
    elif plugin == "NodeAffinity":
        action = (
            f"fix the nodeSelector / required node affinity of {owner} (`"
            + (
                owner.kubectl("edit")
                if owner.kind != "Pod"
                else f"kubectl -n {pod.namespace} get pod {pod.name} -o yaml"
            )
            + "`) to values that exist (above), or label the pool's nodes (Table 43-2)"
        )
    elif plugin == "NodeUnschedulable":
        cordoned = [n.name for n in a.snapshot.nodes if n.unschedulable and a.node_relevant(pod, n)]
        action = action.format(nodes=" ".join(cordoned[:10]) or "<node>")
    data["owner"] = str(owner)
    return Finding(
        Domain.placement,
        "unsatisfiable-constraints",
        Severity.error,
        case.subject,
        f"no node can take it as it is: {what} ({outcome.nodes} node(s) ruled out)",
        tuple(evidence),
        action,
        data,
    )


def _asks(pod: Pod) -> str:
    parts = []
    if pod.node_selector:
        parts.append(
            "nodeSelector " + ", ".join(f"{k}={v}" for k, v in sorted(pod.node_selector.items()))
        )
    if pod.node_affinity is not None and pod.node_affinity.required is not None:
        parts.append("required node affinity")
    tolerated = [
        f"{t.key}{'=' + t.value if t.value else ''}:{t.effect or '*'}"
        for t in pod.tolerations
        if not t.key.startswith("node.kubernetes.io/")
    ]
    if tolerated:
        parts.append("tolerates " + ", ".join(tolerated))
    gpu = pod_usage(pod).gpu
    if gpu is not None and gpu.mig_profile is not None:
        parts.append(f"{gpu.count} x MIG {gpu.mig_profile}")
    elif gpu is not None:
        parts.append(f"{gpus_text(gpu.total_milli)} GPU(s)")
    return "; ".join(parts)


@dataclass(frozen=True)
class _Fragments:
    """What fragmentation evidence says about one pod shape (memoised: pods of one shape see
    the same nodes)."""

    pools: list[str]
    lines: list[str]
    drain: str
    per_node: dict[str, str]


def _fragments(a: Analysis, pod: Pod, outcome: PlacementOutcome) -> _Fragments:
    key = ("fragments", a.shape_of(pod))
    if key[1] is not None and key in a.memo:
        return a.memo[key]
    need = gpu_milli(pod)
    gpu = pod_usage(pod).gpu
    fractional = gpu is not None and gpu.fractional
    rooms = a.gpu_room(outcome.eligible_nodes, fractional)
    partial = [r.node for r in rooms if 0 < r.free_milli < need]
    lines = [
        *room_lines(a, outcome.eligible_nodes, fractional),
        *holder_lines(a, partial, "the partly free nodes are held by"),
    ]
    drain = ""
    if rooms:
        closest = rooms[0]
        movers = [
            p.key
            for p in a.pods_by_node.get(closest.node, [])
            if p.holds_resources and gpu_milli(p) > 0
        ]
        drain = (
            f"to place it now, free {closest.node} ({gpus_text(closest.free_milli)} of "
            f"{closest.devices} free): move its GPU pods ({', '.join(movers[:4])}"
            + (f" +{len(movers) - 4}" if len(movers) > 4 else "")
            + f") elsewhere, e.g. `kubectl cordon {closest.node}` then delete them one by one "
            "so their controllers re-create them on other nodes; "
        )
    found = _Fragments(
        sorted({r.pool for r in rooms if r.pool}),
        lines,
        drain,
        {r.node: gpus_text(r.free_milli) for r in rooms[:50]},
    )
    if key[1] is not None:
        a.memo[key] = found
    return found


def _fragmented(a: Analysis, case: Case, pod: Pod, outcome: PlacementOutcome) -> Finding:
    need = gpu_milli(pod)
    parts = _fragments(a, pod, outcome)
    where = f" in pool {', '.join(parts.pools)}" if parts.pools else ""
    return Finding(
        Domain.placement,
        "gpu-fragmentation",
        Severity.warning,
        case.subject,
        f"GPU fragmentation{where}: {gpus_text(outcome.free_gpu_milli)} GPU(s) free in total, "
        f"at most {gpus_text(outcome.largest_free_milli)} on one node; it needs "
        f"{gpus_text(need)} on one node",
        (*parts.lines, f"kube-scheduler: {outcome.message}", *_scheduler_said(a, pod)),
        parts.drain + "for good: bin-pack GPU pods (MostAllocated or FGD scoring) so whole "
        "nodes stay free for multi-GPU pods, and keep multi-GPU work on a pool or queue of its "
        "own",
        {
            "freeGpus": gpus_text(outcome.free_gpu_milli),
            "largestBlock": gpus_text(outcome.largest_free_milli),
            "needed": gpus_text(need),
            "pools": parts.pools,
            "freePerNode": parts.per_node,
        },
    )


# --- step 3: gang -------------------------------------------------------------------------------


@dataclass
class GangCounts:
    min_member: int
    holding: list[Pod]
    succeeded: int
    waiting: list[Pod]

    @property
    def ready(self) -> int:
        return len(self.holding) + self.succeeded

    @property
    def held_milli(self) -> int:
        return sum(gpu_milli(p) for p in self.holding)


def gang_counts(a: Analysis, group: GangObject) -> GangCounts:
    members = a.members.get(group.key, [])
    return GangCounts(
        group.podgroup.min_member,
        [p for p in members if p.holds_resources and not p.terminating],
        sum(1 for p in members if p.phase == "Succeeded"),
        sorted((p for p in members if is_waiting(p)), key=lambda p: p.name),
    )


def partial_gangs(a: Analysis, exclude: str = "") -> list[tuple[GangObject, GangCounts]]:
    """Gangs running below minMember while holding resources (half-started)."""
    out = []
    for key in sorted(a.podgroups):
        if key == exclude:
            continue
        group = a.podgroups[key]
        counts = gang_counts(a, group)
        if gang_is_stale(len(counts.holding), counts.min_member, counts.succeeded):
            out.append((group, counts))
    return out


def check_gang(a: Analysis, case: Case) -> Finding | None:
    group = case.group
    if group is None:
        case.note(Domain.gang, "n/a", "not in a PodGroup")
        return None
    pg = group.podgroup
    counts = gang_counts(a, group)
    found = _volcano_queue(a, case, group, counts)
    if found is not None:
        return found
    existing = counts.ready + len(counts.waiting)
    if existing < pg.min_member:
        return _too_few_pods(a, case, group, counts)
    need = pg.min_member - counts.ready
    if need <= 0:
        case.note(Domain.gang, "ok", f"{counts.ready}/{pg.min_member} ready: minMember met")
        return None
    placed, failure = a_whatif(a, counts.waiting, need)
    if placed >= need:
        case.note(
            Domain.gang,
            "ok",
            f"minMember reachable now: {counts.ready} ready + {placed} placeable >= "
            f"{pg.min_member}",
        )
        return None
    fit_line = f"member {counts.waiting[placed].key}: {failure.message}" if failure else ""
    if counts.holding:
        return _half_started(a, case, group, counts, placed, fit_line)
    others = [
        (g, c)
        for g, c in partial_gangs(a, exclude=group.key)
        if any(a.node_relevant(counts.waiting[0], a.nodes[p.node_name]) for p in c.holding)
    ]
    if others:
        release = [p for _, c in others for p in c.holding]
        freed, _ = a_whatif(a, counts.waiting, need, release=release)
        if freed >= need:
            return _held_by_partial(a, case, group, counts, others, fit_line)
    if not _fits_empty(a, counts, pg.min_member) and not _elastic(a, counts.waiting[0]):
        return Finding(
            Domain.gang,
            "gang-min-member-unreachable",
            Severity.error,
            case.subject,
            f"minMember {pg.min_member} can never be placed: even an empty cluster holds fewer "
            f"such pods at once, and no autoscaler can add nodes",
            (
                f"PodGroup {group.key}: minMember {pg.min_member}, {counts.ready} ready, "
                f"{len(counts.waiting)} waiting",
                fit_line,
                *_podgroup_conditions(group),
            ),
            "lower the tensor-parallel degree / minMember, request fewer GPUs per pod (in "
            f"{_gang_owner(a, counts)}), or add a pool with larger nodes (Table 43-6: gang "
            "permanently Pending)",
            {"minMember": pg.min_member, "ready": counts.ready},
        )
    return _gang_waits(a, case, group, counts, need, placed, fit_line)


def gang_nodes(a: Analysis, pod: Pod) -> list[str]:
    """Nodes a gang member could use at all: its selector / affinity match, it tolerates the
    taints, not cordoned, and they have GPUs (memoised per shape)."""
    key = ("gang-nodes", a.shape_of(pod))
    if key[1] is not None and key in a.memo:
        return a.memo[key]
    out = [
        n.name
        for n in a.snapshot.nodes
        if not n.unschedulable
        and a.state.gpu_specs[a.state.node_index[n.name]].devices
        and a.node_relevant(pod, n)
    ]
    if key[1] is not None:
        a.memo[key] = out
    return out


def gang_evidence(a: Analysis, counts: GangCounts, need: int) -> tuple[list[str], dict[str, Any]]:
    """Total vs needed, free GPUs per node of the pools its members may use, and who holds
    them (memoised per member shape: gangs of one job share it)."""
    member = counts.waiting[0]
    key = ("gang-evidence", a.shape_of(member), need)
    if key[1] is not None and key in a.memo:
        return a.memo[key]
    per = gpu_milli(member)
    if per == 0:
        line = f"needs {need} more member(s) at once; they ask for no GPU (see the FitError)"
        return [line], {"neededGpus": "0", "freeGpus": "0", "membersThatFit": 0, "pools": []}
    nodes = gang_nodes(a, member)
    rooms = a.gpu_room(nodes)
    free = sum(r.free_milli for r in rooms)
    fits = sum(r.free_milli // per for r in rooms) if per else 0
    lines = [
        f"needs {need} more member(s) at once x {gpus_text(per)} GPU(s) = "
        f"{gpus_text(need * per)} GPU(s); free now on the {len(nodes)} node(s) they may use: "
        f"{gpus_text(free)} GPU(s), room for {fits} member(s) by node",
        *room_lines(a, nodes),
        *holder_lines(a, nodes),
    ]
    data = {
        "neededGpus": gpus_text(need * per),
        "freeGpus": gpus_text(free),
        "membersThatFit": fits,
        "pools": sorted({r.pool for r in rooms if r.pool}),
    }
    if key[1] is not None:
        a.memo[key] = (lines, data)
    return lines, data


def _gang_waits(
    a: Analysis,
    case: Case,
    group: GangObject,
    counts: GangCounts,
    need: int,
    placed: int,
    fit_line: str,
) -> Finding:
    """The gang is what blocks: its members would fit one by one, or some would, but not
    minMember of them at once; nothing else holds GPUs half-used."""
    pg = group.podgroup
    lines, data = gang_evidence(a, counts, need)
    pools = data["pools"]
    where = f" in pool {', '.join(pools)}" if pools else ""
    scaling = [v.describe() for v in a.pools_for(counts.waiting[0]) if v.in_flight]
    return Finding(
        Domain.gang,
        "gang-waiting-capacity",
        Severity.warning,
        case.subject,
        f"the gang needs {need} more member(s) placed at once ({data['neededGpus']} GPU(s)) and "
        f"only {placed} fit now{where}: Volcano keeps all of them Pending until minMember "
        f"{pg.min_member} fit together",
        (
            f"PodGroup {group.key}: minMember {pg.min_member}, {counts.ready} running, "
            f"{len(counts.waiting)} waiting, {placed} of the {need} needed fit now",
            *lines,
            *scaling,
            fit_line,
            *_podgroup_conditions(group),
        ),
        f"free {data['neededGpus']} GPU(s){where} for it at once (the holders above; stop "
        "low-priority batch first: `gpupact audit` shortage plan), add nodes to the pool, or "
        "lower minMember / GPUs per member if the job allows",
        {"minMember": pg.min_member, "ready": counts.ready, "placeable": placed, **data},
    )


def a_whatif(
    a: Analysis, pods: Sequence[Pod], need: int, release: Sequence[Pod] = ()
) -> tuple[int, FitResult | None]:
    return a.whatif_place(pods, need, release)


def _fits_empty(a: Analysis, counts: GangCounts, min_member: int) -> bool:
    pods = [*counts.holding, *counts.waiting]
    return a.whatif_empty(pods, min_member) >= min_member


def _elastic(a: Analysis, pod: Pod) -> bool:
    return any(not view.at_max and view.elastic for view in a.pools_for(pod))


def _podgroup_conditions(group: GangObject) -> list[str]:
    return [
        f"PodGroup condition {c.type}={c.status}: {c.message or c.reason}"
        for c in group.conditions
        if c.status == "True"
        and c.type in ("Unschedulable", "Scheduled")
        and (c.message or c.reason)
    ][:2]


def _volcano_queue(
    a: Analysis, case: Case, group: GangObject, counts: GangCounts
) -> Finding | None:
    pg = group.podgroup
    queue = a.snapshot.volcano_queues.get(pg.queue)
    if queue is None:
        return None
    if queue.state != "Open":
        return Finding(
            Domain.gang,
            "volcano-queue-closed",
            Severity.error,
            case.subject,
            f"Volcano queue {queue.name} is {queue.state}: it enqueues nothing",
            (f"PodGroup {group.key} is in queue {queue.name} (state {queue.state})",),
            f"open the queue (`vcctl queue operate --name {queue.name} --action open`) or "
            "move the job to an open queue",
        )
    if not queue.capability or pg.phase is not PodGroupPhase.PENDING:
        return None
    used: dict[str, int] = {}
    for other in a.podgroups.values():
        if other.podgroup.queue != queue.name or other.key == group.key:
            continue
        for pod in a.members.get(other.key, []):
            if pod.holds_resources:
                for r, v in pod.requests().items():
                    used[r] = used.get(r, 0) + v
    demand = dict(pg.min_resources or {})
    if not demand:
        for pod in counts.waiting[: pg.min_member]:
            for r, v in pod.requests().items():
                demand[r] = demand.get(r, 0) + v
    over = [
        (r, used.get(r, 0), demand[r], cap)
        for r, cap in sorted(queue.capability.items())
        if r in demand and used.get(r, 0) + demand[r] > cap
    ]
    if not over:
        return None
    return Finding(
        Domain.gang,
        "volcano-queue-full",
        Severity.warning,
        case.subject,
        f"Volcano queue {queue.name} has no capability left for this gang's minResources",
        tuple(
            f"queue {queue.name} {r}: {format_amount(r, u)} in use + "
            f"{format_amount(r, d)} needed > capability {format_amount(r, c)}"
            for r, u, d, c in over
        )
        + tuple(_podgroup_conditions(group)),
        "wait for the queue's running jobs, raise its capability (`kubectl edit "
        f"queues.scheduling.volcano.sh {queue.name}`: spec.capability), or move the job to a "
        "queue with room",
        {"queue": queue.name},
    )


def _too_few_pods(a: Analysis, case: Case, group: GangObject, counts: GangCounts) -> Finding:
    pg = group.podgroup
    existing = counts.ready + len(counts.waiting)
    if existing == 0 and pg.phase is PodGroupPhase.PENDING:
        return Finding(
            Domain.gang,
            "gang-not-enqueued",
            Severity.warning,
            case.subject,
            "Volcano has not enqueued the PodGroup (its pods are created once it is Inqueue)",
            (
                f"PodGroup {group.key}: phase Pending, minMember {pg.min_member}, queue "
                f"{pg.queue}"
                + (
                    ", minResources "
                    + ", ".join(
                        f"{r}={format_amount(r, v)}" for r, v in sorted(pg.min_resources.items())
                    )
                    if pg.min_resources
                    else ""
                ),
                *_podgroup_conditions(group),
            ),
            "Volcano's enqueue waits until minResources fit the queue and the cluster's idle "
            "resources: free capacity (see `gpupact audit` shortage plan), raise the queue's "
            "capability, or lower minResources / minMember",
            {"minMember": pg.min_member},
        )
    return Finding(
        Domain.gang,
        "gang-min-member-unreachable",
        Severity.error,
        case.subject,
        f"only {existing} pod(s) exist for minMember {pg.min_member}: the gang can never start",
        (
            f"PodGroup {group.key}: minMember {pg.min_member}, {counts.ready} ready, "
            f"{len(counts.waiting)} waiting",
            *_podgroup_conditions(group),
        ),
        "make minMember match the pods the job creates (replicas x pods per replica, e.g. the "
        f"tensor-parallel degree) in {_gang_owner(a, counts)}, or fix the controller that "
        "should create the missing pods",
        {"minMember": pg.min_member, "pods": existing},
    )


def _gang_owner(a: Analysis, counts: GangCounts) -> str:
    """The controller of a gang's pods, with the command to edit it."""
    pods = [*counts.holding, *counts.waiting]
    if not pods:
        return "the job that owns the PodGroup"
    owner = owner_of(a, pods[0])
    return f"{owner} (`{owner.kubectl('edit')}`)" if owner.kind != "Pod" else str(owner)


def _half_started(
    a: Analysis, case: Case, group: GangObject, counts: GangCounts, placed: int, fit_line: str
) -> Finding:
    pg = group.podgroup
    age = a.age(group.meta.created)
    return Finding(
        Domain.gang,
        "gang-half-started",
        Severity.error,
        case.subject,
        f"half-started gang: {counts.ready}/{pg.min_member} members run and hold "
        f"{gpus_text(counts.held_milli)} GPU(s) that do no work while the rest cannot be placed",
        (
            f"PodGroup {group.key}: minMember {pg.min_member}, {counts.ready} running, "
            f"{len(counts.waiting)} waiting, {placed} of them placeable now"
            + (f", created {format_duration(age)} ago" if age is not None else ""),
            *(f"running member {p.key} on {p.node_name}" for p in counts.holding[:4]),
            *gang_evidence(a, counts, pg.min_member - counts.ready)[0],
            fit_line,
        ),
        f"release the half-started gang: {release_command(a, counts.holding)} (its "
        f"{owner_of(a, counts.holding[0])} re-creates them and Volcano queues the gang whole, "
        "starting all members together), then add capacity or lower minMember / tensor "
        "parallelism (Table 43-6)",
        {"minMember": pg.min_member, "ready": counts.ready, "heldGpus": counts.held_milli / 1000},
    )


def _held_by_partial(
    a: Analysis,
    case: Case,
    group: GangObject,
    counts: GangCounts,
    others: list[tuple[GangObject, GangCounts]],
    fit_line: str,
) -> Finding:
    held = sum(c.held_milli for _, c in others)
    return Finding(
        Domain.gang,
        "gpus-held-by-partial-gangs",
        Severity.error,
        case.subject,
        f"{gpus_text(held)} GPU(s) are held by {len(others)} half-started gang(s); releasing "
        f"them makes minMember {group.podgroup.min_member} reachable",
        (
            *(
                f"PodGroup {g.key}: {c.ready}/{c.min_member} running, holding "
                f"{gpus_text(c.held_milli)} GPU(s)"
                for g, c in others[:6]
            ),
            fit_line,
        ),
        "release the half-started gangs first (their controllers re-create the pods and the "
        "gangs requeue whole): "
        + "; ".join(release_command(a, c.holding) for _, c in others[:3])
        + "; enable Volcano's gang plugin for every multi-pod job so this cannot recur",
        {"gangs": [g.key for g, _ in others], "heldGpus": held / 1000},
    )


# --- step 4: quota ------------------------------------------------------------------------------


def check_quota(a: Analysis, case: Case) -> Finding | None:
    wl = case.workload
    if wl is None:
        gated = [p for p in case.pods if KUEUE_GATE in gates(p)]
        if gated:
            return Finding(
                Domain.quota,
                "kueue-workload-missing",
                Severity.warning,
                case.subject,
                f"gated by {KUEUE_GATE}, but no Kueue Workload for it is in the snapshot",
                tuple(f"pod {p.key}: schedulingGates {gates(p)}" for p in gated[:3]),
                "check that Kueue's controller is running and that the pod's queue-name label "
                "names an existing LocalQueue",
            )
        case.note(Domain.quota, "n/a", "not admitted through Kueue")
        return None
    item = wl.parsed
    if item.admission is not None:
        case.note(Domain.quota, "ok", f"admitted to ClusterQueue {item.admission.cluster_queue}")
        return None
    view = a.kueue
    if wl.key in view.problems:
        return Finding(
            Domain.quota,
            "kueue-queue-missing",
            Severity.error,
            case.subject,
            f"Kueue cannot queue it: {view.problems[wl.key]}",
            (f"Workload {wl.key}: queueName {item.workload.queue_name!r}", *_kueue_said(wl)),
            "create the missing LocalQueue / ClusterQueue / ResourceFlavor (gpupact compile "
            "emits them from the contract), or fix the job's kueue.x-k8s.io/queue-name label",
        )
    if view.outlook is None:
        case.note(Domain.quota, "n/a", "no Kueue objects")
        return None
    if wl.key in view.admitted_in_outlook:
        case.note(Domain.quota, "ok", "quota is free: Kueue admits it at its next cycle")
        return None
    if wl.key in view.preempting:
        victims = view.preempting[wl.key]
        return Finding(
            Domain.quota,
            "quota-preempting",
            Severity.info,
            case.subject,
            f"Kueue admits it after preempting {len(victims)} workload(s)",
            tuple(f"preempting {v}" for v in victims[:6]),
            "nothing to do unless the victims should have been protected (then raise their "
            "priority or change the ClusterQueue's preemption policy)",
        )
    try:
        reason = view.outlook.explain(wl.key)
    except (KeyError, ValueError):
        case.note(Domain.quota, "n/a", "not pending in Kueue")
        return None
    return _quota_finding(a, case, wl, reason)


def _kueue_said(wl: KueueObject) -> list[str]:
    cond = condition(wl.conditions, "QuotaReserved")
    if cond is not None and cond.status == "False" and cond.message:
        return [f"Kueue reported: {cond.message}"]
    return []


def _quota_lines(reason: kr.PendingReason) -> tuple[list[str], list[tuple[str, str, int]]]:
    lines, short = [], []
    for d in reason.quota:
        amount = lambda v, r=d.resource: format_amount(r, v)  # noqa: E731
        if d.resource in ("cpu", "memory") and d.requested <= d.available:
            continue
        lines.append(
            f"{d.resource} in flavor {d.flavor}: needs {amount(d.requested)}; used "
            f"{amount(d.usage)} of nominal {amount(d.nominal)}"
            + (f", cohort can lend {amount(d.borrowable)} more" if d.borrowable else "")
            + f"; available {amount(d.available)}"
        )
        if d.requested > d.available:
            short.append((d.flavor, d.resource, d.requested - d.available))
    return lines, short


def _quota_finding(a: Analysis, case: Case, wl: KueueObject, reason: kr.PendingReason) -> Finding:
    lines, short = _quota_lines(reason)
    where = f"ClusterQueue {reason.cluster_queue}"
    if reason.position_in_cluster_queue is not None:
        where += (
            f": position {reason.position_in_cluster_queue + 1} in the ClusterQueue, "
            f"{(reason.position_in_local_queue or 0) + 1} in its LocalQueue ({reason.state})"
        )
    evidence = [where, *lines, *_kueue_said(wl)]
    if reason.code == kr.BLOCKED_BY_STRICT_FIFO_HEAD and reason.blocked_by:
        head = a.kueue.outlook.explain(reason.blocked_by) if a.kueue.outlook else None
        if head is not None:
            head_lines, _ = _quota_lines(head)
            evidence.append(f"head {reason.blocked_by}: {head.code}: {head.message}")
            evidence.extend(f"  head {line}" for line in head_lines)
        return Finding(
            Domain.quota,
            "strict-fifo-blocked",
            Severity.warning,
            case.subject,
            f"blocked behind {reason.blocked_by}, the head of StrictFIFO {where.split(':')[0]} "
            "that does not fit",
            tuple(evidence),
            f"the head {reason.blocked_by} blocks everything behind it: give it what it needs "
            "(or remove / shrink it), or let smaller workloads pass it: `kubectl patch "
            f"clusterqueue {reason.cluster_queue} --type=merge -p "
            '\'{"spec":{"queueingStrategy":"BestEffortFIFO"}}\'`',
            {"blockedBy": reason.blocked_by, "clusterQueue": reason.cluster_queue},
        )
    if reason.code == kr.INACTIVE_CLUSTER_QUEUE:
        return Finding(
            Domain.quota,
            "cluster-queue-inactive",
            Severity.error,
            case.subject,
            reason.message,
            tuple(evidence),
            "make the ClusterQueue active: create its ResourceFlavors, clear stopPolicy",
        )
    zombies = _zombies(a, reason.cluster_queue)
    evidence.extend(zombies)
    severity = (
        Severity.error
        if reason.code in (kr.NO_MATCHING_FLAVOR, kr.EXCEEDS_MAX_QUOTA)
        else (Severity.warning)
    )
    if short:
        need = ", ".join(f"{format_amount(r, n)} {r} in {f}" for f, r, n in short)
        summary = f"tenant quota exhausted: {reason.cluster_queue} is short {need}"
    else:
        summary = f"Kueue keeps it pending: {reason.code}: {reason.message}"
    action = (
        f"raise ClusterQueue {reason.cluster_queue}'s nominalQuota (`kubectl edit clusterqueue "
        f"{reason.cluster_queue}`, or a temporary raise with an expiry in the contract), let it "
        "borrow in its cohort (borrowingLimit), or clean zombie jobs holding quota"
        + "".join(f" (`{cmd}`)" for cmd in _zombie_commands(a, reason.cluster_queue)[:2])
        + " (Table 43-6: quota exhausted)"
    )
    if reason.code == kr.EXCEEDS_MAX_QUOTA or reason.code == kr.NO_MATCHING_FLAVOR:
        action = (
            "it asks for more than the ClusterQueue can ever give (nominal + borrowing): "
            "split the job or raise the quota; check its flavors' nodeLabels/taints match"
        )
    return Finding(
        Domain.quota,
        "quota-exhausted" if short else "quota-pending",
        severity,
        case.subject,
        summary,
        tuple(evidence),
        action,
        {
            "clusterQueue": reason.cluster_queue,
            "reason": reason.code,
            "short": [{"flavor": f, "resource": r, "amount": n} for f, r, n in short],
        },
    )


def zombie_workloads(
    a: Analysis, cluster_queue: str | None = None
) -> list[tuple[KueueObject, int]]:
    """Admitted workloads holding quota while none of their pods is running or pending: the
    job finished or died and nobody deleted it. (workload, seconds since admission)."""
    memo_key = ("zombies", cluster_queue)
    if memo_key not in a.memo:
        a.memo[memo_key] = _zombie_workloads(a, cluster_queue)
    return a.memo[memo_key]


def _zombie_workloads(a: Analysis, cluster_queue: str | None) -> list[tuple[KueueObject, int]]:
    out = []
    for key in sorted(a.workloads):
        wl = a.workloads[key]
        item = wl.parsed
        if item.admission is None or item.finished:
            continue
        if cluster_queue is not None and item.admission.cluster_queue != cluster_queue:
            continue
        pods = a.workload_pods.get(key, [])
        if any(p.phase in ("Running", "Pending") and not p.terminating for p in pods):
            continue
        admitted_at = item.reserved_at // 1000 if item.reserved_at else wl.meta.created
        age = a.age(admitted_at) or 0
        if age >= SLOW_START_SECONDS:
            out.append((wl, age))
    return out


def zombie_command(wl: KueueObject) -> str:
    """Delete the job that owns the Workload (Kueue then drops the Workload and its quota)."""
    owner = next((o for o in wl.meta.owners if o.controller), None) or next(
        iter(wl.meta.owners), None
    )
    if owner is not None and owner.kind in _OWNER_RESOURCES:
        return f"kubectl -n {wl.meta.namespace} delete {_OWNER_RESOURCES[owner.kind]} {owner.name}"
    return f"kubectl -n {wl.meta.namespace} delete workload {wl.meta.name}"


_OWNER_RESOURCES = {
    "Job": "job",
    "JobSet": "jobset",
    "RayJob": "rayjob",
    "PyTorchJob": "pytorchjob",
    "LeaderWorkerSet": "leaderworkerset",
}


def _zombie_commands(a: Analysis, cluster_queue: str) -> list[str]:
    return [zombie_command(wl) for wl, _ in zombie_workloads(a, cluster_queue)]


def _zombies(a: Analysis, cluster_queue: str) -> list[str]:
    lines = []
    for wl, age in zombie_workloads(a, cluster_queue)[:5]:
        usage = ", ".join(
            f"{format_amount(r, v)} {r}"
            for ps in wl.parsed.admission.pod_sets
            for r, v in sorted(ps.usage.items())
            if r not in ("cpu", "memory")
        )
        lines.append(
            f"zombie? Workload {wl.key} holds {usage or 'quota'} with no running pod "
            f"(admitted {format_duration(age)} ago)"
        )
    return lines


# --- step 5: autoscaler -------------------------------------------------------------------------


def check_autoscaler(a: Analysis, case: Case) -> Finding | None:
    pods = case.placeable
    if not pods:
        case.note(Domain.autoscaler, "n/a", "no pod to place yet")
        return None
    blocked = [p for p in unique_shapes(pods, a) if not a.placement(p).fits]
    if not blocked:
        case.note(Domain.autoscaler, "n/a", "fits now: no scale-up needed")
        return None
    pod = blocked[0] if blocked else pods[0]
    events = [e for p in pods[:50] for e in a.events_for("Pod", p.namespace, p.name)]
    signals = autoscale.scale_signals(events)
    pools = a.pools_for(pod)
    claims = [c for c in a.snapshot.node_claims if not c.ready and not c.deleting]
    claims = [c for c in claims if autoscale.claim_matches(c, pod)]
    if claims or signals.triggered or signals.nominated:
        return _scaling(a, case, pod, pools, claims, signals)
    at_max = [v for v in pools if v.at_max]
    ca_max = [e for e in signals.not_triggered if autoscale.MAX_NODE_GROUP_SIZE in e.message]
    if at_max or ca_max:
        evidence = [v.describe() for v in at_max]
        evidence.extend(f"cluster-autoscaler: {e.message}" for e in ca_max[-2:])
        return Finding(
            Domain.autoscaler,
            "pool-at-max",
            Severity.error,
            case.subject,
            "the pool is at its maximum size: no scale-up will come",
            tuple(evidence),
            "raise the pool's max if the budget allows ("
            + (
                ", ".join(
                    f"`kubectl edit nodepool {v.name}` spec.limits"
                    if v.name in a.snapshot.node_pools
                    else f"contract pool {v.name} nodes.max"
                    for v in at_max
                )
                or "the node group's max size in the cluster-autoscaler"
            )
            + "); pre-warm gpu-burst for predictable peaks; otherwise stop low-priority batch "
            "first (`gpupact audit` shortage plan)",
            {"pools": [v.name for v in at_max]},
        )
    if signals.not_triggered:
        return Finding(
            Domain.autoscaler,
            "no-scale-up",
            Severity.warning,
            case.subject,
            "the cluster autoscaler will not add a node for it",
            tuple(f"cluster-autoscaler: {e.message}" for e in signals.not_triggered[-3:]),
            "make a node group able to host the pod (its template must carry the pool's "
            "labels, taints and GPUs), or fix the pod's selector",
        )
    if pools:
        case.note(
            Domain.autoscaler,
            "ok",
            "no scale-up under way; pool(s) " + ", ".join(v.describe() for v in pools[:3]),
        )
    else:
        case.note(Domain.autoscaler, "n/a", "no autoscaler signal for this pod")
    return None


def _scaling(
    a: Analysis,
    case: Case,
    pod: Pod,
    pools: list[Any],
    claims: list[Any],
    signals: autoscale.ScaleSignals,
) -> Finding:
    evidence = []
    started: int | None = None
    pool_name = ""
    for claim in claims[:4]:
        age = a.age(claim.meta.created)
        evidence.append(
            f"NodeClaim {claim.meta.name} (pool {claim.nodepool or '?'}): "
            f"{autoscale.claim_phase(claim)}"
            + (f", created {format_duration(age)} ago" if age is not None else "")
        )
        if claim.meta.created is not None and (started is None or claim.meta.created < started):
            started, pool_name = claim.meta.created, claim.nodepool
    for event in (signals.triggered + signals.nominated)[-2:]:
        evidence.append(f"{event.component or 'autoscaler'}: {event.reason}: {event.message}")
        when = event.first or event.last
        if started is None and when is not None:
            started = when
    view = next((v for v in pools if v.name == pool_name), pools[0] if pools else None)
    cold = view.cold_start if view is not None else None
    severity = Severity.info
    data: dict[str, Any] = {"nodeClaims": [c.meta.name for c in claims]}
    if cold is not None and started is not None:
        eta = started + cold.total - a.now
        data["coldStartSeconds"] = cold.total
        data["remainingSeconds"] = max(0, eta)
        if eta >= 0:
            summary = f"scale-up under way: a node should be ready in ~{format_duration(eta)}"
        else:
            severity = Severity.warning
            summary = f"scale-up overdue by {format_duration(-eta)} against its cold start"
        evidence.append(f"cold start {cold.describe()} (from {cold.source})")
    else:
        summary = "scale-up under way (no cold-start figure: give --contract or annotate the pool)"
    wait = a.max_queue_wait(pod)
    if cold is not None and wait is not None and cold.total > wait:
        severity = Severity.warning
        evidence.append(
            f"cold start {format_duration(cold.total)} exceeds the class's maxQueueWait "
            f"{format_duration(wait)}: the promise cannot be kept by scaling up"
        )
    return Finding(
        Domain.autoscaler,
        "scale-up-in-progress",
        severity,
        case.subject,
        summary,
        tuple(evidence),
        "wait for the node (provision, driver, device plugin, image pull, model load); for "
        "predictable peaks pre-warm gpu-burst instead of relying on scale-up (43.4); if the "
        "NodeClaim stalls, read its events (provider capacity, driver install)",
        data,
    )


# --- step 6: memory -----------------------------------------------------------------------------


def check_memory(a: Analysis, case: Case) -> Finding | None:
    subjects = [case.target] if case.target is not None else case.members or case.pods
    records = [r for p in subjects for r in oom_history(p)]
    if not records and subjects and case.target is None:
        records = [r for p in a.siblings(subjects[0])[:50] for r in oom_history(p)]
    first = subjects[0] if subjects else None
    service = service_of(a.contract, first) if first is not None else None
    profile = (
        memory_profile(a.contract, service, first)
        if service is not None and a.contract is not None
        else None
    )
    if not records and (profile is None or not profile.over):
        note = "no OOM in container statuses"
        if profile is not None:
            note += f"; {profile.lines()[-1]}"
        case.note(Domain.memory, "ok", note)
        return None
    evidence = [r.line(a.now) for r in records[:5]]
    if case.target is not None:
        seen = {r.pod for r in records}
        siblings = a.siblings(case.target)[:50]
        more = [r for p in siblings for r in oom_history(p) if r.pod not in seen]
        evidence.extend(f"sibling {r.line(a.now)}" for r in more[:3])
    if profile is not None:
        evidence.extend(profile.lines())
    gpu_records = [r for r in records if not r.host_memory]
    if records and not gpu_records:
        return _host_oom(a, case, records, evidence)
    code = "gpu-oom" if records else "model-exceeds-gpu"
    summary = (
        f"out of GPU memory: {len(gpu_records)} container(s) crashed on CUDA out-of-memory"
        if records
        else f"the model does not fit its GPUs at contextLength {profile.context}"  # type: ignore[union-attr]
    )
    action = (
        "lower the batch (max concurrent sequences), cap the context length"
        + (f" (at most {profile.max_context} tokens fit)" if profile is not None else "")
        + ", quantize the weights (fp8/int4), or split the service over more GPUs "
        "(tensor parallel) (Table 43-6: GPU OOM)"
    )
    return Finding(
        Domain.memory,
        code,
        Severity.error,
        case.subject,
        summary,
        tuple(evidence),
        action,
        {"ooms": len(records), "kind": "gpu"},
    )


def _host_oom(a: Analysis, case: Case, records: list[Any], evidence: list[str]) -> Finding:
    """OOMKilled: the kernel's cgroup OOM killer, host memory, not the GPU."""
    first = records[0]
    pod = a.pods.get(first.pod)
    owner = owner_of(a, pod) if pod is not None else None
    what = "init container" if first.init else "container"
    limit = first.limit
    if limit:
        more = format_amount("memory", _round_gib(limit * 3 // 2))
        command = (
            f"`{owner.kubectl('set resources', f'-c {first.container} --limits=memory={more}')}`"
            if owner is not None and owner.kind in SET_RESOURCES_KINDS
            else f"edit the manifest of {owner or first.pod} and re-create it"
        )
        raise_it = (
            f"raise the memory limit of {what} {first.container} (now "
            f"{format_amount('memory', limit)}) in {owner or first.pod}: {command} (1.5 x now; "
            "size it to the peak: model weights loaded through host RAM, tokenizer, dataloader)"
        )
    else:
        raise_it = (
            f"{what} {first.container} has no memory limit: the node itself ran out of memory; "
            "give the pod a memory request that covers its peak so it lands on a node with room"
        )
    return Finding(
        Domain.memory,
        "oom-killed",
        Severity.error,
        case.subject,
        f"out of host memory: {len(records)} container(s) OOMKilled by the kernel at their "
        "memory limit (cgroup), not GPU memory",
        tuple(evidence),
        raise_it + "; or lower what it holds in host memory",
        {"ooms": len(records), "kind": "host", "container": first.container, "init": first.init},
    )


def _round_gib(value: int) -> int:
    gib = 2**30
    return -(-value // gib) * gib


# --- fallback: capacity -------------------------------------------------------------------------


def check_capacity(a: Analysis, case: Case) -> Finding:
    if case.kind == "Workload" and not case.pods:
        return Finding(
            Domain.capacity,
            "admissible-now",
            Severity.info,
            case.subject,
            "quota is free: Kueue should admit it at its next cycle",
            tuple(_kueue_said(case.workload)) if case.workload else (),
            "if it stays pending, check the Kueue controller's logs and the Workload's "
            "admission checks",
        )
    pods = case.placeable or case.pods
    pod = pods[0]
    outcome = a.placement(pod)
    if outcome.fits:
        scheduler = pod.scheduler_name
        return Finding(
            Domain.capacity,
            "fits-now",
            Severity.info,
            case.subject,
            f"fits on {outcome.feasible} node(s) now: {scheduler} should bind it at its next "
            "attempt",
            tuple(_scheduler_said(a, pod)),
            f"if it stays Pending, check that the scheduler {scheduler!r} is running and "
            f"picks up the pod (schedulerName): {_scheduler_pods_command(scheduler)}, and "
            f"`kubectl -n {pod.namespace} get events --field-selector "
            f"involvedObject.name={pod.name}`",
            {"feasibleNodes": outcome.feasible},
        )
    return Finding(
        Domain.capacity,
        "insufficient-capacity",
        Severity.warning,
        case.subject,
        "the pool is full: no node has room for it now",
        (f"kube-scheduler: {outcome.message}", *_scheduler_said(a, pod)),
        "wait for running work to finish, add nodes to the pool, or apply the shortage plan "
        "(`gpupact audit`: protect online, release half-started gangs, queue low-priority "
        "batch)",
        {"message": outcome.message},
    )


def _scheduler_pods_command(scheduler: str) -> str:
    if scheduler == "volcano":
        return "`kubectl -n volcano-system get pods`"
    if scheduler in ("default-scheduler", ""):
        return "`kubectl -n kube-system get pods -l component=kube-scheduler`"
    return f"`kubectl get pods -A | grep {scheduler}`"


STEPS: tuple[Callable[[Analysis, Case], Finding | None], ...] = (
    check_nodes,
    check_placement,
    check_gang,
    check_quota,
    check_autoscaler,
    check_memory,
)


def walk(a: Analysis, case: Case) -> Diagnosis:
    finding = None
    pod = case.target
    if pod is not None and pod.phase == "Running":
        # crash-looping, not Pending: scheduling worked, only the memory step applies
        for domain in (Domain.nodes, Domain.placement, Domain.gang, Domain.quota):
            case.note(domain, "n/a", f"running on {pod.node_name}")
        finding = check_memory(a, case)
        return _diagnosis(a, case, finding or check_capacity(a, case))
    for step in STEPS:
        finding = step(a, case)
        if finding is not None:
            break
    if finding is None:
        finding = check_capacity(a, case)
    return _diagnosis(a, case, finding)


def _diagnosis(a: Analysis, case: Case, finding: Finding | None) -> Diagnosis:
    pending = None
    if finding is not None and case.created is not None:
        pending = a.age(case.created)
    return Diagnosis(
        subject=case.subject,
        kind=case.kind,
        namespace=case.namespace,
        name=case.name,
        status=case.status,
        pending_seconds=pending,
        checked=tuple(case.notes),
        finding=finding,
        members=tuple(p.key for p in case.members) if case.kind != "Pod" else (),
    )


# --- subjects -----------------------------------------------------------------------------------


def _workload_case(a: Analysis, wl: KueueObject) -> Case:
    members = a.workload_pods.get(wl.key, [])
    group = next((a.podgroup_of(p) for p in members if a.podgroup_of(p) is not None), None)
    return Case(
        "Workload",
        wl.meta.namespace,
        wl.meta.name,
        "Pending (no quota reserved)",
        wl.meta.created,
        pods=[p for p in members if is_waiting(p)],
        members=list(members),
        group=group,
        workload=wl,
    )


def _group_case(a: Analysis, group: GangObject) -> Case:
    counts = gang_counts(a, group)
    members = a.members.get(group.key, [])
    workload = next((a.workload_of(p) for p in members if a.workload_of(p) is not None), None)
    return Case(
        "PodGroup",
        group.podgroup.namespace,
        group.podgroup.name,
        f"{group.podgroup.phase.value} ({counts.ready}/{counts.min_member} ready)",
        group.meta.created,
        pods=counts.waiting,
        members=list(members),
        group=group,
        workload=workload,
    )


def _pod_case(a: Analysis, pod: Pod) -> Case:
    return Case(
        "Pod",
        pod.namespace,
        pod.name,
        _pod_status(pod),
        time_or_none(pod.creation_timestamp),
        pods=[pod] if is_waiting(pod) else [],
        members=[pod],
        group=a.podgroup_of(pod),
        workload=a.workload_of(pod),
        target=pod,
    )


def _workload_pending(wl: KueueObject) -> bool:
    item = wl.parsed
    return item.admission is None and not item.finished and item.active


def pending_cases(a: Analysis, namespace: str | None = None) -> list[Case]:
    """Every subject with something Pending: Workloads without quota, PodGroups short of
    minMember or with waiting members, other Pending pods, and running pods crash-looping on
    out-of-memory (GPU OOM shows there, not as Pending)."""
    cases: list[Case] = []
    covered: set[str] = set()

    def wanted(ns: str) -> bool:
        return namespace is None or ns == namespace

    for key in sorted(a.workloads):
        wl = a.workloads[key]
        if wanted(wl.meta.namespace) and _workload_pending(wl):
            case = _workload_case(a, wl)
            cases.append(case)
            covered.update(p.key for p in case.members)
            if case.group is not None:
                covered.add("podgroup:" + case.group.key)
    for key in sorted(a.podgroups):
        group = a.podgroups[key]
        if not wanted(group.podgroup.namespace) or "podgroup:" + key in covered:
            continue
        phase = group.podgroup.phase
        if phase is PodGroupPhase.COMPLETED:
            continue
        counts = gang_counts(a, group)
        if counts.waiting or (
            phase is not PodGroupPhase.RUNNING and counts.ready < counts.min_member
        ):
            case = _group_case(a, group)
            cases.append(case)
            covered.update(p.key for p in case.members)
    for pod in sorted(a.snapshot.pods, key=lambda p: p.key):
        if pod.key in covered or not wanted(pod.namespace):
            continue
        if (pod.phase == "Pending" and not pod.terminating) or (
            pod.phase == "Running"
            and waiting_reason(pod) == "CrashLoopBackOff"
            and oom_history(pod)
        ):
            cases.append(_pod_case(a, pod))
    return cases


def target_case(a: Analysis, target: str) -> Case:
    """`NS/POD`, `pod/NS/NAME`, `podgroup/NS/NAME` or `workload/NS/NAME`."""
    parts = target.split("/")
    kind = "pod"
    if len(parts) == 3:
        kind, parts = parts[0].lower(), parts[1:]
    if len(parts) != 2 or not all(parts):
        raise InputError(
            f"target {target!r}: expected NAMESPACE/POD (or podgroup/NS/NAME, workload/NS/NAME)"
        )
    key = "/".join(parts)
    if kind in ("pod", "pods", "po"):
        pod = a.pods.get(key)
        if pod is None:
            raise InputError(f"no pod {key} in the snapshot")
        return _pod_case(a, pod)
    if kind in ("podgroup", "podgroups", "pg"):
        group = a.podgroups.get(key)
        if group is None:
            raise InputError(f"no PodGroup {key} in the snapshot")
        return _group_case(a, group)
    if kind in ("workload", "workloads", "wl"):
        wl = a.workloads.get(key)
        if wl is None:
            raise InputError(f"no Workload {key} in the snapshot")
        return _workload_case(a, wl)
    raise InputError(f"target {target!r}: unknown kind {kind!r} (pod, podgroup, workload)")


def _is_pending_case(case: Case) -> bool:
    if case.kind == "Workload":
        return case.workload is not None and _workload_pending(case.workload)
    if case.kind == "PodGroup":
        return bool(case.pods) or (
            case.group is not None
            and case.group.podgroup.phase is not PodGroupPhase.RUNNING
            and case.group.podgroup.phase is not PodGroupPhase.COMPLETED
        )
    return (
        case.target is not None and case.target.phase == "Pending" and not case.target.terminating
    )


# --- the report ---------------------------------------------------------------------------------


@dataclass
class DiagnoseReport:
    source: str
    now: int
    nodes: int
    pods: int
    diagnoses: list[Diagnosis]

    @property
    def findings(self) -> list[Finding]:
        return [d.finding for d in self.diagnoses if d.finding is not None]

    def to_dict(self) -> dict[str, Any]:
        by_domain: dict[str, int] = {}
        for f in self.findings:
            by_domain[f.domain.value] = by_domain.get(f.domain.value, 0) + 1
        return {
            "source": self.source,
            "now": self.now,
            "cluster": {"nodes": self.nodes, "pods": self.pods},
            "summary": {"subjects": len(self.diagnoses), "byDomain": by_domain},
            "diagnoses": [d.to_dict() for d in self.diagnoses],
        }


def group_by_owner(a: Analysis, cases: list[Case], diagnoses: list[Diagnosis]) -> list[Diagnosis]:
    """Pods of one owner (Deployment, StatefulSet, Job, ...) stopped by the same cause (same
    finding code, summary and action) are reported once, as the owner with its pods as
    members: twenty replicas of one Deployment are one problem, not twenty."""
    groups: dict[tuple, list[tuple[Case, Diagnosis]]] = {}
    order: list[tuple] = []
    for case, d in zip(cases, diagnoses, strict=True):
        f = d.finding
        if case.kind != "Pod" or case.target is None or f is None:
            key: tuple = ("single", d.subject)
        else:
            owner = owner_of(a, case.target)
            key = (
                (owner, f.code, f.summary, f.action)
                if owner.kind != "Pod"
                else ("single", d.subject)
            )
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append((case, d))
    out = []
    for key in order:
        items = groups[key]
        if len(items) == 1:
            out.append(items[0][1])
            continue
        owner = key[0]
        first = items[0][1]
        pods = [c.target.key for c, _ in items if c.target is not None]
        waits = [d.pending_seconds for _, d in items if d.pending_seconds is not None]
        subject = f"{owner.kind.lower()} {owner.namespace}/{owner.name}"
        shown = ", ".join(p.split("/", 1)[1] for p in pods[:5])
        more = f" (+{len(pods) - 5} more)" if len(pods) > 5 else ""
        finding = replace(
            first.finding,
            subject=subject,
            evidence=(
                f"{len(pods)} pod(s) of {owner} stopped by this: {shown}{more}",
                *first.finding.evidence,
            ),
        )
        out.append(
            replace(
                first,
                subject=subject,
                kind=owner.kind,
                namespace=owner.namespace,
                name=owner.name,
                pending_seconds=max(waits) if waits else None,
                finding=finding,
                members=tuple(pods),
            )
        )
    return out


def _case_matches(case: Case, selector: Selector) -> bool:
    """`-l`: the subject's own labels, or any of its pods' (a PodGroup or Workload is selected
    by the labels its pods carry, as `kubectl get pods -l` would find them)."""
    own = case.group.meta.labels if case.group is not None else None
    if case.workload is not None:
        own = case.workload.meta.labels
    if own is not None and selector.matches(own):
        return True
    pods = [case.target] if case.target is not None else []
    return any(selector.matches(p.labels) for p in [*pods, *case.members, *case.pods])


def diagnose(
    a: Analysis,
    target: str | None = None,
    *,
    namespace: str | None = None,
    selector: Selector | None = None,
) -> DiagnoseReport:
    """Walk the runbook for `target` (one subject) or for every Pending subject (of
    `namespace`, matching `selector`)."""
    if target is not None:
        case = target_case(a, target)
        if _is_pending_case(case):
            diagnoses = [walk(a, case)]
        else:
            finding = check_memory(a, case)
            if finding is None:
                case.notes = [StepResult(Domain.nodes, "n/a", f"not Pending: {case.status}")]
            diagnoses = [_diagnosis(a, case, finding)]
    else:
        cases = pending_cases(a, namespace)
        if selector is not None:
            cases = [case for case in cases if _case_matches(case, selector)]
        diagnoses = group_by_owner(a, cases, [walk(a, case) for case in cases])
    return DiagnoseReport(
        a.snapshot.source, a.now, len(a.snapshot.nodes), len(a.snapshot.pods), diagnoses
    )
