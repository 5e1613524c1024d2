"""Shared pytest setup: per-file, per-category conformance counts at the end of the run."""

from __future__ import annotations

from collections import Counter, defaultdict

from hypothesis import settings

# property tests explore the same examples on every run: the suite is deterministic
settings.register_profile("deterministic", derandomize=True, deadline=None)
settings.load_profile("deterministic")


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    counts: dict[str, Counter] = defaultdict(Counter)
    for outcome in ("passed", "failed", "skipped", "error"):
        for report in terminalreporter.stats.get(outcome, []):
            if report.when != "call" and outcome in ("passed",):
                continue
            props = dict(getattr(report, "user_properties", []))
            key = props.get("conformance")
            if key:
                counts[key][outcome] += 1
    if not counts:
        return
    terminalreporter.section("conformance (per file:category)")
    for key in sorted(counts):
        c = counts[key]
        terminalreporter.write_line(
            f"{key:45s} passed {c['passed']:4d}  failed {c['failed'] + c['error']:4d}  "
            f"skipped {c['skipped']:4d}"
        )
