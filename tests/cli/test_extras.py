"""What each command needs beyond the base install: `serve` needs nothing more (its FastAPI,
uvicorn and prometheus_client are base dependencies); `sweep --ray` needs the `ray` extra and a
postgresql:// ledger the `postgres` extra, and each says which in one line, exit 2. A missing
package is simulated in a real `python -m gpupact` process (None in sys.modules: its import
raises ImportError as if it were not installed)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

RUN_WITHOUT = """
import sys
for name in sys.argv[1].split(","):
    sys.modules[name] = None  # `import name` now raises ImportError
sys.argv = ["gpupact", *sys.argv[2:]]
from gpupact.cli.main import main
main()
"""


def gpupact_without(missing: str, *args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", RUN_WITHOUT, missing, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, (done.returncode, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    return lines[0]


def test_serve_needs_no_extra() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    base = {r.split(">")[0].split("[")[0].lower() for r in project["dependencies"]}
    assert {"fastapi", "uvicorn", "prometheus_client"} <= base
    for module in ("fastapi", "uvicorn", "prometheus_client"):  # each is installed with it
        __import__(module)


def test_serve_without_its_packages_says_how_in_one_line(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text("tenants:\n  - name: a\n    token: " + "x" * 32 + "\n")
    done = gpupact_without("fastapi", "serve", ROOT / "examples/promo-peak", "--tokens", tokens)
    assert "pip install gpupact" in one_line(done)


def test_a_postgresql_ledger_without_psycopg_names_the_postgres_extra(tmp_path: Path) -> None:
    records = tmp_path / "usage.json"
    records.write_text("[]")
    db = "postgresql://reader:secret@127.0.0.1:1/ledger"
    done = gpupact_without("psycopg", "ledger", "ingest", "--db", db, "--records", records)
    line = one_line(done)
    assert "needs the postgres extra: pip install 'gpupact[postgres]'" in line
    assert "secret" not in line  # the URL is shown without its password


@pytest.mark.parametrize("command", [["report", "--month", "2026-11"], ["profiles"]])
def test_every_ledger_reader_names_the_postgres_extra(command: list[str]) -> None:
    db = "postgresql://u@127.0.0.1:1/ledger"
    done = gpupact_without("psycopg", "ledger", *command, "--db", db)
    assert "pip install 'gpupact[postgres]'" in one_line(done)


def test_sweep_on_ray_without_ray_names_the_ray_extra() -> None:
    done = gpupact_without("ray", "sweep", ROOT / "examples/promo-peak", "--ray", "local")
    assert "pip install 'gpupact[ray]'" in one_line(done)
