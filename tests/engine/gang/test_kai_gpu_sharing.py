"""KAI GPU sharing: fractional pods (gpu-fraction) go to GPU groups. Scenarios follow KAI's
allocateFractionalGpu tests (shared GPU reuse, gpusharingorder across nodes, a new group
when the shared one is too full, queue limits counting fractions), plus the node accounting
of groups."""

from __future__ import annotations

from fractions import Fraction

import pytest
from kai_objects import kai_group, kai_pod, queue

from gpupact.engine.gang import TaskStatus
from gpupact.engine.kai import KaiSession, parse_kai_podgroup, parse_kai_queue
from gpupact.engine.kai.gpu_sharing import shared_request
from gpupact.kube.objects import parse_node, parse_pod

CLASSES = {"train": 50, "build": 100}


def node(name: str, gpus: int, pods: int = 110) -> dict:
    alloc = {"cpu": "64", "memory": "256Gi", "nvidia.com/gpu": str(gpus), "pods": str(pods)}
    return {"metadata": {"name": name}, "status": {"allocatable": alloc}}


def pod(name: str, job: str, fraction: str, node_name: str = "", groups=()) -> dict:
    return kai_pod(name, job, node_name, groups, **{"gpu-fraction": fraction})


def group(name: str, cls: str = "build", min_member: int = 1) -> dict:
    return kai_group(name, cls, min_member)


def run(nodes, pods, groups, q, dept=None):
    session = KaiSession(
        nodes=[parse_node(n) for n in nodes],
        pods=[parse_pod(p) for p in pods],
        podgroups=[parse_kai_podgroup(g, CLASSES, creation=float(i)) for i, g in enumerate(groups)],
        queues=[parse_kai_queue(dept or queue("dept", -1, parent="")), parse_kai_queue(q)],
    )
    return session, session.run(["allocate"])


def test_pending_fraction_joins_the_shared_gpu_with_room():
    pods = [pod("r0", "running", "0.5", "n0", ("1",)), pod("p0", "pending", "0.5")]
    _, result = run([node("n0", 2)], pods, [group("running"), group("pending")], queue("q", 2))
    assert result.binds == {"ns/p0": "n0"}
    assert result.gpu_groups["ns/p0"] == ("1",)


def test_gpu_sharing_order_prefers_the_node_with_a_fitting_group():
    # binpack alone would pick n0 (1 free GPU against 2); the shared group on n1 wins
    pods = [pod("r0", "running", "0.5", "n1", ("1",)), pod("p0", "pending", "0.5")]
    nodes = [node("n0", 1), node("n1", 3)]
    _, result = run(nodes, pods, [group("running"), group("pending")], queue("q", 2))
    assert result.binds == {"ns/p0": "n1"}
    assert result.gpu_groups["ns/p0"] == ("1",)


def test_a_full_group_means_a_new_group_on_a_whole_gpu():
    pods = [pod("r0", "running", "0.6", "n0", ("0",)), pod("p0", "pending", "0.5")]
    session, result = run(
        [node("n0", 2)], pods, [group("running"), group("pending")], queue("q", 2)
    )
    assert result.binds == {"ns/p0": "n0"}
    assert result.gpu_groups["ns/p0"] == ("1",)
    n0 = session.nodes["n0"]
    assert n0.idle_gpus() == 0  # each group in use takes a whole GPU
    assert n0.sharing.used == {"0": 60, "1": 50}


def test_fractions_count_against_the_queue_limit():
    # 3 x 0.5 = 1.5 GPUs for a queue limited to 1: the gang does not start
    pods = [pod(f"p{i}", "job", "0.5") for i in range(3)]
    _, result = run([node("n0", 4)], pods, [group("job", "train", 3)], queue("q", 1, limit=1))
    assert result.binds == {}
    assert all(s is TaskStatus.PENDING for s in result.statuses.values())


def test_non_preemptible_fraction_beyond_quota_waits():
    # running 0.6 + pending 0.5 of a build (non-preemptible) job exceed the quota of 1
    pods = [pod("r0", "running", "0.6", "n0", ("0",)), pod("p0", "pending", "0.5")]
    _, result = run([node("n0", 2)], pods, [group("running"), group("pending")], queue("q", 1))
    assert result.binds == {}


def test_two_fractions_of_one_gang_share_one_new_group():
    pods = [pod("p0", "job", "0.5"), pod("p1", "job", "0.5")]
    session, result = run([node("n0", 2)], pods, [group("job", "train", 2)], queue("q", 2))
    assert set(result.binds) == {"ns/p0", "ns/p1"}
    assert result.gpu_groups["ns/p0"] == result.gpu_groups["ns/p1"] == ("0",)
    assert session.nodes["n0"].idle_gpus() == 1


def test_no_whole_gpu_and_no_room_in_groups_leaves_the_pod_pending():
    pods = [
        pod("r0", "running", "0.7", "n0", ("0",)),
        pod("p0", "pending", "0.5"),
    ]
    _, result = run([node("n0", 1)], pods, [group("running"), group("pending")], queue("q", 2))
    assert result.binds == {}


def test_opening_a_group_needs_a_pod_slot_for_its_reservation_pod():
    pods = [pod("p0", "job", "0.5")]
    _, tight = run([node("n0", 1, pods=1)], pods, [group("job")], queue("q", 2))
    assert tight.binds == {}
    _, roomy = run([node("n0", 1, pods=2)], pods, [group("job")], queue("q", 2))
    assert roomy.binds == {"ns/p0": "n0"}


def test_undone_allocation_returns_the_group_and_the_gpu():
    # the gang needs 3 x 0.6: two fit (two GPUs), the third does not: nothing stays
    pods = [pod(f"p{i}", "job", "0.6") for i in range(3)]
    session, result = run([node("n0", 2)], pods, [group("job", "train", 3)], queue("q", 4))
    assert result.binds == {}
    n0 = session.nodes["n0"]
    assert n0.idle_gpus() == 2
    assert all(v == 0 for v in n0.sharing.used.values())


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [("0.5", Fraction(1, 2)), ("1", Fraction(1)), ("0", None), ("1.5", None), ("x", None)],
)
def test_fraction_annotation_as_upstream_reads_it(annotation, expected):
    the_pod = parse_pod(pod("p", "j", annotation))
    request = shared_request(the_pod)
    assert (request.fraction if request else None) == expected
