"""The live paths against the ops tests' local API-server stand-in (real Kubernetes client,
GETs only): the gateway's LiveSource and `gpupact ledger ingest --context`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

OPS = Path(__file__).resolve().parents[1] / "ops"
sys.path.insert(0, str(OPS))
from test_ops_live import TOKEN, FakeApiServer  # noqa: E402

from gpupact.cli.main import _register, app  # noqa: E402
from gpupact.serve import LiveSource, live_lister  # noqa: E402

FIXTURE = OPS / "fixtures" / "gang-half-started"
NOW = 1_793_577_600.0


def test_live_source_reads_the_api_server(tmp_path: Path) -> None:
    with FakeApiServer(FIXTURE) as server:
        lister = live_lister("fake", str(server.kubeconfig(tmp_path)))
        snap = LiveSource(lister).refresh(NOW)
        methods = {m for m, _, _ in server.requests}
        auth = {a for _, _, a in server.requests}
        paths = {p for _, p, _ in server.requests}
    assert methods == {"GET"} and auth == {f"Bearer {TOKEN}"}
    assert {"/api/v1/nodes", "/api/v1/pods", "/apis/apps/v1/deployments"} <= paths
    pods = json.loads((FIXTURE / "pods.json").read_text())["items"]
    started_gpu_pods = [
        p
        for p in pods
        if p["status"].get("startTime")
        and p["spec"].get("nodeName")
        and any(
            "nvidia.com/gpu" in (c.get("resources", {}).get("requests") or {})
            or "nvidia.com/gpu" in (c.get("resources", {}).get("limits") or {})
            for c in p["spec"]["containers"]
        )
    ]
    assert len(snap.intervals) == len(started_gpu_pods) > 0
    podgroups = json.loads((FIXTURE / "volcano.json").read_text())["items"]
    waiting = [
        g
        for g in podgroups
        if g["kind"] == "PodGroup" and g.get("status", {}).get("phase") in ("Pending", "Inqueue")
    ]
    assert snap.podgroups_blocked == len(waiting) > 0


def test_ledger_ingest_from_a_live_context(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    _register()
    db = str(tmp_path / "l.db")
    with FakeApiServer(FIXTURE) as server:
        config = str(server.kubeconfig(tmp_path))
        args = [
            "ledger",
            "ingest",
            "--db",
            db,
            "--context",
            "fake",
            "--kubeconfig",
            config,
            "--now",
            "2026-11-02T00:00:00Z",
        ]
        first = CliRunner().invoke(app, args, catch_exceptions=False)
        again = CliRunner().invoke(app, args, catch_exceptions=False)
    assert first.exit_code == 0, first.output
    assert "pod intervals:" in first.output and " 0 new" not in first.output.splitlines()[0]
    assert "0 new, 0 updated" in again.output.splitlines()[0]
