"""Building blocks of preemption: time, importance, budgets, arguments, the node pick, the fit
check protocol, the snapshot; and bad input."""

from __future__ import annotations

from dataclasses import replace

import pytest
from preemption_helpers import (
    HIGH,
    LARGE,
    LOW,
    MID,
    NOW,
    SMALL,
    VERY_LARGE,
    names,
    node,
    pdb,
    pod,
    statuses,
)
from preemption_helpers import snapshot as make_snapshot

from gpupact.engine.preemption import (
    Candidate,
    DefaultPreemption,
    DefaultPreemptionArgs,
    FilterChainFit,
    PreemptionSnapshot,
    calculate_num_candidates,
    filter_pods_with_pdb_violation,
    format_time_nanos,
    more_important_pod,
    nominated_node_name,
    parse_pdb,
    parse_preemption_args,
    parse_time_nanos,
    pick_one_node_for_preemption,
    pod_start_time,
)
from gpupact.errors import FieldError
from gpupact.kube.status import Code, Status

# --- time and importance -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "nanos"),
    [
        ("1970-01-01T00:00:00Z", 0),
        ("1970-01-01T00:00:00.000000005Z", 5),
        ("1970-01-01T00:00:01.5Z", 1_500_000_000),
        ("1970-01-01T01:00:00+01:00", 0),
        ("2024-03-01T10:00:00.123456789123Z", 1_709_287_200_123_456_789),
        ("2024-03-01t10:00:00z", 1_709_287_200_000_000_000),
    ],
)
def test_parse_time_nanos(text, nanos):
    assert parse_time_nanos(text) == nanos


@pytest.mark.parametrize("nanos", [0, 1, 5, 999_999_999, 1_709_287_200_123_456_789])
def test_format_time_round_trips(nanos):
    assert parse_time_nanos(format_time_nanos(nanos)) == nanos


@pytest.mark.parametrize("text", ["yesterday", "2024-13-01T00:00:00Z", "2024-01-01T00:00:00"])
def test_bad_timestamp_is_a_field_error(text):
    with pytest.raises(FieldError) as err:
        parse_time_nanos(text)
    assert err.value.path == ("status", "startTime")


def test_start_time_defaults_to_now():
    assert pod_start_time(pod("a"), NOW) == NOW
    assert pod_start_time(pod("a", start=7), NOW) == 7


def test_more_important_pod():
    assert more_important_pod(pod("a", priority=MID), pod("b", priority=LOW, start=0), NOW)
    assert more_important_pod(pod("a", start=1), pod("b", start=2), NOW)
    assert more_important_pod(pod("a", start=1), pod("b"), NOW)  # b starts "now"
    assert not more_important_pod(pod("a", start=3), pod("b", start=3), NOW)


# --- budgets -------------------------------------------------------------------------------------


def test_budget_is_spent_in_order():
    foo = {"app": "foo"}
    pods = [pod(f"p{i}", labels=foo) for i in range(3)]
    violating, fine = filter_pods_with_pdb_violation(pods, [pdb(foo, 1)])
    assert (names(violating), names(fine)) == (["p1", "p2"], ["p0"])


def test_budget_covers_nothing_without_labels_or_selector():
    empty = parse_pdb({"metadata": {"name": "x"}, "spec": {"selector": {}}, "status": {}})
    missing = parse_pdb({"metadata": {"name": "x"}, "status": {}})
    unlabelled = pod("bare")
    labelled = pod("app", labels={"app": "foo"})
    not_exists = parse_pdb(
        {
            "spec": {"selector": {"matchExpressions": [{"key": "x", "operator": "DoesNotExist"}]}},
            "status": {"disruptionsAllowed": 0},
        }
    )
    assert not empty.covers(labelled) and not missing.covers(labelled)
    assert not not_exists.covers(unlabelled)  # a pod without labels matches no budget
    assert not_exists.covers(labelled)


@pytest.mark.parametrize(
    ("obj", "path"),
    [
        ({"status": {"disruptionsAllowed": "1"}}, ("status", "disruptionsAllowed")),
        ({"status": {"disruptionsAllowed": True}}, ("status", "disruptionsAllowed")),
        ({"status": {"disruptedPods": ["a"]}}, ("status", "disruptedPods")),
        ({"kind": "Pod"}, ("kind",)),
        ({"metadata": {"namespace": 3}}, ("metadata", "namespace")),
        ({"spec": []}, ("spec",)),
        ([], ()),
    ],
)
def test_bad_pdb_is_a_field_error(obj, path):
    with pytest.raises(FieldError) as err:
        parse_pdb(obj)
    assert err.value.path == path


def test_bad_pdb_selector_is_a_field_error():
    bad = {"spec": {"selector": {"matchExpressions": [{"key": "a", "operator": "Near"}]}}}
    with pytest.raises(FieldError) as err:
        parse_pdb(bad, ("pdbs", 0))
    assert err.value.path[:3] == ("pdbs", 0, "spec")


# --- arguments and candidate count -------------------------------------------------------------


@pytest.mark.parametrize(
    ("nodes", "percentage", "absolute", "expected"),
    [(5, 40, 1, 2), (3, 10, 100, 3), (1000, 10, 100, 100), (5000, 10, 100, 500), (5, 0, 2, 2)],
)
def test_calculate_num_candidates(nodes, percentage, absolute, expected):
    args = DefaultPreemptionArgs(percentage, absolute)
    assert calculate_num_candidates(nodes, args) == expected


def test_parse_preemption_args():
    assert parse_preemption_args(None) == DefaultPreemptionArgs(10, 100)
    assert parse_preemption_args({"minCandidateNodesAbsolute": 5}) == DefaultPreemptionArgs(10, 5)
    assert parse_preemption_args(
        {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 1}
    ) == DefaultPreemptionArgs(0, 1)


@pytest.mark.parametrize(
    ("obj", "path"),
    [
        ({"minCandidateNodesPercentage": 101}, ("args", "minCandidateNodesPercentage")),
        ({"minCandidateNodesPercentage": -1}, ("args", "minCandidateNodesPercentage")),
        ({"minCandidateNodesAbsolute": -1}, ("args", "minCandidateNodesAbsolute")),
        (
            {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
            ("args", "minCandidateNodesPercentage"),
        ),
        ({"minCandidateNodesAbsolute": "3"}, ("args", "minCandidateNodesAbsolute")),
        ({"minCandidateNodesAbsolute": 2.5}, ("args", "minCandidateNodesAbsolute")),
        ({"candidates": 3}, ("args", "candidates")),
        ([1], ("args",)),
    ],
)
def test_bad_preemption_args(obj, path):
    with pytest.raises(FieldError) as err:
        parse_preemption_args(obj, ("args",))
    assert err.value.path == path


# --- picking a node ------------------------------------------------------------------------------


def candidate(node_name, *victims, violations=0):
    return Candidate(node_name, tuple(victims), violations)


def test_pick_criteria_in_order():
    low = pod("l", priority=LOW, start=0)
    mid = pod("m", priority=MID, start=0)
    # fewest budget violations beats everything else
    assert (
        pick_one_node_for_preemption(
            [candidate("a", low, violations=1), candidate("b", mid)], now=NOW
        ).node
        == "b"
    )
    # then the lowest highest priority
    assert (
        pick_one_node_for_preemption([candidate("a", mid), candidate("b", low, low)], now=NOW).node
        == "b"
    )
    # then the smallest adjusted sum: two negative pods cost more than one
    neg = pod("n", priority=-100, start=0)
    assert (
        pick_one_node_for_preemption(
            [candidate("a", low, neg, neg), candidate("b", low, neg)], now=NOW
        ).node
        == "b"
    )
    # then the latest earliest start among highest-priority victims; unstarted = now
    early, late, unstarted = (
        pod(n, priority=MID, start=s) for n, s in (("e", 1), ("l", 9), ("u", None))
    )
    assert (
        pick_one_node_for_preemption([candidate("a", early), candidate("b", late)], now=NOW).node
        == "b"
    )
    assert (
        pick_one_node_for_preemption(
            [candidate("a", late), candidate("b", unstarted)], now=NOW
        ).node
        == "b"
    )
    # then the first candidate
    assert (
        pick_one_node_for_preemption([candidate("a", late), candidate("b", late)], now=NOW).node
        == "a"
    )
    assert pick_one_node_for_preemption([], now=NOW) is None


def test_pick_sum_wraps_like_int64():
    # Go sums in int64: with (absurd) huge priorities the larger sum wraps negative and wins,
    # where exact arithmetic would pick the smaller sum. A Pod file cannot carry such a priority
    # (spec.priority is an int32, refused past it at load), so the engine's Pod is built directly.
    huge = replace(pod("h", start=0), priority=2**62)
    wrapped = candidate("a", huge, huge)  # 2 * (2^62 + 2^31) passes 2^63 - 1
    plain = candidate("b", huge)
    assert pick_one_node_for_preemption([plain, wrapped], now=NOW).node == "a"


# --- the fit check protocol ---------------------------------------------------------------------


def test_filter_chain_fit_subtracts_only_pods_on_the_node():
    nodes = [node("node1"), node("node2")]
    here = pod("here", on="node1", priority=LOW, req=LARGE)
    there = pod("there", on="node2", priority=LOW, req=LARGE)
    fits = FilterChainFit(nodes, [here, there])
    incoming = pod("p", priority=HIGH, req=LARGE)
    assert fits(incoming, nodes[0], ()).code is Code.UNSCHEDULABLE
    assert not fits(incoming, nodes[0], [there]).ok
    assert fits(incoming, nodes[0], [here]).ok
    assert not fits(incoming, nodes[0], ()).ok  # the base state was not changed


def test_a_custom_fit_check_is_used():
    calls: list[tuple[str, tuple[str, ...]]] = []

    def fits(p, n, removed):
        calls.append((n.name, tuple(sorted(v.name for v in removed))))
        return (
            Status() if "big" in {v.name for v in removed} else Status(Code.UNSCHEDULABLE, ("no",))
        )

    cluster = make_snapshot(
        [node("node1")],
        [
            pod("big", on="node1", priority=LOW, req=LARGE),
            pod("tiny", on="node1", priority=MID, req=SMALL),
        ],
    )
    outcome = DefaultPreemption().post_filter(
        pod("p", priority=HIGH, req=VERY_LARGE),
        cluster,
        statuses(Code.UNSCHEDULABLE, "node1"),
        now=NOW,
        fits=fits,
    )
    assert names(outcome.victims) == ["big"]
    # all removed, then reprieve the most important (tiny: kept), then big (must go)
    assert calls == [("node1", ("big", "tiny")), ("node1", ("big",)), ("node1", ())]


def test_snapshot_keeps_running_pods_of_known_nodes():
    done = pod("done", on="node1")
    done = type(done)(
        **{**{f: getattr(done, f) for f in done.__dataclass_fields__}, "phase": "Succeeded"}
    )
    cluster = PreemptionSnapshot(
        [node("node1")], [pod("a", on="node1"), pod("elsewhere", on="node9"), pod("pending"), done]
    )
    assert names(cluster.pods_on("node1")) == ["a"]
    assert names(cluster.running_pods()) == ["a"]
    assert cluster.node("node9") is None and cluster.pods_on("node9") == ()


def test_nominated_node_name_is_read_from_status():
    assert nominated_node_name(pod("p", nominated="node1")) == "node1"
    assert nominated_node_name(pod("p")) == ""


def test_start_time_ties_keep_node_order_deterministic():
    # two identical candidates: the first in node order wins, run after run
    nodes = [node("node2"), node("node1")]
    pods = [
        pod("a", on="node2", priority=LOW, req=LARGE),
        pod("b", on="node1", priority=LOW, req=LARGE),
    ]
    cluster = make_snapshot(nodes, pods)
    filtered = statuses(Code.UNSCHEDULABLE, "node1", "node2")
    for _ in range(3):
        outcome = DefaultPreemption().post_filter(
            pod("p", priority=HIGH, req=LARGE), cluster, filtered, now=NOW
        )
        assert outcome.result is not None and outcome.result.nominated_node_name == "node2"


def test_malformed_start_time_is_a_field_error():
    bad = pod("bad", on="node1", priority=LOW, req=LARGE)
    bad = type(bad)(
        **{**{f: getattr(bad, f) for f in bad.__dataclass_fields__}, "start_time": "soon"}
    )
    other = pod("other", on="node1", priority=LOW, req=LARGE, start=1)
    cluster = make_snapshot([node("node1")], [bad, other])
    with pytest.raises(FieldError):
        DefaultPreemption().post_filter(
            pod("p", priority=HIGH, req=VERY_LARGE),
            cluster,
            statuses(Code.UNSCHEDULABLE, "node1"),
            now=NOW,
        )
