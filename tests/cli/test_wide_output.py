"""`-o wide` for check and diagnose: kubectl's wide, one line per finding or subject with more
columns than the first line text gives each, the cells read back against `-o json`."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gpupact.cli.main import _register, app

ROOT = Path(__file__).resolve().parents[2]
FLAWED = ROOT / "examples/acme/contract-flawed.yaml"
FIXTURES = ROOT / "tests/ops/fixtures"
NOW = "2026-11-10T12:00:00Z"

_register()


def run(*args: str | Path) -> tuple[int, str]:
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.stderr == "", result.stderr
    return result.exit_code, result.stdout


def table(text: str) -> tuple[list[str], list[list[str]]]:
    """Plain columns (stdout is no terminal here) read by the header's column starts: a cell
    may hold spaces, a header never does."""
    header, *rows = text.rstrip("\n").splitlines()
    starts = [m.start() for m in re.finditer(r"\S+", header)]
    bounds = list(zip(starts, [*starts[1:], None], strict=True))
    return header.split(), [[row[a:b].strip() for a, b in bounds] for row in rows]


def text_head_fields(line: str) -> list[str]:
    return re.split(r" {2,}", line.strip())


def test_check_wide_is_one_row_per_finding_with_every_field_a_column() -> None:
    code, out = run("check", FLAWED, "--now", NOW, "-o", "json")
    findings = json.loads(out)["findings"]
    assert code == 1 and len(findings) > 5
    wide_code, wide = run("check", FLAWED, "--now", NOW, "-o", "wide")
    assert wide_code == code
    headers, rows = table(wide)
    assert headers == ["SEVERITY", "RULE", "LOCATION", "PATH", "SUBJECT", "MESSAGE", "FIX"]
    assert len(rows) == len(findings)
    for row, f in zip(rows, findings, strict=True):
        where = f"{f['file']}:{f['line']}:{f['column']}" if f["line"] else f["file"]
        expected = [f["severity"], f["rule"], where, f["path"] or "-", f["subject"]]
        assert row == [*expected, f["message"], f["fix"]]
    # text: the first line of a finding has SEVERITY RULE LOCATION PATH; the rest below it
    _, text = run("check", FLAWED, "--now", NOW)
    heads = [line for line in text.splitlines() if line.startswith(("error", "warning"))]
    assert len(heads) == sum(f["severity"] != "info" for f in findings)
    assert max(len(text_head_fields(line)) for line in heads) < len(headers)


def test_check_wide_exits_as_text_and_keeps_the_ok_line() -> None:
    code, out = run("check", ROOT / "examples/acme/contract.yaml", "--now", NOW, "-o", "wide")
    text_code, text = run("check", ROOT / "examples/acme/contract.yaml", "--now", NOW)
    assert code == text_code
    if "ok (" in text:  # no finding at all: the same one line as text
        assert out == text
    else:
        assert out.startswith("SEVERITY")


def _fixture_gpus(folder: Path) -> dict[str, int]:
    """GPU devices per pod key (whole GPUs and MIG slices alike, one device each), read from
    the fixture's JSON limits (not through gpupact)."""
    pods = json.loads((folder / "pods.json").read_text())["items"]
    out = {}
    for pod in pods:
        meta = pod["metadata"]
        out[f"{meta['namespace']}/{meta['name']}"] = sum(
            int(count)
            for c in pod["spec"]["containers"]
            for name, count in ((c.get("resources") or {}).get("limits") or {}).items()
            if name == "nvidia.com/gpu" or name.startswith("nvidia.com/mig-")
        )
    return out


@pytest.mark.parametrize("name", ["gang-half-started", "quota-exhausted", "gpu-oom", "mig-nodes"])
def test_diagnose_wide_is_one_row_per_subject_with_the_finding_as_columns(name: str) -> None:
    snap = FIXTURES / name
    args = ("diagnose", "-A", "--snapshot", snap, "--now", NOW)
    code, out = run(*args, "-o", "json")
    report: dict[str, Any] = json.loads(out)
    diagnoses = report["diagnoses"]
    assert diagnoses, name
    wide_code, wide = run(*args, "-o", "wide")
    assert wide_code == code
    headers, rows = table(wide)
    text_headers = ["SUBJECT", "STATUS", "PENDING"]  # what text heads each subject with
    assert headers[:3] == text_headers and len(headers) > len(text_headers)
    assert {"OWNER", "PODS", "GPUS", "ELIGIBLE", "CODE", "EVIDENCE", "ACTION"} <= set(headers)
    gpus = _fixture_gpus(snap)
    assert len(rows) == len(diagnoses)
    for row, d in zip(rows, diagnoses, strict=True):
        cell = dict(zip(headers, row, strict=True))
        kind, rest = d["subject"].split(" ", 1)
        assert cell["SUBJECT"] == f"{kind}/{rest}" and cell["STATUS"] == d["status"]
        f = d["finding"]
        assert cell["CODE"] == f["code"] and cell["SEVERITY"] == f["severity"]
        assert cell["STEP"] == f"{f['step']}.{f['domain']}"
        assert cell["SUMMARY"] == f["summary"] and cell["ACTION"] == (f["action"] or "-")
        assert cell["EVIDENCE"] == " | ".join(e for e in f["evidence"] if e)
        pods = d.get("members") or ([f"{d['namespace']}/{d['name']}"] if kind == "pod" else [])
        assert cell["PODS"] == str(len(pods))
        if pods:
            assert float(cell["GPUS"]) == pytest.approx(sum(gpus[p] for p in pods))
            assert cell["OWNER"] != "-"
        if cell["ELIGIBLE"] != "-":
            eligible, total = map(int, cell["ELIGIBLE"].split("/"))
            assert total == report["cluster"]["nodes"] and 0 <= eligible <= total
