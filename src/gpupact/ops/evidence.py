"""Evidence lines and filled-in actions shared by the runbook steps and the audit: GPUs per
node and who holds them, why a selector / required node affinity matches no node, the taints
that keep a pod out and the toleration that would let it in, the pods to delete.

Each reads the Analysis (the engine's state and the snapshot) and returns plain strings.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpupact.cluster.state import pod_usage
from gpupact.kube.objects import Pod
from gpupact.kube.taints import do_not_schedule_taint, find_untolerated_taint
from gpupact.ops.cluster import Analysis, required_affinity
from gpupact.ops.owners import SET_RESOURCES_KINDS, owner_of


def gpu_milli(pod: Pod) -> int:
    """GPU-milli the pod asks for (1000 per whole GPU)."""
    gpu = pod_usage(pod).gpu
    return 0 if gpu is None else gpu.total_milli


def gpus_text(milli: int) -> str:
    whole, rest = divmod(milli, 1000)
    return str(whole) if not rest else f"{milli / 1000:g}"


def room_lines(a: Analysis, nodes: Sequence[str], fractional: bool = False) -> list[str]:
    """Per pool: its eligible nodes' free GPUs, node by node (the freest first; the rest
    summarised)."""
    rooms = a.gpu_room(nodes, fractional)
    pools: dict[str, list[Any]] = {}
    for room in rooms:
        pools.setdefault(room.pool or "(no pool label)", []).append(room)
    lines = []
    for pool, items in sorted(pools.items()):
        total = sum(r.free_milli for r in items)
        shown = ", ".join(
            f"{r.node} {gpus_text(r.free_milli)}/{r.devices}" for r in items[:ROOM_NODES_SHOWN]
        )
        rest = items[ROOM_NODES_SHOWN:]
        if rest:
            spread: dict[int, int] = {}
            for r in rest:
                spread[r.free_milli] = spread.get(r.free_milli, 0) + 1
            shown += (
                f" (+{len(rest)} more: "
                + ", ".join(
                    f"{n} with {gpus_text(m)} free" for m, n in sorted(spread.items(), reverse=True)
                )
                + ")"
            )
        lines.append(
            f"pool {pool}: {gpus_text(total)} GPU(s) free on {len(items)} eligible node(s); "
            f"free/GPUs per node: {shown}"
        )
    return lines


ROOM_NODES_SHOWN = 8


def holder_lines(a: Analysis, nodes: Sequence[str], what: str = "held by") -> list[str]:
    return [
        f"{what} {owner}: {gpus_text(milli)} GPU(s) in {pods} pod(s)"
        for owner, milli, pods in a.gpu_holders(nodes)
    ]


def _values(index: dict[str, dict[str, int]], key: str) -> str:
    seen = sorted(index.get(key, {}))
    if not seen:
        return f"no node has a {key} label"
    more = f" (+{len(seen) - 8} more)" if len(seen) > 8 else ""
    return f"values of {key}: {', '.join(seen[:8])}{more}"


def _count(index: dict[str, dict[str, int]], total: int, req: Any) -> int:
    """Nodes matching one requirement, from the label index: a requirement reads only its
    own key, so each distinct value (and the key's absence) is tested once."""
    values = index.get(req.key, {})
    hits = sum(n for v, n in values.items() if req.matches({req.key: v}))
    absent = total - sum(values.values())
    return hits + (absent if absent and req.matches({}) else 0)


def affinity_lines(a: Analysis, pod: Pod) -> list[str]:
    """Why the pod's nodeSelector and required node affinity match no node: each selector
    entry or affinity expression no node satisfies on its own (with the values that exist),
    or, when each is satisfiable, which ones no node satisfies together."""
    nodes, index = a.snapshot.nodes, a.label_index
    lines: list[str] = []
    selector = sorted(pod.node_selector.items())
    for key, value in selector:
        if value not in index.get(key, {}):
            lines.append(f"nodeSelector {key}={value}: no node has it ({_values(index, key)})")
    by_selector = [n for n in nodes if all(n.labels.get(k) == v for k, v in selector)]
    if selector and not by_selector and not lines:
        counts = ", ".join(f"{k}={v} ({index[k][v]} node(s))" for k, v in selector)
        lines.append(f"nodeSelector {counts}: no node has them all together")
    affinity = pod.node_affinity
    terms = affinity.required.terms if affinity is not None and affinity.required else ()
    for i, term in enumerate(terms, 1):
        where = f"required node affinity term {i}"
        if term.issues:
            lines.append(f"{where}: invalid ({term.issues[0]}): it never matches")
            continue
        alone = []
        for req in term.match_expressions:
            count = _count(index, len(nodes), req)
            if count == 0:
                lines.append(f"{where}: {req} matches no node ({_values(index, req.key)})")
            alone.append(f"{req} ({count} node(s))")
        if any(line.startswith(where) for line in lines):
            continue
        if not any(term.matches(n.name, n.labels) for n in nodes):
            lines.append(f"{where}: {' and '.join(alone)} match no node together")
        elif selector:
            lines.append(
                f"{where} matches nodes, but none of them also has nodeSelector "
                + ", ".join(f"{k}={v}" for k, v in selector)
            )
    if not lines:
        lines.append("the required node affinity matches no node")
    return lines


def untolerated(pod: Pod, nodes: Sequence[Any]) -> list[Any]:
    """The distinct taints that keep the pod off `nodes`, most common first."""
    counts: dict[Any, int] = {}
    for n in nodes:
        taint = find_untolerated_taint(n.taints, pod.tolerations, do_not_schedule_taint)
        if taint is not None:
            counts[taint] = counts.get(taint, 0) + 1
    return sorted(counts, key=lambda t: (-counts[t], str(t)))


def taints_and_pools(a: Analysis, pod: Pod) -> tuple[list[Any], list[str]]:
    """The taints keeping the pod off the nodes it selects, and their pools (per shape)."""
    key = ("taints", a.shape_of(pod))
    if key[1] is not None and key in a.memo:
        return a.memo[key]
    selected = [n for n in a.snapshot.nodes if required_affinity(pod).matches(n.name, n.labels)]
    found = (
        untolerated(pod, selected),
        sorted({a.roles.node_pool(n) for n in selected if a.roles.node_pool(n)}),
    )
    if key[1] is not None:
        a.memo[key] = found
    return found


def toleration_yaml(taint: Any) -> str:
    fields = [f'"key":"{taint.key}"']
    if taint.value:
        fields += ['"operator":"Equal"', f'"value":"{taint.value}"']
    else:
        fields.append('"operator":"Exists"')
    fields.append(f'"effect":"{taint.effect}"')
    return "{" + ",".join(fields) + "}"


def toleration_action(a: Analysis, pod: Pod, taints: list[Any], pools: list[str]) -> str:
    owner = owner_of(a, pod)
    if not taints:
        return ""
    taint = taints[0]
    toleration = toleration_yaml(taint)
    where = f"pool {', '.join(pools)}" if pools else "those nodes"
    if owner.kind in SET_RESOURCES_KINDS:
        has = template_has_tolerations(a, pod)
        path = "/spec/template/spec/tolerations" + ("/-" if has else "")
        value = toleration if has else f"[{toleration}]"
        how = (
            f"`{owner.kubectl('patch', '--type=json')} -p "
            f'\'[{{"op":"add","path":"{path}","value":{value}}}]\'`'
        )
    else:
        how = f"add it to the manifest of {owner} and re-create it (its pod template is immutable)"
    return (
        f"if {owner} belongs in {where}, tolerate its taint {taint}: {toleration}: {how}; "
        "otherwise point its nodeSelector at its own pool - do not remove the pool taint"
    )


def template_has_tolerations(a: Analysis, pod: Pod) -> bool:
    ctrl = a.controller_of(pod)
    for template in ctrl.templates if ctrl is not None else ():
        spec = template.get("spec") if isinstance(template, dict) else None
        if isinstance(spec, dict) and spec.get("tolerations"):
            return True
    return ctrl is None and bool(pod.tolerations)


def release_command(a: Analysis, pods: Sequence[Pod]) -> str:
    """`kubectl -n NS delete pod A B ...` for the pods (one namespace per gang)."""
    if not pods:
        return "nothing to delete"
    names = " ".join(p.name for p in pods[:8]) + (" ..." if len(pods) > 8 else "")
    return f"`kubectl -n {pods[0].namespace} delete pod {names}`"
