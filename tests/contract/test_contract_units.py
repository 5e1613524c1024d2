"""The strict scalar parsers behind the schema's field types."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from gpupact.contract.units import (
    Sharing,
    format_duration,
    format_params,
    parse_bytes,
    parse_cron,
    parse_duration,
    parse_instant,
    parse_millicpu,
    parse_params,
    parse_percent,
    parse_sharing,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("3m", timedelta(minutes=3)),
        ("90s", timedelta(seconds=90)),
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("2d", timedelta(days=2)),
        ("500ms", timedelta(milliseconds=500)),
        ("1m500ms", timedelta(minutes=1, milliseconds=500)),
        ("0", timedelta(0)),
        ("0s", timedelta(0)),
    ],
)
def test_durations(text, expected):
    assert parse_duration(text) == expected
    assert parse_duration(format_duration(expected)) == expected


@pytest.mark.parametrize(
    "bad", ["", "3", "1.5h", "30m1h", "-3m", "3 m", "3M", "1h1h", 180, 1.5, True, None]
)
def test_bad_durations(bad):
    with pytest.raises(ValueError):
        parse_duration(bad)


def test_format_duration():
    assert format_duration(timedelta(hours=13, seconds=30)) == "13h30s"
    assert format_duration(timedelta(0)) == "0s"
    assert format_duration(timedelta(days=4)) == "4d"


def test_quantities_are_exact_integers():
    assert parse_bytes("80Gi") == 80 * 2**30
    assert parse_bytes("1Ti") == 2**40
    assert parse_bytes(512) == 512
    assert parse_millicpu("96") == 96_000
    assert parse_millicpu("500m") == 500
    assert parse_millicpu(0.5) == 500


@pytest.mark.parametrize("bad", ["80GB", "-1Gi", "lots", True, None, [1]])
def test_bad_quantities(bad):
    with pytest.raises(ValueError):
        parse_bytes(bad)


def test_percent():
    assert parse_percent("20%") == 20
    assert parse_percent(0) == 0
    for bad in ("20", "120%", "12.5%", -1, True, 0.2):
        with pytest.raises(ValueError):
            parse_percent(bad)


def test_params():
    assert parse_params("70B") == 70 * 10**9
    assert parse_params("7.5B") == 7_500_000_000
    assert parse_params("350M") == 350 * 10**6
    assert parse_params("1.2T") == 1_200_000_000_000
    for bad in ("70b", "70", "70 B", "0B", "1.5K0", "0.0000000001B", 0, True, 70.0):
        with pytest.raises(ValueError):
            parse_params(bad)


def test_params_format_reads_back():
    for count in (70 * 10**9, 7_500_000_000, 1234, 350 * 10**6, 10**12 + 1000):
        assert parse_params(format_params(count)) == count
    assert format_params(14 * 10**9) == "14B"


def test_bare_params_are_refused_with_the_unit_to_write():
    # `params: 70` meant 70B; read as 70 parameters it would pass every memory check
    with pytest.raises(ValueError, match="write '70B' for 70 billion"):
        parse_params(70)


def test_mig_media_extension_profile_names_the_plugin_resource():
    # the device plugin replaces '+' (not allowed in a resource name) with '.'
    assert parse_sharing("mig:1g.5gb+me").resource_name == "nvidia.com/mig-1g.5gb.me"


def test_sharing():
    assert parse_sharing("exclusive") == Sharing("exclusive")
    mig = parse_sharing("mig:1g.10gb")
    assert (mig.mode, mig.profile, mig.devices_per_gpu(80 * 2**30)) == ("mig", "1g.10gb", 7)
    assert mig.device_memory(80 * 2**30) == 10 * 2**30
    assert mig.resource_name == "nvidia.com/mig-1g.10gb"
    assert parse_sharing("mig:3g.40gb").devices_per_gpu(80 * 2**30) == 2
    ts = parse_sharing("timeslice:4")
    assert (ts.devices_per_gpu(80), ts.device_memory(80), ts.resource_name) == (
        4,
        80,
        "nvidia.com/gpu",
    )


@pytest.mark.parametrize(
    ("profile", "gib", "instances"),
    [
        # NVIDIA's MIG user guide tables (instances of one profile per GPU)
        ("1g.10gb", 80, 7),  # A100/H100 80GB
        ("1g.20gb", 80, 4),
        ("2g.20gb", 80, 3),
        ("3g.40gb", 80, 2),
        ("4g.40gb", 80, 1),
        ("7g.80gb", 80, 1),
        ("1g.5gb", 40, 7),  # A100 40GB
        ("1g.10gb", 40, 4),  # mig-parted's example config: all-1g.10gb -> 4
        ("1g.12gb", 94, 7),  # H100 NVL
        ("1g.24gb", 94, 4),
        ("3g.71gb", 141, 2),  # H200
        ("1g.5gb+me", 40, 1),  # one media-extension instance per GPU
    ],
)
def test_mig_instances_per_gpu_follow_compute_and_memory_slices(profile, gib, instances):
    assert parse_sharing(f"mig:{profile}").devices_per_gpu(gib * 2**30) == instances
    assert [str(parse_sharing(s)) for s in ("exclusive", "mig:1g.10gb", "timeslice:4")] == [
        "exclusive",
        "mig:1g.10gb",
        "timeslice:4",
    ]
    for bad in (
        "mig",
        "mig:10gb",
        "timeslice",
        "timeslice:1",
        "timeslice:x",
        "exclusive:2",
        "shared",
        4,
    ):
        with pytest.raises(ValueError):
            parse_sharing(bad)


def test_cron():
    assert parse_cron("0 8 * * 1-5") == "0 8 * * 1-5"
    assert parse_cron("*/15  0-6,22 28 * *") == "*/15 0-6,22 28 * *"
    for bad in (
        "0 8 * *",
        "60 * * * *",
        "0 24 * * *",
        "0 0 0 * *",
        "0 0 * 13 *",
        "0 0 * * MON",
        "5-1 * * * *",
        "*/0 * * * *",
        5,
    ):
        with pytest.raises(ValueError):
            parse_cron(bad)


def test_instants():
    aware = datetime(2026, 11, 10, tzinfo=UTC)
    assert parse_instant(aware) is aware
    assert parse_instant(date(2026, 11, 10)) == aware
    assert parse_instant("2026-11-10") == aware
    assert parse_instant("2026-11-10T08:00:00+08:00") == aware
    assert parse_instant("2026-11-10T08:00:00+08:00").tzinfo == timezone(timedelta(hours=8))
    for bad in (datetime(2026, 11, 10), "2026-11-10T08:00:00", "tomorrow", 20261110):
        with pytest.raises(ValueError):
            parse_instant(bad)
