"""The live client's overall deadline per request: a real local server that drips bytes just
under the read timeout (in the body, or in the headers) is cut off at the deadline instead of
holding one page open without bound; `diagnose`, `ledger ingest` and the gateway's live source
all read through it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("kubernetes")

from gpupact.errors import InputError
from gpupact.ops import live
from gpupact.ops.request_deadline import DEFAULT_SECONDS, ENV, configured_seconds

BODY = 100_000  # bytes the server promises: dripped out, hours
GAP = 0.05  # seconds between dripped bytes, well under the read timeout below
READ_TIMEOUT = 0.5
DEADLINE = "1"  # seconds


class DripServer:
    """A TCP server on 127.0.0.1 that reads a request, then drips its answer one byte per GAP:
    `where="body"` sends whole headers promising BODY bytes first, `where="headers"` drips the
    header block itself. Counts what it sent and sees the client hang up."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.sent = 0
        self.hung_up = threading.Event()
        self.stop = threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> DripServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop.set()
        self.listener.close()
        self.thread.join(timeout=5)

    def _serve(self) -> None:
        self.listener.settimeout(0.1)
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except (TimeoutError, OSError):
                continue
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            request = b""
            while b"\r\n\r\n" not in request:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                request += chunk
            head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            if self.where == "body":
                conn.sendall(head + f"Content-Length: {BODY}\r\n\r\n".encode())
                drip = b"[" + b" " * (BODY - 1)
            else:
                conn.sendall(head)
                drip = b"X-Drip: " + b"a" * BODY
            for byte in drip:
                if self.stop.wait(GAP):
                    return
                try:
                    conn.sendall(bytes([byte]))
                except OSError:  # the client shut the connection
                    self.hung_up.set()
                    return
                self.sent += 1


def kubeconfig(tmp_path: Path, port: int) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "drip", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "drip",
            }
        )
    )
    return path


def guarded(call: Callable[[], Any]) -> BaseException | None:
    """`call` in a thread joined with a generous guard, so a hang fails the test instead of
    holding the suite (the guard is no speed assertion)."""
    outcome: list[BaseException | None] = []

    def target() -> None:
        try:
            call()
            outcome.append(None)
        except BaseException as err:
            outcome.append(err)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout=60)
    assert not thread.is_alive(), "the live read hung"
    return outcome[0]


@pytest.fixture
def drip_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(live, "READ_TIMEOUT", READ_TIMEOUT)
    monkeypatch.setenv(ENV, DEADLINE)


def expect_deadline(err: BaseException | None, server: DripServer) -> None:
    assert isinstance(err, InputError), err
    assert f"no complete answer within {DEADLINE} s" in str(err) and ENV in str(err)
    assert "/api/v1/nodes" in str(err)  # the page that was cut off
    # cut off mid-answer: the server dripped bytes (each within the read timeout, which would
    # read "cannot reach the API server"), far from all it promised, and saw the client go
    assert 0 < server.sent < BODY
    assert server.hung_up.wait(5)


@pytest.mark.parametrize("where", ["body", "headers"])
def test_a_server_dripping_under_the_read_timeout_is_cut_at_the_deadline(
    where: str, tmp_path: Path, drip_settings: None
) -> None:
    with DripServer(where) as server:
        config = kubeconfig(tmp_path, server.port)
        err = guarded(lambda: live.load_live("drip", str(config)))
        expect_deadline(err, server)


def test_the_gateways_live_source_has_the_same_deadline(
    tmp_path: Path, drip_settings: None
) -> None:
    from gpupact.serve.sources import live_lister

    with DripServer("body") as server:
        lister = live_lister("drip", str(kubeconfig(tmp_path, server.port)))
        expect_deadline(guarded(lister), server)


def test_the_cli_reports_the_deadline_in_one_line(tmp_path: Path) -> None:
    with DripServer("body") as server:
        config = kubeconfig(tmp_path, server.port)
        env = {**os.environ, ENV: "1s"}
        done = subprocess.run(
            [sys.executable, "-m", "gpupact", "diagnose", "-A", "--kubeconfig", str(config)],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "no complete answer within 1 s" in lines[0], done.stderr


@pytest.mark.parametrize("text", ["0", "-5", "nan", "inf", "soon", "10 parsecs", "1e999"])
def test_a_bad_deadline_setting_is_bad_input(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, text)
    with pytest.raises(InputError, match=ENV):
        configured_seconds()


@pytest.mark.parametrize(("text", "seconds"), [("", DEFAULT_SECONDS), ("2.5", 2.5), ("2m", 120)])
def test_deadline_settings(text: str, seconds: float, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, text)
    assert configured_seconds() == seconds
