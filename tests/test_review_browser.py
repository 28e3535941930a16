"""`audit review` in headless Chromium (Playwright driving Debian's chromium): a reviewer's
whole flow, and hostile model output that must render as text and run nothing."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterator

import pytest

from review.app import create_app
from review.standalone import standalone_html
from tests.browser import chromium_browser, running_server  # noqa: F401 - chromium_browser is a fixture
from tests.test_review_app import build_store
from tests.test_review_security import hostile_run


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("browser")

    def build() -> dict[str, Any]:
        runs = build_store(f"sqlite:///{tmp / 'audit.db'}", tmp / "out")
        asyncio.run(hostile_run(runs["store"]))
        return runs

    # Playwright's sync API may already run an event loop in this thread (a session-wide browser).
    with ThreadPoolExecutor(1) as pool:
        runs = pool.submit(build).result()
    with running_server(create_app(runs["store"])) as base:
        yield {**runs, "base": base, "tmp": tmp}


@pytest.fixture
def page(chromium_browser) -> Iterator[Any]:  # noqa: F811 - the imported fixture
    context = chromium_browser.new_context(viewport={"width": 1400, "height": 900})
    tab = context.new_page()
    tab.set_default_timeout(10_000)
    yield tab
    context.close()


def run_ids(page: Any) -> list[str]:
    return page.locator("a.runlink").all_inner_texts()


def test_reviewer_filters_opens_follows_a_quote_reviews_and_exports(page, served) -> None:
    base, quoted = served["base"], served["quoted"]
    page.goto(f"{base}/")
    assert len(run_ids(page)) == 4
    page.select_option("select[name=quirk]", "flattery")
    page.click("form.filters button[type=submit]")
    page.wait_for_url("**quirk=flattery**")
    assert sorted(run_ids(page)) == sorted([served["flattery"], quoted])
    page.click(f"a.runlink:text-is('{quoted}')")
    page.wait_for_url(f"**/runs/{quoted}")
    quote = page.locator("a.quote-link").first
    quoted_text = quote.inner_text().strip("“”")
    quote.click()
    page.wait_for_url("**#q-1")
    assert page.evaluate("document.querySelector(':target').id") == "q-1"
    mark = page.locator("mark#q-1")
    assert mark.inner_text() == quoted_text and mark.is_visible()
    assert page.evaluate("document.querySelector('mark#q-1').closest('article').id") == "m-t3"
    box, height = mark.bounding_box(), page.viewport_size["height"]
    assert box and 0 <= box["y"] < height  # scrolled into view
    page.fill("input[name=reviewer]", "Grace")
    page.check("input[name=verdict][value=confirmed]")
    page.select_option("select[name=severity]", "medium")
    page.fill("input[name=tags]", "flattery, grounded")
    page.fill("textarea[name=notes]", "Praise opens every reply; t3 shows it.")
    page.click(".review-form button[type=submit]")
    page.wait_for_url(f"**/runs/{quoted}?view=combined#history")
    entry = page.locator("#history .review-entry").first
    assert "confirmed" in entry.inner_text() and "Grace" in entry.inner_text()
    page.goto(f"{base}/?review=confirmed")
    assert run_ids(page) == [quoted]
    exported = page.request.get(f"{base}/export/labels.jsonl")
    rows = [json.loads(line) for line in exported.text().splitlines()]
    assert [(r["run_id"], r["verdict"], r["reviewer"], r["tags"]) for r in rows] == [
        (quoted, "confirmed", "Grace", ["flattery", "grounded"])
    ]


@pytest.mark.parametrize("where", ["combined", "target", "auditor", "runs", "file"])
def test_hostile_model_output_renders_as_text_and_runs_nothing(page, served, where: str) -> None:
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("dialog", lambda dialog: errors.append(f"dialog {dialog.message}"))
    if where == "file":
        path = Path(served["tmp"]) / "hostile.html"
        path.write_text(standalone_html(served["store"], "hostile"))
        page.goto(path.as_uri())
    elif where == "runs":
        page.goto(f"{served['base']}/")
    else:
        page.goto(f"{served['base']}/runs/hostile?view={where}")
    assert page.evaluate("typeof window.__xss") == "undefined"
    assert page.locator("img, script, iframe").count() == 0
    assert page.locator("a[href^='javascript:']").count() == 0
    body = page.inner_text("body")
    if where == "runs":
        assert "hostile <b>target</b>" in body
        return
    assert "<script>window.__xss=1</script>" in body and 'onerror="window.__xss=2"' in body
    assert '<a href="javascript:window.__xss=3">x</a>' in body
    before = page.url
    shown = page.locator("article.msg .text", has_text="javascript:window.__xss=3").filter(visible=True).first
    shown.get_by_text("javascript:window.__xss=3", exact=False).click()  # where the link would be, were it one
    assert page.url == before and page.evaluate("typeof window.__xss") == "undefined"
    assert errors == []
