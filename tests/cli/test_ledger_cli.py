"""`gpupact ledger ...` and `gpupact review` end to end on files."""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpupact.cli.main import _register, app

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "ledger"))
from make_cluster import cluster  # noqa: E402

SACCT = ROOT / "tests/ledger/fixtures/sacct.txt"
ACME = ROOT / "examples/acme/contract.yaml"
NOW = "2026-11-30T00:00:00Z"

_register()
runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


@pytest.fixture
def db(tmp_path) -> str:
    return str(tmp_path / "ledger.db")


def test_ingest_sacct_twice_counts_once(db: str) -> None:
    first = invoke("ledger", "ingest", "--db", db, "--sacct", str(SACCT), "--slurm-cluster", "hpc1")
    assert first.exit_code == 0 and "job intervals: 4 received, 4 new" in first.output
    again = invoke("ledger", "ingest", "--db", db, "--sacct", str(SACCT))
    assert "job intervals: 4 received, 0 new, 0 updated, 4 already recorded" in again.output


def test_snapshot_and_records_report_and_export(db: str, tmp_path) -> None:
    snap = tmp_path / "snap"
    snap.mkdir()
    (snap / "all.json").write_text(json.dumps({"kind": "List", "items": cluster()}))
    out = invoke(
        "ledger", "ingest", "--db", db, "--snapshot", str(snap), "--now", "2026-11-02T13:00:00Z"
    )
    assert out.exit_code == 0 and "pod intervals: 3 received, 3 new" in out.output
    records = tmp_path / "usage.jsonl"
    records.write_text(
        json.dumps(
            {
                "pod": "p",
                "namespace": "n",
                "tenant": "twin-t",
                "model": "m",
                "gpus": 1,
                "start": 1793491200,
                "end": 1793491200 + 7200,
            }
        )
        + "\n"
    )
    assert invoke("ledger", "ingest", "--db", db, "--records", str(records)).exit_code == 0
    report = invoke(
        "ledger",
        "report",
        "--db",
        db,
        "--month",
        "2026-11",
        "--now",
        NOW,
        "--by",
        "tenant",
        "-o",
        "json",
    )
    rows = {r["tenant"]: r["gpuHours"] for r in json.loads(report.output)["allocated"]}
    assert rows["twin-t"] == 2.0 and rows["search"] > 0
    pools = {p["pool"]: p for p in json.loads(report.output)["pools"]}
    assert pools["gpu-inference"]["allocatableGpuHours"] == 8 * 29 * 24  # 8 GPUs since Nov 1
    csv_file = tmp_path / "focus.csv"
    export = invoke(
        "ledger",
        "export",
        "--db",
        db,
        "--month",
        "2026-11",
        "--now",
        NOW,
        "-f",
        str(csv_file),
        "--price",
        "h100-80g=2.0",
    )
    assert export.exit_code == 0, export.output
    rows = list(csv.DictReader(io.StringIO(csv_file.read_text())))
    chat = next(r for r in rows if r["ResourceName"] == "search/chat-0")
    assert float(chat["BilledCost"]) == pytest.approx(2.0 * float(chat["PricingQuantity"]))


def test_review_finds_what_the_chapter_lists(db: str, tmp_path) -> None:
    invoke("ledger", "ingest", "--db", db, "--sacct", str(SACCT), "--now", "2026-11-06T12:00:00Z")
    result = invoke(
        "review",
        "--month",
        "2026-11",
        "--db",
        db,
        "--contract",
        str(ACME),
        "--now",
        NOW,
        "-o",
        "json",
    )
    assert result.exit_code == 1, result.output
    data = json.loads(result.output)
    pending = {f["subject"] for f in data["findings"] if f["code"] == "long-pending-evaluation"}
    # eval-mmlu waited 6h, within batch's 8h promise; eval-gsm8k has waited 28h and still does
    assert pending == {"job hpc1/eval-gsm8k"}
    strict = invoke(
        "review",
        "--month",
        "2026-11",
        "--db",
        db,
        "--now",
        NOW,
        "-o",
        "json",
        "--pending-threshold",
        "1h",
    )
    subjects = {f["subject"] for f in json.loads(strict.output)["findings"]}
    assert {"job hpc1/eval-mmlu", "job hpc1/eval-gsm8k"} <= subjects
    owners = {(r["owner"], r["cost_centre"]) for r in data["byOwner"]}
    assert ("alice", "ml-research") in owners
    text = invoke("review", "--month", "2026-11", "--db", db, "--now", NOW)
    assert "action:" in text.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["ledger", "report", "--month", "2026-13"], "--month: expected YYYY-MM"),
        (["review", "--month", "2026-11"], "no such ledger file (ingest into it first)"),
        (["ledger", "ingest"], "give exactly one of"),
        (["ledger", "ingest", "--sacct", "/nonexistent"], "/nonexistent: No such file"),
        (
            ["ledger", "export", "--month", "2026-11", "--price", "h100"],
            "--price: expected MODEL=PRICE",
        ),
        (["review", "--month", "2026-11", "--pending-threshold", "soon"], "--pending-threshold"),
        (["ledger", "report", "--month", "2026-11", "--by", "colour"], "--by: unknown group"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(db: str, args: list[str], message: str) -> None:
    if "ledger file" not in message:
        invoke("ledger", "ingest", "--db", db, "--sacct", str(SACCT))  # the ledger exists
    result = invoke(*args, "--db", db)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0]


def test_bad_records_file_names_the_record(db: str, tmp_path) -> None:
    bad = tmp_path / "r.json"
    bad.write_text(json.dumps([{"pod": "p", "namespace": "n", "gpus": 1, "start": 5, "end": 1}]))
    result = invoke("ledger", "ingest", "--db", db, "--records", str(bad))
    assert (
        result.exit_code == 2
        and "usage record 0: end: ends (1.0) before it starts" in result.output
    )


def test_profiles_command_prints_plan_flags(db: str) -> None:
    from gpupact.ledger import Ledger

    with Ledger.open(db) as store:
        hist = {
            "inputTokens": [{"le": 800, "count": 90}, {"le": 6000, "count": 10}],
            "outputTokens": [{"le": 200, "count": 60}, {"le": 800, "count": 40}],
        }
        store.add_profile("shop", "qwen2.5-14b-instruct", 0.0, hist)
    result = invoke("ledger", "profiles", "--db", db)
    assert result.exit_code == 0, result.output
    assert (
        "gpupact plan --model qwen2.5-14b-instruct --input-p50 800 --input-p95 6000 "
        "--output-p50 200 --output-p95 800"
    ) in result.output
