"""Files that are not files (a FIFO, a device), a byte-order mark, mapping keys of mixed
types, and `serve` options and token files it cannot honour: exit 2, one `error:` line naming
the file (and line and field) or the option, no traceback, no hang, before any port is bound."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

import gpupact
from gpupact.cli.main import _register, app

ROOT = Path(__file__).resolve().parents[2]
SRC = Path(gpupact.__file__).resolve().parents[1]
CONTRACT = ROOT / "examples/acme/contract.yaml"
POD = ROOT / "examples/fit/pod.yaml"
NODES = ROOT / "examples/fit/cluster.json"
SCENARIO = ROOT / "examples/promo-peak/single-pool"
TOKEN = "t" * 20
GUARD_SECONDS = 60  # a hang fails the test; not a speed assertion

_register()


def run(*args: str | Path) -> tuple[int, str]:
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stderr


def assert_one_error(code: int, stderr: str, *fragments: str) -> None:
    lines = stderr.strip().splitlines()
    assert code == 2, stderr
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    assert "Traceback" not in stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


def _commands(path: Path, tokens: Path) -> dict[str, list[str]]:
    return {
        "check": ["check", str(path)],
        "compile": ["compile", str(path)],
        "fit-pod": ["fit", "-f", str(path), "--nodes", str(NODES)],
        "fit-nodes": ["fit", "-f", str(POD), "--nodes", str(path)],
        "serve-tokens": ["serve", str(SCENARIO), "--tokens", str(path), "--port", "1"],
        "serve-contract": [
            "serve",
            str(SCENARIO),
            "--tokens",
            str(tokens),
            "--contract",
            str(path),
            "--port",
            "1",
        ],
    }


COMMANDS = ["check", "compile", "fit-pod", "fit-nodes", "serve-tokens", "serve-contract"]


@pytest.mark.parametrize("command", COMMANDS)
def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path, command: str) -> None:
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(f"tenants:\n  - name: finance\n    token: {TOKEN}\n")
    proc = subprocess.run(
        [sys.executable, "-m", "gpupact", *_commands(fifo, tokens)[command]],
        capture_output=True,
        text=True,
        timeout=GUARD_SECONDS,
        env={**os.environ, "PYTHONPATH": str(SRC)},
        check=False,
    )
    assert_one_error(proc.returncode, proc.stderr, f"{fifo}: not a regular file (a FIFO)")


@pytest.mark.parametrize("command", COMMANDS)
def test_a_device_is_refused(tmp_path: Path, command: str) -> None:
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(f"tenants:\n  - name: finance\n    token: {TOKEN}\n")
    code, stderr = run(*_commands(Path("/dev/zero"), tokens)[command])
    assert_one_error(code, stderr, "/dev/zero: not a regular file (a character device)")


@pytest.mark.parametrize("suffix", ["yaml", "json"])
def test_a_byte_order_mark_is_accepted(tmp_path: Path, suffix: str) -> None:
    data = yaml.safe_load(CONTRACT.read_text())
    text = CONTRACT.read_text() if suffix == "yaml" else json.dumps(data, default=str)
    path = tmp_path / f"contract.{suffix}"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    code, stderr = run("check", path)
    assert code in (0, 1) and "error" not in stderr, stderr


def test_a_byte_order_mark_on_a_pod_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "pod.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(yaml.safe_load(POD.read_text())).encode())
    code, stderr = run("fit", "-f", path, "--nodes", NODES)
    assert code in (0, 1) and "error" not in stderr, stderr


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ("tenants: []\n1: x\nadmins: []\nzz: y\n", [":2:", "1: unknown field"]),
        (
            f"tenants:\n  - name: a\n    token: {TOKEN}\n    7: x\n    zz: y\n",
            [":4:", "tenants[0].7: unknown field"],
        ),
    ],
)
def test_mixed_type_keys_in_the_token_file(tmp_path: Path, text: str, fragments: list[str]):
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(text)
    code, stderr = run("serve", SCENARIO, "--tokens", tokens, "--port", "1")
    assert_one_error(code, stderr, str(tokens), *fragments)


def test_mixed_type_keys_in_a_contract(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(CONTRACT.read_text().replace("metadata:\n", "metadata:\n  1: x\n  zz: y\n", 1))
    result = CliRunner().invoke(app, ["check", str(path)])
    assert result.exit_code == 2 and "Traceback" not in result.stderr
    assert f"{path}:7:3: metadata.zz: unknown field" in result.stderr, result.stderr


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        (
            f"tenants:\n  - name: a\n    token: {TOKEN}\n"
            "    gpuHourBudget: 5\n    gpuHourBudget: 9\n",
            [":5:", "tenants[0].gpuHourBudget", "duplicate key"],
        ),
        (
            f"tenants:\n  - name: a\n    token: {TOKEN}\n    budget: 5\n",
            [":4:", "tenants[0].budget", "unknown field"],
        ),
        (
            f"tenants:\n  - name: fin/ance\n    token: {TOKEN}\n",
            [":2:", "tenants[0].name", "no '/'"],
        ),
        (f"tenants:\n  - name: ../x\n    token: {TOKEN}\n", ["tenants[0].name"]),
    ],
)
def test_serve_token_file_problems(tmp_path: Path, text: str, fragments: list[str]) -> None:
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(text)
    code, stderr = run("serve", SCENARIO, "--tokens", tokens, "--port", "1")
    assert_one_error(code, stderr, str(tokens), *fragments)


@pytest.mark.parametrize(
    ("option", "fragment"),
    [
        (["--scale", "nan"], "--scale"),
        (["--scale", "inf"], "--scale"),
        (["--scale", "0"], "--scale"),
        (["--queue-limit", "nan"], "--queue-limit"),
        (["--queue-limit", "-inf"], "--queue-limit"),
        (["--kv-limit", "nan"], "--kv-limit"),
        (["--kv-limit", "2"], "--kv-limit"),
        (["--host", "no-such-host.invalid"], "--host: cannot resolve"),
        (["--db", "NOTADB"], "not a usable ledger database"),
    ],
)
def test_serve_options_checked_before_binding(tmp_path: Path, option: list[str], fragment: str):
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(f"tenants:\n  - name: finance\n    token: {TOKEN}\n")
    if "NOTADB" in option:
        garbage = tmp_path / "ledger.db"
        garbage.write_text("this is not an SQLite database, " * 100)
        option = ["--db", str(garbage)]
    # port 1 is privileged: had the checks let it through, binding would fail with exit 3
    code, stderr = run("serve", SCENARIO, "--tokens", tokens, "--port", "1", *option)
    assert_one_error(code, stderr, fragment)
