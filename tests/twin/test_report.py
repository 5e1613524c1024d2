"""The HTML report: self-contained, and rendered by a real headless Chromium without console
errors (Debian's `chromium`, driven by Playwright; CI installs both)."""

from __future__ import annotations

import copy
import os
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from twin_helpers import contract, scenario, write

from gpupact.twin.peak import status
from gpupact.twin.report.html import render
from gpupact.twin.run import load_all, simulate

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
REQUIRED = os.environ.get("GPUPACT_REQUIRE_COMPONENTS") == "1"


PEAK_LOAD = [
    {
        "service": "chat",
        "rps": [
            {"at": "0s", "value": 2},
            {"at": "20m", "value": 2},
            {"at": "25m", "value": 60},
            {"at": "40m", "value": 60},
            {"at": "45m", "value": 2},
        ],
    }
]


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    base = tmp_path_factory.mktemp("variants")
    write(base / "a-contract", contract(), scenario(duration="1h", load=PEAK_LOAD))
    write(
        base / "b-other", contract(), scenario(duration="1h", seed=11, metadata={"name": "other"})
    )
    return [simulate(item) for item in load_all(base)]


@pytest.fixture(scope="module")
def report(results: list[dict[str, Any]], tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("report") / "report.html"
    path.write_text(render(results, "twin test"), encoding="utf-8")
    return path


class _Cells(HTMLParser):
    """Every table cell's (class, text), in document order."""

    def __init__(self) -> None:
        super().__init__()
        self.cells: list[tuple[str, str]] = []
        self._open: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "td":
            self._open = dict(attrs).get("class") or ""
            self._text = []

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._open is not None:
            self.cells.append((self._open, "".join(self._text)))
            self._open = None


def _cells(html: str) -> list[tuple[str, str]]:
    parser = _Cells()
    parser.feed(html)
    return parser.cells


def test_the_peak_window_follows_the_load_profile(results: list[dict[str, Any]]) -> None:
    peak = results[0]["summary"]["services"]["chat"]["peakWindow"]
    # 2 -> 60 req/s from 20m to 25m: the window opens once the rise passes a tenth (at ~20.5m)
    assert 20 * 60 < peak["start"] < 21 * 60
    assert 45 * 60 > peak["end"] > 44 * 60
    flat = results[1]["summary"]["services"]["chat"]["peakWindow"]
    assert (flat["start"], flat["end"]) == (0.0, 3600.0)  # a flat load: the whole run


def test_status_colour_is_judged_on_the_peak_not_the_whole_run(
    results: list[dict[str, Any]],
) -> None:
    lost = copy.deepcopy(results[0])
    svc = lost["summary"]["services"]["chat"]
    svc["sloBreachedShare"] = 0.004  # 0.4 % of the run ...
    svc["peakWindow"]["sloBreachedShare"] = 0.35  # ... but a third of the peak
    svc["peakWindow"]["sloBreachedSeconds"] = 630.0
    cells = _cells(render([lost], "t"))
    peak_cells = [c for c in cells if "peak-slo" in c[0]]
    assert peak_cells == [("bad peak-slo", "35.0% of the peak over (10.5m)")]
    whole = [c for c in cells if "of the run over" in c[1]]
    assert whole == [("", "0.4% of the run over")]  # stated, never coloured green


def test_report_values_are_the_summary(results: list[dict[str, Any]], report: Path) -> None:
    html = report.read_text()
    cells = _cells(html)
    shares = [r["summary"]["services"]["chat"]["peakWindow"]["sloBreachedShare"] for r in results]
    peak_cells = [c for c in cells if "peak-slo" in c[0]]
    assert [c[0] for c in peak_cells] == [f"{status(s)} peak-slo" for s in shares]
    assert [c[1].split("%")[0] for c in peak_cells] == [f"{s * 100:.1f}" for s in shares]
    for r in results:
        for klass, cost in r["summary"]["batchCost"].items():
            assert cost["gpuHours"] > 0
            row = f"{klass}|{cost['gpuHours']:,.1f}|{cost['gpuHoursLost']:,.1f}|{cost['evictions']}"
            texts = "|".join(t for _, t in cells)
            assert row in texts
    assert html.count("Cost to batch") == len(results)
    # the peaked variant is zoomed; the flat one (its window is the whole run) is not
    assert html.count("<figcaption>Peak zoom — latency") == 1
    # the engine records TPOT per tick: one TPOT chart per variant
    assert html.count("<figcaption>TPOT over time — chat") == len(results)


def test_log_axes_carry_readable_ticks(report: Path) -> None:
    ticks = re.findall(r'class="tick" text-anchor="end">([^<]+)<', report.read_text())
    latency = [t for t in ticks if t.endswith((" ms", " s", " min", " h"))]
    assert latency, "no time-labelled axis"
    for tick in latency:  # 100 ms, 1 s, 2 s: never 3.16228 or 1e-05
        assert re.fullmatch(r"[0-9]{1,3}(\.[0-9])? (ms|s|min|h)", tick), tick


def test_tpot_is_drawn_when_the_metrics_carry_it(results: list[dict[str, Any]]) -> None:
    with_tpot = copy.deepcopy(results[0])
    svc = with_tpot["series"]["services"]["chat"]
    svc["tpotP50"] = [0.03 for _ in svc["t"]]
    svc["tpotP99"] = [0.06 for _ in svc["t"]]
    with_tpot["summary"]["services"]["chat"]["tpotP99Worst"] = 0.06
    html = render([with_tpot], "t")
    chart = html.split("<figcaption>TPOT over time")[1].split("</figure>")[0]
    assert chart.count("<polyline") == 2
    assert "60 ms" in html  # the summary row
    assert "TPOT P99" in html.split("<figcaption>Peak zoom — latency")[1].split("</figure>")[0]


def test_report_is_self_contained(report: Path) -> None:
    html = report.read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "<script" not in html
    # pending CDF, pools, TTFT, replicas, batch cost per variant; two zooms on the peaked one
    assert html.count("<svg") >= 5 * 2 + 2
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
        assert charts.count() >= 12
        panels = {"Peak zoom — latency": 1, "Peak zoom — replicas": 1, "GPU-hours by job class": 2}
        for caption, count in panels.items():
            figures = page.locator("figure", has_text=caption)
            assert figures.count() == count, caption
            for i in range(count):
                svg = figures.nth(i).locator("svg")
                drawn = svg.locator("polyline, rect[fill]").count()
                assert drawn > 0, caption  # lines or bars, not an empty frame
                box = svg.bounding_box()
                assert box is not None and box["width"] > 200 and box["height"] > 40, caption
        box = charts.first.bounding_box()
        assert box is not None and box["width"] > 200 and box["height"] > 60
        shot = tmp_path / "report.png"
        page.screenshot(path=str(shot), full_page=True)
        browser.close()
    assert errors == []
    assert all(url.startswith("file:") for url in requests)
    assert shot.stat().st_size > 10_000
