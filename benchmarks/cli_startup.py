"""How long `gpupact --version`, `gpupact --help` and a command's `--help` take to start: each
run is a fresh interpreter, as a user (or a shell completion, or `kubectl gpupact`) pays it.

    python benchmarks/cli_startup.py            # prints a markdown table
    python benchmarks/cli_startup.py --write    # also updates docs/benchmarks.md (## CLI startup)

Target: `--version` and `--help` under 0.3 s. They import no command module (the name ->
module table in cli/main.py is read instead), so numpy, pydantic, the kubernetes client and
the engine stay unloaded; a command's own `--help` imports that command. Bare `python -c pass`
is timed too, as the floor. Wall time is the median of --runs fresh processes; on a shared
machine the minimum is the steadier figure.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "benchmarks.md"
BEGIN = "<!-- cli-startup:begin -->"
END = "<!-- cli-startup:end -->"
TARGET_S = 0.3
CASES = {
    "python -c pass (floor)": [sys.executable, "-c", "pass"],
    "gpupact --version": [sys.executable, "-m", "gpupact", "--version"],
    "gpupact --help": [sys.executable, "-m", "gpupact", "--help"],
    "gpupact check --help": [sys.executable, "-m", "gpupact", "check", "--help"],
    "gpupact diagnose --help": [sys.executable, "-m", "gpupact", "diagnose", "--help"],
}


def measure(argv: list[str], runs: int) -> list[float]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - start)
    return times


def table(runs: int) -> str:
    rows = [
        "| command | median s | min s | max s | target |",
        "|---|---:|---:|---:|---|",
    ]
    for name, argv in CASES.items():
        times = measure(argv, runs)
        target = f"< {TARGET_S} s" if name in ("gpupact --version", "gpupact --help") else ""
        rows.append(
            f"| `{name}` | {statistics.median(times):.3f} | {min(times):.3f} | "
            f"{max(times):.3f} | {target} |"
        )
    return "\n".join(rows)


def section(runs: int) -> str:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return "\n".join(
        [
            BEGIN,
            "## CLI startup",
            "",
            "Command: `python benchmarks/cli_startup.py --write` (benchmarks/cli_startup.py; "
            f"target: `--version` and `--help` under {TARGET_S} s)",
            "",
            f"Machine: {os.cpu_count()} CPUs, {platform.machine()}; Python "
            f"{platform.python_version()}; {runs} fresh processes per row; load average at the "
            f"end {load} (other jobs share the machine: the min column is the steadier figure)",
            "",
            table(runs),
            "",
            "`--version` and `--help` import Typer and Rich's console only: no command module, "
            "so no numpy, pydantic, kubernetes client or engine (tests/cli/test_kubectl_habits.py "
            "checks `sys.modules`, not time), and the top-level help is plain text as "
            "kubectl's (Typer's Rich panels would import ~80 ms more). A command's own "
            "`--help` imports that command (and its engine).",
            END,
        ]
    )


def write(text: str) -> None:
    doc = DOC.read_text()
    if BEGIN in doc:
        head, rest = doc.split(BEGIN, 1)
        doc = head + text + rest.split(END, 1)[1]
    else:
        doc = doc.rstrip("\n") + "\n\n" + text + "\n"
    DOC.write_text(doc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()
    text = section(args.runs)
    print(text)
    if args.write:
        write(text)


if __name__ == "__main__":
    main()
