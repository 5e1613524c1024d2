"""Slurm accounting (`sacct --parsable2`) into intervals and waits."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from gpupact.errors import InputError
from gpupact.ledger import Ledger, SlurmOptions, month_window, read_sacct, total_gpu_hours
from gpupact.ledger.slurm import parse_alloc_tres

SACCT = Path(__file__).parent / "fixtures" / "sacct.txt"


def at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def test_allocations_become_intervals_steps_and_cpu_jobs_do_not() -> None:
    read = read_sacct(SACCT.read_text(), str(SACCT))
    by_job = {i.pod: i for i in read.intervals}
    assert sorted(by_job) == ["81234", "81240", "81242", "81250_3"]
    train = by_job["81234"]
    assert (train.gpus, train.gpu_model, train.tenant, train.owner, train.pool) == (
        16.0,
        "a100",
        "ml-research",
        "alice",
        "gpu-train",
    )
    assert train.start == at("2026-11-03T10:00:00") and train.end == at("2026-11-03T16:00:00")
    assert train.key == "slurm:hpc1:81234" and train.job == "pretrain-7b"
    assert by_job["81242"].end is None and by_job["81242"].gpus == 4.0  # typed gres only
    assert by_job["81242"].gpu_model == "h100"


def test_gpu_hours_of_the_month() -> None:
    read = read_sacct(SACCT.read_text())
    november = month_window("2026-11")
    now = at("2026-11-06T12:00:30")
    # 16 x 6 h + 1 x 1.5 h + 4 x 1 h (running) + 2 x 1 h
    assert total_gpu_hours(read.intervals, november, now) == pytest.approx(96 + 1.5 + 4 + 2)


def test_waits_from_submit_to_start_and_still_pending() -> None:
    read = read_sacct(SACCT.read_text(), observed_at=at("2026-11-05T20:00:00"))
    waits = {w.name: w for w in read.waits}
    assert waits["eval-mmlu"].seconds == 6 * 3600 and waits["eval-mmlu"].started
    assert waits["eval-gsm8k"].seconds == 12 * 3600 and not waits["eval-gsm8k"].started
    assert "prep-data" in waits  # waits are counted for every job, GPUs or not


def test_local_times_follow_the_given_zone() -> None:
    plus8 = SlurmOptions(timezone=timezone(timedelta(hours=8)))
    utc = read_sacct(SACCT.read_text()).intervals[0]
    local = read_sacct(SACCT.read_text(), options=plus8).intervals[0]
    assert utc.start - local.start == 8 * 3600


def test_slurm_and_kubernetes_share_one_ledger(tmp_path) -> None:
    read = read_sacct(SACCT.read_text())
    with Ledger.open(str(tmp_path / "l.db")) as ledger:
        assert ledger.ingest(read.intervals).inserted == 4
        assert ledger.ingest(read_sacct(SACCT.read_text()).intervals).inserted == 0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ("JobID|User\n1|a\n", "header lacks Account, Partition, AllocTRES"),
        (SACCT.read_text().replace("|FAILED|gpu-b01", "|gpu-b01"), ":10: 11 fields"),
        (SACCT.read_text().replace("gres/gpu=2", "gres/gpu=two"), ":10: AllocTRES:"),
        (SACCT.read_text().replace("2026-11-07T00:10:00", "yesterday"), ":10: Start:"),
    ],
    ids=["empty", "header", "field-count", "alloc-tres", "start"],
)
def test_bad_input_names_file_line_and_column(text: str, message: str) -> None:
    with pytest.raises(InputError) as err:
        read_sacct(text, "acct.txt")
    assert str(err.value).startswith("acct.txt") and message in str(err.value)


def test_alloc_tres_forms() -> None:
    assert parse_alloc_tres("cpu=4,gres/gpu=2,mem=8G") == (2.0, None)
    assert parse_alloc_tres("cpu=4,gres/gpu:a100=1,gres/gpu:h100=2") == (3.0, None)
    assert parse_alloc_tres("") == (0.0, None)
