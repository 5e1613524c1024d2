"""Runbook step 3, gang: a PodGroup's minMember reachable now, its Volcano queue, and GPUs held
by half-started gangs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gpupact.engine.admission.reasons import format_amount
from gpupact.engine.gang import PodGroupPhase, gang_is_stale
from gpupact.engine.placement import FitResult
from gpupact.kube.objects import Pod
from gpupact.ops.cluster import Analysis
from gpupact.ops.diagnose.case import Case, is_waiting
from gpupact.ops.evidence import gpu_milli, gpus_text, holder_lines, release_command, room_lines
from gpupact.ops.findings import Domain, Finding, Severity, format_duration
from gpupact.ops.model import GangObject
from gpupact.ops.owners import owner_of


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
