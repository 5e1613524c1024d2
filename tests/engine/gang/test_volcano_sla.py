"""Volcano `sla`: waiting times from the plugin argument or the PodGroup annotation, job
order by deadline, enqueue permitted once a job has waited its time; Go durations."""

from __future__ import annotations

import pytest

from gpupact.engine.gang import PodGroupPhase, parse_podgroup
from gpupact.engine.preemption.importance import format_time_nanos
from gpupact.engine.volcano import PluginOption, Session
from gpupact.engine.volcano.model import parse_queue
from gpupact.kube.durations import parse_go_duration
from gpupact.kube.objects import parse_node

SECOND = 1_000_000_000
NOW = 1_704_067_200 * SECOND
PROPORTION = PluginOption("proportion", frozenset({"queueOrder", "allocatable", "jobEnqueued"}))


def group(name: str, age_s: int | None, waiting: str | None = None, cpu: str = "2") -> dict:
    meta: dict = {"name": name, "namespace": "ns"}
    if age_s is not None:
        meta["creationTimestamp"] = format_time_nanos(NOW - age_s * SECOND)
    if waiting is not None:
        meta["annotations"] = {"sla-waiting-time": waiting}
    return {
        "metadata": meta,
        "spec": {"minMember": 1, "queue": "q", "minResources": {"cpu": cpu}},
        "status": {"phase": "Pending"},
    }


def session(groups: list[dict], tiers, capability: str = "2") -> Session:
    node = {"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "8", "pods": "110"}}}
    queue = {"metadata": {"name": "q"}, "spec": {"weight": 1, "capability": {"cpu": capability}}}
    return Session(
        nodes=[parse_node(node)],
        pods=[],
        podgroups=[parse_podgroup(g) for g in groups],
        queues=[parse_queue(queue)],
        tiers=tiers,
        enabled_actions=["enqueue"],
        now_nanos=NOW,
    )


def sla(points: set[str], **arguments) -> PluginOption:
    return PluginOption("sla", frozenset(points), arguments)


def test_job_order_by_deadline_and_jobs_without_waiting_time_last():
    groups = [group("a", 100), group("b", 10, waiting="1m"), group("c", 500, waiting="10m")]
    ssn = session(groups, [[sla({"jobOrder"})]])
    a, b, c = (ssn.jobs[f"ns/{n}"] for n in "abc")
    # deadlines: b at now-10s+60s, c at now-500s+600s; a has none
    assert ssn.job_order_fn(b, c) and not ssn.job_order_fn(c, b)
    assert ssn.job_order_fn(c, a) and not ssn.job_order_fn(a, c)
    assert ssn.job_order_compare(a, a) == 0


def test_global_waiting_time_applies_to_jobs_without_their_own():
    # upstream's test: a job without annotation gets the 3m argument and goes before a 1h job
    groups = [group("a", None), group("b", None, waiting="1h")]
    with_default = session(groups, [[sla({"jobOrder"}, **{"sla-waiting-time": "3m"})]])
    a, b = with_default.jobs["ns/a"], with_default.jobs["ns/b"]
    assert with_default.job_order_fn(a, b)
    # a non-string argument is no waiting time at all (upstream parses "" and fails)
    not_a_string = session(groups, [[sla({"jobOrder"}, **{"sla-waiting-time": 1})]])
    a, b = not_a_string.jobs["ns/a"], not_a_string.jobs["ns/b"]
    assert not not_a_string.job_order_fn(a, b)


def test_job_that_waited_its_time_is_enqueued_past_a_lower_tier_refusal():
    # capability 2 cpu: the proportion plugin admits one 2-cpu job and refuses the next
    groups = [group("first", 1000), group("late", 600, waiting="5m"), group("early", 60, "5m")]
    tiers = [[sla({"jobEnqueued"})], [PROPORTION]]
    result = session(groups, tiers).run(["enqueue"])
    assert result.phases["ns/first"] is PodGroupPhase.INQUEUE  # oldest: fills the capability
    assert result.phases["ns/late"] is PodGroupPhase.INQUEUE  # waited 10m >= 5m: permitted
    assert result.phases["ns/early"] is PodGroupPhase.PENDING  # sla abstains, proportion refuses


def test_without_sla_the_same_jobs_are_refused():
    groups = [group("first", 1000), group("late", 600, waiting="5m"), group("early", 60, "5m")]
    result = session(groups, [[PROPORTION]]).run(["enqueue"])
    inqueue = [k for k, p in result.phases.items() if p is PodGroupPhase.INQUEUE]
    assert inqueue == ["ns/first"]


def test_unset_creation_time_is_go_zero_time_so_the_wait_is_over():
    result = session(
        [group("x", None, "1h"), group("y", 0)], [[sla({"jobEnqueued"})], [PROPORTION]]
    )
    phases = result.run(["enqueue"]).phases
    assert phases["ns/x"] is PodGroupPhase.INQUEUE


@pytest.mark.parametrize("bad", ["", "5", "-3m", "0s", "1y", "abc"])
def test_invalid_annotation_means_no_waiting_time(bad):
    ssn = session([group("x", 0, waiting=bad)], [[sla({"jobOrder"})]])
    assert ssn.jobs["ns/x"].waiting_time is None


@pytest.mark.parametrize(
    ("text", "nanos"),
    [
        ("3m", 180 * SECOND),
        ("1h2m3s4ms5us6ns", 3_723_004_005_006),
        ("1.5h", 5400 * SECOND),
        ("-1.5s", -1_500_000_000),
        ("0", 0),
        ("1.s", SECOND),
        (".5s", SECOND // 2),
        ("2µs", 2000),
        ("9223372036854775807ns", (1 << 63) - 1),
    ],
)
def test_go_duration(text, nanos):
    assert parse_go_duration(text) == nanos


@pytest.mark.parametrize("text", ["", "1", "1d", ".s", "+", "9223372036854775808ns", "1m ", " 1m"])
def test_go_duration_refuses_what_go_refuses(text):
    with pytest.raises(ValueError):
        parse_go_duration(text)
