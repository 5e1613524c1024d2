"""gpupact.engine.gang: PodGroup parsing, gang arithmetic, statements, stale gangs."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from gpupact.engine.gang import (
    Gang,
    Op,
    Operation,
    PodGroupPhase,
    StalenessTracker,
    Statement,
    TaskStatus,
    gang_is_stale,
    parse_go_bool,
    parse_podgroup,
)
from gpupact.engine.volcano.model import pod_preemptable
from gpupact.errors import FieldError
from gpupact.kube.objects import parse_pod


def pg(**spec) -> dict:
    return {"kind": "PodGroup", "metadata": {"name": "pg", "namespace": "ns"}, "spec": spec}


# --- parsing -------------------------------------------------------------------------------------


def test_parse_podgroup_fields() -> None:
    obj = pg(
        minMember=3,
        minTaskMember={"master": 1, "worker": 2},
        minResources={"cpu": "2", "memory": "1Gi", "nvidia.com/gpu": "4"},
        queue="train",
        priorityClassName="high",
    )
    obj["status"] = {"phase": "Inqueue"}
    obj["metadata"]["annotations"] = {"volcano.sh/preemptable": "true"}
    group = parse_podgroup(obj)
    assert group.key == "ns/pg"
    assert group.min_member == 3
    assert dict(group.min_task_member) == {"master": 1, "worker": 2}
    assert group.min_resources == {"cpu": 2000, "memory": 1 << 30, "nvidia.com/gpu": 4}
    assert (group.queue, group.priority_class_name) == ("train", "high")
    assert group.phase is PodGroupPhase.INQUEUE
    assert group.preemptable is True


def test_parse_podgroup_defaults() -> None:
    group = parse_podgroup({"metadata": {"name": "pg"}})
    assert (group.namespace, group.queue, group.min_member) == ("default", "default", 0)
    assert group.min_resources is None
    assert group.phase is PodGroupPhase.PENDING
    assert group.preemptable is False


@pytest.mark.parametrize(
    ("obj", "path"),
    [
        ({"metadata": {}}, ("metadata", "name")),
        ({"kind": "Pod", "metadata": {"name": "x"}}, ("kind",)),
        (pg(minMember=-1), ("spec", "minMember")),
        (pg(minMember="2"), ("spec", "minMember")),
        (pg(minMember=2**40), ("spec", "minMember")),
        (pg(minTaskMember={"w": -1}), ("spec", "minTaskMember", "w")),
        (pg(minTaskMember=[1]), ("spec", "minTaskMember")),
        (pg(minResources={"cpu": "lots"}), ("spec", "minResources", "cpu")),
        (pg(queue=7), ("spec", "queue")),
        ({**pg(), "status": {"phase": "Sleeping"}}, ("status", "phase")),
        (
            {"metadata": {"name": "x", "annotations": {"volcano.sh/preemptable": "maybe"}}},
            ("metadata", "annotations", "volcano.sh/preemptable"),
        ),
        ("not an object", ()),
    ],
)
def test_parse_podgroup_bad_input(obj: object, path: tuple) -> None:
    with pytest.raises(FieldError) as err:
        parse_podgroup(obj)
    assert err.value.path == path


# --- gang arithmetic -----------------------------------------------------------------------------


@dataclass(eq=False)
class Member:
    uid: str
    role: str = ""
    best_effort: bool = False


def gang_of(min_member: int, statuses: list[TaskStatus], roles=None, task_min=None) -> Gang:
    gang = Gang(min_member, task_min or {})
    for i, status in enumerate(statuses):
        gang.add(Member(f"t{i}", (roles or [""] * len(statuses))[i]), status)
    return gang


def test_ready_pipelined_starving() -> None:
    gang = gang_of(3, [TaskStatus.RUNNING, TaskStatus.PIPELINED, TaskStatus.PENDING])
    assert gang.ready_task_num() == 1
    assert gang.waiting_task_num() == 1
    assert not gang.is_ready()
    assert not gang.is_pipelined()
    assert gang.is_starving()
    gang.set_status(gang.by_status[TaskStatus.PENDING]["t2"], TaskStatus.ALLOCATED)
    assert not gang.is_ready()
    assert gang.is_pipelined()  # 2 placed + 1 waiting for releasing resources
    assert not gang.is_starving()


def test_succeeded_counts_as_ready_and_best_effort_pending_too() -> None:
    gang = Gang(2, {})
    gang.add(Member("a"), TaskStatus.SUCCEEDED)
    gang.add(Member("b", best_effort=True), TaskStatus.PENDING)
    assert gang.is_ready()


def test_role_minimums() -> None:
    roles = ["master", "master", "worker", "worker"]
    statuses = [TaskStatus.ALLOCATED, TaskStatus.PENDING, TaskStatus.ALLOCATED, TaskStatus.PENDING]
    gang = gang_of(2, statuses, roles, {"master": 1, "worker": 1})
    assert gang.check_task_ready() and gang.is_ready()
    strict = gang_of(2, statuses, roles, {"master": 2, "worker": 0})
    assert not strict.check_task_ready()
    assert strict.check_task_valid()  # 2 masters exist at all
    # a failed master with only one master placed: the gang cannot become ready
    assert not strict.need_continue_allocating({"master"})
    assert strict.need_continue_allocating({"worker"})


def test_roles_skipped_when_job_minimum_is_lower() -> None:
    gang = gang_of(1, [TaskStatus.PENDING] * 3, ["a", "a", "b"], {"a": 2, "b": 1})
    assert gang.check_task_ready()  # minMember 1 < 3: role checks off
    assert gang.need_continue_allocating({"a"})  # one "b" left can still make 1
    assert not gang_of(3, [TaskStatus.PENDING] * 3).need_continue_allocating(())


# --- statements ----------------------------------------------------------------------------------


@dataclass
class Host:
    state: list[str] = field(default_factory=list)
    committed: list[str] = field(default_factory=list)

    def apply(self, stmt: Statement, kind: Op, name: str) -> None:
        self.state.append(name)
        stmt.record(kind, name, "n1", lambda: self.state.remove(name))

    def commit_operation(self, op: Operation) -> None:
        self.committed.append(f"{op.kind}:{op.task}")


def test_statement_discard_restores_everything() -> None:
    host = Host(state=["x"])
    stmt = Statement(host)
    for name in ("a", "b", "c"):
        host.apply(stmt, Op.ALLOCATE, name)
    stmt.discard()
    assert host.state == ["x"] and host.committed == [] and stmt.operations == []


def test_statement_commit_in_order_and_rollback_to_checkpoint() -> None:
    host = Host()
    stmt = Statement(host)
    host.apply(stmt, Op.EVICT, "victim")
    checkpoint = stmt.checkpoint()
    host.apply(stmt, Op.PIPELINE, "p")
    stmt.rollback(checkpoint)
    assert host.state == ["victim"]
    host.apply(stmt, Op.ALLOCATE, "q")
    assert stmt.has_evictions
    stmt.commit()
    assert host.committed == ["evict:victim", "allocate:q"]
    assert stmt.operations == []


def test_statement_merge_takes_over_operations() -> None:
    host = Host()
    outer, inner = Statement(host), Statement(host)
    host.apply(inner, Op.EVICT, "v")
    outer.merge(inner)
    assert inner.operations == [] and len(outer.operations) == 1
    outer.discard()
    assert host.state == []


def test_statement_revoke_and_redo() -> None:
    host = Host()
    stmt = Statement(host)
    host.apply(stmt, Op.EVICT, "v")
    host.apply(stmt, Op.PIPELINE, "p")
    assert stmt.revoke(Op.EVICT, "v", lambda: host.state.append("v"))
    assert host.state == ["p"]
    assert not stmt.revoke(Op.EVICT, "v", lambda: None)  # already taken back
    stmt.commit()
    assert host.committed == ["pipeline:p"]  # the revoked eviction never happens
    host2 = Host()
    stmt2 = Statement(host2)
    host2.apply(stmt2, Op.EVICT, "v")
    stmt2.revoke(Op.EVICT, "v", lambda: host2.state.append("v"))
    stmt2.discard()
    assert host2.state == []


# --- stale gangs ---------------------------------------------------------------------------------


def test_gang_is_stale() -> None:
    assert gang_is_stale(active=1, min_member=2)
    assert not gang_is_stale(active=2, min_member=2)
    assert not gang_is_stale(active=0, min_member=2)  # nothing held: just pending
    assert not gang_is_stale(active=1, min_member=2, succeeded=1)  # winding down


def test_staleness_tracker_releases_after_grace_only() -> None:
    tracker = StalenessTracker(grace_period=60)
    assert not tracker.observe("g", True, now=100)  # became stale now
    assert not tracker.observe("g", True, now=159)
    assert tracker.observe("g", True, now=160)
    assert not tracker.observe("g", False, now=170)  # recovered: clock resets
    assert not tracker.observe("g", True, now=200)
    assert tracker.since["g"] == 200


def test_staleness_tracker_negative_grace_never_releases() -> None:
    tracker = StalenessTracker(grace_period=-1)
    tracker.since["g"] = 0
    assert not tracker.observe("g", True, now=10**9)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1", True),
        ("t", True),
        ("TRUE", True),
        ("True", True),
        ("0", False),
        ("F", False),
        ("false", False),
        ("yes", None),
        ("tRUE", None),
        ("", None),
    ],
)
def test_go_parse_bool(text: str, value: bool | None) -> None:
    assert parse_go_bool(text) is value


@pytest.mark.parametrize(
    ("annotations", "labels", "preemptable"),
    [
        ({}, {}, True),  # default
        ({"volcano.sh/preemptable": "false"}, {"volcano.sh/preemptable": "true"}, False),
        ({}, {"volcano.sh/preemptable": "F"}, False),
        ({"volcano.sh/preemptable": "maybe"}, {}, False),  # a pod's unparsable value: false
    ],
)
def test_pod_preemptable_reads_the_same_booleans(annotations, labels, preemptable) -> None:
    pod = parse_pod(
        {"kind": "Pod", "metadata": {"name": "p", "annotations": annotations, "labels": labels}}
    )
    assert pod_preemptable(pod) is preemptable
