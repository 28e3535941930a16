"""The eval's HTML report in headless Chromium: it loads, its plots render, nothing runs.

Set AUDITRL_SCREENSHOT_DIR to keep the full-page screenshot (benchmarks/ and the issue
notes use it to show what a reader sees).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.browser import chromium_unavailable, launch_chromium
from tests.test_eval import _eval


def test_report_html_shows_its_plots_in_chromium(tmp_path: Path) -> None:
    why = chromium_unavailable()
    if why:
        pytest.skip(why)
    from playwright.sync_api import sync_playwright

    assert _eval(tmp_path, "ev").returncode == 0
    # A playwright of its own, closed at the end: a session-wide one keeps an event loop
    # running in this thread, and every async test after it would fail.
    with sync_playwright() as p:
        browser = launch_chromium(p)
        try:
            _check_report(browser, tmp_path / "ev" / "report.html")
        finally:
            browser.close()


def _check_report(browser, report: Path) -> None:  # type: ignore[no-untyped-def]
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(report.as_uri())
    page.wait_for_load_state("load")
    widths = page.eval_on_selector_all("img", "imgs => imgs.map(i => i.complete ? i.naturalWidth : 0)")
    assert len(widths) == 3 and all(w > 300 for w in widths)  # every plot decoded, none broken
    assert page.locator("h1").inner_text().startswith("Eval smoke")
    assert "100.0% (8/8" in page.locator("table").first.inner_text()
    assert not errors
    shot = page.screenshot(full_page=True)
    assert shot[:8] == b"\x89PNG\r\n\x1a\n"
    if os.environ.get("AUDITRL_SCREENSHOT_DIR"):
        Path(os.environ["AUDITRL_SCREENSHOT_DIR"], "eval-report.png").write_bytes(shot)
    page.close()
