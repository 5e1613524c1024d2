"""Refusals as data, and the kube-scheduler `FitError` summary built from them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from gpupact.kube.status import Status

# upstream ErrNoNodesAvailable: the scheduler's answer when the cluster has no node at all
NO_NODES_AVAILABLE = "no nodes available to schedule pods"


@dataclass(frozen=True, slots=True)
class Reason:
    """Why one subject (a node, a pod, a queue) refused: the plugin, its upstream status code,
    the upstream reason string (what the scheduler prints), and our own detail for humans."""

    code: str
    message: str
    subject: str
    plugin: str = ""
    detail: str = ""


# (plugin, status code as its string value, upstream reason) -> how many nodes gave it
ReasonCounts = Mapping[tuple[str, str, str], int]


def reasons_from_counts(subject: str, counts: ReasonCounts) -> tuple[Reason, ...]:
    """One Reason per (plugin, code, reason), detail "<n> node(s)", in the mapping's order."""
    return tuple(
        Reason(str(code), message, subject, plugin, f"{n} node(s)")
        for (plugin, code, message), n in counts.items()
    )


def fit_error_message(
    num_all_nodes: int,
    node_statuses: Mapping[str, Status],
    *,
    prefilter_msg: str = "",
    postfilter_msg: str = "",
) -> str:
    """`0/N nodes are available: <prefilter>. <histogram>. <postfilter>.` as kube-scheduler
    prints it: each reason counted over nodes, rendered "<count> <reason>" and sorted as
    strings (so "10 x" sorts before "2 y", exactly like Go's sort.Strings)."""
    counts: Counter[str] = Counter()
    for status in node_statuses.values():
        counts.update(status.reasons)
    return fit_error_message_from_counts(
        num_all_nodes, counts, prefilter_msg=prefilter_msg, postfilter_msg=postfilter_msg
    )


def fit_error_message_from_counts(
    num_all_nodes: int,
    reason_counts: Mapping[str, int],
    *,
    prefilter_msg: str = "",
    postfilter_msg: str = "",
) -> str:
    """`fit_error_message` from reason -> node count (the vectorised engine counts directly)."""
    if num_all_nodes == 0:
        return NO_NODES_AVAILABLE
    msg = f"0/{num_all_nodes} nodes are available:"
    if prefilter_msg:
        msg += f" {prefilter_msg}."
    else:
        histogram = sorted(f"{n} {reason}" for reason, n in reason_counts.items() if n)
        if histogram:
            msg += f" {', '.join(histogram)}."
    if postfilter_msg:
        msg += f" {postfilter_msg}."
    return msg
