"""benchmarks/throughput.py runs end to end at a tiny size (no timing assertions)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[3] / "benchmarks" / "throughput.py"


def load():
    spec = importlib.util.spec_from_file_location("throughput_benchmark", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def test_table_and_section(tmp_path):
    bench = load()
    text = bench.table([40], repeat=1)
    assert text.startswith("| nodes | pods placed |")
    assert "| 40 | 40 |" in text
    assert "Memory per 10,000 nodes" in text
    target = tmp_path / "benchmarks.md"
    target.write_text("# Benchmarks\n\nother section\n")
    bench.write_section(text, target)
    bench.write_section(text, target)  # replaces its own section, keeps the rest
    written = target.read_text()
    assert written.count(bench.BEGIN) == 1 and "other section" in written
    assert bench.COMMAND in written
