"""The HTML report: self-contained, and rendered by a real headless Chromium without console
errors (Debian's `chromium`, driven by Playwright; CI installs both)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from twin_helpers import contract, scenario, write

from gpupact.twin.report.html import render
from gpupact.twin.run import load_all, simulate

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
REQUIRED = os.environ.get("GPUPACT_REQUIRE_COMPONENTS") == "1"


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("variants")
    write(base / "a-contract", contract(), scenario(duration="1h"))
    write(
        base / "b-other", contract(), scenario(duration="1h", seed=11, metadata={"name": "other"})
    )
    results = [simulate(item) for item in load_all(base)]
    path = base / "report.html"
    path.write_text(render(results, "twin test"), encoding="utf-8")
    return path


def test_report_is_self_contained(report: Path) -> None:
    html = report.read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "<script" not in html
    assert html.count("<svg") >= 4 * 2  # pending CDF, pools, TTFT, replicas per variant
    assert "twin-test" in html and "other" in html


def test_report_renders_in_chromium_without_console_errors(report: Path, tmp_path: Path) -> None:
    if CHROMIUM is None:
        if REQUIRED:
            pytest.fail("chromium is not installed (CI installs Debian's chromium in .ci/run)")
        pytest.skip("chromium not installed (Debian package `chromium`)")
    sync_api = pytest.importorskip("playwright.sync_api")
    errors: list[str] = []
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--no-first-run",
            ],
        )
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        requests: list[str] = []
        page.on("request", lambda r: requests.append(r.url))
        page.goto(report.as_uri())
        assert page.title() == "twin test"
        charts = page.locator("figure svg")
        assert charts.count() >= 8
        box = charts.first.bounding_box()
        assert box is not None and box["width"] > 200 and box["height"] > 60
        shot = tmp_path / "report.png"
        page.screenshot(path=str(shot), full_page=True)
        browser.close()
    assert errors == []
    assert all(url.startswith("file:") for url in requests)
    assert shot.stat().st_size > 10_000
