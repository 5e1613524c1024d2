"""The cluster `gpupact simulate --snapshot DIR | --context CTX` starts from: read with ops'
readers (the same as diagnose and audit: located errors, read-only live access), handed to
the twin as a ClusterView (the twin's layer does not import ops)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from gpupact.cli.check import parse_now
from gpupact.errors import InputError
from gpupact.ops import ClusterSnapshot, open_cluster
from gpupact.ops.model import observed_at
from gpupact.twin.initial_state import ClusterView


def read_start(
    snapshot: Path | None,
    context: str | None,
    kubeconfig: Path | None,
    now: float | None,
) -> ClusterView | None:
    """None without --snapshot / --context / --kubeconfig (the twin's own template nodes).
    The moment the cluster shows, from which pod ages count: `now` (--now), else a snapshot's
    own time (its latest timestamp, as diagnose reads it; None if it holds none), else the
    wall clock of the live read."""
    if snapshot is None and context is None and kubeconfig is None:
        return None
    if snapshot is not None and (context is not None or kubeconfig is not None):
        raise InputError("give either --snapshot DIR or --context/--kubeconfig, not both")
    cluster = open_cluster(
        snapshot_dir=snapshot,
        context=context,
        kubeconfig=str(kubeconfig) if kubeconfig is not None else None,
    )
    if now is not None:
        observed: float | None = now
        taken = observed_at(cluster)
        if taken is not None and now < taken:  # pods would start after the moment shown
            raise InputError(
                f"--now: {_iso(now)} is before {_iso(taken)}, the latest time the cluster "
                "shows (a pod's start, an event): give a moment at or after it"
            )
    elif snapshot is not None:
        taken = observed_at(cluster)
        observed = float(taken) if taken is not None else None
    else:
        observed = parse_now(None).timestamp()  # the live read is now
    return view_of(cluster, observed)


def view_of(cluster: ClusterSnapshot, observed: float | None) -> ClusterView:
    return ClusterView(
        source=cluster.source,
        observed=observed,
        nodes=list(cluster.nodes),
        pods=list(cluster.pods),
        kueue=[o.raw for o in cluster.kueue],
        jobs={
            c.meta.key: c.raw
            for c in cluster.controllers
            if c.kind == "Job" and c.api_group == "batch"
        },
        priority_classes={name: pc.value for name, pc in cluster.priority_classes.items()},
        volcano_queues=list(cluster.volcano_queues.values()),
        podgroups=[g.podgroup for g in cluster.podgroups],
    )


def _iso(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
