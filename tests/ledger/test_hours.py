"""GPU-hours allocated / idle / utilised, records, shares and the FOCUS export."""

from __future__ import annotations

import csv
import io
import json

import pytest

from gpupact.cluster.devices import GpuRequest, NodeGpuSpec, SharingMode
from gpupact.errors import InputError
from gpupact.ledger import (
    Capacity,
    Interval,
    allocated,
    from_records,
    gpu_share,
    idle_by_pool,
    interval_to_record,
    month_window,
    waits_from_pending_durations,
)
from gpupact.ledger.focus import COLUMNS, FOCUS_COLUMNS, write_focus

NOV = month_window("2026-11")
H = 3600.0


def iv(key: str, gpus: float, start: float, end: float | None, **kw) -> Interval:
    return Interval(
        key,
        "twin",
        key,
        "ns",
        gpus,
        NOV.start + start,
        None if end is None else NOV.start + end,
        **kw,
    )


def test_month_window_bounds() -> None:
    assert NOV.end - NOV.start == 30 * 24 * H
    dec = month_window("2026-12")
    assert dec.start == NOV.end and month_window("2027-01").start == dec.end
    for bad in ("2026-13", "2026/11", "nov"):
        with pytest.raises(InputError, match="--month: expected YYYY-MM"):
            month_window(bad)


def test_allocated_clips_to_the_window_and_counts_running_up_to_now() -> None:
    items = [
        Interval(
            "a", "twin", "a", "ns", 2.0, NOV.start - 2 * H, NOV.start + H, tenant="x"
        ),  # 1 h in
        iv("b", 0.25, 0, 4 * H, tenant="x"),  # a time-slice replica: 1 GPU-hour
        iv("c", 1.0, 10 * H, None, tenant="y"),  # running
        Interval("d", "twin", "d", "ns", 8.0, NOV.end + H, None, tenant="x"),  # after
    ]
    rows = allocated(items, NOV, now=NOV.start + 13 * H, by=("tenant",))
    assert [(r.group["tenant"], r.gpu_hours) for r in rows] == [("y", 3.0), ("x", 3.0)] or [
        (r.group["tenant"], r.gpu_hours) for r in rows
    ] == [("x", 3.0), ("y", 3.0)]
    assert {r.group["tenant"]: r.intervals for r in rows} == {"x": 2, "y": 1}


def test_utilisation_where_busy_hours_are_known() -> None:
    items = [iv("a", 2.0, 0, 10 * H, service="chat"), iv("b", 2.0, 0, 10 * H, service="rag")]
    busy = {("ns", "a"): 4.0}
    rows = {r.group["service"]: r for r in allocated(items, NOV, NOV.end, ("service",), busy)}
    assert rows["chat"].utilisation == pytest.approx(0.2)
    assert rows["rag"].utilisation is None and rows["rag"].to_dict()["busyGpuHours"] is None


def test_unknown_group_is_refused() -> None:
    with pytest.raises(InputError, match="--by: unknown group 'colour'"):
        allocated([], NOV, NOV.end, ("colour",))


def test_idle_is_allocatable_minus_allocated_per_pool() -> None:
    nodes = [
        Capacity("n1", "n1", "gpu-train", "a100", 8.0, NOV.start - H),
        Capacity("n2", "n2", "gpu-train", "a100", 8.0, NOV.start, NOV.start + 5 * H),
    ]
    items = [iv("a", 4.0, 0, 10 * H, pool="gpu-train"), iv("z", 1.0, 0, H, pool="elsewhere")]
    (train,) = idle_by_pool(nodes, items, NOV, now=NOV.start + 10 * H)
    assert (train.allocatable, train.allocated, train.idle) == (120.0, 40.0, 80.0)


@pytest.mark.parametrize(
    ("request_", "node", "share"),
    [
        (GpuRequest(2), None, 2.0),
        (GpuRequest(1, 300), None, 0.3),
        (GpuRequest(2), NodeGpuSpec(SharingMode.TIME_SLICED, 4, None, 4), 0.5),
        (GpuRequest(2, mig_profile="1g.10gb"), None, 2 / 7),
        (GpuRequest(1, mig_profile="7g.80gb"), None, 1.0),
        (None, None, 0.0),
    ],
)
def test_gpu_share(request_, node, share) -> None:
    assert gpu_share(request_, node) == pytest.approx(share)


def test_records_round_trip_and_bad_records_name_the_field() -> None:
    record = {
        "pod": "p",
        "namespace": "n",
        "gpus": 0.5,
        "start": 10.0,
        "end": 20.0,
        "restarts": 2,
        "workloadClass": "batch",
        "costCenter": "cc",
        "service": None,
    }
    (interval,) = from_records([record])
    back = interval_to_record(interval)
    assert {k: back[k] for k in record} == record
    for bad, message in [
        ({**record, "gpus": -1}, "usage record 0: gpus: must be >= 0"),
        ({**record, "end": 5.0}, "usage record 0: end: ends (5.0) before it starts"),
        ({**record, "restarts": 1.5}, "usage record 0: restarts: expected an integer"),
        ({k: v for k, v in record.items() if k != "pod"}, "usage record 0: pod: required"),
        ({**record, "start": float("nan")}, "usage record 0: start: expected a finite number"),
        ({**record, "owner": 3}, "usage record 0: owner: expected a string"),
    ]:
        with pytest.raises(InputError) as err:
            list(from_records([bad]))
        assert str(err.value).startswith(message)


def test_pending_durations_become_stable_waits() -> None:
    waits = waits_from_pending_durations([("batch", 30.0), ("online-infer", 2.0)])
    assert [(w.key, w.workload_class, w.seconds) for w in waits] == [
        ("twin:wait:0", "batch", 30.0),
        ("twin:wait:1", "online-infer", 2.0),
    ]


def test_focus_csv_columns_and_quantities() -> None:
    items = [
        iv(
            "a",
            2.0,
            -H,
            3 * H,
            tenant="search",
            owner="o",
            cost_centre="cc-1",
            gpu_model="h100",
            pool="gpu-inference",
            service="chat",
        ),
        iv("b", 1.0, 0, H, gpu_model="l4"),
        Interval("c", "slurm", "99", "hpc1", 4.0, NOV.end + H, None),  # outside: no row
    ]
    out = io.StringIO()
    assert write_focus(out, items, NOV, NOV.end, prices={"h100": 2.5}) == 2
    rows = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert tuple(rows[0]) == COLUMNS
    assert all(c.startswith("x_") for c in COLUMNS if c not in FOCUS_COLUMNS)
    first = rows[0]
    assert first["PricingUnit"] == first["ConsumedUnit"] == "GPU-Hours"
    assert float(first["PricingQuantity"]) == 6.0 and float(first["BilledCost"]) == 15.0
    assert first["ChargePeriodStart"] == "2026-11-01T00:00:00Z"
    assert first["ChargePeriodEnd"] == "2026-11-01T03:00:00Z"
    assert first["BillingPeriodEnd"] == "2026-12-01T00:00:00Z"
    assert first["ResourceId"] == "a" and first["x_Tenant"] == "search"
    assert json.loads(first["Tags"]) == {"cost-centre": "cc-1", "owner": "o", "tenant": "search"}
    assert float(rows[1]["BilledCost"]) == 0.0  # no price for l4


def test_the_fast_record_path_reads_what_the_checked_path_reads() -> None:
    from gpupact.ledger.records import _checked_interval, interval_from_record

    full = {
        "pod": "p",
        "namespace": "n",
        "gpus": 2,
        "start": 10,
        "end": 20.5,
        "restarts": 3,
        "created": 5,
        "tenant": "t",
        "service": "",
        "job": None,
        "model": "m",
        "workloadClass": "batch",
        "owner": "o",
        "costCenter": "cc",
        "pool": "gpu-batch",
        "gpuModel": "h100",
        "key": "k-1",
    }
    minimal = {"pod": "p", "namespace": "n", "gpus": 0.25, "start": 10.0}
    for record in (full, minimal, {**minimal, "restarts": None}):
        assert interval_from_record(record, "x") == _checked_interval(record, "x")
    assert interval_from_record(full).service is None  # "" reads as absent on both paths
    for bad in ({**minimal, "gpus": True}, {**minimal, "start": "10"}, {**minimal, "pod": ""}):
        with pytest.raises(InputError):
            list(from_records([bad]))
