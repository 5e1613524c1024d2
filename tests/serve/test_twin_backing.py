"""The embedded default: the API over the real twin (examples/promo-peak) on a scaled clock,
in-process and as `gpupact serve` in its own process."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from serve_helpers import TOKENS, Clock, auth, tokens

from gpupact.errors import InputError
from gpupact.ledger import Ledger
from gpupact.serve import ServeState, TwinSource, create_app, open_twin

ROOT = Path(__file__).resolve().parents[2]
PROMO = ROOT / "examples" / "promo-peak"


def test_promo_peak_backs_the_api(tmp_path) -> None:
    sim, contract = open_twin(PROMO)  # a directory of variants: the first, `contract`
    clock = Clock(0.0)
    with Ledger.open(str(tmp_path / "l.db")) as ledger:
        state = ServeState(
            TwinSource(sim, scale=3600.0),
            tokens(),
            ledger,
            clock,
            contract=contract,
            refresh_seconds=None,
        )
        state.refresh()
        with TestClient(create_app(state)) as c:
            (shop,) = c.get("/v1/backends", headers=auth("admin")).json()["backends"]
            assert (shop["service"], shop["model"], shop["tenant"]) == (
                "shop-assistant",
                "qwen2.5-14b-instruct",
                "shop",
            )
            assert shop["ready"] >= 1 and shop["healthy"]
            ask = {"tenant": "shop", "model": "qwen2.5-14b-instruct", "contextTokens": 1000}
            assert (
                c.post("/v1/decisions", json=ask, headers=auth("admin")).json()["outcome"]
                == "admit"
            )
            clock.t = 3.0  # three simulated hours later
            state.refresh()
            assert sim.now == pytest.approx(3 * 3600.0)
            assert state.ledger.count() > 0  # the twin's pod runs are in the ledger
            hours = state.snapshot.hours_by_tenant_model
            assert hours[("shop", "qwen2.5-14b-instruct")] > 0
            text = c.get("/metrics").text
            assert 'gpupact_gpu_hours_total{model="qwen2.5-14b-instruct",tenant="shop"}' in text


def test_unknown_variant_is_bad_input() -> None:
    with pytest.raises(
        InputError, match="--variant: no variant 'nope' \\(one of contract, single-pool\\)"
    ):
        open_twin(PROMO, variant="nope")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_gpupact_serve_runs_the_twin_behind_uvicorn(tmp_path) -> None:
    token_file = tmp_path / "tokens.yaml"
    token_file.write_text(json.dumps({"admins": [{"name": "sre", "token": TOKENS["admin"]}]}))
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gpupact",
            "serve",
            str(PROMO / "single-pool"),
            "--tokens",
            str(token_file),
            "--port",
            str(port),
            "--db",
            str(tmp_path / "l.db"),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                req = urllib.request.Request(
                    f"http://127.0.0.1:{port}/v1/backends", headers=auth("admin")
                )
                with urllib.request.urlopen(req, timeout=2) as response:
                    body = json.loads(response.read())
                break
            except OSError:
                assert server.poll() is None, server.stderr.read().decode()
                assert time.monotonic() < deadline, "gpupact serve did not answer in 60 s"
                time.sleep(0.3)
        assert [b["model"] for b in body["backends"]] == ["qwen2.5-14b-instruct"]
    finally:
        server.terminate()
        server.wait(timeout=30)
