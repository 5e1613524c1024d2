"""Runbook step 2, placement: taints, tolerations, selectors and affinity the scheduler cannot
satisfy, and GPUs free in total but fragmented across nodes (kube-scheduler).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpupact.cluster.state import pod_usage
from gpupact.kube.objects import Pod
from gpupact.kube.taints import do_not_schedule_taint, find_untolerated_taint
from gpupact.ops.cluster import KUEUE_GATE, Analysis, PlacementOutcome
from gpupact.ops.diagnose.case import Case, gates, unique_shapes
from gpupact.ops.evidence import (
    affinity_lines,
    gpu_milli,
    gpus_text,
    holder_lines,
    room_lines,
    taints_and_pools,
    toleration_action,
)
from gpupact.ops.findings import Domain, Finding, Severity
from gpupact.ops.owners import owner_of


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


def scheduler_said(a: Analysis, pod: Pod) -> list[str]:
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
    evidence = [f"kube-scheduler: {outcome.message}", *scheduler_said(a, pod), *lines]
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
        (*parts.lines, f"kube-scheduler: {outcome.message}", *scheduler_said(a, pod)),
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
