"""The HTML report in real headless chromium: it loads, its script runs, nothing is fetched.

The page checks are proved able to fail: a script error, a syntax error and an external fetch
(blocked by the report's Content-Security-Policy) must each be reported.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from compare.check import evaluate, load_policy
from compare.report import ReportData, ReportFormat, render
from compare.results import load_results, summarize
from tests.report.browser import PageRun, open_page
from tests.results.helpers import NAMES, POLICY, fixture

PNG = b"\x89PNG\r\n\x1a\n"


def _page(name: str, where: Path) -> Path:
    source = fixture(name)
    summary = summarize(load_results(source))
    check = evaluate(load_policy(POLICY), summary)
    data = ReportData(summary, source, check, POLICY, output_dir=where)
    page = where / f"{name}.html"
    page.write_text(render(ReportFormat.html, data))
    return page


def _keep_screenshot(name: str, run: PageRun) -> None:
    # Set COMPARE_SCREENSHOT_DIR to look at what the browser rendered.
    keep = os.environ.get("COMPARE_SCREENSHOT_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        (Path(keep) / f"{name}.png").write_bytes(run.screenshot)


@pytest.mark.parametrize("name", NAMES)
def test_report_renders_without_errors(tmp_path: Path, name: str) -> None:
    page = _page(name, tmp_path)
    run = open_page(page)
    _keep_screenshot(name, run)
    assert run.errors == []
    assert run.ready == "true"  # the page's script ran to its end
    assert run.title.startswith("Self-healing report 2026")
    assert run.screenshot.startswith(PNG)
    assert len(run.screenshot) > 20_000  # a rendered page, not a blank one


def test_a_script_error_is_caught(tmp_path: Path) -> None:
    page = _page("full-run", tmp_path)
    page.write_text(page.read_text().replace("</main>", "</main><script>noSuchThing();</script>"))
    run = open_page(page)
    assert any("noSuchThing is not defined" in e for e in run.errors), run.errors


def test_a_syntax_error_stops_the_page_script(tmp_path: Path) -> None:
    page = _page("full-run", tmp_path)
    page.write_text(page.read_text().replace('"use strict";', '"use strict"; var = ;', 1))
    run = open_page(page)
    assert any("SyntaxError" in e for e in run.errors), run.errors
    assert run.ready is None


def test_an_external_fetch_is_blocked_and_reported(tmp_path: Path) -> None:
    page = _page("with-errors", tmp_path)
    page.write_text(
        page.read_text().replace("</main>", '</main><img src="https://example.invalid/x.png">')
    )
    run = open_page(page)
    assert any("Content Security Policy" in e for e in run.errors), run.errors
