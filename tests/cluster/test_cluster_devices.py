"""GPU devices: MIG tables and layouts, pod GPU requests, node GPU specs, device fit/choice."""

from __future__ import annotations

import json

import pytest

from gpupact.cluster import devices as dev
from gpupact.cluster.devices import (
    MIG_TABLES,
    GpuRequest,
    NodeDevices,
    NodeGpuSpec,
    SharingMode,
    gpu_request_from,
    node_gpu_spec,
    pack_mig_layout,
    validate_mig_layout,
)
from gpupact.errors import FieldError
from gpupact.kube.objects import parse_node


def node(labels=None, annotations=None, alloc=None):
    return parse_node(
        {
            "metadata": {"name": "n", "labels": labels or {}, "annotations": annotations or {}},
            "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "10", **(alloc or {})}},
        }
    )


# --- MIG tables -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("table", "names"),
    [
        ("A100-80GB", ("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb")),
        ("H100-80GB", ("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb")),
        ("H200-141GB", ("1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb")),
    ],
)
def test_mig_tables_follow_the_user_guide(table, names):
    profiles = MIG_TABLES[table]
    assert tuple(p.name for p in profiles) == names
    assert [p.max_instances for p in profiles] == [7, 4, 3, 2, 1, 1]
    assert [p.compute_slices for p in profiles] == [1, 1, 2, 3, 4, 7]
    assert [p.memory_slices for p in profiles] == [1, 2, 2, 4, 4, 8]


@pytest.mark.parametrize(
    "layout",
    [
        {"1g.10gb": 7},
        {"3g.40gb": 2},
        {"4g.40gb": 1, "3g.40gb": 1},
        {"2g.20gb": 3, "1g.10gb": 1},
        {"1g.20gb": 4},
        {"7g.141gb": 1},
        {},
    ],
)
def test_valid_layouts(layout):
    validate_mig_layout(layout)


@pytest.mark.parametrize(
    "layout",
    [{"1g.10gb": 8}, {"4g.40gb": 2}, {"3g.40gb": 2, "1g.10gb": 1}, {"7g.80gb": 1, "1g.10gb": 1}],
)
def test_invalid_layouts(layout):
    with pytest.raises(FieldError):
        validate_mig_layout(layout)


def test_unknown_profile():
    with pytest.raises(FieldError, match="unknown MIG profile"):
        validate_mig_layout({"9g.99gb": 1})


def test_pack_layout_largest_first():
    assert pack_mig_layout({"3g.40gb": 2, "1g.10gb": 7}, 2) == ({"3g.40gb": 2}, {"1g.10gb": 7})
    with pytest.raises(FieldError):
        pack_mig_layout({"7g.80gb": 3}, 2)


# --- a pod's GPU request ----------------------------------------------------------------------


def test_whole_gpus():
    assert gpu_request_from({"nvidia.com/gpu": 2}, {}, {}) == GpuRequest(2)
    assert gpu_request_from({"cpu": 100}, {}, {}) is None


def test_gpu_milli_share():
    req = gpu_request_from({}, {"gpupact.io/gpu-milli": "300"}, {})
    assert req == GpuRequest(1, 300)
    assert req.fractional and req.total_milli == 300
    # 1000 milli without a resource request is one whole GPU
    assert gpu_request_from({}, {"gpupact.io/gpu-milli": "1000"}, {}) == GpuRequest(1)


def test_kai_fraction():
    assert gpu_request_from({}, {"gpu-fraction": "0.5"}, {}) == GpuRequest(1, 500)


def test_mig_request_and_models():
    req = gpu_request_from({"nvidia.com/mig-1g.10gb": 2}, {}, {"gpu.model": "A100"})
    assert req == GpuRequest(2, models=frozenset({"A100"}), mig_profile="1g.10gb")
    req = gpu_request_from({"nvidia.com/gpu": 1}, {"gpupact.io/gpu-models": "A100, H100"}, {})
    assert req is not None and req.models == frozenset({"A100", "H100"})


def test_nvlink_annotation():
    req = gpu_request_from({"nvidia.com/gpu": 4}, {"gpupact.io/gpu-topology": "nvlink"}, {})
    assert req == GpuRequest(4, nvlink=True)


@pytest.mark.parametrize(
    ("requests", "annotations", "path"),
    [
        ({}, {"gpupact.io/gpu-milli": "lots"}, ("metadata", "annotations", "gpupact.io/gpu-milli")),
        ({}, {"gpupact.io/gpu-milli": "0"}, ("metadata", "annotations", "gpupact.io/gpu-milli")),
        (
            {"nvidia.com/gpu": 2},
            {"gpupact.io/gpu-milli": "500"},
            ("metadata", "annotations", "gpupact.io/gpu-milli"),
        ),
        ({}, {"gpu-fraction": "2"}, ("metadata", "annotations", "gpu-fraction")),
        (
            {"nvidia.com/gpu": 1},
            {"gpupact.io/gpu-topology": "pcie"},
            ("metadata", "annotations", "gpupact.io/gpu-topology"),
        ),
        ({"nvidia.com/mig-1g.10gb": 1, "nvidia.com/gpu": 1}, {}, ("spec", "containers")),
        ({"nvidia.com/mig-1g.10gb": 1, "nvidia.com/mig-2g.20gb": 1}, {}, ("spec", "containers")),
        (
            {"nvidia.com/gpu": 1},
            {"gpupact.io/gpu-models": " , "},
            ("metadata", "annotations", "gpupact.io/gpu-models"),
        ),
    ],
)
def test_bad_pod_gpu_fields(requests, annotations, path):
    with pytest.raises(FieldError) as err:
        gpu_request_from(requests, annotations, {})
    assert err.value.path == path


@pytest.mark.parametrize(
    "kwargs",
    [
        {"count": 0},
        {"count": 2, "milli": 500},
        {"count": 1, "milli": 1001},
        {"count": 1, "mig_profile": "1g.10gb", "nvlink": True},
    ],
)
def test_bad_gpu_request(kwargs):
    with pytest.raises(FieldError):
        GpuRequest(**kwargs)


# --- a node's GPUs ----------------------------------------------------------------------------


def test_node_without_gpus():
    assert node_gpu_spec(node()) == NodeGpuSpec()


def test_exclusive_and_fractional_nodes():
    spec = node_gpu_spec(node({"gpu.model": "V100"}, alloc={"nvidia.com/gpu": "4"}))
    assert spec == NodeGpuSpec(SharingMode.EXCLUSIVE, 4, "V100")
    spec = node_gpu_spec(
        node(annotations={"gpupact.io/gpu-sharing": "fractional"}, alloc={"nvidia.com/gpu": "2"})
    )
    assert spec.mode is SharingMode.FRACTIONAL and spec.device_capacity_milli() == [1000, 1000]


def test_time_sliced_node_from_gpu_feature_discovery_labels():
    labels = {
        "nvidia.com/gpu.count": "2",
        "nvidia.com/gpu.replicas": "4",
        "nvidia.com/gpu.sharing-strategy": "time-slicing",
        "nvidia.com/gpu.product": "NVIDIA-A10-SHARED",
    }
    spec = node_gpu_spec(node(labels, alloc={"nvidia.com/gpu": "8"}))
    assert spec.mode is SharingMode.TIME_SLICED
    assert (spec.devices, spec.replicas) == (2, 4)
    assert spec.device_capacity_milli() == [4000, 4000]
    assert spec.model == "NVIDIA-A10-SHARED"


def test_mig_node_layout_packed_from_allocatable():
    labels = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.count": "3"}
    alloc = {"nvidia.com/mig-1g.10gb": "7", "nvidia.com/mig-3g.40gb": "2", "nvidia.com/gpu": "1"}
    spec = node_gpu_spec(node(labels, alloc=alloc))
    assert spec.mode is SharingMode.MIG and spec.devices == 3
    assert spec.mig_layout == ((("3g.40gb", 2),), (("1g.10gb", 7),), ())
    assert spec.device_capacity_milli() == [0, 0, 1000]


def test_mig_node_explicit_layout():
    layout = json.dumps([{"4g.71gb": 1, "3g.71gb": 1}, {"1g.18gb": 7}])
    spec = node_gpu_spec(node(annotations={"gpupact.io/mig-layout": layout}))
    assert spec.mig_slots() == [{"4g.71gb": 1, "3g.71gb": 1}, {"1g.18gb": 7}]


@pytest.mark.parametrize(
    ("labels", "annotations", "where"),
    [
        ({"nvidia.com/gpu.count": "two"}, {}, ("metadata", "labels", "nvidia.com/gpu.count")),
        ({}, {"gpupact.io/gpu-sharing": "magic"}, ("metadata", "annotations")),
        ({}, {"gpupact.io/mig-layout": "[{"}, ("metadata", "annotations")),
        ({}, {"gpupact.io/mig-layout": '[{"1g.10gb": 8}]'}, ("metadata", "annotations")),
        ({}, {"gpupact.io/mig-layout": '{"1g.10gb": 1}'}, ("metadata", "annotations")),
        ({"gpu.topology": "nvlink-x"}, {}, ("metadata", "labels", "gpu.topology")),
    ],
)
def test_bad_node_gpu_fields(labels, annotations, where):
    with pytest.raises(FieldError) as err:
        node_gpu_spec(node(labels, annotations, {"nvidia.com/gpu": "2"}))
    assert err.value.path[: len(where)] == where


def test_nvlink_groups():
    assert dev.nvlink_group_size("nvlink-8", 8) == 8
    assert dev.nvlink_group_size("nvlink-2", 8) == 2
    assert dev.nvlink_group_size("nvlink", 4) == 4
    assert dev.nvlink_group_size("pcie", 8) == 1
    assert dev.nvlink_group_size(None, 8) == 1


# --- fit and choice on one node ---------------------------------------------------------------


def test_fractional_best_fit_and_release():
    devices = NodeDevices(NodeGpuSpec(SharingMode.FRACTIONAL, 3))
    share = GpuRequest(1, 600)
    devices.allocate(share, devices.choose(share))  # device 0: 600 used
    small = GpuRequest(1, 300)
    assert devices.choose(small) == (0,)  # the tightest device that still fits
    devices.allocate(small, (0,))
    assert devices.choose(GpuRequest(1, 200)) == (1,)
    assert devices.choose(GpuRequest(2)) == (1, 2)
    devices.release(small, (0,))
    assert devices.used_milli == [600, 0, 0]


def test_exclusive_node_refuses_shares():
    devices = NodeDevices(NodeGpuSpec(SharingMode.EXCLUSIVE, 2))
    assert devices.failure(GpuRequest(1, 500)) == (dev.REASON_NO_SHARING, True)
    assert devices.failure(GpuRequest(3)) == (dev.REASON_TOO_FEW_GPUS, True)
    devices.allocate(GpuRequest(1), (0,))
    assert devices.failure(GpuRequest(2)) == (dev.REASON_FREE_GPUS, False)
    assert devices.failure(GpuRequest(1)) is None


def test_share_needs_one_device_with_room():
    devices = NodeDevices(NodeGpuSpec(SharingMode.FRACTIONAL, 2), used_milli=[600, 600])
    assert devices.failure(GpuRequest(1, 500)) == (dev.REASON_FREE_MILLI, False)
    assert devices.failure(GpuRequest(1, 400)) is None
    assert devices.failure(GpuRequest(1)) == (dev.REASON_FREE_GPUS, False)


def test_model_and_no_gpu():
    assert NodeDevices(NodeGpuSpec()).failure(GpuRequest(1)) == (dev.REASON_NO_GPU, True)
    devices = NodeDevices(NodeGpuSpec(SharingMode.EXCLUSIVE, 1, "V100"))
    wanted = GpuRequest(1, models=frozenset({"A100"}))
    assert devices.failure(wanted) == (dev.REASON_MODEL, True)


def test_nvlink_groups_fit_and_choice():
    spec = NodeGpuSpec(SharingMode.EXCLUSIVE, 8, nvlink_group=4)
    devices = NodeDevices(spec)
    assert devices.failure(GpuRequest(8, nvlink=True)) == (dev.REASON_NVLINK_GROUP_TOO_SMALL, True)
    devices.allocate(GpuRequest(1), (0,))
    devices.allocate(GpuRequest(1), (4,))
    need3 = GpuRequest(3, nvlink=True)
    assert devices.failure(need3) is None
    assert devices.choose(need3) == (1, 2, 3)
    devices.allocate(GpuRequest(1), (5,))
    # groups hold 3 and 2 free devices: 3 fits in the first only, 4 nowhere
    assert devices.failure(GpuRequest(4, nvlink=True)) == (dev.REASON_FREE_NVLINK, False)
    # the tightest group that holds the request
    assert devices.choose(GpuRequest(2, nvlink=True)) == (6, 7)


def test_time_sliced_replicas():
    spec = NodeGpuSpec(SharingMode.TIME_SLICED, 2, replicas=2)
    devices = NodeDevices(spec)
    first = devices.choose(GpuRequest(3))
    assert sorted(first) == [0, 0, 1]
    devices.allocate(GpuRequest(3), first)
    assert devices.failure(GpuRequest(1, 300)) is None  # a share takes one replica here
    assert devices.failure(GpuRequest(2)) == (dev.REASON_FREE_GPUS, False)


def test_mig_slots():
    spec = NodeGpuSpec(
        SharingMode.MIG, 2, mig_layout=((("1g.10gb", 2),), (("1g.10gb", 1), ("3g.40gb", 1)))
    )
    devices = NodeDevices(spec)
    req = GpuRequest(2, mig_profile="1g.10gb")
    assert devices.choose(req) == (0, 0)
    devices.allocate(req, (0, 0))
    assert devices.failure(req) == (dev.REASON_FREE_MIG, False)
    assert devices.failure(GpuRequest(4, mig_profile="1g.10gb")) == (dev.REASON_TOO_FEW_GPUS, True)
    assert devices.failure(GpuRequest(1, mig_profile="2g.20gb")) == (
        dev.REASON_NO_MIG_PROFILE,
        True,
    )
    assert devices.failure(GpuRequest(1)) == (dev.REASON_TOO_FEW_GPUS, True)
    devices.release(req, (0, 0))
    assert devices.mig_free[0] == {"1g.10gb": 2}


# --- MIG geometry from the node (GPU feature discovery labels, tables, names) -----------------

H20_LABELS = {
    "nvidia.com/gpu.product": "NVIDIA-H20",
    "nvidia.com/gpu.count": "2",
    "nvidia.com/gpu.memory": "97871",
    "nvidia.com/mig.strategy": "mixed",
    "nvidia.com/mig.config": "custom-h20",
    "nvidia.com/mig-1g.12gb.count": "7",
    "nvidia.com/mig-1g.12gb.memory": "11008",
    "nvidia.com/mig-1g.12gb.multiprocessors": "8",
    "nvidia.com/mig-1g.12gb.slices.gi": "1",
    "nvidia.com/mig-1g.12gb.slices.ci": "1",
    "nvidia.com/mig-3g.48gb.count": "2",
    "nvidia.com/mig-3g.48gb.memory": "46848",
    "nvidia.com/mig-3g.48gb.multiprocessors": "32",
    "nvidia.com/mig-3g.48gb.slices.gi": "3",
    "nvidia.com/mig-3g.48gb.slices.ci": "3",
}


def test_geometry_from_feature_discovery_labels():
    profiles, source = dev.node_mig_profiles(H20_LABELS, ["1g.12gb", "3g.48gb"])
    assert source == {"1g.12gb": "labels", "3g.48gb": "labels"}
    assert (profiles["1g.12gb"].compute_slices, profiles["1g.12gb"].memory_slices) == (1, 1)
    assert (profiles["3g.48gb"].compute_slices, profiles["3g.48gb"].memory_slices) == (3, 4)
    assert profiles["3g.48gb"].max_instances == 2
    spec = node_gpu_spec(
        node(H20_LABELS, alloc={"nvidia.com/mig-1g.12gb": "7", "nvidia.com/mig-3g.48gb": "2"})
    )
    assert spec.mig_layout == ((("3g.48gb", 2),), (("1g.12gb", 7),))
    assert spec.mig_notes == ()


def test_labels_tell_colliding_names_apart():
    # 1g.10gb is 2/8 of the memory on an A100-40GB, 1/8 on an A100-80GB
    forty = {"nvidia.com/gpu.memory": "40960", "nvidia.com/mig-1g.10gb.slices.gi": "1"}
    forty["nvidia.com/mig-1g.10gb.memory"] = "9856"
    profiles, _ = dev.node_mig_profiles(forty, ["1g.10gb"])
    assert profiles["1g.10gb"].memory_slices == 2 and profiles["1g.10gb"].max_instances == 4
    # without GFD labels the product label picks the table
    product = {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}
    profiles, source = dev.node_mig_profiles(product, ["1g.10gb", "1g.5gb"])
    assert source == {"1g.10gb": "table", "1g.5gb": "table"}
    assert profiles["1g.10gb"].memory_slices == 2
    profiles, _ = dev.node_mig_profiles({}, ["1g.10gb"])
    assert profiles["1g.10gb"].memory_slices == 1  # the 80GB-class default


def test_geometry_from_the_name_and_gpu_memory():
    profiles, source = dev.node_mig_profiles({"nvidia.com/gpu.memory": "97871"}, ["1g.24gb"])
    assert source == {"1g.24gb": "name"}
    assert (profiles["1g.24gb"].compute_slices, profiles["1g.24gb"].memory_slices) == (1, 2)


def test_a100_40gb_node_without_labels_uses_the_table():
    spec = node_gpu_spec(
        node(
            {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB", "nvidia.com/gpu.count": "1"},
            alloc={"nvidia.com/mig-1g.5gb": "7"},
        )
    )
    assert spec.mig_layout == ((("1g.5gb", 7),),) and spec.mig_notes == ()


def test_unknown_profile_is_a_note_not_an_error():
    spec = node_gpu_spec(node({"nvidia.com/gpu.count": "2"}, alloc={"nvidia.com/mig-1g.33gb": "5"}))
    assert spec.devices == 2
    assert sum(dict(d).get("1g.33gb", 0) for d in spec.mig_layout) == 5
    (note,) = spec.mig_notes
    assert "MIG profile 1g.33gb: geometry unknown" in note
    # pods may ask for it: the scheduler only counts the advertised slices
    assert gpu_request_from({"nvidia.com/mig-1g.33gb": 1}, {}, {}) == GpuRequest(
        1, mig_profile="1g.33gb"
    )
    assert NodeDevices(spec).failure(GpuRequest(5, mig_profile="1g.33gb")) is None


def test_slices_overflowing_the_labelled_gpus_are_a_note():
    spec = node_gpu_spec(node({"nvidia.com/gpu.count": "1"}, alloc={"nvidia.com/mig-3g.40gb": "4"}))
    assert spec.devices == 2
    assert "do not fit the 1 MIG GPU(s)" in spec.mig_notes[0]


def test_a_mig_resource_without_a_profile_name_is_another_extended_resource():
    assert gpu_request_from({"nvidia.com/mig-big": 1}, {}, {}) is None
    spec = node_gpu_spec(node({}, alloc={"nvidia.com/mig-big": "2", "nvidia.com/gpu": "1"}))
    assert (spec.mode, spec.devices) == (SharingMode.EXCLUSIVE, 1)
    with pytest.raises(FieldError, match="not a MIG profile name"):
        GpuRequest(1, mig_profile="big")


def test_single_strategy_node_is_plain_devices():
    # MIG 'single': nvidia.com/gpu counts MIG devices and the product names the profile
    labels = {
        "nvidia.com/mig.strategy": "single",
        "nvidia.com/gpu.product": "A100-SXM4-40GB-MIG-1g.5gb",
        "nvidia.com/gpu.count": "56",
        "nvidia.com/gpu.slices.gi": "1",
    }
    spec = node_gpu_spec(node(labels, alloc={"nvidia.com/gpu": "56"}))
    assert (spec.mode, spec.devices, spec.mig_notes) == (SharingMode.EXCLUSIVE, 56, ())
