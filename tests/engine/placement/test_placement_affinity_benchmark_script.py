"""benchmarks/affinity.py runs end to end at a tiny size (no timing assertions)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[3] / "benchmarks" / "affinity.py"


def load():
    spec = importlib.util.spec_from_file_location("affinity_benchmark", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    sys.modules.pop("throughput", None)
    return module


def test_table_and_section(tmp_path):
    bench = load()
    text = bench.table(scale=0.004)
    assert text.startswith("| shape | nodes |")
    assert "| SchedulingPodAntiAffinity/5000Nodes_2000Pods | 20 | 4 | 8 |" in text
    target = tmp_path / "benchmarks.md"
    target.write_text("# Benchmarks\n\nother section\n")
    bench.write_section(text, target)
    bench.write_section(text, target)
    written = target.read_text()
    assert written.count(bench.BEGIN) == 1 and "other section" in written


def test_anti_affinity_shape_puts_one_pod_per_node():
    bench = load()
    state = bench.build_state(6, zone=False)
    from dataclasses import replace

    from gpupact.engine.placement import FitResult, Scheduler

    scheduler = Scheduler(state)
    pod = bench.template("podAntiAffinity", "sched-0")
    results = [scheduler.schedule_one(replace(pod, name=f"p{i}")) for i in range(7)]
    assert int(state.pod_count.max()) == 1
    assert isinstance(results[-1], FitResult)
