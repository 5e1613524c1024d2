"""KAI GPU-memory requests (the `gpu-memory` annotation, MiB of one GPU): read as upstream
pod_info reads them, placed on GPU groups by memory, refused on nodes whose GPU memory is
unknown or too small, and counted by queues as upstream's proportion plugin counts them."""

from __future__ import annotations

from fractions import Fraction

import pytest
from kai_objects import kai_group, queue
from kai_objects import kai_pod as pod

from gpupact.engine.gang import TaskStatus
from gpupact.engine.kai import KaiSession, parse_kai_podgroup, parse_kai_queue
from gpupact.engine.kai.gpu_sharing import SharedRequest, shared_request
from gpupact.kube.objects import parse_node, parse_pod

CLASSES = {"train": 50, "build": 100}
A100_40G = "40960"  # nvidia.com/gpu.memory in MiB: floored to 40900 (a multiple of 100)


def node(name: str, gpus: int, memory_label: str | None = A100_40G) -> dict:
    alloc = {"cpu": "64", "memory": "256Gi", "nvidia.com/gpu": str(gpus), "pods": "110"}
    labels = {"nvidia.com/gpu.memory": memory_label} if memory_label is not None else {}
    return {"metadata": {"name": name, "labels": labels}, "status": {"allocatable": alloc}}


def mem(name: str, job: str, mib: str, node_name: str = "", groups=()) -> dict:
    return pod(name, job, node_name, groups, **{"gpu-memory": mib})


def group(name: str, cls: str = "train", min_member: int = 1) -> dict:
    return kai_group(name, cls, min_member)


def open_session(nodes, pods, groups, q=None) -> KaiSession:
    return KaiSession(
        nodes=[parse_node(n) for n in nodes],
        pods=[parse_pod(p) for p in pods],
        podgroups=[parse_kai_podgroup(g, CLASSES, creation=float(i)) for i, g in enumerate(groups)],
        queues=[
            parse_kai_queue(queue("dept", -1, parent="")),
            parse_kai_queue(q or queue("q", 8)),
        ],
    )


def run(nodes, pods, groups, q=None):
    session = open_session(nodes, pods, groups, q)
    return session, session.run(["allocate"])


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        ({"gpu-memory": "2000"}, SharedRequest(Fraction(0), 1, 2000)),
        ({"gpu-memory": "+2000"}, SharedRequest(Fraction(0), 1, 2000)),  # ParseInt's sign
        ({"gpu-memory": "0"}, None),
        ({"gpu-memory": "-5"}, None),
        ({"gpu-memory": "2_000"}, None),  # base 10: no underscores
        ({"gpu-memory": "2e3"}, None),
        ({"gpu-memory": " 2000"}, None),
        ({"gpu-memory": "99999999999999999999"}, None),  # beyond int64
        # a valid fraction replaces the memory request...
        ({"gpu-memory": "2000", "gpu-fraction": "0.5"}, SharedRequest(Fraction(1, 2), 1, 0)),
        # ...an invalid one does not
        ({"gpu-memory": "2000", "gpu-fraction": "1.5"}, SharedRequest(Fraction(0), 1, 2000)),
        # with a device count both stay (the memory decides what a group gives)
        (
            {"gpu-memory": "2000", "gpu-fraction": "0.5", "gpu-fraction-num-devices": "2"},
            SharedRequest(Fraction(1, 2), 2, 2000),
        ),
        (
            {"gpu-memory": "2000", "gpu-fraction-num-devices": "3"},
            SharedRequest(Fraction(0), 3, 2000),
        ),
        (
            {"gpu-memory": "2000", "gpu-fraction-num-devices": "x"},
            SharedRequest(Fraction(0), 1, 2000),
        ),
    ],
)
def test_annotations_read_as_upstream(annotations, expected):
    assert shared_request(parse_pod(pod("p", "j", **annotations))) == expected


def test_portion_is_ceil_of_hundredths_and_must_be_at_most_one_or_whole():
    request = SharedRequest(Fraction(0), 1, 20000)
    assert request.portion_on(40900) == Fraction(49, 100)  # 48.9 -> 49 hundredths
    assert request.portion_on(20000) == 1 and request.valid_on(20000)
    assert request.portion_on(10000) == 2 and request.valid_on(10000)  # whole: valid
    assert request.portion_on(15000) == Fraction(134, 100) and not request.valid_on(15000)
    assert request.portion_on(0) is None and not request.valid_on(0)
    # not placed yet: devices x MiB / MinNodeGPUMemory, which upstream leaves at 100
    assert SharedRequest(Fraction(0), 2, 2000).gpus == 40


def test_memory_pods_take_their_mib_from_a_group_and_share_it():
    pods = [mem(f"p{i}", f"j{i}", "20000") for i in range(3)]
    session, result = run([node("n0", 2)], pods, [group(f"j{i}") for i in range(3)])
    assert set(result.binds) == {"ns/p0", "ns/p1", "ns/p2"}
    # 40900 MiB per GPU: two 20000 MiB pods share a group, the third opens another
    assert result.gpu_groups["ns/p0"] == result.gpu_groups["ns/p1"] == ("0",)
    assert result.gpu_groups["ns/p2"] == ("1",)
    assert session.nodes["n0"].sharing.used == {"0": 40000, "1": 20000}
    assert session.nodes["n0"].idle_gpus() == 0


def test_a_running_memory_pod_leaves_room_only_for_what_fits_beside_it():
    running = mem("r0", "running", "30000", "n0", ("0",))
    pending = mem("p0", "pending", "20000")
    session, result = run([node("n0", 1)], [running, pending], [group("running"), group("pending")])
    assert result.binds == {}  # 30000 + 20000 > 40900 and no whole GPU left
    assert session.nodes["n0"].sharing.used == {"0": 30000}


def test_a_node_without_a_readable_gpu_memory_label_takes_no_memory_pod():
    for label in (None, "many"):
        nodes = [node("n0", 2, memory_label=label)]
        _, result = run(nodes, [mem("p0", "job", "1000")], [group("job")])
        assert result.binds == {}
        # a fraction pod is still placed there (its memory is a share of the default 100)
        _, fraction = run(nodes, [pod("p0", "job", **{"gpu-fraction": "0.5"})], [group("job")])
        assert fraction.binds == {"ns/p0": "n0"}


def test_more_memory_than_one_gpu_has_is_not_placed():
    _, result = run([node("n0", 4)], [mem("p0", "job", "50000")], [group("job")])
    assert result.binds == {}  # 50000 / 40900 -> portion 1.23: neither <= 1 nor whole


def test_the_memory_pod_goes_to_the_node_whose_gpus_it_fits():
    nodes = [node("small", 1, "16384"), node("big", 1, "81920")]
    _, result = run(nodes, [mem("p0", "job", "20000")], [group("job")])
    assert result.binds == {"ns/p0": "big"}


def test_queues_count_a_placed_memory_pod_by_its_portion_on_its_node():
    running = mem("r0", "running", "20000", "n0", ("0",))
    pending = mem("p0", "pending", "10000")
    session = open_session(
        [node("n0", 2)], [running, pending], [group("running"), group("pending")]
    )
    gpu = session.queues["q"].shares["gpu"]
    # at open: the running pod as placed (0.49 of a 40900 MiB GPU), the pending one as
    # upstream's proportion counts it (10000 MiB / 100)
    assert gpu.allocated == Fraction(49, 100)
    assert gpu.request == Fraction(49, 100) + 100
    result = session.run(["allocate"])
    assert result.binds == {"ns/p0": "n0"}
    # placed: 10000 / 40900 -> 0.25
    assert gpu.allocated == Fraction(49, 100) + Fraction(25, 100)
    assert session.tasks["ns/p0"].status is TaskStatus.BINDING


def test_a_queue_limit_charges_the_memory_pod_its_portion_on_the_node():
    # limit 0.5 GPU: 20000 MiB is 0.49 of a 40900 MiB GPU (fits) but 0.62 of a 32500 one
    q = queue("q", 1, limit=0.5)
    _, fits = run([node("n0", 1)], [mem("p0", "job", "20000")], [group("job")], q)
    assert fits.binds == {"ns/p0": "n0"}
    _, over = run([node("n0", 1, "32500")], [mem("p0", "job", "20000")], [group("job")], q)
    assert over.binds == {}
    # on two nodes, only the one where the portion stays within the limit is taken
    nodes = [node("tight", 1, "32500"), node("roomy", 1)]
    _, chosen = run(nodes, [mem("p0", "job", "20000")], [group("job")], q)
    assert chosen.binds == {"ns/p0": "roomy"}
